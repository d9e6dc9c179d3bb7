"""The front door (`import albert_lab as al`, albert_lab/lab.py): cheap to import, a verb per analysis record
with the record's options, Results that hold the analysis's own frame, draw the library's figure, carry the
page's words and save themselves; the figures take a theme and draw a visitor's text as text."""

from __future__ import annotations

import inspect
import subprocess
import sys

import pandas as pd
import pytest

import albert_lab as al
from albert_lab.analysis.registry import ANALYSES


def test_import_albert_lab_loads_neither_torch_transformers_nor_plotly():
    """`python -X importtime -c "import albert_lab"` lists every module imported: none of the heavy ones, verbs included."""
    result = subprocess.run([sys.executable, "-X", "importtime", "-c", "import albert_lab as al; al.oscillation; al.Result"],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    loaded = {line.split("|")[-1].strip().split(".")[0] for line in result.stderr.splitlines() if "|" in line}
    assert "albert_lab" in loaded and not loaded & {"torch", "transformers", "plotly", "streamlit"}, loaded & {"torch", "transformers", "plotly"}


def test_every_analysis_record_has_a_verb_with_its_options():
    for record in ANALYSES:
        verb = getattr(al, record.name.replace("-", "_"))
        parameters = inspect.signature(verb).parameters
        for option in record.options:
            if option.use == "output":
                assert option.name not in parameters
            elif option.name in parameters and parameters[option.name].kind == inspect.Parameter.KEYWORD_ONLY:
                assert parameters[option.name].default == option.default, (record.name, option.name)
        assert record.help.split()[0].lower() in verb.__doc__.lower() and "Returns a Result" in verb.__doc__


def test_each_records_figure_and_reading_name_library_functions():
    """A record names its figure (albert_lab.figures) and its page's words (albert_lab.readings): al's Result draws them."""
    import importlib

    for record in ANALYSES:
        if record.figure:
            module, _, name = record.figure.rpartition(".")
            figure = getattr(importlib.import_module(f"albert_lab.figures.{module}"), name)
            assert getattr(figure, "themed", False), record.name  # takes theme=, draws a visitor's text as text
        if record.reading:
            module, _, name = record.reading.rpartition(".")
            assert callable(getattr(importlib.import_module(f"albert_lab.readings.{module}"), name)), record.name
    assert sum(bool(r.figure) for r in ANALYSES) >= 8


def test_an_option_out_of_bounds_or_unknown_is_one_message(make_checkpoint):
    folder, _ = make_checkpoint("tiny")
    with pytest.raises(al.AlbertLabError, match="max_len must be"):
        al.oscillation(str(folder), "A text.", max_len=1)
    with pytest.raises(al.AlbertLabError, match="takes no option colour"):
        al.oscillation(str(folder), "A text.", colour="red")


def test_a_verb_returns_the_analysis_frame_its_figure_and_words(make_checkpoint, tmp_path):
    from albert_lab.analysis.oscillation import oscillation
    from albert_lab.checkpoint.load import load_checkpoint

    folder, _ = make_checkpoint("tiny")
    texts = ["The river flows north. It reaches the sea.", "Bridges cross it. Boats pass under them."]
    result = al.oscillation(str(folder), texts)
    expected = oscillation([load_checkpoint(folder, device="cpu")], texts)
    pd.testing.assert_frame_equal(result.frame, expected)
    fig = result.figure()
    assert {t.name for t in fig.data} == {"tiny"} and len(fig.data) == 2  # L2 and angle panels
    assert "**tiny**" in result.reading and "roughness" in result.reading
    html = result._repr_html_()
    assert "newPlot" in html and "<b>tiny</b>" in html
    assert result.save(tmp_path / "o.csv").read_text().startswith("checkpoint,")
    assert "plotly" in result.save(tmp_path / "o.html").read_text()[:100_000].lower()
    with pytest.raises(al.AlbertLabError, match=r"save as \.csv"):
        result.save(tmp_path / "o.docx")


def test_the_head_view_is_html_of_its_own_shown_and_saved(make_checkpoint, tmp_path):
    """al.head_view: no plotly figure but a view of its own, opening on the heads asked for, shown in Jupyter and
    saved as one page."""
    folder, _ = make_checkpoint("tiny")
    result = al.head_view(str(folder), "The river flows north.", application=2, heads=[1])
    assert result.figure() is None and 'class="alhv"' in result._repr_html_() and '"shown": [1]' in result.view
    saved = result.save(tmp_path / "view.html").read_text()
    assert saved.startswith("<!doctype html>") and result.view in saved
    with pytest.raises(al.AlbertLabError, match=r"its view as \.html"):
        result.save(tmp_path / "view.png")


def test_plotly_js_comes_from_the_installed_package_once_per_process():
    from plotly.offline import get_plotlyjs

    from albert_lab import result as results
    from albert_lab.figures.parameters import parameter_bars

    fig = parameter_bars(pd.DataFrame({"component": ["a"], "unique": [1], "applied": [2]}), "t")
    results._SENT["plotlyjs"] = False
    first, second = results.figure_html(fig), results.figure_html(fig)
    bundle = get_plotlyjs()
    assert bundle[:2000] in first and bundle[:2000] not in second and "window.Plotly" in second
    assert "cdn" not in first.replace(bundle, "").lower() and "https://" not in first.replace(bundle, "")


def test_figures_take_a_theme_and_draw_a_visitors_text_as_text():
    import plotly.io as pio

    from albert_lab.figures.look import DARK, Theme
    from albert_lab.figures.oscillation import roughness_figure

    verdicts = pd.DataFrame({"checkpoint": ['<a href="x">evil</a>', "albert-sop"], "roughness": [0.2, 0.0]})
    plain, dark = roughness_figure(verdicts), roughness_figure(verdicts, theme=DARK)
    night = pio.templates["plotly_dark"].layout.paper_bgcolor
    assert dark.layout.template.layout.paper_bgcolor == night != plain.layout.template.layout.paper_bgcolor
    assert roughness_figure(verdicts, theme=Theme(font="serif")).layout.font.family == "serif"
    assert all("<a " not in str(v) for t in plain.data for v in t.y) and any("&lt;a " in str(v) for t in plain.data for v in t.y)
    assert [t.marker.color for t in plain.data] == [t.marker.color for t in dark.data]  # a checkpoint keeps its colour


def test_reading_escapes_markup_but_keeps_bold():
    from albert_lab.result import markdown_html

    out = markdown_html("- **a<script>**: fine\n- b\n\nSmoothest: <img src=x>")
    assert "<script>" not in out and "&lt;script&gt;" in out and "<b>a&lt;script&gt;</b>" in out
    assert out.count("<li>") == 2 and "&lt;img" in out
    mixed = markdown_html("Where a curve differs, its card says why:\n- **bert-nsp** (turns once)")
    assert mixed.endswith("<p>Where a curve differs, its card says why:</p><ul><li><b>bert-nsp</b> (turns once)</li></ul></div>")
    table = markdown_html("```\nname  accuracy\n<b>   0.5\n\nafter a blank line\n```")
    assert '">name  accuracy\n&lt;b&gt;   0.5\n\nafter a blank line</pre>' in table and "monospace" in table and "<p>" not in table


def test_params_counts_equal_the_command_lines():
    import json

    from conftest import run_cli

    for preset in ("albert-base", "bert-base"):
        result = run_cli("params", "--preset", preset, "--json")
        assert result.returncode == 0, result.stderr
        assert json.loads(json.dumps(al.params(preset).value.to_dict())) == json.loads(result.stdout)


def test_a_verb_keeps_its_name_when_the_module_of_that_name_is_imported():
    import importlib

    importlib.import_module("albert_lab.relax")
    importlib.import_module("albert_lab.params")
    assert callable(al.relax) and callable(al.params) and "Exact parameter" in al.params.__doc__
    from albert_lab.relax import parse_rank

    assert parse_rank("full") == "full"


@pytest.mark.slow
def test_a_figure_saves_as_png_and_svg_through_kaleido(tmp_path):
    """kaleido drives Debian's Chromium (found on the PATH): a PNG that is a PNG, an SVG with plotly's drawing."""
    from albert_lab.result import Result

    frame = pd.DataFrame({"component": ["embeddings", "attention"], "unique": [10, 20], "applied": [10, 40]})
    from albert_lab.figures.parameters import parameter_bars

    result = Result("params", frame, lambda theme=None: parameter_bars(frame, "counts", theme=theme))
    assert result.save(tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "main-svg" in result.save(tmp_path / "p.svg").read_text()


def test_a_saved_table_is_safe_for_a_spreadsheet_unless_asked_raw(tmp_path):
    """Result.save writes its CSV as `--out` does: a text cell a spreadsheet would run gets a leading '."""
    result = al.Result("pairs", pd.DataFrame({"sentence_a": ["=HYPERLINK(\"x\")", "plain"], "score": [-1.5, 2.0]}))
    back = pd.read_csv(result.save(tmp_path / "safe.csv"))
    assert list(back.sentence_a) == ["'=HYPERLINK(\"x\")", "plain"] and list(back.score) == [-1.5, 2.0]
    assert pd.read_csv(result.save(tmp_path / "raw.csv", raw_csv=True)).sentence_a.iloc[0] == "=HYPERLINK(\"x\")"


def test_score_reads_a_frame_with_a_formula_as_the_text_it_holds():
    from albert_lab.lab import read_pairs

    frame = pd.DataFrame({"sentence_a": ["=1+1 is two.", "-x"], "sentence_b": ["Yes it is.", "Minus."]})
    assert list(read_pairs(frame, 10).sentence_a) == ["=1+1 is two.", "-x"]  # not made safe: it is read back, not handed out
