"""The app's pages, listed once: navigation (app/main.py), the classroom presets, the UI
tests, the screenshots script and the app benchmark all read this list.

Each page is a folder of its own, `app/rooms/<stem>/`, whose `page.py` Streamlit runs and
whose other modules (views, figures, forms, caches) belong to that page alone. The folder is
called rooms, not pages: a `pages/` folder beside app/main.py switches Streamlit into its
legacy multipage mode. Adding a page is one folder and one row below. A room's widget keys are
derived here, from its row's prefix and the option's name (Room.key); a room gets its maker with
`keys(__file__)`. No Streamlit import here: scripts and tests read the list without starting an app."""

from __future__ import annotations

from collections.abc import Callable
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
    prefix: str  # what its widgets' keys start with (Room.key): short, no underscore, one room's own

    def key(self, option: str, *names: object) -> str:
        """The key of this room's widget for `option` ('depth' on the Depth lab: 'dl_depth'), the one
        way a room names a widget; `names` tell apart one widget a run, file or preset ('tr_loss_<run>')."""
        return "_".join((self.prefix, option, *map(str, names)))

    @property
    def script(self) -> Path:
        return ROOMS / self.stem / "page.py"

    @property
    def url_path(self) -> str:
        return "" if self.stem == DEFAULT else self.stem


DEFAULT = "model_card"
PAGES: tuple[Room, ...] = (
    Room("model_card", "Model card", "Model card", ":material/badge:", "Models", "model-card", "card"),
    Room("parameters", "Parameters", "Parameters and compute", ":material/calculate:", "Models", "parameters", "calc"),
    Room("oscillation", "Oscillation", "Layer-wise oscillation", ":material/ssid_chart:", "Inside the network", "oscillation",
         "osc"),
    Room("gradient_flow", "Gradient flow", "Gradient flow", ":material/waterfall_chart:", "Inside the network",
         "gradient-flow", "gf"),
    Room("shared_block", "Shared layer, applied again", "A shared layer, applied again", ":material/repeat:",
         "Inside the network", "shared-layer", "sb"),
    Room("sentence_pairs", "Sentence pairs", "Sentence pairs: SOP vs NSP", ":material/compare_arrows:", "Tasks",
         "sentence-pairs", "pair"),
    Room("training", "Training", "Training", ":material/model_training:", "Tasks", "training", "tr"),
    Room("depth_lab", "Depth lab", "Depth lab", ":material/stacked_line_chart:", "Tasks", "depth-lab", "dl"),
)
BY_STEM = {room.stem: room for room in PAGES}
# Pages that do not import torch (a test checks): they draw without the model code's import
# (app/shell/serve.py), which every other page does or waits for; they wait only while it runs.
LIGHT = ("model_card", "parameters")


def room(stem: str) -> Room:
    return BY_STEM[stem]


def keys(file: str) -> Callable[..., str]:
    """`Room.key` of the room whose folder holds `file`: a room's module, page.py included (Streamlit
    gives it its `__file__`), gets its keys with `key = keys(__file__)`, then `key("depth")`."""
    return room(Path(file).resolve().relative_to(ROOMS).parts[0]).key


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
