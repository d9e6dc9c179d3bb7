"""What the sidebar picked, read once per script run as a typed value: the checkpoints, the
device and dtype, the added folders and the casings given (app.shell.runner runs the analyses
on it, keyed on its `key`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from albert_lab.checkpoint.files import stamp
from app.shell import loading
from app.shell.guard import guard
from app.shell.places import cased_form, link_form
from app.shell.state import shell, widget

if TYPE_CHECKING:
    from albert_lab.checkpoint.load import ModelBundle


@dataclass(frozen=True)
class Selection:
    checkpoints: tuple[tuple[str, str], ...]  # (name, source) in the sidebar's order
    device: str = "auto"  # the sidebar's choice: 'auto', 'cpu', 'cuda', 'mps'
    dtype: str = "float32"
    added: tuple[str, ...] = ()  # the names of folders added in the sidebar (a link carries their path)
    casings: tuple[tuple[str, str], ...] = ()  # (name, 'cased' or 'uncased'): a release's casing given in the sidebar

    @classmethod
    def read(cls) -> Selection:
        """The sidebar's pick (app.shell.picker writes these keys; everything else reads them here)."""
        checkpoints = tuple(tuple(c) for c in shell().selected)
        extra, casings = shell().extra_sources, shell().casings
        return cls(checkpoints, widget("device", "auto"), widget("dtype", "float32"),
                   tuple(name for name, _ in checkpoints if name in extra),
                   tuple((name, casings[name]) for name, _ in checkpoints if name in casings))

    def casing(self, name: str) -> str | None:
        """The casing given in the sidebar for the release picked as `name`; None: the release's own."""
        return dict(self.casings).get(name)

    def link(self) -> str:
        """The checkpoints as the link's ?ckpt= carries them: names, and added folders by their
        place under the allowed folders (places.link_form: no absolute server path), after
        'cased:' or 'uncased:' where a release's casing was given in the sidebar."""
        escape = lambda text: text.replace("%", "%25").replace(",", "%2C")  # a folder may hold a comma
        return ",".join(escape(cased_form(link_form(source), self.casing(name)) if name in self.added else name)
                        for name, source in self.checkpoints)

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self.checkpoints]

    def only(self, names: Sequence[str]) -> Selection:
        """The same device and dtype for these checkpoints, in the order given."""
        sources = dict(self.checkpoints)
        return replace(self, checkpoints=tuple((name, sources[name]) for name in names),
                       casings=tuple((name, casing) for name, casing in self.casings if name in names))

    def on_cpu(self, name: str, source: str) -> Selection:
        """This one checkpoint, picked in the sidebar or not (a page's own choice among those listed), on
        the CPU in float32: for work the library does there whatever the sidebar says (relax)."""
        return Selection(((name, source),), "cpu", "float32", casings=tuple((n, c) for n, c in self.casings if n == name))

    def stamps(self) -> tuple[float, ...]:
        """The checkpoint files' stamps (checkpoint.files.stamp): a rewritten folder is a new key."""
        return tuple(stamp(source) for _, source in self.checkpoints)

    def key(self) -> tuple:
        """What a result computed on this selection depends on: checkpoints, device,
        dtype, the casings given and the files' stamps (for app.shell.runner's kept results)."""
        return self.checkpoints, self.device, self.dtype, self.casings, self.stamps()

    def bundles(self) -> list[ModelBundle]:
        return [loading.load_bundle(source, name, self.device, self.dtype, self.casing(name)) for name, source in self.checkpoints]

    def usable_bundles(self) -> list[ModelBundle]:
        """The picked checkpoints that load; each one that does not is named in an error
        box on the page, and the others are used."""
        bundles = []
        for name, source in self.checkpoints:
            with guard(f"loading {name}"):
                bundles.append(loading.load_bundle(source, name, self.device, self.dtype, self.casing(name)))
        return bundles

    def card(self, name: str) -> dict[str, Any]:
        """The model card of the picked checkpoint `name` (loading.checkpoint_card: from its files
        when they say enough, else loaded on this selection's device and dtype; a casing given
        in the sidebar is the card's)."""
        return loading.checkpoint_card(dict(self.checkpoints)[name], name, self.device, self.dtype, self.casing(name))
