"""Links made before the widget keys were derived from the room and the option (registry.Room.key) still
open: each page's link carries the names it carried then, and those names restore the widgets whose keys
changed (params_tab and curve_axis were the keys themselves; now calc_tab and calc_curve_axis)."""

from conftest import goto, link_of, opened_by_link

from app.shell.registry import PAGES

# The names in each page's link on its default view, as links were made with hand-picked keys.
LINK_NAMES = {
    "model_card": {"ckpt", "card_checkpoint"},
    "parameters": {"ckpt", "calc_preset", "calc_fam", "calc_v", "calc_h", "calc_l", "calc_e", "calc_heads", "calc_ffn",
                   "calc_seq", "calc_share", "calc_groups", "calc_inner", "curve_axis", "params_tab"},
    "oscillation": {"ckpt", "osc_input", "osc_agg"},
    "gradient_flow": {"ckpt", "gf_checkpoint", "gf_objective", "gf_seed"},
    "shared_block": {"ckpt", "sb_input", "sb_repeat", "sb_section", "sb_seed"},
    "sentence_pairs": {"ckpt", "pair_a", "pair_b"},
    "training": {"ckpt", "tr_preset"},
    "depth_lab": {"ckpt", "dl_depth", "dl_dropout", "dl_init", "dl_std", "dl_steps", "dl_variants", "dl_width"},
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
