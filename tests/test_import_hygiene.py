"""The library never imports streamlit; importing it stays cheap."""

import pkgutil
import subprocess
import sys

import albert_lab


def test_library_does_not_import_streamlit():
    modules = [m.name for m in pkgutil.walk_packages(albert_lab.__path__, "albert_lab.") if m.name != "albert_lab.__main__"]
    assert len(modules) > 20
    code = ("import importlib, sys\n"
            f"for m in {modules!r}: importlib.import_module(m)\n"
            "bad = [m for m in sys.modules if m == 'streamlit' or m.startswith('streamlit.')]\n"
            "assert not bad, bad\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_library_speaks_none_of_streamlits_vocabulary():
    """The library said how the Training page shows its options (21 Widget(...) rows with tr_* keys):
    it says what each option is; how a page shows it is the app's table (app/rooms/training/widgets.py)."""
    import re
    from pathlib import Path

    said = [f"{path.name}:{n}" for path in Path(albert_lab.__path__[0]).rglob("*.py")
            for n, line in enumerate(path.read_text().splitlines(), 1)
            if re.search(r"\bWidget\b|[\"']tr_\w+[\"']|\bst\.\w+\(", line)]
    assert not said, said


def test_params_path_does_not_import_torch():
    code = "import sys, albert_lab.params, albert_lab.spec, albert_lab.paper; assert 'torch' not in sys.modules"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_every_command_line_starts_without_torch():
    """`albert-lab corpora --install` with nothing to install took 7.9 s (every script start runs it):
    building the parser imported albert_lab.convert, torch and transformers for albertize's --init choices."""
    code = ("import sys\nfrom albert_lab.cli import build_parser\nbuild_parser()\n"
            "heavy = [m for m in ('torch', 'transformers') if m in sys.modules]\nassert not heavy, heavy\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
