"""What the installed torch can compute on, read from its build without importing it.

Importing torch takes about 1.6 s of a 2-core CPU. The workbench's first page (the model
card, drawn from a checkpoint's files) needs to know only which devices the sidebar
offers; for a CPU-only build of torch (the pinned wheel) the answer is in the build's
version file, so the page draws while torch imports in the background.
"""

from __future__ import annotations

import functools
import importlib.util
import re
import sys
from pathlib import Path


@functools.cache
def cpu_only() -> bool:
    """True when the installed torch was built without CUDA and ROCm and cannot use MPS (not
    an Apple-silicon Mac): it computes on the CPU alone. False when unsure (torch is then
    imported and asked)."""
    if sys.platform == "darwin":
        return False  # MPS depends on the machine, not the build
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return False
    try:
        text = (Path(next(iter(spec.submodule_search_locations))) / "version.py").read_text()
    except OSError:
        return False
    return all(re.search(rf"^{field}\s*(?::[^=]*)?=\s*None\s*$", text, re.M) for field in ("cuda", "hip"))


def known_devices() -> list[str] | None:
    """The devices torch can use, in the order 'auto' prefers them, when the build alone
    says so (["cpu"]); None when only an imported torch can tell (see devices.available_devices)."""
    return ["cpu"] if cpu_only() else None
