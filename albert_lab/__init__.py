"""ALBERT Lab: a workbench for understanding ALBERT-style language models.

The library is UI-free (it never imports streamlit). Importing the package is cheap:
torch and transformers load only when a module that needs them is imported.
"""

from albert_lab.errors import AlbertLabError
from albert_lab.spec import PRESETS, ModelSpec

__all__ = ["PRESETS", "AlbertLabError", "ModelSpec", "__version__"]
__version__ = "0.1.0"
