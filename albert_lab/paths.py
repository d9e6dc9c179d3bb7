"""Where the project keeps things. Every location can be moved with an environment
variable, which is how tests keep their files in temporary folders."""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from albert_lab.errors import AlbertLabError

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def _env_path(name: str, default: Path) -> Path:
    """The folder an environment variable names, symlinks resolved; one line for one that no folder
    can be (a symlink loop, a user that does not exist, a NUL byte)."""
    value = os.environ.get(name)
    return _env_folder(name, value, f"{name}={value[:200]!r}", "a folder") if value else default


def _env_folder(name: str, value: str, shown: str, wanted: str) -> Path:
    """`value`, a folder named in the environment variable `name` (`shown` as the message names it),
    symlinks resolved; AlbertLabError in one line where no folder can be (the one rule for every variable)."""
    try:
        return Path(value).expanduser().resolve()
    except (OSError, RuntimeError, ValueError) as err:  # RuntimeError: a symlink loop (Python 3.11, 3.12)
        words = "is or passes through a symlink loop" if "loop" in str(err).lower() else f"is not a folder ({err})"
        raise AlbertLabError(f"{shown} {words}; set {name} to {wanted}, or unset it") from None


def checkpoints_dir() -> Path:
    """Shipped checkpoints (committed to the repository)."""
    return _env_path("ALBERT_LAB_CHECKPOINTS", PROJECT_ROOT / "checkpoints")


def runs_dir() -> Path:
    """Training runs: one folder per run (see training/runs.py)."""
    return _env_path("ALBERT_LAB_RUNS", PROJECT_ROOT / "runs")


def cache_dir() -> Path:
    """Pre-tokenised corpora and other derived data; safe to delete."""
    return _env_path("ALBERT_LAB_CACHE", PROJECT_ROOT / ".cache")


def data_dir() -> Path:
    """Installed data: the long-document corpora and their downloaded packages
    (`albert-lab corpora --install` fills it; the README's commands run that)."""
    return _env_path("ALBERT_LAB_DATA", PROJECT_ROOT / ".data")


# The folders torch.compile keeps generated code in (and runs it from), by the variable that names each,
# and their place under cache_dir() / "compile" unless the user named them: inductor's cache (its Python
# wrappers, C++ and shared objects, FX graph and AOT autograd caches), Triton's on a GPU, and a temporary folder.
COMPILE_FOLDERS = {"TORCHINDUCTOR_CACHE_DIR": "inductor", "TRITON_CACHE_DIR": "triton", "TMPDIR": "tmp"}
# torch's own default, <temp folder>/torchinductor_<user>: torch writes it into the environment of any process that
# imports its compiler, and the processes that one starts inherit it, so a variable naming a path through it is torch's
# choice, not the user's.
TORCH_DEFAULT_PREFIX = "torchinductor_"


def private_folder(path: Path, fix: str) -> Path:
    """`path`, made if missing (mode 0700), as a folder fit to hold code that will run: this user's
    (os.getuid), written by no one else (no group or other write bit), in folders no one else can
    change (each this user's or root's, writable by others only with the sticky bit, as /tmp is).
    Else AlbertLabError in one line naming the folder; `fix` says what to do. Refused, not replaced:
    what others could write may already hold their code, and a folder the user named is not ours to empty."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = os.stat(path)
    except OSError as err:
        raise AlbertLabError(f"cannot make the folder {path} ({err.strerror or err}); {fix}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise AlbertLabError(f"{path} is not a folder; {fix}")
    if st.st_uid != os.getuid():
        raise AlbertLabError(f"{path} belongs to another user (uid {st.st_uid}), who could put code there that would run; {fix}")
    if st.st_mode & 0o022:
        raise AlbertLabError(f"{path} can be written by others (mode {stat.S_IMODE(st.st_mode):04o}), who could put code there "
                             f"that would run; {fix}")
    for folder in Path(os.path.realpath(path)).parents:
        st = os.stat(folder)
        if st.st_uid not in (os.getuid(), 0) or (st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX):
            raise AlbertLabError(f"{path} lies in {folder}, which others can change (mode {stat.S_IMODE(st.st_mode):04o}, "
                                 f"uid {st.st_uid}) to swap in code that would run; {fix}")
    return path


def compile_folders() -> dict[str, Path]:
    """COMPILE_FOLDERS, each made and checked by private_folder: the caches where the user's variable
    names them (checked alike; not torch's default, TORCH_DEFAULT_PREFIX), else under cache_dir() / "compile";
    the temporary folder always there, since inductor puts folders of fixed names in it (torchinductor_<user>:
    precompiled headers, its on-disk caches) whatever TORCHINDUCTOR_CACHE_DIR says, and /tmp's are anyone's to make first."""
    base = cache_dir() / "compile"
    private_folder(base, "remove it (it is made again, private) or set ALBERT_LAB_CACHE to a folder of your own")
    folders = {}
    for name, sub in COMPILE_FOLDERS.items():
        default = base / sub
        path = default if name == "TMPDIR" else _env_path(name, default)
        if any(part.startswith(TORCH_DEFAULT_PREFIX) for part in path.parts):
            path = default
        where = f"set {name} to a folder of your own" if path != default else "remove it (it is made again, private)"
        folders[name] = private_folder(path, f"make it yours alone (chmod 700) or {where}")
    return folders


def use_compile_folders() -> dict[str, Path]:
    """compile_folders() made this process's (its environment, and tempfile's folder, which tempfile
    reads once), before torch.compile first reads them: the process that compiles keeps and runs only
    code that its own user could have written. Returns them."""
    folders = compile_folders()
    os.environ.update({name: str(path) for name, path in folders.items()})
    tempfile.tempdir = str(folders["TMPDIR"])
    return folders


def allowed_roots() -> list[Path]:
    """Folders a path typed into the app may point into (checkpoints, runs and any
    extra roots listed, separated by os.pathsep, in ALBERT_LAB_ALLOWED_DIRS)."""
    name = "ALBERT_LAB_ALLOWED_DIRS"
    extra = [_env_folder(name, p, f"{name}'s entry {p[:200]!r}", f"folders separated by {os.pathsep!r}")
             for p in os.environ.get(name, "").split(os.pathsep) if p]
    return [checkpoints_dir(), runs_dir(), *extra]


MAX_PATH_CHARS = 4096  # PATH_MAX on Linux; one name in a path holds 255 bytes (NAME_MAX)


def check_typed_path(text: str) -> str:
    """A folder or hub id a user typed, stripped; AlbertLabError (one line) for text that no
    file system takes: control characters (a NUL byte), a path over MAX_PATH_CHARS
    characters or with a name over 255 bytes."""
    text = text.strip()
    shown = repr(text if len(text) <= 60 else text[:60] + "...")
    if control := next((c for c in text if ord(c) < 32 or ord(c) == 127), None):
        raise AlbertLabError(f"{shown} holds the control character {control!r}; type a folder path or hub id")
    if len(text) > MAX_PATH_CHARS or any(len(part.encode("utf-8", "surrogatepass")) > 255 for part in text.split("/")):
        raise AlbertLabError(f"{shown} is too long for a path ({len(text):,} characters; at most {MAX_PATH_CHARS:,}, "
                             "and 255 bytes a name); type a folder path or hub id")
    return text


def user_path(text: str | os.PathLike[str], what: str = "") -> Path:
    """The one check of a path a user gives (a command-line flag, a folder typed in the app, a
    link's value): check_typed_path (control characters, length), then `~` and `~user` expanded,
    a user that does not exist refused (never a literal './~user' folder made), and a symlink
    loop on the way named. AlbertLabError in one line, starting with `what` (a flag) if given."""
    lead = f"{what} " if what else ""
    raw = str(text)
    try:
        checked = check_typed_path(raw) if raw.strip() else raw
    except AlbertLabError as err:
        raise AlbertLabError(f"{lead}{err}".replace("type a folder path or hub id", "give another path")) from None
    shown = repr(checked if len(checked) <= 60 else checked[:60] + "...")
    if checked.startswith("~"):
        user = checked[1:].split("/", 1)[0]
        try:
            if user:
                import pwd

                pwd.getpwnam(user)
            checked = os.path.expanduser(checked)
        except (KeyError, RuntimeError, ImportError):
            who = f"no user {user!r} on this machine" if user else "no home folder is known"
            raise AlbertLabError(f"{lead}{shown}: {who}; give the path without ~ (or ./{checked[:60]} for a folder "
                                 "named so)") from None
    path = Path(checked)
    try:
        os.stat(path)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise AlbertLabError(f"{lead}{shown} is or passes through a symlink loop; give another path") from None
        if err.errno == errno.ENAMETOOLONG:
            raise AlbertLabError(f"{lead}{shown} is too long for a path; give another path") from None
    except ValueError:  # embedded NUL: check_typed_path refuses it first
        raise AlbertLabError(f"{lead}{shown} is not a path; give another path") from None
    return path


def is_within(path: Path, roots: list[Path]) -> bool:
    """True if `path` (symlinks resolved) lies inside one of `roots`."""
    real = Path(os.path.realpath(path))
    return any(real == r or r in real.parents for r in (Path(os.path.realpath(x)) for x in roots))


def nearest_existing(path: Path) -> Path:
    """`path` or the nearest folder above it that is there (a link counts, dangling or not)."""
    while not os.path.lexists(path) and path != path.parent:
        path = path.parent
    return path


@contextmanager
def parents_made_for(path: Path) -> Iterator[None]:
    """Make the folders `path` needs above it; if the body fails, remove again those it made
    (while empty), so a failed conversion or save leaves no trace of its --out."""
    base, made, folder = nearest_existing(path.parent), [], path.parent
    while folder != base:
        made.append(folder)  # deepest first
        folder = folder.parent
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        yield
    except BaseException:
        for folder in made:
            try:
                folder.rmdir()
            except OSError:  # someone put something in it meanwhile: theirs now
                break
        raise


def unique_folder(folder: Path) -> Path:
    """`folder`, or `folder-2`, `folder-3`, ... : the first that does not exist yet."""
    out, k = folder, 2
    while out.exists():
        out, k = folder.with_name(f"{folder.name}-{k}"), k + 1
    return out
