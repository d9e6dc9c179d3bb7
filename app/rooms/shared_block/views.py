"""The Shared layer page's four analyses, one view each: depth extrapolation, the logit
lens, attention at every application, and linear CKA."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from albert_lab.analysis.attention import attention_entropy, attention_maps
from albert_lab.analysis.cka import layer_cka
from albert_lab.analysis.common import checkpoint_notes
from albert_lab.analysis.extrapolation import extrapolate, extrapolation_verdict
from albert_lab.analysis.lens import lens_predictions, logit_lens
from albert_lab.analysis.registry import EXTRAPOLATE
from albert_lab.figures import shared_block
from albert_lab.figures.head_view import HEAD_VIEW_TOKENS, head_view_html
from app.shell import costs, draw, links, runner
from app.shell.built import shared
from app.shell.guard import guard
from app.shell.registry import keys
from app.shell.runner import Part
from app.shell.selection import Selection
from app.shell.state import set_widget, widget
from app.shell.text import plain

figures = shared(shared_block)  # the library's figures, built once for every visitor

key = keys(__file__)  # this room's widget keys
MASKED_ACCURACY = ("Accuracy here counts tokens replaced by [MASK], all of them. The model card's MLM accuracy follows "
                   "the training recipe instead: of the tokens to predict, 10% are left as they are (easy to get right) "
                   "and 10% replaced by a random token, so the card's number reads higher. The two are not comparable.")
# Attention drawn three ways: one head (raw and norm-weighted side by side), and bertviz's head view (every head of one
# application) and model view (every application and head), of the raw weights or the norm-weighted ones
ATTENTION_VIEWS = ["One head", "Head view", "Model view"]
MEASURES = {"raw weights": "weight", "norm-weighted": "norm_weighted"}
LINKED = 10_000  # bound of a link's application and head: checked against the maps once they are computed


def lens_and_top_k(bundles: list, texts: list[str], watched: str, repeat: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The lens over the texts and the watched token's top-k: one cached computation."""
    return logit_lens(bundles, texts, repeat, seed=seed), lens_predictions(bundles, watched, repeat=repeat)


def cka_of(bundles: list, texts: list[str], repeat: int) -> pd.DataFrame:
    """CKA of the first model with itself, or with the second."""
    return layer_cka(bundles[0], texts, bundles[1] if len(bundles) > 1 else None, repeat)


def extrapolation_section(chosen: Selection, texts: tuple[str, ...], repeat: int, seed: int) -> None:
    """Where the states go when the shared block runs past its depth, with a verdict per checkpoint."""
    st.header("1. Depth extrapolation")
    with guard("depth extrapolation"):
        frames = runner.run([Part.of(n, chosen.only([n]), extrapolate, list(texts), repeat, seed=int(seed),
                                     units=costs.record_units(EXTRAPOLATE, chosen.card(n), texts, repeat=repeat))
                             for n in chosen.names], EXTRAPOLATE.cost, each=True)
        if not frames:  # a Stop came before the first checkpoint was done
            return
        frame = pd.concat(frames, ignore_index=True)
        verdicts = extrapolation_verdict(frame)
        draw.chart(figures.extrapolation_figure(frame), "extrapolation")
        st.caption(MASKED_ACCURACY)
        for row in verdicts.itertuples():
            st.markdown(f"**{row.checkpoint}**: {row.verdict}: {row.words}")
        for name, note in checkpoint_notes(frame).items():
            if not any(note in words for words in verdicts[verdicts.checkpoint == name].words):  # said once
                st.caption(f"{name}: {note}")
        draw.download(frame, "extrapolation.csv")
        draw.paper_note("ALBERT's layers oscillate rather than converge (Figure 1), against the fixed point that Deep "
                      "Equilibrium Models posit (Bai et al. 2019); Universal Transformers (Dehghani et al. 2019) apply one "
                      "block a variable number of times. Here the trained block runs past its depth: converges = the last "
                      "step falls below 2% of a typical step within depth L (their median); cycles = the state comes back "
                      "within half its last step of a recent earlier state; slows down = the last step falls below half "
                      "a typical step within L, but the state still moves on; drifts = none of these.")


def lens_section(chosen: Selection, texts: tuple[str, ...], repeat: int, seed: int) -> None:
    """Every application read through the model's own MLM head, and one watched token's top-k."""
    st.header("2. Logit lens through the model's own MLM head")
    watched = st.text_input("Watch one token: type [MASK] where the model should fill in", key=key("watched"),
                            value="The capital of France is [MASK].")
    with guard("logit lens"):
        usable = [n for n, bundle in zip(chosen.names, chosen.bundles()) if bundle.heads.mlm != "missing"]
        for name in sorted(set(chosen.names) - set(usable)):
            st.warning(f"{name}: no MLM head in this checkpoint, so no logit lens (random head weights would mean nothing)")
        if usable:
            with st.spinner("Reading every layer through the MLM head ..."):
                [(lens, top)] = runner.run([Part.of("logit lens", chosen.only(usable), lens_and_top_k, list(texts), watched,
                                                    repeat, int(seed))])
            draw.chart(figures.lens_figure(lens), "lens")
            st.caption(MASKED_ACCURACY)
            captions_of_notes(lens)
            for name in top.checkpoint.unique():
                draw.chart(figures.top_k_figure(top, name), f"top_k-{name}")
            draw.download(lens, "logit_lens.csv")
            draw.download(top, "logit_lens_top_k.csv", "Download the top-k predictions (CSV)")
        draw.paper_note("The logit lens (nostalgebraist 2020) reads intermediate states with the output head. For an "
                      "encoder trained with MLM it shows at which depth the masked word becomes predictable; Tenney et "
                      "al. (2019) found BERT's lower layers resolve syntax and the upper ones semantics. A shared ALBERT "
                      "block reads a state it also wrote, so its lens can be read past depth L too.")


def attention_controls(picked: list[str]) -> tuple[links.Control, ...]:
    """The attention section's controls, declared once: the page restores them and puts them in its link."""
    return (links.Control(key("att_view"), ATTENTION_VIEWS[0], options=ATTENTION_VIEWS),
            links.Control(key("att_values"), next(iter(MEASURES)), options=list(MEASURES)),
            links.Control(key("att_model"), picked[0], options=picked),
            links.Control(key("app"), 1, links.parse_int(1, LINKED)), links.Control(key("head"), 0, links.parse_int(0, LINKED)))


def attention_section(chosen: Selection, texts: tuple[str, ...], repeat: int, seed: int) -> None:
    """One checkpoint's attention at every application, and every checkpoint's attention entropy."""
    st.header("3. Attention at every application")
    with guard("attention"):
        v, m = st.columns(2)
        view = v.radio("View", ATTENTION_VIEWS, horizontal=True, key=key("att_view"),
                       help="One head: raw and norm-weighted side by side. Head view: every head of one application, "
                            "as bertviz draws it. Model view: every application and head as thumbnails.")
        c, a, h = st.columns(3)
        name = c.selectbox("Checkpoint", chosen.names, key=key("att_model"))
        with st.spinner("Computing attention maps ..."):
            [maps] = runner.run([Part.of(name, chosen.only([name]), attention_maps, texts[0], repeat)])
        applications, heads = int(maps.application.max()), sorted(int(x) for x in maps["head"].unique())
        if not 1 <= widget(key("app"), 1) <= applications:  # a link's, or another checkpoint's
            set_widget(key("app"), applications)
        if widget(key("head"), 0) not in heads:
            set_widget(key("head"), heads[0])
        application = a.slider("Application", 1, applications, key=key("app")) if view != "Model view" else None
        if view == "One head":
            head = h.selectbox("Head", heads, key=key("head"))
            draw.chart(figures.attention_figure(maps, application, int(head)), "attention")
            st.caption(f"{name}, first text. Rows: the token that attends; columns: the token attended to.")
        else:
            measure = MEASURES[m.radio("Values", list(MEASURES), horizontal=True, key=key("att_values"))]
            every_head_view(maps, name, application, measure)
        with st.spinner("Computing attention entropy ..."):
            [entropy] = runner.run([Part.of("attention entropy", chosen, attention_entropy, list(texts), repeat)])
        draw.chart(figures.entropy_figure(entropy), "entropy")
        captions_of_notes(entropy)
        draw.download(entropy, "attention_entropy.csv")
        draw.download(maps, f"attention_maps_{name}.csv", "Download these maps (CSV)")
        draw.paper_note("The same query, key and value weights give different patterns at each application of a shared "
                      "block, because the states differ. Kobayashi et al. (2020) weigh each weight by the norm of the "
                      "vector it moves, ||alpha_ij f(x_j)||: heads that seem to stare at [CLS], [SEP] or punctuation "
                      "(Clark et al. 2019) often move little. Entropy: low = focused, high = broad (log(tokens) at most).")


def every_head_view(maps: pd.DataFrame, name: str, application: int | None, measure: str) -> None:
    """bertviz's head view of one application (`application`), or its model view (None), of the
    first tokens, with the maps drawn as CSV."""
    if application is not None:
        shown, tokens = figures.first_tokens(maps[maps.application == application], HEAD_VIEW_TOKENS)
        st.html(head_view_html(shown, application, measure), unsafe_allow_javascript=True)  # its text escaped, as data
        st.caption(f"{plain(name)}, first text, application {application}. Left: the token that attends; right: the "
                   "tokens it attends to; one colour per head, the sharpest head shown at first; the stronger the value, "
                   "the more opaque the line (under 4% of the largest, none).")
        limit, file = HEAD_VIEW_TOKENS, f"attention_head_view_{name}_application{application}.csv"
    else:
        shown, tokens = figures.first_tokens(maps, figures.MODEL_VIEW_TOKENS)
        draw.chart(figures.model_view_figure(shown, measure), f"attention_model_view_{name}")
        st.caption(f"{plain(name)}, first text. In each thumbnail, rows: the token that attends; columns: the token "
                   "attended to; one colour scale for all. Hover a cell for its application, head, tokens and value. "
                   "Past the dotted line, the rows are the shared block applied again beyond the depth it was trained at.")
        limit, file = figures.MODEL_VIEW_TOKENS, f"attention_model_view_{name}.csv"
    if tokens > limit:
        st.caption(f"The first {limit} of the text's {tokens} tokens are drawn: what they give to later tokens is left "
                   "out (the maps' CSV below holds every token).")
    draw.download(shown, file, "Download the maps drawn (CSV)")


def cka_controls(picked: list[str]) -> tuple[links.Control, links.Control]:
    """The CKA section's two pickers, declared once: the page restores them and puts them in its link."""
    return (links.Control(key("cka_x"), picked[0], options=picked),
            links.Control(key("cka_y"), "(itself)", options=["(itself)", *picked]))


def cka_section(chosen: Selection, texts: tuple[str, ...], repeat: int, seed: int) -> None:
    """Linear CKA between the layers of one model, or of two."""
    st.header("4. Layer similarity (linear CKA)")
    with guard("CKA"):
        names = chosen.names
        model, other = cka_controls(names)
        first = st.selectbox("Model", names, key=model.key)
        others = ["(itself)", *[n for n in names if n != first]]
        if other.value not in others:  # the model picked first cannot be compared with itself twice
            set_widget(other.key, others[0])
        second = st.selectbox("Compare with", others, key=other.key)
        with st.spinner("Computing CKA ..."):
            [cka] = runner.run([Part.of("CKA", chosen.only([first] + ([second] if second != "(itself)" else [])), cka_of,
                                        list(texts), repeat)])
        draw.chart(figures.cka_figure(cka), "cka")
        st.warning(f"Caution: {cka.note.iloc[0]}.", icon=":material/warning:")
        draw.download(cka, "cka.csv")
        draw.paper_note("Linear CKA (Kornblith et al. 2019) compares representations up to rotation and scale. In a shared "
                      "ALBERT neighbouring applications look alike (the smooth transitions of Figure 1); across ALBERT and "
                      "BERT it asks whether the two reach similar states at similar depths.")


def captions_of_notes(frame) -> None:
    """What an analysis could not do for each checkpoint, as captions."""
    for checkpoint, note in checkpoint_notes(frame).items():
        st.caption(f"{checkpoint}: {note}")
