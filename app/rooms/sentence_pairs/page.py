"""Sentence pairs: SOP and NSP heads side by side on pairs typed or uploaded, token
attributions for one decision, and the paper's Table 5 beside ours: one module per tab."""

import streamlit as st

from albert_lab.paper import TABLE5
from app.rooms.sentence_pairs import attributions, table5, typed, upload
from app.rooms.sentence_pairs.common import PairsState
from app.shell import draw, links, loading
from app.shell.registry import keys
from app.shell.selection import Selection
from app.shell.state import kept

key = keys(__file__)  # this room's widget keys
TABS = ["Type a pair", "Upload pairs", "Token attributions", "Table 5"]

st.caption("P(label 0) from each checkpoint's pair head: for an SOP head, P(A then B is the original order); "
           "for an NSP head, P(B is the next segment after A). Each pair is also scored swapped (B → A).")

if loading.need_checkpoints():
    bundles = Selection.read().usable_bundles()
    (tab_type, tab_upload, tab_attr, tab_table5), linked = links.tabs(TABS, key("tab"))
    if linked:  # a link opened on the upload tab says why its uploader is empty (upload.upload_tab)
        kept(PairsState).linked_upload = tab_upload.open
    with tab_type:
        pair_a, pair_b = typed.typed_tab(bundles)

    with tab_upload:
        upload.upload_tab(bundles)
        draw.paper_note("Table 5, on the paper's own held-out pairs, not your file: ALBERT-base trained with NSP scores "
                      f"{TABLE5['nsp'][2] / 100:.3f} on SOP, chance, while trained with SOP it scores "
                      f"{TABLE5['sop'][1] / 100:.3f} on NSP. NSP "
                      "mostly learns topic shift; SOP forces a model to learn coherence. A small file can land far from "
                      "these: read its intervals above.")

    with tab_attr:
        attributions.attribution_tab(bundles, pair_a, pair_b)

    with tab_table5:
        table5.table5_tab(bundles)
