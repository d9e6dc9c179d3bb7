"""Links made before the widget keys were derived from the room and the option (registry.Room.key) still
open: each page's link carries the names it carried then, and those names restore the widgets whose keys
changed (params_tab and curve_axis were the keys themselves; now calc_tab and calc_curve_axis)."""

import pytest
from conftest import goto, link_of, opened_by_link

# Links as each page made them before its controls were drawn from option rows: today's names, each with a value
# that is not the default, and the widget (its key) the value goes to. These names are history, kept exactly: a
# name in a link is the widget's key, `Room.key(option)` (calc_v), but for a widget drawn once per preset (the
# calculator's: calc_v_albert-large) and for the names links had before keys were derived (params_tab, curve_axis).
OLD_LINKS: dict[str, dict[str, tuple[str, object, str | None]]] = {  # name: (in the link, the widget's value, its key)
    "model_card": {"card_checkpoint": ("bert-nsp", "bert-nsp", None)},
    "parameters": {"calc_preset": ("albert-large", "albert-large", None), "calc_fam": ("albert", "albert", "calc_fam_albert-large"),
                   "calc_v": ("20000", 20000, "calc_v_albert-large"), "calc_h": ("512", 512, "calc_h_albert-large"),
                   "calc_l": ("6", 6, "calc_l_albert-large"), "calc_e": ("64", 64, "calc_e_albert-large"),
                   "calc_heads": ("8", 8, "calc_heads_albert-large"), "calc_ffn": ("2048", 2048, "calc_ffn_albert-large"),
                   "calc_seq": ("256", 256, None), "calc_share": ("ffn", "ffn", "calc_share_albert-large"),
                   "calc_groups": ("2", 2, "calc_groups_albert-large"), "calc_inner": ("2", 2, "calc_inner_albert-large"),
                   "curve_axis": ("L (layers)", "L (layers)", "calc_curve_axis"), "params_tab": ("Curves", "Curves", "calc_tab")},
    "oscillation": {"osc_input": ("My text", "My text", None), "osc_agg": ("median", "median", None),
                    "osc_text": ("A short text.", "A short text.", None)},
    "gradient_flow": {"gf_tab": ("A checkpoint, now", "A checkpoint, now", None), "gf_checkpoint": ("bert-nsp", "bert-nsp", None),
                      "gf_objective": ("none", "none", None), "gf_seed": ("7", 7, None)},
    "shared_block": {"sb_input": ("My text", "My text", None), "sb_text": ("A short text.", "A short text.", None),
                     "sb_repeat": ("3", 3, None), "sb_seed": ("5", 5, None),
                     "sb_section": ("2.", "2. Logit lens through the model's own MLM head", None)},
    "sentence_pairs": {"pair_a": ("It rained.", "It rained.", None), "pair_b": ("The roads were wet.", "The roads were wet.", None),
                       "pair_tab": ("Type a pair", "Type a pair", None)},
    "training": {"tr_preset": ("lab-tiny", "lab-tiny", None), "tr_tab": ("New run", "New run", None)},
    "depth_lab": {"dl_tab": ("Deep MLP on the disc", "Deep MLP on the disc", None), "dl_depth": ("2", 2, None),
                  "dl_width": ("8", 8, None), "dl_init": ("he", "he", None), "dl_std": ("0.5", 0.5, None),
                  "dl_steps": ("50", 50, None), "dl_dropout": ("0.1", 0.1, None), "dl_variants": ("residual", ["residual"], None),
                  "dl_vgg_steps": ("100", 100, None), "dl_vgg_lr": ("0.05", 0.05, None)},
}
# The names each page's link carries on its default view, whatever else its room's keys add (each page's link is
# checked where every page is drawn: tests/test_app_pages.py): the checkpoints picked and every name above.
TYPED = {"osc_text", "sb_text"}  # a typed text travels only when the page reads it: the built-in sample needs none
LINK_NAMES = {page: {"ckpt", *link} - TYPED for page, link in OLD_LINKS.items()}


@pytest.mark.parametrize("page", list(OLD_LINKS))
def test_an_old_link_restores_each_control(app, page):
    """Links made before the controls were drawn from option rows keep their names, and each name its control."""
    link = {name: raw for name, (raw, _, _) in OLD_LINKS[page].items()}
    fresh = opened_by_link({"ckpt": "albert-sop,bert-nsp", **link}, page)
    assert not fresh.exception, [e.value for e in fresh.exception]
    for name, (_, value, key) in OLD_LINKS[page].items():
        assert fresh.session_state[key or name] == value, name
    assert {n: v for n, v in link_of(fresh).items() if n in link} == link  # and the page's link keeps them


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


def test_a_click_whose_run_the_next_click_stopped_is_not_undone_by_the_old_link(app, monkeypatch):
    """A visitor opens the Upload tab and drops a file at once: the tab's run is stopped before it writes
    the link, so the upload's run comes with the old link (the first tab). That is no new link: the tab
    stays open (it went back to the first tab, the upload's results hidden behind it, in Chromium)."""
    from app.shell import links

    at = goto(app, "depth_lab")
    old = link_of(at)["dl_tab"]
    at.session_state["dl_tab"] = "VGG-8 vs VGG-38"
    monkeypatch.setattr(links, "publish", lambda: None)  # the run stopped before the end of the page
    at.run()
    monkeypatch.undo()
    at.query_params["dl_tab"] = old  # what the next run's request carries: the link as it last was
    at.run()
    assert not at.exception and at.session_state["dl_tab"] == "VGG-8 vs VGG-38"
    assert link_of(at)["dl_tab"] == "VGG-8 vs VGG-38"
