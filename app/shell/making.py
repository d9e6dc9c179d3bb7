"""A model made and offered in the sidebar: albertize (Model card), a relaxed rank (Parameters), a
probe (Model card). Each writes a new checkpoint under runs/<folder>/ with a library function of one
shape, `into(root, stem, *args, quota=..., **kwargs) -> (folder, reused)` (convert.albertize_into,
relax.relax_into, training.probe.probe_into: the same model made before is its folder given again),
computed in this visitor's heavy turn (app/shell/runner.py: the queue, whoever waits told so), within
the app's disk quota; then listed in the sidebar, and offered there by a button."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import streamlit as st

from albert_lab import limits
from albert_lab.paths import runs_dir
from app.shell import loading, picker, runner
from app.shell.runner import Part


@dataclass(frozen=True)
class Made:
    """A checkpoint made under runs/ and listed in the sidebar from now on."""

    folder: Path
    reused: bool  # the same model was made before: its folder, nothing computed

    @property
    def converted(self) -> str:
        """Its name in the sidebar's list, for a conversion (runs/albertized/, runs/relaxed/: checkpoint.discover)."""
        return f"converted:{self.folder.name}"


def make(what: str, into: Callable[..., tuple[Path, bool]], folder: str, stem: str, *args: Any, reused: str,
         **kwargs: Any) -> Made:
    """`into(runs/<folder>, stem, *args, quota=the app's, **kwargs)` in this visitor's turn of the heavy
    lane (`what`: the words a wait is told in); `reused` is said, with the folder's name, when the same
    model was made before. The sidebar's list of checkpoints is read again: it lists the new one."""
    loading.import_model_code()  # the makers are torch's: never beside the warm-up's import
    part = Part.call(what, into, runs_dir() / folder, stem, *args, quota=limits.APP_DISK_QUOTA, **kwargs)
    [(out, was)] = runner.run([part], keep=False)  # a folder on disk: the library finds the same model made before
    if was:
        st.toast(f"{reused}: {out.name} is reused.", icon=":material/recycling:")
    loading.available_checkpoints.clear()  # listed from now on
    return Made(out, was)


def offer(name: str, folder: str, key: str) -> None:
    """A button that picks the checkpoint made (`name` in the sidebar, its `folder`) in the sidebar."""
    if st.button(f"Pick {name} in the sidebar", key=key):
        picker.add_checkpoint(name, folder)
