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


def test_score_imports_only_what_scoring_needs(make_checkpoint, pairs_file):
    """A one-pair `score` spends most of its start importing torch and transformers' model code; of the
    rest it loads only scoring's modules: no other analysis, no training beyond the options the parser
    lists, no plotting or app library. (torch._dynamo comes with transformers' ALBERT: its activations
    import the kernels hub, whose flash attention imports continuous batching, which calls torch.compiler.disable
    as a class is defined; nothing transformers reads turns that off.)"""
    folder, _ = make_checkpoint("albert")
    code = ("import contextlib, io, sys\nfrom albert_lab.cli import main\n"
            f"with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    assert main(['score', {str(pairs_file)!r}, '--checkpoint', {str(folder)!r}, '--device', 'cpu']) == 0\n"
            "print(' '.join(sys.modules))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    loaded = set(result.stdout.split())
    scoring = {"albert_lab.analysis", "albert_lab.analysis.registry", "albert_lab.analysis.common",
               "albert_lab.analysis.intrinsic", "albert_lab.analysis.pairs",
               "albert_lab.training", "albert_lab.training.options", "albert_lab.training.config"}
    unneeded = [m for m in loaded if m.startswith(("albert_lab.analysis.", "albert_lab.training.")) and m not in scoring]
    unneeded += [m for m in loaded if m.split(".")[0] in ("streamlit", "matplotlib", "captum", "sklearn", "app")]
    assert "albert_lab.analysis.pairs" in loaded and not unneeded, unneeded
