"""The code style is checked by the test command (ruff, configured in pyproject.toml)."""

import re
import subprocess
import sys
from pathlib import Path

from conftest import ROOT


def test_ruff_finds_nothing():
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", str(ROOT)], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-1000:]


# Download addresses of package archives (Debian pool paths, npm tarball paths, wheel and
# package files behind a URL) and fetches written by hand. The patterns describe the shape
# of such addresses without naming any registry host; this file is left out of the scan
# because its patterns would match themselves.
ARCHIVE_URL = re.compile(r"https?://[^\s\"'<>)]+?\.(?:deb|tgz|whl|tar\.gz)\b")
REGISTRY_PATHS = re.compile(r"/pool/main/|https?://[^\s\"'<>)]+/-/[^\s\"'<>)]+")
HAND_FETCH = re.compile(r"\burlopen\b|\burllib\.request\b|\brequests\.get\(")


def _tracked_text_files():
    listed = subprocess.run(["git", "ls-files"], capture_output=True, text=True, cwd=ROOT, check=True).stdout.split("\n")
    for name in filter(None, listed):
        path = ROOT / name
        if path.is_file() and path.suffix not in (".png", ".safetensors", ".model") and path.name != Path(__file__).name:
            data = path.read_bytes()
            if b"\0" not in data[:4096]:
                yield name, data.decode("utf-8", errors="replace")


def test_no_tracked_file_holds_a_package_download_address():
    """Packages are fetched through the registries' own clients (apt-get download, npm pack),
    never from an address written into the repository."""
    found = [f"{name}: {m[0]}" for name, text in _tracked_text_files() for m in
             [*ARCHIVE_URL.finditer(text), *REGISTRY_PATHS.finditer(text)]]
    assert not found, found


def test_the_library_fetches_nothing_by_hand():
    found = [f"{name}: {m[0]}" for name, text in _tracked_text_files() if name.startswith("albert_lab/")
             for m in HAND_FETCH.finditer(text)]
    assert not found, found
