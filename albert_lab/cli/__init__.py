"""`albert-lab` (also `python -m albert_lab`): the command line.

Every command prints a readable table, or one JSON document with --json. Errors a
user can cause end in one line on stderr and exit status 2, never a traceback.
Commands are grouped by subject, one module each, as the README lists them: models,
convert, relax, train, corpora, analysis (every analysis, one command per record of
analysis.registry), app; each registers its commands in common.COMMANDS on import. Heavy imports (torch, transformers)
happen inside the commands that need them, so `albert-lab params` answers at once.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from albert_lab.cli import analysis, app, convert, corpora, models, relax, train
from albert_lab.cli.common import COMMANDS
from albert_lab.errors import AlbertLabError

GROUPS = (models, convert, relax, train, corpora, analysis, app)  # --help lists the commands in this order, as the README does


def build_parser() -> argparse.ArgumentParser:
    from albert_lab import __version__

    parser = argparse.ArgumentParser(prog="albert-lab", description="ALBERT Lab: understand ALBERT-style language models.")
    parser.add_argument("--version", action="version", version=f"albert-lab {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    order = [group.__name__ for group in GROUPS]
    for name, (add, handler, help) in sorted(COMMANDS.items(), key=lambda item: order.index(item[1][1].__module__)):
        p = sub.add_parser(name, help=help.replace("%", "%%"), description=help)  # argparse %-formats help
        add(p)
        p.set_defaults(handler=handler)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    if not (sys.argv[1:] if argv is None else argv):  # no command: what there is, not 'required: COMMAND'
        parser.print_help()
        return 0
    args, unknown = parser.parse_known_args(argv)
    if unknown and args.command != "app":
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    if args.command == "app":  # `albert-lab app --server.headless true`: options for streamlit run
        args.streamlit_args = unknown
    try:
        return args.handler(args)
    except AlbertLabError as err:
        print(f"albert-lab {args.command}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # output piped into `head` and closed early
        sys.stderr.close()
        return 0

