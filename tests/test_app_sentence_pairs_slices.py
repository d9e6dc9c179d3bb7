"""The Sentence pairs page's slices, per-pair table and counterfactual (AppTest), on a file with a `student` column."""

from conftest import charts, goto, link_of, opened_by_link

# Six pairs by two students; sentence A of row 4 holds 'river'
STUDENTS_CSV = (b"sentence_a,sentence_b,label,student\n"
                b"The Nile is a river in Africa.,It flows north into the Mediterranean Sea.,0,ann\n"
                b"It flows north into the Mediterranean Sea.,The Nile is a river in Africa.,1,ann\n"
                b"Rome is the capital of Italy.,It has almost three million people.,0,ann\n"
                b"It has almost three million people.,Rome is the capital of Italy.,1,bob\n"
                b"The cat sat on the mat.,Then it fell asleep in the sun.,0,bob\n"
                b"Then it fell asleep in the sun.,The cat sat on the mat.,1,bob\n")


def test_slices_filter_and_a_rescored_pair(app, shipped):
    import pandas as pd

    from albert_lab.analysis.intrinsic import wilson_interval
    from albert_lab.analysis.pairs import pairs_frame, score_pairs
    from albert_lab.checkpoint.load import load_checkpoint

    at = goto(app, "sentence_pairs")
    at.file_uploader(key="pair_file").set_value(("students.csv", STUDENTS_CSV, "text/csv"))
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    slice_box = at.selectbox(key="pair_slice")
    assert slice_box.options[:3] == ["label", "length", "unknown pieces"] and "student (your column)" in slice_box.options
    slice_box.set_value("label").run()  # each group one label: no base rate shown, none claimed in the words
    by_label = next(d.value for d in at.dataframe if "reads" in d.value)
    assert "base" not in by_label and set(by_label.slice.astype(str)) == {"label 0", "label 1"}
    words = " ".join(c.value for c in at.caption)
    assert "read the two groups together" in words and "commoner label" not in words
    slice_box.set_value("student").run()
    uploaded = next(d.value for d in at.dataframe if "p0 albert-sop" in d.value)  # the page's own pairs
    table = next(d.value for d in at.dataframe if "reads" in d.value)
    assert set(table.checkpoint) == {"albert-sop", "bert-nsp"}  # hub-albert's head is missing: no rows of blanks
    students = {2: "ann", 3: "ann", 4: "ann", 5: "bob", 6: "bob", 7: "bob"}
    for row in table.itertuples():  # each group's numbers, counted here from the scores table
        mine = uploaded[uploaded.row.map(students).eq(row.slice)]
        hits = int(mine[f"right {row.checkpoint}"].eq("right").sum())
        assert (row.pairs, row.n, row.hits) == (3, 3, hits)
        assert (row.low, row.high) == wilson_interval(hits, 3) and row.accuracy == hits / 3
        assert row.reads.startswith("too few to tell")  # 3 pairs: every interval holds chance or the base rate
    assert any("rest on too few pairs to conclude" in c.value for c in at.caption)
    chart = next(c for c in charts(at) if "Share right by student" in c.proto.spec)
    assert '"offsetgroup":"albert-sop"' in chart.proto.spec.replace(" ", "")
    assert link_of(at)["pair_slice"] == "student"

    at.text_input(key="pair_find").set_value("river").run()  # rows 2 and 3 name the Nile a river
    pairs = next(d.value for d in at.dataframe if "p0 albert-sop" in d.value)
    assert list(pairs.row) == [2, 3] and set(pairs["right albert-sop"]) <= {"right", "wrong"}
    at.selectbox(key="pair_fgroup").set_value("ann").run()
    at.selectbox(key="pair_flabel").set_value("1").run()
    assert list(next(d.value for d in at.dataframe if "p0 albert-sop" in d.value).row) == [3]
    assert {k: link_of(at)[k] for k in ("pair_find", "pair_fgroup", "pair_flabel", "pair_row")} == \
        {"pair_find": "river", "pair_fgroup": "ann", "pair_flabel": "1", "pair_row": "3"}

    edited_a = "The Nile, a long river, flows into the sea."
    at.text_area(key="pair_edit_a_3").set_value(edited_a).run()
    at.button(key="pair_rescore").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    compared = next(d.value for d in at.dataframe if "A → B edited" in d.value).set_index("checkpoint")
    for name in ("albert-sop", "bert-nsp"):
        alone = score_pairs(load_checkpoint(shipped / name), pairs_frame([edited_a], ["The Nile is a river in Africa."]))
        assert abs(compared.loc[name, "A → B edited"] - alone.p_ab[0]) < 1e-5
        assert abs(compared.loc[name, "B → A edited"] - alone.p_ba[0]) < 1e-5
        before = uploaded.set_index("row").loc[3, f"p0 {name}"]
        assert abs(compared.loc[name, "A → B as uploaded"] - before) < 1e-6
    assert pd.isna(compared.loc["hub-albert", "A → B edited"])  # no pair head, nothing invented
    # the pair's label: the file's at first (row 3 is swapped, 1); set to 0, each head is judged again, nothing rescored
    assert at.selectbox(key="pair_edit_label_3").value == "1"
    for label in (1, 0):
        for name in ("albert-sop", "bert-nsp"):
            alone = score_pairs(load_checkpoint(shipped / name), pairs_frame([edited_a], ["The Nile is a river in Africa."]))
            said = uploaded.set_index("row").loc[3, f"right {name}"]
            assert compared.loc[name, "right as uploaded"] == said and said in ("right", "wrong")
            assert compared.loc[name, "right edited"] == ("right" if alone.prediction[0] == label else "wrong"), (name, label)
        assert compared.loc["hub-albert", "right edited"] == ""  # no head, no verdict
        at.selectbox(key="pair_edit_label_3").set_value("0").run()
        assert not at.exception and not at.error, [e.value for e in at.error]
        compared = next(d.value for d in at.dataframe if "A → B edited" in d.value).set_index("checkpoint")
    at.selectbox(key="pair_edit_label_3").set_value("none").run()
    compared = next(d.value for d in at.dataframe if "A → B edited" in d.value).set_index("checkpoint")
    assert set(compared["right edited"]) == {""}  # no label, no verdict


def test_a_links_slice_and_filters_wait_for_the_visitors_own_file(app):
    """The link carries the view (slice, filters, the pair picked), never the rows: opened before any upload,
    it keeps them until the visitor's file is scored, then shows that file the same way."""
    link = {"pair_tab": "Upload pairs", "pair_slice": "student", "pair_flabel": "0", "pair_fgroup": "bob", "pair_row": "6"}
    fresh = opened_by_link(link, "sentence_pairs")
    assert not fresh.exception and {k: link_of(fresh)[k] for k in link} == link  # still there, nothing to show yet
    fresh.file_uploader(key="pair_file").set_value(("students.csv", STUDENTS_CSV, "text/csv")).run()
    assert not fresh.exception and not fresh.error, [e.value for e in fresh.error]
    assert fresh.selectbox(key="pair_slice").value == "student" and fresh.selectbox(key="pair_fgroup").value == "bob"
    assert list(next(d.value for d in fresh.dataframe if "p0 albert-sop" in d.value).row) == [6]
    assert fresh.selectbox(key="pair_row").value == 6 and fresh.text_area(key="pair_edit_a_6").value == "The cat sat on the mat."


def test_a_slices_reading_says_below_the_base_rate_where_its_interval_holds_chance_but_not_the_base_rate():
    """bert-sop-minilm at 15-16 words: 3/13 = 0.231 [0.082, 0.503] against a base rate of 0.769: too few to
    tell from chance, yet reliably worse than always answering the commoner label (the reading stopped at chance)."""
    from albert_lab.readings.sentence_pairs import slice_words, verdict

    assert slice_words(0.082, 0.503, 13, "label 0", 0.769, False) == \
        "too few to tell from chance, but below always answering label 0 (0.77)"
    assert slice_words(0.3, 0.8, 10, "label 0", 0.6, False) == \
        "too few to tell from chance or from always answering label 0 (0.60)"
    assert slice_words(0.082, 0.503, 13, "label 0", 1.0, True) == "too few to tell from chance"  # by label: no base rate
    assert "worse than one that ignores the pair" in verdict(0.082, 0.503, 0, 0.769, 13)


def test_shares_round_half_up_as_people_round():
    from albert_lab.readings.numbers import two

    assert two(19 / 40) == "0.48" and two(0.474) == "0.47" and two(1.0) == "1.00" and two(float("nan")) == "nan"
