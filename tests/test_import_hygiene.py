"""The library never imports streamlit; importing it stays cheap."""

import subprocess
import sys

import albert_lab


def test_the_library_never_imports_streamlit_nor_speaks_its_vocabulary():
    """No module of the library imports streamlit or the app (which does), at its top or inside a
    function, by statement or by name (`importlib.import_module("streamlit")`): read from the source,
    every function's imports count, not only those a module runs when it is imported. Nor does it say
    how a page shows its options (21 Widget(...) rows with tr_* keys): it says what each option is; how a
    page shows it is the app's table (app/rooms/training/widgets.py)."""
    import ast
    import re
    from pathlib import Path

    def app_side(name: str) -> bool:
        return name.split(".")[0] in ("streamlit", "app")

    files = sorted(Path(albert_lab.__path__[0]).rglob("*.py"))
    assert len(files) > 20
    imported, said = [], []
    for path in files:
        source = path.read_text()
        for node in ast.walk(ast.parse(source)):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level
                     else [a.value for a in node.args[:1] if isinstance(a, ast.Constant) and isinstance(a.value, str)]
                     if isinstance(node, ast.Call) and ast.unparse(node.func).split(".")[-1] in ("__import__", "import_module")
                     else [])
            imported += [f"{path.name}:{node.lineno} {name}" for name in names if app_side(name)]
        said += [f"{path.name}:{n}" for n, line in enumerate(source.splitlines(), 1)
                 if re.search(r"\bWidget\b|[\"']tr_\w+[\"']|\bst\.\w+\(", line)]
    assert not imported, imported
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
    scoring = {"albert_lab.analysis", "albert_lab.analysis.registry", "albert_lab.analysis.common", "albert_lab.analysis.pair_encoding",
               "albert_lab.analysis.intrinsic", "albert_lab.analysis.pairs",
               "albert_lab.training", "albert_lab.training.options", "albert_lab.training.config"}
    unneeded = [m for m in loaded if m.startswith(("albert_lab.analysis.", "albert_lab.training.")) and m not in scoring]
    unneeded += [m for m in loaded if m.split(".")[0] in ("streamlit", "matplotlib", "captum", "sklearn", "app")]
    assert "albert_lab.analysis.pairs" in loaded and not unneeded, unneeded
