"""The app's pages, listed once: navigation (app/main.py), the classroom presets, the UI
tests, the screenshots script and the app benchmark all read this list.

Each page is a folder of its own, `app/rooms/<stem>/`, whose `page.py` Streamlit runs and
whose other modules (views, figures, forms, caches) belong to that page alone. The folder is
called rooms, not pages: a `pages/` folder beside app/main.py switches Streamlit into its
legacy multipage mode. Adding a page is one folder and one row below. No Streamlit import
here: scripts and tests read the list without starting an app."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

ROOMS = Path(__file__).resolve().parent.parent / "rooms"


@dataclass(frozen=True)
class Room:
    stem: str  # the folder under app/rooms/ and the page's address (/<stem>; the default page lives at /)
    title: str  # in the navigation
    heading: str  # the page's own title (its h1)
    icon: str  # a Material icon
    section: str  # the navigation's group
    image: str  # docs/app-<image>-<theme>.png, the page's screenshot

    @property
    def script(self) -> Path:
        return ROOMS / self.stem / "page.py"

    @property
    def url_path(self) -> str:
        return "" if self.stem == DEFAULT else self.stem


DEFAULT = "model_card"
PAGES: tuple[Room, ...] = (
    Room("model_card", "Model card", "Model card", ":material/badge:", "Models", "model-card"),
    Room("parameters", "Parameters", "Parameters and compute", ":material/calculate:", "Models", "parameters"),
    Room("oscillation", "Oscillation", "Layer-wise oscillation", ":material/ssid_chart:", "Inside the network", "oscillation"),
    Room("gradient_flow", "Gradient flow", "Gradient flow", ":material/waterfall_chart:", "Inside the network", "gradient-flow"),
    Room("shared_block", "Shared layer, applied again", "A shared layer, applied again", ":material/repeat:",
         "Inside the network", "shared-layer"),
    Room("sentence_pairs", "Sentence pairs", "Sentence pairs: SOP vs NSP", ":material/compare_arrows:", "Tasks", "sentence-pairs"),
    Room("training", "Training", "Training", ":material/model_training:", "Tasks", "training"),
    Room("depth_lab", "Depth lab", "Depth lab", ":material/stacked_line_chart:", "Tasks", "depth-lab"),
)
BY_STEM = {room.stem: room for room in PAGES}
# Pages that do not import torch (a test checks): they draw without the model code's import
# (app/shell/serve.py), which every other page does or waits for; they wait only while it runs.
LIGHT = ("model_card", "parameters")


def room(stem: str) -> Room:
    return BY_STEM[stem]


def sections() -> dict[str, list[Room]]:
    """The navigation's groups, in the order their first page is listed."""
    groups: dict[str, list[Room]] = {}
    for page in PAGES:
        groups.setdefault(page.section, []).append(page)
    return groups


def address(base: str, stem: str) -> str:
    """The page's address on a served app (`base` without a trailing slash)."""
    path = BY_STEM[stem].url_path
    return f"{base}/{path}" if path else base
