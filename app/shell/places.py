"""Where a visitor's folders may be, as the browser sees them: a typed or linked path checked
against the allowed folders (checkpoints/, runs/ and ALBERT_LAB_ALLOWED_DIRS) with one message for
any path outside them, and a folder named by its place under them in links (after 'cased:' or
'uncased:' where a release's casing was given), never by a server path. No Streamlit here: the picker and the selection both stand on it."""

from __future__ import annotations

import os
from pathlib import Path

from albert_lab.checkpoint.files import is_local_source
from albert_lab.checkpoint.sources import portable_name
from albert_lab.errors import AlbertLabError
from albert_lab.paths import allowed_roots, is_within, user_path


def check_local_folder(text: str) -> str:
    """A folder typed into the browser or carried by a link must lie inside the allowed roots. Any
    other path, `~`, `~root` and `~nosuchuser` alike, gets one message that names no folder of the
    server and tells nothing of what exists outside the roots; inside them, the path checks of
    paths.user_path (symlink loops, lengths) speak. The path returned is the one typed with its
    '..' taken as written (`within_roots`): nothing outside the roots is looked up on the way."""
    text = text.strip()
    path = within_roots(text, allowed_roots())
    if path is None:
        shown = repr(text if len(text) <= 60 else text[:60] + "...")
        raise AlbertLabError(f"{shown} is outside the folders the app may read ({allowed_words()}); copy the checkpoint "
                             "into checkpoints/ or runs/ of the app's folder, or ask whoever serves the app to list its "
                             "folder in ALBERT_LAB_ALLOWED_DIRS")
    return str(user_path(path))


def within_roots(text: str, roots: list[Path]) -> Path | None:
    """The absolute path `text` names, if it lies inside `roots`, else None. `..` are taken as written
    (os.path.normpath) before anything is looked up: '/etc/../<root>/x' and '/nonexistent/../<root>/x'
    are both '<root>/x', where walking them told whether /etc exists. A `~` or `~user` counts as
    inside only when that home folder is itself inside a root: a home outside, a user without one
    and a user that does not exist are all outside, whatever follows ('~root/../<root>/x' would tell
    where root's home is), and '~nosuchuser' is never read as a folder of that name here."""
    head, slash, rest = text.partition("/")
    try:
        if text.startswith("~"):
            home = os.path.expanduser(head)  # as it is for a user that does not exist, or a ~ without a home
            if home == head or not os.path.isabs(home) or not is_within(Path(home), roots):
                return None
            text = home + slash + rest
        path = Path(os.path.normpath(Path.cwd() / text))
        return path if is_within(path, roots) else None
    except (OSError, RuntimeError, ValueError):  # a symlink loop or an overlong path outside: outside all the same
        return None


def allowed_words() -> str:
    """The allowed roots as a visitor may read them: project-relative names, never a server path."""
    named = [f"{portable_name(root)}/" for root in allowed_roots()[:2]]
    extra = len(allowed_roots()) - 2
    return " and ".join(named) + (f", and {extra} folder{'s' * (extra > 1)} the server lists" if extra > 0 else "")


def typed_folder(text: str) -> str | None:
    """A typed name of a folder (or a release archive) the app may read, wherever the app was
    started: `runs`, `albert-sop`, `runs/<id>/checkpoint`, `checkpoints/albert_base_v2.tar.gz` are
    looked for beside and inside the allowed roots."""
    roots = allowed_roots()
    for root in roots:
        for candidate in (root.parent / text, root / text):
            try:
                if (candidate.is_dir() or candidate.is_file()) and is_within(candidate.resolve(), roots):
                    return str(candidate)
            except (OSError, RuntimeError):  # too long with the root before it, a symlink loop: not a folder here
                continue
    return None


def link_form(source: str) -> str:
    """How a link names an added checkpoint: a hub id as it is; a folder (or archive) by its place
    under the allowed folder that holds it, '<that folder's name>/<path inside>' (checkpoints/x,
    runs/<id>/checkpoint), which `typed_folder` finds again on any machine: never the server's
    absolute path. A folder that would not be found so travels by its name alone (the opener is
    told it is left out)."""
    if not is_local_source(source):
        return source
    path = Path(os.path.realpath(source))
    for root in allowed_roots():
        real = Path(os.path.realpath(root))
        if path == real or real in path.parents:
            text = "/".join((root.name, *path.relative_to(real).parts))
            found = typed_folder(text)
            if found is not None and Path(os.path.realpath(found)) == path:
                return text
    return path.name


CASING_PREFIXES = ("cased:", "uncased:")  # a link's entry for a release added with its casing given


def cased_form(entry: str, casing: str | None) -> str:
    """A link's entry for a folder, with the casing given in the sidebar (None: the release's own)."""
    return f"{casing}:{entry}" if casing else entry


def split_casing(entry: str) -> tuple[str, str | None]:
    """(folder, casing) of a link's entry (cased_form's inverse)."""
    for prefix in CASING_PREFIXES:
        if entry.startswith(prefix):
            return entry.removeprefix(prefix), prefix[:-1]
    return entry, None
