"""The Sentence pairs page's views: the scores table and its warnings, the upload's chart,
token attributions, and Table 5 (the paper's, the shipped checkpoints', and one measured
now behind a Stop)."""

from __future__ import annotations

import hashlib
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st

from albert_lab.analysis import evaluation  # evaluation_pairs through the module: a test stands in for it
from albert_lab.analysis.attribution import attribute_pair, attribution_html
from albert_lab.analysis.common import checkpoint_notes
from albert_lab.analysis.evaluation import evaluate, interior_accuracy, paper_table5, read_results, table5_cells
from albert_lab.analysis.pairs import labelled_accuracy, score_pairs, summarize, truncated_rows, unreadable_rows
from albert_lab.data.corpus import MAX_LEN, MAX_SEGMENT_CHARS
from albert_lab.data.pairs_file import read_pairs
from albert_lab.data.textfile import MAX_PAIR_ROWS, MAX_UPLOAD_MB
from albert_lab.paths import checkpoints_dir
from app.rooms.sentence_pairs import figures as pair_figures
from app.shell import costs, stoppable, ui
from app.shell.guard import guard
from app.shell.selection import Selection
from app.shell.state import kept, widget
from app.shell.text import fmt_bytes, fmt_duration, plural

EXAMPLE_A = "The Nile is a major north-flowing river in northeastern Africa."
EXAMPLE_B = "It flows into the Mediterranean Sea and is among the longest rivers in the world."


def results_path() -> Path:
    """The shipped checkpoints' evaluation rows (read on every run: the folder can change)."""
    return checkpoints_dir() / "results.json"


@st.cache_data(show_spinner=False)
def shipped_interior_accuracy(path: Path, stamp: float) -> dict[str, str]:
    """How well each shipped checkpoint orders held-out pairs from inside documents."""
    results = read_results(path)
    if results is None:
        return {}
    return {r.checkpoint: f"{r.accuracy:.2f} (95% interval {r.low:.2f}-{r.high:.2f}, {int(r.n):,} pairs)"
            for r in interior_accuracy(results).itertuples()}


def trust_caption() -> None:
    """How much to trust a typed pair's numbers: the shipped checkpoints' held-out accuracy."""
    path = results_path()
    known = shipped_interior_accuracy(path, path.stat().st_mtime if path.is_file() else 0.0)
    if known:
        st.caption("How much to trust these numbers: on held-out pairs from inside documents, the shipped "
                   "checkpoints order the two segments correctly with accuracy "
                   + "; ".join(f"**{name}** {text}" for name, text in known.items()) + " (chance is 0.50).")


@dataclass
class PairsState:
    """What the Sentence pairs page keeps between runs (app.shell.state.kept)."""

    t5_live: dict[str, pd.DataFrame] | None = None  # Table 5 measured now, by checkpoint
    t5_stopped: bool = False  # that measurement was stopped (the checkpoints finished are kept)
    upload: tuple[str, bytes] | None = None  # the last pairs file uploaded: name and bytes, kept for the session
    attribution: tuple[tuple, Any] | None = None  # the last attribution: its request and result

    def forget_upload(self) -> None:
        self.upload = None


def _stop_t5() -> None:
    kept(PairsState).t5_stopped = True


def live_table5(bundles: list) -> None:
    """Table 5 measured now on a sample of the held-out pairs, one checkpoint at a time
    behind a progress bar with a Stop button (the checkpoints finished are kept)."""
    cols = st.columns([1, 3])
    limit = cols[0].select_slider("Pairs per task", [50, 100, 200, 500], 100, key="t5_limit",
                                  help="A fixed random sample per task (SOP, NSP, MLM) and pairs set; more pairs, "
                                       "narrower intervals, longer wait")
    size = sum(map(_size, bundles))
    eta = ui.estimate("table5", limit * size, costs.SECONDS_PER_UNIT["table5"])
    pace = pace_words("table5")
    if cols[1].button(f"Evaluate the picked checkpoints now (about {fmt_duration(eta)} {pace})", key="t5_run"):
        state = kept(PairsState)
        state.t5_live, state.t5_stopped = {}, False
        bar, stop = st.progress(0.0, text="Building held-out pairs ..."), st.empty()
        stop.button("Stop", key="t5_stop", icon=":material/stop:", on_click=_stop_t5,
                    help="Stops after the task being scored; the checkpoints finished are kept")
        with guard("evaluation"):
            pairs, start = evaluation.evaluation_pairs(), time.perf_counter()
            for i, bundle in enumerate(bundles):
                def progress(f: float, what: str, i: int = i) -> None:
                    bar.progress((i + f) / len(bundles), text=f"Scoring {what} ({i + 1} of {len(bundles)}) ...")

                state.t5_live[bundle.name] = evaluate([bundle], pairs, limit=limit, progress=progress)
            ui.learn("table5", time.perf_counter() - start, limit * size)
        bar.empty()
        stop.empty()
    state = kept(PairsState)
    if done := state.t5_live:
        if state.t5_stopped:
            st.info(f"Stopped: {len(done)} of {len(bundles)} checkpoints scored.", icon=":material/stop_circle:")
        live = pd.concat(done.values(), ignore_index=True)
        cells, notes = table5_cells(live)
        st.dataframe(cells, hide_index=True, width="stretch")
        st.caption(f"A fixed sample of {limit:,} pairs per task and pairs set, so each cell's n counts what it "
                   "holds: MLM counts masked tokens; NSP all the pairs sampled; SOP those made as training makes "
                   "them, lead and interior their subsets (out of domain, few pairs are lead pairs). "
                   "`albert-lab evaluate` scores every pair.")
        for note in notes:
            st.caption(note)
        ui.download(live, "table5.csv")


def _size(bundle) -> float:
    """A model's forward cost relative to albert-sop's (H = 256, L = 6), the size the guesses are timed at."""
    return costs.size(bundle.spec)


def attribution_estimate(bundle, a: str, b: str, steps: int) -> tuple[float, float]:
    """Integrated gradients of this pair: (units of work, seconds expected), from app.shell.costs."""
    tokens = len(bundle.tokenizer(a, b)["input_ids"])
    units = costs.attribution_units(bundle.spec, steps, tokens)
    first = costs.FIRST_TIME_SECONDS["attribution"] if "captum" not in sys.modules else 0.0
    return units, ui.estimate("attribution", units, costs.SECONDS_PER_UNIT["attribution"]) + first


def pace_words(kind: str) -> str:
    return "at this server's pace so far" if ui.measured(kind) else "on two cores, longer when others use them"


COLUMNS = ["row", "sentence_a", "sentence_b", "checkpoint", "p_ab", "p_ba", "prediction", "label", "correct", "head",
           "head_status", "tokens"]  # the scores table, in this order: the pair, then what each checkpoint says of it
LABELS = {"head_status": "head is", "prediction": "predicts", "label": "your label", "sentence_a": "sentence A",
          "sentence_b": "sentence B"}
ROW_HELP = ("The pair's row in your file as a spreadsheet numbers it: the header is row 1, so the first pair is row 2 "
            "(in a .jsonl file, its line). Warnings and problems name rows the same way.")
LABEL_COLUMNS = ("accuracy", "order_accuracy", "labelled")  # the summary's columns about labels


def preferred_order(scores: pd.DataFrame) -> None:
    """Which order each head rates higher, the pair read both ways: a sharper question than
    P > 0.5 (a head can call both orders 'in order' and still prefer one; on ten ordinary
    pairs albert-sop-minilm was right 5 times of 10 by 0.5, 7 of 9 by the order it preferred)."""
    scored = scores.dropna(subset=["p_ab", "p_ba"])
    if scored.empty:
        return
    said = "; ".join(order_words(r.checkpoint, r.p_ab, r.p_ba) for r in scored.itertuples())
    st.markdown(f"Preferred order (the pair scored both ways): {said}.")
    st.caption("For an SOP head, the order it rates more likely original; for an NSP head, the order it rates more "
               "likely consecutive, which is about topic more than order. Comparing the two is a sharper question than "
               "P(label 0) > 0.5: a head may call both orders 'in order' and still prefer one.")


def rows_by_model(rows: dict[str, list[int]]) -> str:
    """'for albert-sop, 2 pairs (rows 3, 7); for bert-nsp, 1 pair (row 3)': the first ten rows of each."""
    def listed(found: list[int]) -> str:
        shown = ", ".join(map(str, found[:10])) + (" ..." if len(found) > 10 else "")
        return f"{plural(len(found), 'pair')} (row{'s' * (len(found) > 1)} {shown})"

    return "; ".join(f"for {name}, {listed(found)}" for name, found in rows.items())


def order_words(name: str, p_ab: float, p_ba: float) -> str:
    """'**name**: A → B (0.588 against 0.577)', to the table's three decimals; 'neither' when they are equal there."""
    if f"{p_ab:.3f}" == f"{p_ba:.3f}":
        return f"**{name}**: neither ({p_ab:.3f} both ways)"
    return f"**{name}**: {'A → B' if p_ab > p_ba else 'B → A'} ({max(p_ab, p_ba):.3f} against {min(p_ab, p_ba):.3f})"


def show_scores(scores: pd.DataFrame, key: str, bundles: Sequence = ()) -> None:
    for name, note in checkpoint_notes(scores).items():
        st.warning(f"{name}: {note} (see its model card)", icon=":material/warning:")
    by_model = list(scores.groupby("checkpoint", sort=False))  # each warning names the checkpoints it is about
    cut = {name: truncated_rows(group) for name, group in by_model}
    if named := {name: rows for name, rows in cut.items() if rows}:
        st.warning(f"Pairs longer than the {MAX_LEN} tokens a model reads were scored on their first {MAX_LEN}, the "
                   f"longer sentence cut first: {rows_by_model(named)}. Sentence order is judged at the boundary, so "
                   "shorter pairs say more.", icon=":material/content_cut:")
    if bundles:
        pairs = scores.drop_duplicates("row")
        ui.warn_special_tokens([*pairs.sentence_a, *pairs.sentence_b], {b.name: b.tokenizer for b in bundles})
    unknown = {name: unreadable_rows(group, ui.UNREADABLE) for name, group in by_model}
    if named := {name: rows for name, rows in unknown.items() if len(rows)}:
        said = "; ".join(f"{rows_by_model({name: list(rows.index)})}, up to {rows.max():.0%} of the pieces unknown"
                         for name, rows in named.items())
        st.warning(f"Pairs mostly made of text a model cannot read (pieces unknown to its vocabulary, learned from "
                   f"English text): {said}. Their scores from {'that model' if len(named) == 1 else 'those models'} say "
                   "little about sentence order.", icon=":material/translate:")
    if key == "typed":
        preferred_order(scores)
    shown = scores[COLUMNS].assign(  # words, and blanks where there is nothing to say
        prediction=scores.prediction.astype(object).map({0: "0: in order / next", 1: "1: swapped / random"}).fillna(""),
        label=scores.label.astype("string").fillna(""),
        correct=scores.correct.astype(object).map({True: "yes", False: "no"}).fillna(""))
    if scores.label.isna().all():  # no labels given: no columns of blanks
        shown = shown.drop(columns=["label", "correct"])
    if key == "typed":  # one pair, typed: no row of a file to name
        shown = shown.drop(columns=["row"])
    small = {name: st.column_config.Column(LABELS.get(name, name), width="small")
             for name in ("head", "head_status", "label", "correct")}
    sentences = {name: st.column_config.TextColumn(LABELS[name], width="medium", help="Hover or widen to read it all")
                 for name in ("sentence_a", "sentence_b")}
    st.dataframe(shown, hide_index=True, width="stretch",
                 column_config={**LABELS, **small, **sentences,
                                "row": st.column_config.NumberColumn("row", width="small", help=ROW_HELP),
                                "p_ab": st.column_config.ProgressColumn("P(label 0 | A → B)", min_value=0, max_value=1, format="%.3f"),
                                "p_ba": st.column_config.ProgressColumn("P(label 0 | B → A)", min_value=0, max_value=1, format="%.3f"),
                                "tokens": st.column_config.NumberColumn(
                                    "tokens", format="localized",
                                    help=f"The pair's length in tokens, [CLS] and [SEP] included, of each side's first "
                                         f"{MAX_SEGMENT_CHARS:,} characters; the models read {MAX_LEN}")})
    ui.download(scores, f"pair-scores-{key}.csv", "Download the scores (CSV)")


def upload_chart(summary: pd.DataFrame, scores: pd.DataFrame) -> None:
    """Accuracy with 95% intervals when the file has labels, else how P(A → B) is spread."""
    labelled = labelled_accuracy(summary)
    ui.chart(pair_figures.accuracy_figure(labelled) if len(labelled) else pair_figures.spread_figure(scores), "pairs-file")




def _upload_changed() -> None:
    """The file removed from the uploader (its x) is forgotten; leaving the page is not a removal."""
    if widget("pairs_file") is None:
        kept(PairsState).forget_upload()


def upload_tab(bundles: list) -> None:
    """A pairs file scored by every picked checkpoint, behind a progress bar with the time
    left and a Stop button (5,000 pairs take minutes with the larger models); the scores are
    kept for the same file and checkpoints, so the page's other widgets do not score it again."""
    st.markdown("A **.csv**, **.tsv** or **.jsonl** file with columns `sentence_a`, `sentence_b` and, optionally, "
                f"`label` (0 = A then B is the original order / B follows A, 1 = not). Up to {MAX_UPLOAD_MB} MB "
                f"and {MAX_PAIR_ROWS:,} rows.")
    uploaded = st.file_uploader("Pairs file", type=["csv", "tsv", "jsonl"], key="pairs_file", max_upload_size=MAX_UPLOAD_MB,
                                on_change=_upload_changed)
    state = kept(PairsState)
    if uploaded is None and state.upload is None:
        return
    with guard("reading the upload"):  # the reader's messages name the file
        # the uploader empties when the user visits another page; the file is kept for the session
        name, data = (uploaded.name, ui.read_upload(uploaded)) if uploaded is not None else state.upload
        parsed = read_pairs(data, name)
        if uploaded is not None:
            state.upload = (name, data)  # once read: a file that fails is not kept
        else:
            left, right = st.columns([5, 1], vertical_alignment="center")
            left.caption(f"{name} ({fmt_bytes(len(data))}), uploaded earlier in this session, is scored below "
                         "(its scores are kept); upload another file to replace it.")
            right.button("Forget it", key="forget_upload", on_click=state.forget_upload)
        for problem in parsed.problems[:20]:
            st.warning(problem, icon=":material/warning:")
        if len(parsed.problems) > 20:
            st.warning(f"... and {len(parsed.problems) - 20:,} more problems")
        key = ("score_upload", tuple(bd.name for bd in bundles), Selection.read().key(), name,
               hashlib.sha256(data).hexdigest())
        scores = stoppable.computation(
            "score_upload", key, f"Scoring {plural(len(parsed.pairs), 'pair')} with {plural(len(bundles), 'checkpoint')}",
            lambda progress: score_pairs(bundles, parsed.pairs, progress=progress),
            len(parsed.pairs) * sum(map(_size, bundles)), costs.SECONDS_PER_UNIT["score_upload"])
        if scores is None:
            return
        summary = summarize(scores)
        summary = summary[summary.pairs > 0]  # checkpoints not scored are named in the warnings above
        st.subheader(f"{plural(len(parsed.pairs), 'pair')} scored from {name}")
        upload_chart(summary, scores)
        if not summary.labelled.any():  # a file without labels: no accuracy to show, no columns of blanks
            summary = summary.drop(columns=list(LABEL_COLUMNS))
            st.caption("The file has no labels, so there is no accuracy: the chart and the table show how the "
                       "checkpoints rate the pairs as given and swapped. Add a `label` column (0 or 1) to measure it.")
        st.dataframe(summary, hide_index=True, width="stretch",
                     column_config={"head_status": "head is", "pairs": "pairs",  # short names: all fit 1400 px
                                    "accuracy": st.column_config.NumberColumn("accuracy", format="%.3f",
                                                                              help="on the labelled pairs"),
                                    "order_accuracy": st.column_config.NumberColumn(
                                        "by order", format="%.3f",
                                        help="Accuracy on the labelled pairs judged by the order each head prefers "
                                             "(label 0 right when P(A → B) > P(B → A), label 1 when the reverse): for files "
                                             "whose label-1 pairs are swapped ones, as in SOP; not for random NSP pairs"),
                                    "labelled": "labelled",
                                    "mean_p_ab": st.column_config.NumberColumn("mean P(0 | A → B)", format="%.3f",
                                                                               help="mean P(label 0) of the pairs as given"),
                                    "mean_p_ba": st.column_config.NumberColumn("mean P(0 | B → A)", format="%.3f",
                                                                               help="mean P(label 0) of the pairs swapped"),
                                    "prefers_ab": st.column_config.NumberColumn(
                                        "prefers A → B", format="%.3f",
                                        help="Share of pairs with P(label 0) higher as given than swapped")})
        show_scores(scores, "uploaded", bundles)


def attribution_tab(bundles: list, a: str, b: str) -> None:
    """Integrated gradients for the pair typed under 'Type a pair' (`a`, `b`), on request."""
    usable = [bd for bd in bundles if bd.heads.pair_usable]
    if not usable:
        st.warning("None of the picked checkpoints has a usable pair head.")
    else:
        st.markdown(f"Explaining the pair from **Type a pair**: A = *{a[:200]}*, B = *{b[:200]}*")
        with st.form("attr_form"):
            cols = st.columns([2, 1, 1])
            name = cols[0].selectbox("Checkpoint", [bd.name for bd in usable], key="attr_checkpoint")
            target = cols[1].radio("Explain", [0, 1], key="attr_target", horizontal=True,
                                   format_func=lambda t: "label 0 (in order / next)" if t == 0 else "label 1")
            steps = cols[2].slider("Integration steps", 10, 200, 50, 10, key="attr_steps")
            explain = st.form_submit_button("Explain", type="primary")
        request = (name, a, b, target, steps)
        if explain:
            stoppable.forget_stop("attribution")
            with guard("attribution"):
                bundle = next(bd for bd in usable if bd.name == name)
                units, _ = attribution_estimate(bundle, a, b, steps)
                result = stoppable.computation(
                    "attribution", request, f"Integrated gradients of {name}, {steps} steps",
                    lambda progress: attribute_pair(bundle, a, b, target, steps, progress=progress),
                    units, costs.SECONDS_PER_UNIT["attribution"], keep=False)
                if result is not None:
                    kept(PairsState).attribution = (request, result)
        stored = kept(PairsState).attribution
        stopped = stoppable.was_stopped("attribution", request)
        if stopped:
            st.info("Stopped before it finished: press Explain to run it again.", icon=":material/stop_circle:")
        if stored is None:
            if not stopped:
                _, seconds = attribution_estimate(next(bd for bd in usable if bd.name == name), a, b, steps)
                st.info(f"Press Explain to attribute the decision to the tokens: about {fmt_duration(seconds)} for "
                        f"{name} at {steps} steps ({pace_words('attribution')}).")
        else:
            (for_name, for_a, for_b, for_target, _), result = stored
            if (for_name, for_a, for_b, for_target) != request[:4]:
                st.warning("The pair or the settings changed since: press Explain again.", icon=":material/warning:")
            st.html(attribution_html(result.tokens))
            st.caption(f"{for_name}: green pushes P(label {for_target}) up, red pushes it down. P = {result.probability:.3f} "
                       f"for the input, {result.baseline_probability:.3f} for the baseline ({result.baseline}); convergence "
                       f"delta {result.delta:+.2e} (attributions sum to the difference up to it).")
            ui.download(result.tokens, "attributions.csv")


def table5_tab(bundles: list) -> None:
    """The paper's Table 5, the shipped checkpoints' (results.json), and one measured now."""
    st.markdown("**The paper** (ALBERT-base, 125k steps; accuracy as a fraction)")
    st.dataframe(paper_table5(), hide_index=True, column_config={c: st.column_config.NumberColumn(format="%.3f")
                                                                 for c in ("MLM", "NSP", "SOP", "downstream avg")})
    st.caption("The paper's own models load here with their trained heads: Google's original ALBERT releases (SOP) and "
               "BERT's (NSP), as their archives unpack. Add the folder in the sidebar and evaluate it below, or run "
               "`albert-lab evaluate --checkpoint albert_base --checkpoint uncased_L-12_H-768_A-12` (README: "
               "\"The paper's own models\"); nothing is downloaded.")
    path = results_path()
    results = read_results(path)
    if results is not None:
        cells, notes = table5_cells(results)
        st.markdown("**The shipped checkpoints** (`albert-lab evaluate`; accuracy [95% interval] and number of pairs "
                    "or masked tokens)")
        st.dataframe(cells, hide_index=True, width="stretch")
        for note in notes:
            st.caption(note)
    elif path.is_file():
        st.info(f"{path} is from an older version and lacks per-task intervals: regenerate it with "
                "`albert-lab evaluate --json --by-source` (scripts/export_checkpoints.py), or evaluate below.")
    live_table5(bundles)
