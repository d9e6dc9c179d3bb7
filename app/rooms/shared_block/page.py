"""A shared layer, applied again: depth extrapolation, the logit lens, attention per
application and CKA between layers and between models."""

import streamlit as st

from albert_lab.analysis.registry import EXTRAPOLATE
from albert_lab.data.samples import sample_texts
from app.rooms.shared_block import views as reapply_views
from app.shell import draw, links, loading, rows
from app.shell.registry import keys
from app.shell.selection import Selection

key = keys(__file__)  # this room's widget keys
INPUTS = ["Built-in sample (held-out Wikipedia)", "My text"]
SECTIONS = ["1. Depth extrapolation", "2. Logit lens through the model's own MLM head", "3. Attention at every application",
            "4. Layer similarity (linear CKA)"]
# The controls' bounds and defaults: the records' (the seed and K are the same options in extrapolate,
# logit-lens and the rest; the page starts at extrapolate's K, its first section), as on the command line
FORM = rows.Form(key, {
    "repeat": (EXTRAPOLATE.option("repeat"), rows.Widget("Apply the shared block k x L times", kind="slider",
                                                         help="k = 1 is the model as trained; unshared models (BERT) always stop at L")),
    "seed": (SEED := EXTRAPOLATE.option("seed"), rows.Widget("Seed of the masked tokens (15% of each text)",
                                                             help=f"{SEED.bounds.words()}, as the command line's `--seed`"))})
EXAMPLE = "The river flows through the old town. Its bridges date from the middle ages."

if loading.need_checkpoints():
    chosen = Selection.read()
    picked = chosen.names
    controls = links.Controls(
        links.Control(key("input"), INPUTS[0], options=INPUTS), links.Control(key("text"), EXAMPLE),
        *FORM.controls(),
        links.Control(key("section"), SECTIONS[0], lambda raw: next((s for s in SECTIONS if s.startswith(raw)), None)),
        *reapply_views.cka_controls(picked), *reapply_views.attention_controls(picked))
    controls.restore()
    source = st.radio("Input", INPUTS, horizontal=True, key=key("input"))
    if source.startswith("My"):
        text = st.text_area("Texts, separated by blank lines", height=120, key=key("text"))
        texts = tuple(t for t in text.split("\n\n") if t.strip())
        draw.warn_unreadable(texts)
    else:
        texts = tuple(sample_texts(8))
        st.caption(f"{len(texts)} held-out lead sections, e.g. \u201c{texts[0][:140]}...\u201d")
    left, right = st.columns(2)
    repeat, seed = FORM.draw(left, "repeat"), FORM.draw(right, "seed")
    # One section at a time: the first visit computes one analysis, not four for every model.
    section = st.radio("Analysis", SECTIONS, horizontal=True, key=key("section"))
    cka = section.startswith("4.")  # 'Compare with' travels in the link of the CKA section only
    # the attention section's view, checkpoint, application, head and values travel in its link only
    attention = {} if section.startswith("3.") else {c.short: None for c in reapply_views.attention_controls(picked)}
    controls.share(text=text if source.startswith("My") else None, section=section.split(" ")[0],
                   **({} if cka else dict(cka_x=None, cka_y=None)), **attention)

    views = dict(zip(SECTIONS, [reapply_views.extrapolation_section, reapply_views.lens_section,
                                reapply_views.attention_section, reapply_views.cka_section]))
    views[section](chosen, texts, repeat, int(seed))
