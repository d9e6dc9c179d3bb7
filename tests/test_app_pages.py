"""Every page of the registry, opened in AppTest on the shipped checkpoints: drawn without an
exception or an error box, under its own heading, with something to look at, its link carrying the
names its links had (tests/test_app_links.py). A page added to app/shell/registry.py is tested here
without a test written for it."""

from __future__ import annotations

import pytest
from conftest import goto, link_of
from test_app_links import LINK_NAMES

from app.shell.registry import PAGES


@pytest.mark.parametrize("room", PAGES, ids=[room.stem for room in PAGES])
def test_every_page_of_the_registry_draws(app, room):
    at = goto(app, room.stem)
    assert not at.error, [e.value for e in at.error]
    assert any(room.heading in h.value for h in at.title), [h.value for h in at.title]
    drawn = [*at.markdown, *at.caption, *at.dataframe, *at.table, *at.get("plotly_chart"), *at.button, *at.selectbox]
    assert len(drawn) >= 3, f"{room.stem} drew {len(drawn)} elements"
    names, old = set(link_of(at)), LINK_NAMES.get(room.stem, {"ckpt"})  # a page made since has no old links
    assert old <= names, old - names  # today's names: old links still restore
    # any other name is a key of the room's (registry.Room.key): a new control or page needs no edit here
    assert all(n.startswith(room.prefix + "_") for n in names - old), names
