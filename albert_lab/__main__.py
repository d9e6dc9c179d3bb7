import sys

from albert_lab.cli import main

sys.exit(main())
