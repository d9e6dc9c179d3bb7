"""Links made before the widget keys were derived from the room and the option (registry.Room.key) still
open: each page's link carries the names it carried then, and those names restore the widgets whose keys
changed (params_tab and curve_axis were the keys themselves; now calc_tab and calc_curve_axis)."""

import pytest
from conftest import goto, link_of, opened_by_link

from app.shell.registry import PAGES

# The names in each page's link on its default view, as links were made with hand-picked keys.
LINK_NAMES = {
    "model_card": {"ckpt", "card_checkpoint"},
    "parameters": {"ckpt", "calc_preset", "calc_fam", "calc_v", "calc_h", "calc_l", "calc_e", "calc_heads", "calc_ffn",
                   "calc_seq", "calc_share", "calc_groups", "calc_inner", "curve_axis", "params_tab"},
    "oscillation": {"ckpt", "osc_input", "osc_agg"},
    "gradient_flow": {"ckpt", "gf_tab", "gf_checkpoint", "gf_objective", "gf_seed"},
    "shared_block": {"ckpt", "sb_input", "sb_repeat", "sb_section", "sb_seed"},
    "sentence_pairs": {"ckpt", "pair_a", "pair_b", "pair_tab"},  # the tabs since links keep them (links.tabs)
    "training": {"ckpt", "tr_preset", "tr_tab"},
    "depth_lab": {"ckpt", "dl_tab", "dl_depth", "dl_dropout", "dl_init", "dl_std", "dl_steps", "dl_variants", "dl_width",
                  "dl_vgg_steps", "dl_vgg_lr"},  # the VGG tab's settings since links keep them
}


def test_every_page_links_the_names_its_links_had(app):
    at = app
    for page in PAGES:
        at = goto(at, page.stem)
        assert set(link_of(at)) == LINK_NAMES[page.stem], page.stem


def test_an_old_link_restores_the_widgets_whose_keys_changed(app):
    fresh = opened_by_link({"params_tab": "Curves", "curve_axis": "L (layers)", "calc_preset": "albert-large",
                            "calc_l": "6"}, "parameters")
    assert not fresh.exception, [e.value for e in fresh.exception]
    assert fresh.session_state["calc_tab"] == "Curves" and fresh.radio(key="calc_curve_axis").value == "L (layers)"
    assert fresh.selectbox(key="calc_preset").value == "albert-large" and fresh.number_input(key="calc_l_albert-large").value == 6
    link = link_of(fresh)
    assert (link["params_tab"], link["curve_axis"], link["calc_l"]) == ("Curves", "L (layers)", "6")


@pytest.mark.parametrize(("page", "name", "tab"), [("sentence_pairs", "pair_tab", "Table 5"), ("training", "tr_tab", "Compare runs"),
                                                  ("depth_lab", "dl_tab", "VGG-8 vs VGG-38"),
                                                  ("gradient_flow", "gf_tab", "Over a training run")])
def test_a_link_opens_its_tab(app, page, name, tab):
    """A link made on a page's second or later tab opened on its first."""
    fresh = opened_by_link({name: tab}, page)
    assert not fresh.exception, [e.value for e in fresh.exception]
    assert fresh.session_state[name] == tab and link_of(fresh)[name] == tab
    assert opened_by_link({name: "No such tab"}, page).session_state[name] != "No such tab"  # the first tab, not an error


def test_a_link_keeps_the_vgg_settings(app):
    """The VGG tab's steps and learning rate were not in the link: it opened on the shipped 300 steps at lr 0.1."""
    at = goto(app, "depth_lab")
    at.session_state["dl_tab"] = "VGG-8 vs VGG-38"
    at.slider(key="dl_vgg_steps").set_value(100)
    at.select_slider(key="dl_vgg_lr").set_value(0.05).run()
    link = link_of(at)
    assert (link["dl_tab"], link["dl_vgg_steps"], link["dl_vgg_lr"]) == ("VGG-8 vs VGG-38", "100", "0.05")
    fresh = opened_by_link(link, "depth_lab")
    assert not fresh.exception, [e.value for e in fresh.exception]
    assert fresh.slider(key="dl_vgg_steps").value == 100 and fresh.select_slider(key="dl_vgg_lr").value == 0.05
    assert any("conv nets of 100 steps" in c.value for c in fresh.caption)  # the estimate of these settings, no training
    assert opened_by_link({"dl_vgg_steps": "75", "dl_vgg_lr": "0.3"}, "depth_lab").slider(key="dl_vgg_steps").value == 300


def test_a_link_made_after_an_upload_opens_the_upload_tab_and_says_the_file_is_not_in_it(app):
    from app.rooms.sentence_pairs.upload import LINKED_NOTE, MAKER_NOTE

    at = goto(app, "sentence_pairs")
    at.session_state["pair_tab"] = "Upload pairs"  # what a click on the tab does
    at.file_uploader(key="pair_file").set_value(("pairs.csv", b"sentence_a,sentence_b,label\nThe Nile is long.,It flows north.,0\n",
                                                  "text/csv"))
    at.run()
    assert MAKER_NOTE in [c.value for c in at.caption]  # the maker is told the file stays theirs
    link = link_of(at)
    assert link["pair_tab"] == "Upload pairs" and "pairs.csv" not in str(link)
    fresh = opened_by_link(link, "sentence_pairs")
    assert not fresh.exception, [e.value for e in fresh.exception]
    assert fresh.session_state["pair_tab"] == "Upload pairs" and fresh.file_uploader(key="pair_file").value is None
    assert LINKED_NOTE in [i.value for i in fresh.info]
    assert not any("scored from" in h.value for h in fresh.subheader)  # nothing of the maker's file


def test_a_links_numbers_are_read_in_ascii_only():
    """int() and float() read '١٢' and '１２' as 12: a link's number is ASCII digits, or ignored."""
    from app.shell.links import parse_float, parse_int

    assert parse_int(1, 48)("12") == 12 and parse_int(50, 600, step=50)("100") == 100
    assert [parse_int(1, 48)(t) for t in ("\u0661\u0662", "\uff11\uff12", "\u00b2", "1_2", "1" * 5000)] == [None] * 5
    assert parse_float(0.0, 0.99)("0.5") == 0.5
    assert [parse_float(0.0, 2.0)(t) for t in ("\uff11.5", "nan", "1_0", "0." + "1" * 5000)] == [None] * 4
