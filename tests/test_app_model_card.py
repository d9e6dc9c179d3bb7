"""The Model card page (AppTest): the card, its head warnings, a probe fitted and a BERT albertized from it."""

import html
import re
from pathlib import Path

from conftest import charts, goto, start, tiny_spec
from streamlit.testing.v1 import AppTest

from albert_lab.checkpoint.files import read_card
from albert_lab.params import count
from app.shell.text import si


def emoji_codes(at: AppTest) -> list[str]:
    """Text the browser reads as emoji codes (Streamlit's own test, ':38:' in '12:38:29'
    included): a cell or paragraph with one is drawn only after the emoji plugin (260 kB)
    has been fetched."""
    pattern = re.compile(r":(?!material/|streamlit:)[\w+-][\w_+-]*:")
    texts = [str(e.value) for kind in ("markdown", "caption", "info", "warning", "success") for e in getattr(at, kind)]
    texts += [str(v) for t in at.table for v in t.value.to_numpy().ravel()]
    return [m for text in texts for m in pattern.findall(text)]


def test_model_card(app):
    assert app.title[0].value == "Model card"
    assert app.sidebar.multiselect(key="picked").value == ["albert-sop", "hub-albert", "bert-nsp"]  # SOP first
    assert count(tiny_spec(1000, num_layers=3)).total == 26_192
    assert app.metric[0].value == "26.2k"  # SI as the FLOPs beside it: a small model's count read '0.03M'
    assert app.metric[1].value == "41.2k"
    report = count(tiny_spec(1000, num_layers=3))  # the headline leaves out the heads the bars draw, and says so
    added = report.total_with_heads - report.total
    assert added > 0 and any(f"the MLM and pair heads add {si(added)}, drawn below ({si(report.total_with_heads)} in all)"
                             in c.value for c in app.caption)
    assert not charts(app) and not app.warning  # no plotly.js on the landing page: the chart is SVG (app/rooms/model_card/svg.py)
    svg = next(m.value for m in app.markdown if m.value.startswith("<svg"))
    report = count(tiny_spec(1000, num_layers=3))
    for name, part in report.by_component().items():  # every component, held and applied, named on hover
        assert html.escape(f"{name}, held in memory: {part['unique']:,} parameters") in svg
        assert html.escape(f"{name}, applied per forward pass: {part['applied']:,} parameters") in svg
    assert not emoji_codes(app)  # the browser would hold those cells back until it has its emoji plugin
    fields = [f for t in app.table if "field" in t.value for f in t.value["field"]]
    assert "hidden size (H)" in fields and "saved" in fields and not [f for f in fields if "_" in f]  # words, not keys
    metrics = next(t.value for t in app.table if "metric" in t.value)
    assert list(metrics.metric) == ["SOP, interior pairs (held-out)"]
    app.selectbox(key="card_checkpoint").set_value("hub-albert").run()
    assert any(w.value.startswith("hub-albert: The SOP head weights are missing") for w in app.warning)  # named: which model
    tables = [t.value for t in app.table]
    assert any((t["status"] == "missing").any() for t in tables if "status" in t)


def test_a_sentence_transformers_folder_in_the_app_is_named_and_never_labelled_nsp(app, minilm, monkeypatch):
    """all-MiniLM-L6-v2 appeared as 'model' with the title '..., NSP', 'pair objective nsp'
    and a chart with an MLM head and a pair head it does not have."""
    monkeypatch.setenv("ALBERT_LAB_ALLOWED_DIRS", str(minilm.parent))
    app.sidebar.text_input(key="add_source").set_value(str(minilm))
    app.sidebar.button(key="add_button").click().run()
    assert "all-MiniLM-L6-v2" in app.sidebar.multiselect(key="picked").value
    app.selectbox(key="card_checkpoint").set_value("all-MiniLM-L6-v2").run()
    assert not app.exception and not app.error, [e.value for e in app.error]
    title = app.subheader[0].value
    assert "NSP" not in title and title.endswith("pair objective not recorded"), title
    spec = next(t.value for t in app.table if "field" in t.value and "hidden size (H)" in set(t.value.field))
    assert spec.set_index("field").loc["pair objective", "value"] == "not recorded"
    svg = next(m.value for m in app.markdown if m.value.startswith("<svg"))
    assert "MLM head" not in svg and "pair head" not in svg


def test_fit_a_probe_from_the_model_card(app):
    at = goto(app, "model_card")
    at.selectbox(key="card_checkpoint").set_value("hub-albert").run()
    for key, value in (("card_probe_train", 100), ("card_probe_held", 100), ("card_probe_steps", 10)):
        at.number_input(key=key).set_value(value)
    next(b for b in at.button if b.label.startswith("Fit the probe")).click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    name, path, accuracy = at.session_state["room:model_card"].probe_done
    assert name == "hub-albert-sop-probe" and 0 <= accuracy <= 1
    from albert_lab.checkpoint.load import load_checkpoint

    probe = load_checkpoint(path, device="cpu")
    assert probe.heads.pair == "probe" and probe.card["probe"]["pairs"]["held_out"] == 100
    for _ in range(2):  # each click wrote a new hub-albert-sop-probe-N, the same probe again
        next(b for b in at.button if b.label.startswith("Fit the probe")).click().run()
        assert [t.value for t in at.toast] == ["The same probe was fitted before: hub-albert-sop-probe is reused."]
    assert at.session_state["room:model_card"].probe_done == (name, path, accuracy)
    at.number_input(key="card_probe_steps").set_value(20)
    next(b for b in at.button if b.label.startswith("Fit the probe")).click().run()
    assert at.session_state["room:model_card"].probe_done[0] == "hub-albert-sop-probe-2" and not at.toast  # other steps: another probe
    assert sorted(p.name for p in Path(path).parent.iterdir() if not p.name.startswith(".")) == [name, f"{name}-2"]


def test_the_model_card_albertizes_a_bert(app, tmp_path):
    """The card of a BERT offers albertize; the result lands in runs/albertized/ and can be picked."""
    at = app
    assert not at.exception
    assert not [e for e in at.expander if "albertize" in e.label]  # albert-sop is already an ALBERT
    at.selectbox(key="card_checkpoint").set_value("bert-nsp").run()
    assert [e for e in at.expander if "albertize" in e.label]
    at.number_input(key="card_albertize_e").set_value(8)
    at.selectbox(key="card_albertize_sharing").set_value("all")
    at.button[[b.label for b in at.button].index("Convert (seconds)")].click().run()
    assert not at.exception, [e.value for e in at.exception]
    done = next(s.value for s in at.success if "Saved" in s.value)
    assert "E=8" in done and "all sharing in 1 group(s)" in done
    out = tmp_path / "runs" / "albertized" / "bert-nsp-e8-all-average"
    card = read_card(out)
    assert card["conversion"]["status"] == "converted, not trained" and card["provenance"]["command"].startswith("albert-lab albertize")
    warned = any("query-key forms keep" in w.value for w in at.warning)  # the averaged attention, said where it is weak
    assert warned == (card["conversion"]["attention_kept"] < 0.5)
    for _ in range(3):  # each click wrote a new bert-nsp-e8-all-average-N (26 MB for 3 clicks)
        at.button[[b.label for b in at.button].index("Convert (seconds)")].click().run()
        assert [t.value for t in at.toast] == ["The same conversion was made before: bert-nsp-e8-all-average is reused."]
    assert [p.name for p in out.parent.iterdir() if not p.name.startswith(".")] == [out.name]
    at.button(key="card_albertize_pick").click().run()
    assert "converted:bert-nsp-e8-all-average" in at.sidebar.multiselect(key="picked").value  # as `checkpoints` lists it
    assert "converted:bert-nsp-e8-all-average" in at.sidebar.multiselect(key="picked").options  # once, not also as an extra
    assert len([o for o in at.sidebar.multiselect(key="picked").options if "e8-all-average" in o]) == 1


def test_probes_and_conversions_stop_at_the_disk_quota(app, tmp_path, monkeypatch):
    """'Fit the probe' and 'Convert' each wrote a new folder under runs/ without a bound."""
    from albert_lab import limits

    monkeypatch.setattr(limits, "APP_DISK_QUOTA", 1 << 20)
    (tmp_path / "runs").mkdir(exist_ok=True)
    (tmp_path / "runs" / "old.bin").write_bytes(b"\1" * (1 << 20))  # the runs folder already at its quota
    at = goto(app, "model_card")
    at.selectbox(key="card_checkpoint").set_value("hub-albert").run()
    next(b for b in at.button if b.label.startswith("Fit the probe")).click().run()
    assert any(e.value.startswith("fitting the probe: disk quota: ") and "this probe needs" in e.value for e in at.error)
    at.selectbox(key="card_checkpoint").set_value("bert-nsp").run()
    at.button[[b.label for b in at.button].index("Convert (seconds)")].click().run()
    assert any(e.value.startswith("converting: disk quota: ") for e in at.error), [e.value for e in at.error]
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["albertized", "old.bin", "probes"]
    for made in ("albertized", "probes"):  # their locks only
        assert not [p for p in (tmp_path / "runs" / made).iterdir() if not p.name.startswith(".")]


def test_convert_takes_a_bert_without_pooler_weights(tmp_path, tokenizer, monkeypatch):
    """BertModel exports often lack the pooler: Convert was a KeyError 'bert.pooler.dense.weight'."""
    from conftest import save_bert, start
    from safetensors.torch import load_file, save_file

    folder, _ = save_bert(tmp_path / "ckpts" / "no-pooler", tokenizer, layers=2)
    weights = str(folder / "model.safetensors")
    save_file({k: v for k, v in load_file(weights).items() if not k.startswith("bert.pooler.")}, weights,
              metadata={"format": "pt"})
    monkeypatch.setenv("ALBERT_LAB_CHECKPOINTS", str(tmp_path / "ckpts"))
    at = start("model_card")
    at.number_input(key="card_albertize_e").set_value(8)
    at.button[[b.label for b in at.button].index("Convert (seconds)")].click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any("Saved" in s.value for s in at.success)
    card = read_card(tmp_path / "runs" / "albertized" / "no-pooler-e8-all-average")
    assert card["conversion"]["heads"]["pair"] == "absent in the source (no pooler weights)"


def test_a_checkpoints_summary_is_read_once_for_every_visitor_and_never_changed(app):
    """loading.summary is kept in the server process and shared, read-only: the cards drawn from it, by this
    visitor and the next, leave it as its files say."""
    from albert_lab.checkpoint.discover import summarize_checkpoint
    from app.shell import loading

    picked = {name: source for name, source in app.session_state["_shell"].selected}
    kept = {key: value for key, value in loading._SUMMARIES.items() if key[1] in picked and key[0] == picked[key[1]]}
    assert len(kept) >= 2  # albert-sop and bert-nsp, read from their files (hub-albert: only loading tells)
    goto(start("model_card"), "parameters")  # another visitor, two pages drawn from the same summaries
    for (source, name, _), summary in kept.items():
        assert loading.summary(source, name) is summary  # the one kept, not a copy
        assert summary == summarize_checkpoint(source, name)  # unchanged: as its files say
