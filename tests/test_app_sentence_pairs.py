"""The Sentence pairs page (AppTest): typed pairs, uploads and their problems, attributions, Table 5."""

import json
import shutil

from conftest import charts, goto, link_of, start

PAIRS_CSV = (b"sentence_a,sentence_b,label\n"
             b"The Nile is a river in Africa.,It flows north into the Mediterranean Sea.,0\n"
             b"It flows north into the Mediterranean Sea.,The Nile is a river in Africa.,1\n"
             b",A row without its first sentence.,0\n")


def test_sentence_pairs_upload_and_bad_files(app):
    at = goto(app, "sentence_pairs")
    typed = at.dataframe[0].value
    assert set(typed.checkpoint) == {"albert-sop", "bert-nsp", "hub-albert"}
    assert typed[typed.checkpoint == "hub-albert"].p_ab.isna().all()
    assert any("not scored: pair head missing" in w.value for w in at.warning)
    import json

    bars = json.loads(charts(at)[0].proto.spec)["data"]  # one colour per order, whatever the theme's colorway
    layout = json.loads(charts(at)[0].proto.spec)["layout"]  # 'chance' in the right margin, not on the first bar
    (label,) = [a for a in layout["annotations"] if a["text"] == "chance"]
    assert label["x"] >= 1 and label["xanchor"] == "left" and layout["margin"]["r"] >= 60
    assert {b["name"]: b["marker"]["color"] for b in bars} == {"A → B (as typed)": "#4c78a8", "B → A (swapped)": "#f58518"}
    at.file_uploader(key="pair_file").set_value(("pairs.csv", PAIRS_CSV, "text/csv"))
    at.run()
    assert any("row 4: sentence_a is empty; skipped" in w.value for w in at.warning)
    summary = next(d.value for d in at.dataframe if "accuracy" in d.value)
    assert summary.set_index("checkpoint").loc["albert-sop", "labelled"] == 2
    assert "hub-albert" not in set(summary.checkpoint)  # not scored (its warning says why): no row of blanks
    tables = [d.value for d in at.dataframe if "row" in d.value]
    assert len(tables) == 1, [list(t.columns) for t in tables]  # the pairs once: the scores table was drawn twice
    pairs = tables[0]
    assert list(pairs.row) == [2, 3] and "p0 hub-albert" not in pairs  # hub-albert's head is missing: no column of blanks
    assert pairs["p0 albert-sop"].between(0, 1).all() and pairs["p0 bert-nsp"].between(0, 1).all()
    assert [h.value for h in at.subheader if "scored" in h.value] == ["2 pairs scored from pairs.csv"]  # which file
    at.file_uploader(key="pair_file").set_value(("bad.csv", b"sentence_a;sentence_b\nx;y\n", "text/csv"))
    at.run()
    assert any("semicolons as delimiter" in e.value for e in at.error) and not at.exception
    assert all(e.value.count("bad.csv") == 1 for e in at.error)  # was 'reading bad.csv: bad.csv: ...'
    at.file_uploader(key="pair_file").set_value(("latin.csv", b"sentence_a,sentence_b\ncaf\xe9,x\n", "text/csv"))
    at.run()
    assert any("not UTF-8" in e.value for e in at.error)


def test_an_uploads_note_reads_its_own_numbers(app):
    """The walk: 20 pairs, every third swapped. Under the results the page said 'a model trained with NSP cannot
    do SOP (0.520, chance)', the paper's number, not the file's; nothing said what each head's accuracy measures,
    that always answering 'in order' scores 0.70 here, or that 20 pairs give intervals too wide to conclude."""
    import io

    import pandas as pd

    sentences = [f"Sentence number {i} of a short story about a river." for i in range(21)]
    rows = [(sentences[i + 1], sentences[i], 1) if i % 3 == 2 else (sentences[i], sentences[i + 1], 0) for i in range(20)]
    data = io.StringIO()
    pd.DataFrame(rows, columns=["sentence_a", "sentence_b", "label"]).to_csv(data, index=False)
    at = goto(app, "sentence_pairs")
    at.file_uploader(key="pair_file").set_value(("walk.csv", data.getvalue().encode(), "text/csv"))
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    (reading,) = [m.value for m in at.markdown if m.value.startswith("Of the 20 labelled pairs")]
    assert reading.startswith("Of the 20 labelled pairs, 14 (70%) are label 0") and "scores 0.70" in reading, reading
    summary = next(d.value for d in at.dataframe if "accuracy" in d.value)
    for row in summary.itertuples():  # each checkpoint's accuracy, interval and what its head was asked
        assert f"**{row.checkpoint}** ({row.head.upper()} head, asked: " in reading and f" {row.accuracy:.2f} [" in reading
    assert "bert-nsp" in set(summary.checkpoint) and "An NSP head (bert-nsp) was trained to tell" in reading
    import albert_lab as al  # a notebook's score of the same file says what the page says, word for word

    scored = al.score(["albert-sop", "bert-nsp", "hub-albert"], pd.DataFrame(rows, columns=["sentence_a", "sentence_b", "label"]))
    assert scored.reading == reading
    captions = [c.value for c in at.caption]  # under the slices table (by label, the first slice): the library's words too
    assert all(said in captions for said in al.slices(scored, "label").reading.split("\n\n")), captions
    # the paper's figure is labelled as the paper's, on its own pairs
    (note,) = [m.value for m in at.markdown if "Table 5" in m.value and "From the paper" in m.value]
    assert "on the paper's own held-out pairs, not your file" in note
    (chart,) = [json.loads(c.proto.spec)["layout"] for c in charts(at) if "labelled pairs right" in c.proto.spec]
    ticks = " ".join(chart["xaxis"]["ticktext"])
    assert "SOP: in order?" in ticks and "NSP: is next?" in ticks  # what each head's accuracy means, on the axis
    assert any(a["text"] == "always<br>one label" for a in chart["annotations"])  # 0.70, beside chance


def test_the_reading_says_when_an_interval_is_too_wide_and_why_nsp_scores_on_swaps():
    """The walk's numbers: albert-sop 0.45 [0.26-0.66] and albert-nsp 0.85 [0.64-0.95] on 20 pairs, 14 in order."""
    import pandas as pd

    from albert_lab.analysis.pairs import labelled_accuracy, summarize
    from albert_lab.readings.sentence_pairs import upload_reading

    labels = [1 if i % 3 == 2 else 0 for i in range(20)]
    guesses = {"albert-sop": ("sop", [1 - label if i < 11 else label for i, label in enumerate(labels)]),
               "albert-nsp": ("nsp", [1 if i in (2, 5, 8) else 0 for i in range(20)])}  # 'is next' to nearly every pair
    scores = pd.DataFrame([dict(row=i + 2, checkpoint=name, head=head, head_status="trained", label=label, prediction=said,
                                correct=label == said, p_ab=0.9 if said == 0 else 0.1, p_ba=0.5)
                           for name, (head, said_all) in guesses.items()
                           for i, (label, said) in enumerate(zip(labels, said_all))]).astype({"label": "Int64"})
    text = upload_reading(labelled_accuracy(summarize(scores)), scores)
    assert ("**albert-sop** (SOP head, asked: is A then B the original order?) 0.45 [0.26-0.66] on 20 pairs, right on "
            "6 of 14 label-0 pairs and 3 of 6 label-1 pairs: the interval holds chance (0.50) but lies below always "
            "answering label 0 (0.70): on 20 pairs this head is worse than one that ignores the pair, beyond the "
            "interval") in text  # its interval's top, 0.66, is under the base rate
    assert ("**albert-nsp** (NSP head, asked: is B the segment that follows A?) 0.85 [0.64-0.95] on 20 pairs, right on "
            "14 of 14 label-0 pairs and 3 of 6 label-1 pairs: above chance, but the interval holds always answering "
            "label 0 (0.70)") in text
    assert "albert-nsp can still score above chance: a swapped pair often reads as an incoherent jump" in text
    assert "with 70% of the pairs label 0, answering 'is next' to every pair scores 0.70" in text


def test_a_file_without_labels_shows_no_none_and_the_sentences_first(app):
    """An unlabelled file printed 'None' under accuracy and 'by order'; the per-pair table began with
    'row 2' and had the sentences at its far right, out of sight at 1280 px."""
    at = goto(app, "sentence_pairs")
    at.file_uploader(key="pair_file").set_value(("plain.csv", b"sentence_a,sentence_b\nThe Nile is long.,It flows north.\n",
                                                  "text/csv"))
    at.run()
    summary = next(d.value for d in at.dataframe if "prefers_ab" in d.value)
    assert not {"accuracy", "order_accuracy", "labelled"} & set(summary.columns)
    assert not summary.isna().any().any(), summary  # a blank is drawn as 'None'
    assert any("no labels, so there is no accuracy" in c.value for c in at.caption)
    pairs = next(d.value for d in at.dataframe if "row" in d.value)
    assert list(pairs.columns[:3]) == ["row", "sentence_a", "sentence_b"] and list(pairs.row) == [2]
    assert not [c for c in pairs.columns if c.startswith("right ")]  # no right or wrong without a label
    typed = at.dataframe[0].value  # the typed pair: no row of a file to number
    assert list(typed.columns[:2]) == ["sentence_a", "sentence_b"] and "row" not in typed


def test_a_blank_sentence_is_refused_not_scored(app):
    at = goto(app, "sentence_pairs")
    at.text_area(key="pair_a").set_value("   ")
    at.button[0].click().run()  # the form's submit button
    assert any("sentence A is empty" in e.value for e in at.error)
    assert not at.exception


def test_a_pair_the_vocabulary_cannot_read_is_scored_with_a_warning(app):
    """Chinese for an English SentencePiece is '▁' and one unknown piece per side: its
    P(A->B) = P(B->A) means nothing, and the page said nothing."""
    at = goto(app, "sentence_pairs")
    assert not any("cannot read" in w.value for w in at.warning)  # the built-in English pair
    at.text_area(key="pair_a").set_value("尼罗河是非洲东北部的一条主要河流。")
    at.text_area(key="pair_b").set_value("它流入地中海。")
    at.button[0].click().run()
    (warning,) = [w.value for w in at.warning if "cannot read" in w.value]
    for name in ("albert-sop", "hub-albert", "bert-nsp"):  # the fixtures share one vocabulary: each is named
        # the typed pair is no row (an upload's rows count from 2, its header being 1), and 50% is not 'mostly'
        assert f"for {name}, 50% of its pieces unknown" in warning, warning
    assert warning.startswith("This pair is partly made of text a model cannot read") and "row" not in warning


def test_each_warning_names_the_checkpoints_it_is_about():
    """'Up to 64% of the pieces are unknown' came with four models picked, when only one had unknown
    pieces; 'pairs are longer than the 128 tokens the models read' the same, and named 128 where a model
    reads 64 (its position table). Each names its models and each model's own limit."""
    from streamlit.testing.v1 import AppTest

    def page():  # AppTest runs the function's own source: its imports are inside it
        import pandas as pd

        from app.rooms.sentence_pairs.scores import show_scores

        rows = [dict(row=r, checkpoint=name, head="sop", head_status="trained", p_ab=0.5, p_ba=0.5, prediction=0,
                     label=None, correct=None, tokens=tokens, sentence_a="a", sentence_b="b", note="",
                     unknown=unknown, reads=reads, truncated=tokens > reads)
                for name, r, tokens, unknown, reads in (("albert-sop", 2, 20, 0.0, 128), ("albert-sop", 3, 140, 0.0, 128),
                                                        ("bert-fixture", 2, 20, 0.64, 64), ("bert-fixture", 3, 100, 0.0, 64),
                                                        ("albert-sop-minilm", 2, 20, 0.0, 128),
                                                        ("albert-sop-minilm", 3, 100, 0.0, 128))]
        show_scores(pd.DataFrame(rows), "upload")

    at = AppTest.from_function(page, default_timeout=120).run()
    assert not at.exception, at.exception
    warnings = [w.value for w in at.warning]
    (unknown,) = [w for w in warnings if "unknown" in w]
    assert "for bert-fixture, 1 pair (row 2), up to 64% of the pieces unknown" in unknown, unknown
    assert "albert-sop" not in unknown and "that model say" in unknown
    (cut,) = [w for w in warnings if "longer than" in w]
    assert "for albert-sop, 1 pair (row 3); for bert-fixture, 1 pair (row 3)" in cut and "minilm" not in cut, cut
    assert "longer than the 128 tokens albert-sop reads or the 64 tokens bert-fixture reads" in cut, cut


def test_typed_pairs_longer_than_the_model_reads_are_flagged(app):
    """The warning names each model's own limit, its position table's where that is shorter."""
    at = goto(app, "sentence_pairs")
    at.text_area(key="pair_a").set_value(" ".join(["word"] * 400))
    at.button[0].click().run()
    (warned,) = [w.value for w in at.warning if "longer than" in w.value]
    # the test checkpoints have 64 positions: the warning said 'the 128 tokens a model reads' (the analysis's length)
    assert "longer than the 64 tokens albert-sop" in warned and "128" not in warned, warned
    assert "pair_a" not in link_of(at) and any("not put in the page's link" in c.value for c in at.caption)
    shown = at.dataframe[0].value
    assert "head_status" in shown and "label" not in shown  # no column of blanks (or 'None') where no label was given


def test_attributions_explain_the_typed_pair(app):
    at = goto(app, "sentence_pairs")
    at.text_area(key="pair_a").set_value("Zebras graze on the savanna.")
    at.text_area(key="pair_b").set_value("They live in herds.")
    next(b for b in at.button if b.label == "Score this pair").click().run()
    next(b for b in at.button if b.label == "Explain").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    request, result = at.session_state["room:sentence_pairs"].attribution
    assert request[1] == "Zebras graze on the savanna." and request[2] == "They live in herds."
    words = "".join(result.tokens.token).replace("\u2581", " ").lower()
    assert "savanna" in words.replace(" ", "") or "sav" in words


def test_table5_shows_fractions_and_no_paths(app):
    at = goto(app, "sentence_pairs")
    paper = next(d.value for d in at.dataframe if "downstream avg" in d.value)
    assert paper[["MLM", "NSP", "SOP"]].to_numpy().max() < 1  # fractions, like ours
    assert not any("/" in str(v) and str(v).startswith("/") for d in at.dataframe for v in d.value.to_numpy().ravel())


def test_table5_says_why_an_old_results_file_shows_nothing(shipped, tmp_path, monkeypatch):
    folder = tmp_path / "checkpoints"
    shutil.copytree(shipped, folder)
    (folder / "results.json").write_text(json.dumps([{"checkpoint": "albert-sop", "sop_acc": 0.9, "nsp_acc": 0.5}]))
    monkeypatch.setenv("ALBERT_LAB_CHECKPOINTS", str(folder))
    at = start("sentence_pairs")
    assert any("older version" in i.value and "albert-lab evaluate" in i.value for i in at.info)


def test_live_table5_says_its_sample_and_what_each_n_counts(app, small_corpus, monkeypatch):
    """'Evaluate ... (about a minute)' took 342 s on a busy machine, and the caption said
    200 pairs per task while the cells showed n = 163, 197, 40 and 5."""
    import albert_lab.analysis.evaluation as evaluation
    from albert_lab.data.heldout import build_eval_pairs

    pairs = build_eval_pairs(small_corpus.train[:60]).assign(domain="in")
    monkeypatch.setattr(evaluation, "evaluation_pairs", lambda: pairs)
    at = goto(app, "sentence_pairs")
    button = at.button(key="pair_t5_run")
    assert "about a minute" not in button.label and "two cores" in button.label
    at.select_slider(key="pair_t5_limit").set_value(50).run()
    at.button(key="pair_t5_run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    captions = " ".join(c.value for c in at.caption)
    assert "A fixed sample of 50 pairs per task" in captions and "MLM counts masked tokens" in captions
    # why SOP's n is not lead's + interior's, in words ('lead + interior exceeds SOP' needed the docs to parse)
    assert "SOP lead scores the" in captions and "hold a document's first sentence" in captions
    assert "they are not a split of SOP's pairs" in captions and "exceeds" not in captions
    picked = at.sidebar.multiselect(key="picked").value
    assert set(at.dataframe[-1].value.checkpoint) == set(picked)  # the live table, drawn last: every picked checkpoint
    calls = []
    monkeypatch.setattr(evaluation, "evaluation_pairs", lambda: calls.append(1) or pairs)
    at.select_slider(key="pair_t5_limit").set_value(100).run()  # another widget: the table stays, nothing computed again
    assert not calls and set(at.dataframe[-1].value.checkpoint) == set(picked)
    assert "A fixed sample of 50 pairs per task" in " ".join(c.value for c in at.caption)  # the sample it was measured on


def test_shipped_sop_counts_are_explained_where_they_are_shown():
    """Held-out SOP n = 2,474 against lead 591 + interior 2,369 needed a word; out of domain
    SOP and SOP interior were equal with no word that cfi's pairs are nearly all interior."""
    import json

    from conftest import ROOT

    from albert_lab.card import count_notes, metric_counts

    metrics = json.loads((ROOT / "checkpoints" / "albert-sop" / "albert_lab.json").read_text())["metrics"]
    held, out = count_notes(metric_counts(metrics))
    sop, lead, interior = (metrics[k]["n"] for k in ("sop", "sop_lead", "sop_interior"))  # 2,481, 591, 2,376 today
    assert sop < lead + interior  # what needs the word
    assert f"SOP scores all {sop:,} pairs" in held and f"SOP lead scores the {lead:,} of them that hold a document's first" in held
    assert f"the other {sop - lead:,} (interior pairs, which do not) and {interior - (sop - lead):,} more" in held
    assert f"together count {lead + interior:,} pairs, more than SOP's {sop:,}" in held
    ood_sop, ood_lead = metrics["ood_sop"]["n"], metrics["ood_sop_lead"]["n"]
    assert out.startswith("Out of domain (cfi)") and f"Only {ood_lead:,} of the {ood_sop:,} hold a document's first sentence" in out


def test_the_chance_line_reads_on_the_dark_theme(app, tmp_path, monkeypatch):
    """Plotly's default line colour (near black) vanished on the dark theme (Sentence pairs, Training)."""
    run = tmp_path / "runs" / "20261122-000000-tiny-1"
    run.mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({
        "id": run.name, "status": "succeeded", "created": 1.0, "pid": 1, "step": 5, "total_steps": 5,
        "config": {"objective": "sop", "name": "tiny", "max_steps": 5}, "spec_label": "ALBERT tiny", "message": ""}))
    (run / "metrics.jsonl").write_text(json.dumps(
        {"kind": "train", "step": 1, "loss": 9.7, "mlm_loss": 9.0, "pair_loss": 0.69, "mlm_acc": 0.0, "pair_acc": 0.44,
         "tokens": 1501, "tokens_per_s": 5589.0, "run_tokens_per_s": 5589.0, "eta_s": 1.0, "time": 1.0}) + "\n")
    monkeypatch.setenv("ALBERT_LAB_RUNS", str(tmp_path / "runs"))
    pairs = goto(app, "sentence_pairs")
    next(b for b in pairs.button if b.label == "Score this pair").click().run()
    specs = [c.proto.spec for c in charts(pairs)]
    training = goto(pairs, "training")
    specs += [c.proto.spec for c in charts(training)]
    for spec in specs:
        lines = [shape for shape in json.loads(spec)["layout"].get("shapes", []) if shape.get("line", {}).get("dash") == "dot"]
        assert all(shape["line"]["color"] == "#8c8c8c" for shape in lines), lines
    assert sum("chance" in spec for spec in specs) >= 2


def test_a_typed_special_token_is_named(app):
    """'[SEP]' in sentence A made a third segment, '[PAD]' padding, with no word of it."""
    at = goto(app, "sentence_pairs")
    assert not any("special tokens" in w.value for w in at.warning)
    at.text_area(key="pair_a").set_value("The cat sat [SEP] on the mat.")
    at.text_area(key="pair_b").set_value("Then it slept.")
    at.button[0].click().run()
    (warning,) = [w.value for w in at.warning if "special tokens" in w.value]
    assert "read as special tokens, not as words: [SEP] (by albert-sop, hub-albert, bert-nsp)." in warning, warning


def test_an_uploaded_file_outlives_a_visit_to_another_page_until_removed(app):
    """Sentence pairs -> Upload -> Oscillation -> Sentence pairs: the uploader was empty and
    the scores gone, without a word. The file is kept for the session; its x forgets it."""
    at = goto(app, "sentence_pairs")
    at.file_uploader(key="pair_file").set_value(("pairs.csv", PAIRS_CSV, "text/csv"))
    at.run()
    assert [h.value for h in at.subheader if "scored" in h.value] == ["2 pairs scored from pairs.csv"]
    goto(at, "oscillation")
    goto(at, "sentence_pairs")
    assert at.file_uploader(key="pair_file").value is None  # what the browser shows: an empty uploader
    assert any(c.value.startswith("pairs.csv (") and "uploaded earlier in this session" in c.value for c in at.caption)
    assert [h.value for h in at.subheader if "scored" in h.value] == ["2 pairs scored from pairs.csv"]
    at.file_uploader(key="pair_file").set_value(("bad.csv", b"sentence_a;sentence_b\nx;y\n", "text/csv"))
    at.run()  # a file that fails to read is not kept in place of the good one
    goto(at, "oscillation")
    goto(at, "sentence_pairs")
    assert any(c.value.startswith("pairs.csv (") for c in at.caption) and not at.error
    at.button(key="pair_forget").click().run()
    assert not [h.value for h in at.subheader if "scored" in h.value]
    at.file_uploader(key="pair_file").set_value(("pairs.csv", PAIRS_CSV, "text/csv"))
    at.run()
    at.file_uploader(key="pair_file").set_value(None)  # the uploader's x
    at.run()
    assert not [h.value for h in at.subheader if "scored" in h.value]


def test_a_typed_pair_says_which_order_each_head_prefers(app):
    at = goto(app, "sentence_pairs")
    (line,) = [m.value for m in at.markdown if m.value.startswith("Preferred order")]
    scores = next(d.value for d in at.dataframe if "p_ab" in d.value)
    from app.rooms.sentence_pairs.scores import order_words

    for r in scores.dropna(subset=["p_ab"]).itertuples():  # every scored model, in the words below
        assert order_words(r.checkpoint, r.p_ab, r.p_ba) in line, line
    assert order_words("m", 0.61, 0.46) == "**m**: A → B (0.610 against 0.460)"  # the helper's pair 2
    assert order_words("m", 0.49, 0.54) == "**m**: B → A (0.540 against 0.490)"
    assert order_words("m", 0.503, 0.497) == "**m**: A → B (0.503 against 0.497)"  # was '0.50 against 0.50'
    assert order_words("m", 0.5001, 0.4999) == "**m**: neither (0.500 both ways)"
    at.text_area(key="pair_a").set_value("   ")
    at.button[0].click().run()
    assert not [m.value for m in at.markdown if m.value.startswith("Preferred order")]  # nothing scored, nothing said


def test_a_typed_pair_given_a_label_says_each_head_right_or_wrong(app):
    """The typed pair's form takes a label (SOP: original or swapped; NSP: next or random), in the link: each scored
    head's prediction is then right or wrong against it, blank for a head that predicts nothing; without one, no column."""
    at = goto(app, "sentence_pairs")
    assert "right" not in next(d.value for d in at.dataframe if "p_ab" in d.value).columns  # no label, nothing to judge
    for label in ("1", "0"):
        at.selectbox(key="pair_label").set_value(label)
        at.button[0].click().run()
        assert not at.exception and not at.error, [e.value for e in at.error]
        scores = next(d.value for d in at.dataframe if "p_ab" in d.value)
        scored = scores.p_ab.notna()
        expected = (scores.p_ab < 0.5).map({True: 1, False: 0}).eq(int(label)).map({True: "right", False: "wrong"})
        assert list(scores.right[scored]) == list(expected[scored]) and set(scores.right[~scored]) <= {""}
        assert link_of(at)["pair_label"] == label


def test_a_bert_of_one_token_type_is_scored(tmp_path, tokenizer, monkeypatch):
    """type_vocab_size 1 (valid in BERT configs) was an IndexError on this page."""
    from conftest import save_bert

    save_bert(tmp_path / "ckpts" / "one-type", tokenizer, layers=2, type_vocab_size=1)
    monkeypatch.setenv("ALBERT_LAB_CHECKPOINTS", str(tmp_path / "ckpts"))
    at = start("sentence_pairs")
    assert not at.error, [e.value for e in at.error]
    typed = at.dataframe[0].value
    assert list(typed.checkpoint) == ["one-type"] and typed.p_ab.between(0, 1).all() and typed.p_ba.between(0, 1).all()
    at.file_uploader(key="pair_file").set_value(("pairs.csv", PAIRS_CSV, "text/csv"))
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    pairs = next(d.value for d in at.dataframe if "p0 one-type" in d.value)
    assert len(pairs) == 2 and pairs["p0 one-type"].between(0, 1).all()


def test_the_attribution_estimate_comes_from_the_cost_model(app):
    """'Press Explain ... (a few seconds)' was said of every model and pair; it took 22 s. The page now
    says what app.shell.costs and the process's own pace (app.shell.pace.estimate) expect, as its progress bar does."""
    import sys

    from app.shell import costs, pace
    from app.shell.text import fmt_duration

    at = goto(app, "sentence_pairs")
    (info,) = [i.value for i in at.info if i.value.startswith("Press Explain")]
    assert "a few seconds" not in info
    from albert_lab.checkpoint.load import load_checkpoint

    bundle = at.session_state["pair_attr_checkpoint"]
    loaded = load_checkpoint(next(s for n, s in at.session_state["_shell"].selected if n == bundle), device="cpu")
    tokens = len(loaded.tokenizer(at.text_area(key="pair_a").value, at.text_area(key="pair_b").value)["input_ids"])
    units = costs.attribution_units(loaded.spec, 50, tokens)
    first = costs.FIRST_TIME_SECONDS["attribution"] if "captum" not in sys.modules else 0.0
    expected = pace.estimate("attribution", units, costs.SECONDS_PER_UNIT["attribution"]) + first
    assert f"about {fmt_duration(expected)} for {bundle} at 50 steps" in info, (info, expected)


def test_the_integration_steps_take_their_bounds_and_default_from_the_analysis_record(app):
    from albert_lab.analysis.registry import ATTRIBUTION

    steps, option = goto(app, "sentence_pairs").slider(key="pair_attr_steps"), ATTRIBUTION.option("n_steps")
    assert (steps.min, steps.max, steps.value) == (option.bounds.low, option.bounds.high, option.default) == (10, 200, 50)


def test_typed_pairs_scored_together_are_each_scored_as_alone(bundles):
    """Several visitors' typed pairs scored in one batch (typed.score_together): each visitor gets the
    rows of its own pair (row 1, one per checkpoint) with the probabilities of scoring it alone, within
    float32 rounding: the batch pads and blocks the sums differently (tests/tolerance.py; a logit is a
    dot product of tanh outputs in [-1, 1] with the pair head's weights, so |z| <= sum |w| + |b|)."""
    import torch
    from tolerance import probability_bound, relative_bound

    from albert_lab.analysis.pairs import pairs_frame, score_pairs
    from albert_lab.models import Parts
    from app.rooms.sentence_pairs.typed import score_together

    pairs = [("The river ran north.", "Then it turned to the sea past the old town and its bridges."),
             ("A short one.", "Another."), ("Cats sleep.", "Dogs bark at the moon every night.")]
    together = score_together(list(bundles), pairs)
    assert len(together) == len(pairs)
    for (a, b), scores in zip(pairs, together, strict=True):
        alone = score_pairs(list(bundles), pairs_frame([a], [b]))
        assert list(scores.columns) == list(alone.columns) and list(scores.row) == [1] * len(bundles)
        assert list(scores.sentence_a) == [a] * len(bundles) and list(scores.checkpoint) == list(alone.checkpoint)
        for bundle, (_, got), (_, want) in zip(bundles, scores.iterrows(), alone.iterrows(), strict=True):
            linear = [m for m in Parts.of(bundle.model).pair_head.modules() if isinstance(m, torch.nn.Linear)][-1]
            largest = float((linear.weight.abs().sum(dim=1) + linear.bias.abs()).max())
            tokens = max(len(bundle.tokenizer(x, y)["input_ids"]) for x, y in pairs)
            bound = probability_bound(relative_bound(bundle.spec.family, bundle.spec.to_dict(), tokens), (largest, largest))
            assert abs(got.p_ab - want.p_ab) <= bound and abs(got.p_ba - want.p_ba) <= bound, (bundle.name, got, want, bound)
            assert got.tokens == want.tokens and got.prediction == want.prediction
