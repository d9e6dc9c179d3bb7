"""The install scripts: one install serves app.sh and test.sh (scripts/_venv.sh's stamps)."""

import shutil
import subprocess
from pathlib import Path

from conftest import ROOT


def test_app_sh_after_test_sh_does_not_install_again(tmp_path):
    """The first app.sh after test.sh re-ran pip for 40 s: one stamp of both requirement files told
    them apart. A fake python records every pip call; the real scripts run against it."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "_venv.sh", tmp_path / "scripts")
    for name in ("requirements.txt", "requirements-test.txt", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path)
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    log = tmp_path / "calls.log"
    for tool in ("python", "albert-lab"):
        (bin_dir / tool).write_text(f'#!/bin/sh\necho "{tool} $*" >> {log}\n')
        (bin_dir / tool).chmod(0o755)
    fake_path = tmp_path / "path"
    fake_path.mkdir()
    (fake_path / "npm").write_text("#!/bin/sh\n")
    (fake_path / "npm").chmod(0o755)
    env = {"PATH": f"{fake_path}:/usr/bin:/bin", "PYTHON": shutil.which("python3") or "python3"}

    said = []  # what each call printed: pip runs quietly, so the script says what the wait is for

    def source(requirements: str) -> list[str]:
        log.write_text("")
        flags = " --no-tokenizers" if requirements == "requirements-test.txt" else ""  # as test.sh and app.sh give them
        script = f'source "{tmp_path}/scripts/_venv.sh" {requirements}{flags}'
        said.append(subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, check=True, capture_output=True,
                                   text=True).stdout)
        calls = log.read_text().splitlines()
        # every start: the corpora, installed if missing, and no table printed (0.4 s); the app's default tokenizers
        # too, but not for the tests (they train their own: a minute on two cores saved)
        assert [line for line in calls if line.startswith("albert-lab")] == [f"albert-lab corpora --install --quiet{flags}"]
        return [line for line in calls if "pip install" in line]

    assert len(source("requirements-test.txt")) == 4  # test.sh on a fresh venv: pip, the app's, the project, the extras
    assert "installing the pinned requirements" in said[-1] and "installing the test requirements" in said[-1]
    assert source("requirements.txt") == []  # app.sh next: nothing to install
    assert "installing" not in said[-1]
    assert source("requirements-test.txt") == []
    Path(tmp_path / "requirements-test.txt").write_text("-r requirements.txt\npytest\n")  # the extras changed
    assert source("requirements-test.txt") == ["python -m pip install --quiet -r requirements-test.txt"]


def test_the_tests_install_makes_no_tokenizer(monkeypatch):
    """`corpora --install --no-tokenizers` (test.sh's) installs the sources and makes no tokenizer;
    without the flag (app.sh's) the default tokenizers are made; alone, the flag is refused."""
    from conftest import run_cli

    import albert_lab.cli.corpora as corpora_cli
    import albert_lab.data.sources as sources

    installed, made = [], []
    monkeypatch.setattr(sources, "install", lambda names, log, force: installed.append(names))
    monkeypatch.setattr(corpora_cli, "prepare_tokenizers", lambda corpora, log: made.append(corpora))
    assert run_cli("corpora", "--install", "--quiet", "--no-tokenizers").returncode == 0
    assert installed == [None] and made == []
    assert run_cli("corpora", "--install", "--quiet").returncode == 0
    assert installed == [None, None] and len(made) == 1
    result = run_cli("corpora", "--no-tokenizers")
    assert result.returncode == 2 and "--no-tokenizers goes with --install" in result.stderr


def test_quiet_goes_with_install():
    from conftest import run_cli

    result = run_cli("corpora", "--quiet")
    assert result.returncode == 2 and "--quiet goes with --install" in result.stderr
