"""The README: every command of its command-line block runs as written; its links lead somewhere.

A command gets only the flags that make it fast here, appended so that they override (tiny
budgets, a small corpus)."""

import functools
import re
import shlex

import pytest
from conftest import ROOT, run_cli

# Appended to a README command so that it finishes in seconds; the command itself is unchanged.
FAST = {
    "train": ["--corpus", "wiki-vital[:600]", "--vocab-size", "1000", "--seq-len", "32", "--batch-size", "4", "--steps", "2",
              "--eval-limit", "8", "--hidden", "32", "--heads", "2", "--ffn", "48", "--embedding", "16", "--foreground"],
    "evaluate": ["--corpus", "wiki-vital[:600]", "--limit", "8", "--no-ood"],
    "albertize": ["--embedding", "8"],  # the fixture's BERT has H = 32
    "relax": ["--pairs", "8"],
    "relax --uptrain": ["--pairs", "8", "--uptrain", "2", "--corpus", "wiki-vital[:600]", "--batch-size", "4", "--foreground"],
    "fit-head": ["--corpus", "wiki-vital[:600]", "--train-pairs", "60", "--heldout-pairs", "40", "--steps", "5", "--out", "probe"],
}
COVERED_ELSEWHERE = {"torchrun": "tests/test_training_ddp.py runs the same entry point under torchrun"}


def readme_commands(heading: str = "Command line", page: str = "README.md") -> list[list[str]]:
    text = (ROOT / page).read_text()
    section = re.search(rf"\n## {re.escape(heading)}\n(.*?)\n## ", text, re.S).group(1)
    block = "".join(re.findall(r"```bash\n(.*?)```", section, re.S))  # every bash block of the section
    commands = []
    for line in block.splitlines():
        line = line.split("  #")[0].strip()
        if line and not line.startswith("#"):
            commands.append(shlex.split(line))
    return commands


def test_the_readme_lists_the_commands():
    names = {c[1] for c in readme_commands() + readme_commands(page="docs/cli.md") if c[0] == "albert-lab"}
    assert {"params", "train", "evaluate", "oscillation", "gradflow", "score", "app", "fit-head", "extrapolate", "cka"} <= names


@pytest.fixture(scope="module")
def readme_checkpoints(shipped, tmp_path_factory, tokenizer):
    """The shipped fixture plus the other names the README uses (albert-nsp)."""
    import shutil

    from conftest import tiny_spec

    from albert_lab.checkpoint.store import save_checkpoint
    from albert_lab.models import build_model

    root = tmp_path_factory.mktemp("readme-checkpoints")
    shutil.copytree(shipped, root, dirs_exist_ok=True)
    for name, objective in (("albert-nsp", "nsp"), ("albert-none", "none")):
        spec = tiny_spec(len(tokenizer), objective=objective)
        save_checkpoint(build_model(spec, seed=1), tokenizer, spec, root / name, {"name": name})
    return root


@pytest.mark.slow
@pytest.mark.parametrize("command", readme_commands() + readme_commands(page="docs/cli.md"), ids=lambda c: " ".join(c)[:60])
def test_readme_command_runs(command, readme_checkpoints, tmp_path):
    if command[0] in COVERED_ELSEWHERE:
        pytest.skip(COVERED_ELSEWHERE[command[0]])
    assert command[0] == "albert-lab"
    args = [a for a in command[1:] if a not in ("[--show", "ID", "|", "--cancel", "ID]")]  # `runs [--show ID | --cancel ID]`
    env = {"ALBERT_LAB_CHECKPOINTS": str(readme_checkpoints)}
    if args[0] == "app":  # served, and driven in Chromium, by the browser tests (conftest.serve runs this command)
        assert args == ["app"], "conftest.serve starts the browser tests' app with the README's command: make them one again"
        return
    if args[0] == "score":
        (tmp_path / "pairs.csv").write_text("sentence_a,sentence_b,label\nThe cat sat.,It purred.,0\nIt purred.,The cat sat.,1\n")
    fast = FAST["relax --uptrain"] if args[0] == "relax" and "--uptrain" in args else FAST.get(args[0], [])
    result = run_cli(*args, *fast, env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() or args[0] == "score"
    assert "Traceback" not in result.stderr


RELEASES = ROOT / "tests" / "fixtures" / "tf_releases"  # tiny stand-ins written by TensorFlow (make_tf_releases.py)


@pytest.mark.parametrize("command", readme_commands("The paper's own models"), ids=lambda c: " ".join(c)[:60])
def test_readme_release_command_runs(command, tmp_path):
    """The README's release commands, with the committed tiny releases in the places of Google's:
    albert_base (a folder as the tarball unpacks), uncased_L-12_H-768_A-12, albert_base_v2.tar.gz."""
    import shutil
    import tarfile

    shutil.copytree(RELEASES / "albert_tiny", tmp_path / "albert_base")
    shutil.copytree(RELEASES / "uncased_L-2_H-16_A-2", tmp_path / "uncased_L-12_H-768_A-12")
    with tarfile.open(tmp_path / "albert_base_v2.tar.gz", "w:gz") as archive:
        archive.add(RELEASES / "albert_tiny", "albert_base")
    (tmp_path / "pairs.csv").write_text("sentence_a,sentence_b,label\nthe city of paris is the capital of france.,it is known "
                                        "for its museums and its river.,0\n")
    assert command[0] == "albert-lab"
    result = run_cli(*command[1:], cwd=tmp_path)
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr[-2000:]
    assert "albert_base" in result.stdout


def test_the_readme_is_short_and_its_links_lead_somewhere():
    """The README is for a user (results, design and benchmarks live in docs/); every
    picture and page it or docs/ links to exists."""
    readme = ROOT / "README.md"
    assert len(readme.read_text().splitlines()) <= 120
    for page in [readme, *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "experiments").glob("*.md"))]:
        for target, anchor in re.findall(r"\]\(([^)#\s]*)(?:#([^)\s]+))?\)", page.read_text()):
            if target.startswith(("http://", "https://")):
                continue
            linked = page.parent / target if target else page
            assert linked.exists(), f"{page.name} links to {target}, which does not exist"
            if anchor and linked.suffix == ".md":  # a heading of that page, as GitHub makes its id
                assert anchor in heading_ids(linked), f"{page.name} links to {target}#{anchor}: no such heading"


@functools.cache
def heading_ids(page) -> set[str]:
    """GitHub's ids of a Markdown page's headings: lower case, punctuation dropped, spaces to '-'."""
    headings = re.findall(r"^#+\s+(.+?)\s*$", page.read_text(), flags=re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in headings}


def test_the_readme_parameter_counts_are_the_shipped_models():
    """The table said 22.9M for bert-sop-minilm, whose card counts 22.71M (22.9M is its count with the heads)."""
    import json

    from albert_lab.params import count
    from albert_lab.spec import ModelSpec

    rows = re.findall(r"^\| `([\w-]+)` \| [^|]+ \| ([\d.]+)M \|$", (ROOT / "README.md").read_text(), re.M)
    assert len(rows) == 7, rows
    for name, shown in rows:
        spec = ModelSpec.from_dict(json.loads((ROOT / "checkpoints" / name / "albert_lab.json").read_text())["spec"])
        decimals = len(shown.partition(".")[2])
        assert abs(count(spec).total / 1e6 - float(shown)) <= 0.5 * 10 ** -decimals + 1e-9, (name, shown, count(spec).total)
