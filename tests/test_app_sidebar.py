"""The sidebar and the page link (AppTest): folders added, checkpoints picked and coloured, presets, links."""

import os
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import MAIN, goto, link_of, opened_by_link
from streamlit.testing.v1 import AppTest


def test_path_field_refuses_folders_outside_the_allowed_roots(app):
    app.sidebar.text_input(key="add_source").set_value("/etc")
    app.sidebar.button(key="add_button").click().run()
    assert any("outside the folders the app may read" in e.value for e in app.error)
    assert not app.exception


def test_the_folder_field_says_one_thing_of_any_path_outside_and_names_no_server_folder(app):
    """'~nosuchuser123', '~root' and '~' told which user names exist, the server's home folder and
    the absolute allowed folders. Now one message, the typed text apart, for every path outside."""
    from albert_lab.paths import allowed_roots

    said = {}
    for text in ("~nosuchuser123", "~root", "~", "/etc", "/root/.ssh", "../../..", "/nonexistent/dir"):
        app.sidebar.text_input(key="add_source").set_value(text)
        app.sidebar.button(key="add_button").click().run()
        assert not app.exception
        (error,) = [e.value for e in app.error]
        said[text] = error.replace(repr(text), "<text>")
        assert not any(str(root) in error for root in allowed_roots()), error
        assert os.path.expanduser("~") not in error.replace(repr(text), "") or os.path.expanduser("~") == "/", error
    assert len(set(said.values())) == 1, said
    assert "is outside the folders the app may read (" in next(iter(said.values()))


@pytest.mark.parametrize("text, words", [("albert\x00sop", "control character"), ("a" * 5000, "too long for a path")])
def test_the_folder_field_answers_a_nul_byte_or_a_long_string_with_a_message(app, text, words):
    app.sidebar.text_input(key="add_source").set_value(text)
    app.sidebar.button(key="add_button").click().run()
    assert not app.exception, app.exception
    errors = [e.value for e in app.error]
    assert any(words in e for e in errors) and not any("Something went wrong" in e for e in errors), errors


def test_adding_a_listed_checkpoint_picks_it_instead_of_listing_it_twice(app, shipped):
    """Two entries of one name merged both models' rows in every analysis (on Oscillation
    albert-sop's line ran from layer 6 back to layer 1)."""
    before = app.sidebar.multiselect(key="picked").value
    for text in (f"{shipped / 'albert-sop'}/", "albert-sop"):  # its folder, and its name alone
        app.sidebar.text_input(key="add_source").set_value(text)
        app.sidebar.button(key="add_button").click().run()
        assert not app.exception and not app.error, [e.value for e in app.error]
        assert app.sidebar.multiselect(key="picked").value == before
        assert [t.value for t in app.toast] == ["albert-sop is already listed; it is picked."]


def test_a_typed_root_folder_name_is_a_folder_not_a_hub_id(app):
    """'runs' (the field invites folders inside runs/) was taken for a hub id, wherever the
    app was started; now it is looked for where the app's runs are."""
    runs = Path(os.environ["ALBERT_LAB_RUNS"])
    runs.mkdir(parents=True, exist_ok=True)
    app.sidebar.text_input(key="add_source").set_value(runs.name)
    app.sidebar.button(key="add_button").click().run()
    (error,) = [e.value for e in app.error]
    assert "no config.json" in error and "hub" not in error


def _heads_said_missing(at) -> None:
    assert any("MLM head" in w.value and "NSP head" in w.value for w in at.warning)
    heads = next(t.value for t in at.table if "head" in t.value.columns)
    assert set(heads.status) == {"missing"}


def _not_scored(at) -> None:
    typed = next(d.value for d in at.dataframe if "p_ab" in d.value)
    assert typed.p_ab.isna().all() and any("not scored" in w.value for w in at.warning)


def _refused_in_words(at) -> None:
    assert any("MLM head" in e.value for e in at.error)  # refused in words, not computed


# What each page shows of a checkpoint without MLM and NSP heads; every other page of the registry: no error box
HEADLESS = {"model_card": _heads_said_missing, "sentence_pairs": _not_scored, "gradient_flow": _refused_in_words}


def test_a_real_pretrained_encoder_through_every_page(app, minilm, monkeypatch):
    """all-MiniLM-L6-v2 (no MLM head, no NSP head), added in the sidebar: every page of the registry
    shows its head status and never a number from a missing head."""
    from app.shell.registry import PAGES

    monkeypatch.setenv("ALBERT_LAB_ALLOWED_DIRS", str(minilm.parent))
    app.text_input(key="add_source").set_value(str(minilm))
    next(b for b in app.button if b.label == "Add").click().run()
    assert not app.exception and not app.error, [e.value for e in app.error]
    name = next(n for n in app.session_state["picked"] if "model" in n or "minilm" in n.lower())
    app.session_state["picked"] = [name]
    at = app
    for room in PAGES:
        at = goto(at, room.stem)  # no exception on any page
        check = HEADLESS.get(room.stem)
        if check is not None:
            check(at)
        else:
            assert not at.error, (room.stem, [e.value for e in at.error])


def test_a_link_naming_an_added_folder_opens_it(app, minilm, monkeypatch, tmp_path):
    """The link carried only the folder's name, which the recipient's app did not know: it
    dropped it silently and opened the card on albert-sop."""
    from conftest import MAIN
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("ALBERT_LAB_ALLOWED_DIRS", f"{minilm.parent}:{tmp_path}")
    app.sidebar.text_input(key="add_source").set_value(str(minilm))
    app.sidebar.button(key="add_button").click().run()
    app.selectbox(key="card_checkpoint").set_value("all-MiniLM-L6-v2").run()
    link = {k: v if isinstance(v, str) else v[0] for k, v in app.query_params.items()}
    # by its place under the allowed folder that holds it, never the server's absolute path
    assert f"{minilm.parent.name}/{minilm.name}" in link["ckpt"].split(",") and link["card_checkpoint"] == "all-MiniLM-L6-v2"
    assert str(minilm.parent) not in " ".join(link.values())

    fresh = AppTest.from_file(MAIN, default_timeout=120)  # the recipient, in a new session
    fresh.query_params.update(link)
    fresh.run()
    assert not fresh.exception and not any("left out" in w.value for w in fresh.warning)
    assert "all-MiniLM-L6-v2" in fresh.sidebar.multiselect(key="picked").value
    assert fresh.selectbox(key="card_checkpoint").value == "all-MiniLM-L6-v2"

    gone = AppTest.from_file(MAIN, default_timeout=120)  # a folder the recipient's machine lacks: said, not dropped
    gone.query_params.update({"ckpt": f"albert-sop,{tmp_path / 'nowhere'},run:20261101-000000-x"})
    gone.run()
    assert not gone.exception and gone.sidebar.multiselect(key="picked").value == ["albert-sop"]
    assert any("nowhere" in w.value and "left out" in w.value for w in gone.warning), [w.value for w in gone.warning]
    assert any("run:20261101-000000-x" in w.value and "no training run" in w.value for w in gone.warning)


def test_the_link_carries_the_view_and_a_preset_opens_figure_1(app):
    at = goto(app, "oscillation")
    at.selectbox(key="osc_agg").set_value("median").run()
    assert at.query_params["osc_agg"] == ["median"] or at.query_params["osc_agg"] == "median"
    from app.shell.presets import PRESETS

    label, stem, params = PRESETS[0]
    assert stem == "oscillation" and "Figure 1" in label
    fresh = AppTest.from_file(MAIN, default_timeout=120)
    for key, value in params.items():
        fresh.query_params[key] = value
    fresh.run()
    assert fresh.sidebar.multiselect(key="picked").value == ["albert-sop", "bert-nsp"]
    fresh.switch_page("rooms/oscillation/page.py").run()
    assert not fresh.exception
    verdicts = [m.value for m in fresh.markdown if m.value.startswith("**") and "roughness" in m.value]
    assert [v.split("**")[1] for v in verdicts] == ["albert-sop", "bert-nsp"]


def _open_link(link: dict[str, str], page: str) -> AppTest:
    fresh = opened_by_link(link, page)  # the link opens the page itself
    assert not fresh.exception, [e.value for e in fresh.exception]
    return fresh


def test_links_reproduce_the_calculator_the_shared_layer_view_a_typed_pair_and_the_training_preset(app):
    app.sidebar.multiselect(key="picked").set_value(["bert-nsp", "albert-sop"]).run()
    at = goto(app, "parameters")
    at.selectbox(key="calc_preset").set_value("albert-xxlarge").run()
    at.number_input(key="calc_l_albert-xxlarge").set_value(24).run()
    fresh = _open_link(link_of(at), "parameters")
    assert fresh.selectbox(key="calc_preset").value == "albert-xxlarge"
    assert fresh.number_input(key="calc_l_albert-xxlarge").value == 24 and fresh.metric[0].value == at.metric[0].value

    at = goto(at, "shared_block")
    at.radio(key="sb_input").set_value("My text").run()
    at.text_area(key="sb_text").set_value("One sentence here. Another one there.\n\nA second text.").run()
    at.slider(key="sb_repeat").set_value(3).run()
    link = link_of(at)
    assert link["ckpt"] == "bert-nsp,albert-sop"  # the sidebar's pick travels too
    fresh = _open_link(link, "shared_block")
    assert fresh.sidebar.multiselect(key="picked").value == ["bert-nsp", "albert-sop"]
    assert fresh.radio(key="sb_input").value == "My text" and fresh.slider(key="sb_repeat").value == 3
    assert fresh.text_area(key="sb_text").value == "One sentence here. Another one there.\n\nA second text."

    at = goto(at, "sentence_pairs")
    at.text_area(key="pair_a").set_value("The bridge was closed in winter.")
    at.text_area(key="pair_b").set_value("It reopened in spring.")
    at.button[0].click().run()  # the form's submit button
    fresh = _open_link(link_of(at), "sentence_pairs")
    assert fresh.text_area(key="pair_a").value == "The bridge was closed in winter."
    shown = fresh.dataframe[0].value
    assert set(shown["sentence_b"]) == {"It reopened in spring."}

    at = goto(at, "training")
    at.selectbox(key="tr_preset").set_value("lab-bert").run()
    fresh = _open_link(link_of(at), "training")
    assert fresh.selectbox(key="tr_preset").value == "lab-bert" and fresh.number_input(key="tr_embedding_size").value == 256


def test_a_link_with_values_its_widgets_refuse_opens_on_the_defaults(app):
    """A hand-edited link (?dl_depth=500) made the slider raise instead of drawing the page."""
    fresh = opened_by_link({"dl_depth": "500", "dl_steps": "75", "dl_std": "9", "dl_width": "7", "gf_seed": "-3"}, "depth_lab")
    assert not fresh.exception, [e.value for e in fresh.exception]
    assert fresh.slider(key="dl_depth").value == 16 and fresh.slider(key="dl_steps").value == 300
    fresh.switch_page("rooms/gradient_flow/page.py").run()
    assert not fresh.exception and fresh.number_input(key="gf_seed").value == 0


def test_classroom_preset_labels_fit_the_sidebar():
    """'Figure 1: ALBERT vs BERT oscillation' was cut to 'Figure 1: ALBERT vs BERT os...'."""
    from app.shell.presets import PRESET_HELP, PRESETS

    assert all(len(label) <= 26 for label, _, _ in PRESETS)
    assert all(stem in PRESET_HELP for _, stem, _ in PRESETS)


def test_a_checkpoint_keeps_its_colour_whatever_else_is_selected():
    import pandas as pd

    from albert_lab.figures.look import colour_for
    from albert_lab.figures.oscillation import oscillation_figure
    from albert_lab.figures.shared_block import extrapolation_figure, lens_figure

    def frame(names):
        return pd.DataFrame([dict(checkpoint=n, family="bert" if "bert-" in n else "albert", layer=layer, l2=1.0,
                                  angle_deg=1.0, l2_spread=0.0, angle_spread=0.0) for n in names for layer in (1, 2)])

    def colours(fig):
        return {t.name: t.line.color for t in fig.data}

    assert colours(oscillation_figure(frame(["bert-nsp"])))["bert-nsp"] == \
        colours(oscillation_figure(frame(["albert-sop", "bert-nsp"])))["bert-nsp"] == colour_for("bert-nsp")

    def applications(names):  # the Shared layer page's frames: one row per checkpoint and application
        return pd.DataFrame([dict(checkpoint=n, family="bert" if "bert-" in n else "albert", application=a, depth_L=6,
                                  l2_step=1.0, l2_to_depth_L=1.0, mlm_accuracy=0.1, nll=5.0) for n in names for a in (0, 1)])

    for figure in (extrapolation_figure, lens_figure):  # coloured by place in the selection before
        assert {name: colour for name, colour in colours(figure(applications(["albert-sop", "bert-nsp", "albert-none"]))).items()} \
            == {name: colour_for(name) for name in ("albert-sop", "bert-nsp", "albert-none")}


def test_the_shipped_checkpoints_each_have_their_own_colour(monkeypatch):
    """The picker's order gives the colours; the README's figures use it too
    (albert-sop and albert-nsp once shared a hashed colour in the learning curve)."""
    from conftest import ROOT

    from albert_lab.checkpoint.discover import discover_checkpoints
    from albert_lab.figures import look
    from albert_lab.figures.look import colour_for, register_checkpoints
    from app.shell.look import shipped_first

    monkeypatch.setattr(look, "_ORDER", [])  # as in a fresh app: no checkpoint seen before the picker's
    shipped = discover_checkpoints(ROOT / "checkpoints", ROOT / "no-runs")
    names = [c["name"] for c in shipped_first(c.to_dict() for c in shipped)]
    assert names == ["albert-sop-minilm", "bert-sop-minilm", "albert-nsp-minilm",  # uptrained from MiniLM first
                     "albert-sop", "albert-nsp", "bert-nsp", "albert-none"]
    register_checkpoints(names)
    assert len({colour_for(name) for name in names}) == 7
    fresh = [f"run:never-registered-{i}" for i in range(3)]  # names the picker never saw
    assert len({colour_for(name) for name in fresh}) == 3


def test_a_class_worth_of_checkpoints_in_one_server_keeps_distinct_colours(monkeypatch):
    """Shipped checkpoints, finished runs and added folders all take a colour slot in the
    server process: with 8 colours the ninth looked like the first."""
    from albert_lab.figures import look

    monkeypatch.setattr(look, "_ORDER", [])
    names = ["albert-sop", "bert-sop-minilm", "albert-nsp", "bert-nsp", "albert-none"] + [f"run:{i}" for i in range(10)]
    assert len({look.colour_for(name) for name in names}) == len(names)


def test_a_google_release_folder_added_in_the_sidebar(app, monkeypatch, tmp_path):
    """The folder an original ALBERT release unpacks to (the committed tiny one), typed into the
    sidebar: converted through the library's loader, its SOP head trained from the release."""
    import shutil
    from pathlib import Path

    release = tmp_path / "albert_base"
    shutil.copytree(Path(__file__).parent / "fixtures" / "tf_releases" / "albert_tiny", release)
    monkeypatch.setenv("ALBERT_LAB_ALLOWED_DIRS", str(tmp_path))
    app.text_input(key="add_source").set_value(str(release))
    next(b for b in app.button if b.label == "Add").click().run()
    assert not app.exception and not app.error, [e.value for e in app.error]
    assert "albert_base" in app.session_state["picked"]
    app.session_state["picked"] = ["albert_base"]
    at = goto(app, "model_card")
    assert not at.exception and not at.error, [e.value for e in at.error]
    heads = next(t.value for t in at.table if "head" in t.value.columns)
    assert set(heads.status) == {"trained"}


def test_a_release_archive_added_in_the_sidebar_is_named_as_import_tf_names_it(app, monkeypatch, tmp_path):
    """albert_tiny_v2.tar.gz added in the sidebar was listed as 'albert_tiny_v2.tar.gz', while import-tf
    (and the card's provenance) called it 'albert_tiny_v2', the release folder it unpacks to."""
    import tarfile
    from pathlib import Path

    from albert_lab.checkpoint.archive import unpacked_release
    from albert_lab.checkpoint.release import open_release

    archive = tmp_path / "albert_tiny_v2.tar.gz"
    with tarfile.open(archive, "w:gz") as handle:
        handle.add(Path(__file__).parent / "fixtures" / "tf_releases" / "albert_tiny", arcname="albert_tiny_v2")
    monkeypatch.setenv("ALBERT_LAB_ALLOWED_DIRS", str(tmp_path))
    app.text_input(key="add_source").set_value(str(archive))
    next(b for b in app.button if b.label == "Add").click().run()
    assert not app.exception and not app.error, [e.value for e in app.error]
    assert "albert_tiny_v2" in app.session_state["picked"] and "albert_tiny_v2.tar.gz" not in app.session_state["picked"]
    assert open_release(unpacked_release(archive)).describe().startswith("albert_tiny_v2: ")  # import-tf's first line


def test_a_model_whose_analyses_take_minutes_on_this_cpu_is_named(app, monkeypatch):
    """ALBERT-xxlarge on a CPU: the sidebar says, under the device, that its analyses take minutes."""
    from app.shell import picker

    note = "takes minutes"
    app.sidebar.selectbox(key="device").set_value("cpu").run()
    assert not [c for c in app.sidebar.caption if note in c.value]  # the shipped models are small
    monkeypatch.setattr(picker, "BIG", 0.006)  # tiny test models: L = 3 does 0.0078 times the shipped albert-sop's work, L = 2 0.0052
    app.run()
    (caption,) = [c.value for c in app.sidebar.caption if note in c.value]
    assert "albert-sop (H = 32, L = 3: about 0.00781 times albert-sop's work)" in caption and "hub-albert" not in caption
    app.sidebar.selectbox(key="device").set_value("auto").run()  # no GPU here: auto is the CPU, still named
    assert [c for c in app.sidebar.caption if note in c.value]


@pytest.mark.parametrize("entry, words", [
    ("a" * 300, "too long for a path"),  # OSError: File name too long, above every page
    ("a\x00b", "control character"),  # ValueError: embedded null byte
    ("~nouser/x", "outside the folders the app may read"),  # RuntimeError once; then it said which users exist
    ("/".join(["d" * 200] * 20), "outside the folders the app may read"),  # under PATH_MAX, over it after the roots
])
def test_a_link_with_a_malformed_folder_opens_the_page_and_says_what_it_left_out(app, entry, words):
    at = opened_by_link({"ckpt": f"albert-sop,{entry}"}, "model_card")
    assert not at.exception, [e.value for e in at.exception]
    assert at.sidebar.multiselect(key="picked").value == ["albert-sop"]
    (warning,) = [w.value for w in at.warning if "left out" in w.value]
    assert words in warning and len(warning) < 600, warning
    assert at.selectbox(key="card_checkpoint").value == "albert-sop"  # the page is drawn


def test_a_link_naming_hundreds_of_checkpoints_opens_a_bounded_number(app, monkeypatch):
    """500 names: each was checked (and a folder loaded) on opening the link, each left-out one its own warning."""
    from app.shell import picker

    looked = []
    real = picker._offer_from_link
    monkeypatch.setattr(picker, "_offer_from_link", lambda entry, extra: looked.append(entry) or real(entry, extra))
    names = ["albert-sop", "bert-nsp", *(f"model-{i}" for i in range(498))]
    at = opened_by_link({"ckpt": ",".join(names)}, "model_card")
    assert not at.exception
    assert len(looked) == picker.MAX_LINK_CHECKPOINTS - 2  # the two listed ones need no look
    warnings = [w.value for w in at.warning]
    assert warnings[0] == f"This link names 500 checkpoints; the first {picker.MAX_LINK_CHECKPOINTS} are opened, the others left out."
    assert len(warnings) == picker.MAX_LINK_CHECKPOINTS - 1
    assert at.sidebar.multiselect(key="picked").value == ["albert-sop", "bert-nsp"]


def test_a_link_does_not_unpack_a_release_archive(app, monkeypatch, tmp_path):
    """Opening a link unpacked and converted a release archive (up to 16 GiB) for whoever opened it."""
    import tarfile

    from albert_lab.checkpoint.archive import is_unpacked

    archive = tmp_path / "albert_base.tar.gz"
    with tarfile.open(archive, "w:gz") as handle:
        handle.add(Path(__file__).parent / "fixtures" / "tf_releases" / "albert_tiny", arcname="albert_base")
    monkeypatch.setenv("ALBERT_LAB_ALLOWED_DIRS", str(tmp_path))
    at = opened_by_link({"ckpt": f"albert-sop,{archive}"}, "model_card")
    assert not at.exception and not is_unpacked(archive)
    (warning,) = [w.value for w in at.warning if "left out" in w.value]
    assert "release archive not unpacked on this machine yet" in warning
    from app.shell.places import link_form, typed_folder

    # a link names the archive by its place under the allowed folder, which finds it again
    assert link_form(str(archive)) == f"{tmp_path.name}/albert_base.tar.gz" and typed_folder(link_form(str(archive)))


def test_a_folder_with_a_comma_in_its_name_travels_in_the_link(app, monkeypatch, tmp_path, shipped):
    """The link joins checkpoints with commas: 'my,model' came back as 'my' and 'model', both left out."""
    import shutil

    folder = tmp_path / "my,model"
    shutil.copytree(shipped / "bert-nsp", folder)
    monkeypatch.setenv("ALBERT_LAB_ALLOWED_DIRS", str(tmp_path))
    app.sidebar.text_input(key="add_source").set_value(str(folder))
    app.sidebar.button(key="add_button").click().run()
    assert not app.error, [e.value for e in app.error]
    at = goto(app, "model_card")
    link = link_of(at)
    assert link["ckpt"].endswith(f",{tmp_path.name}/my%2Cmodel") and str(tmp_path) not in link["ckpt"]
    fresh = opened_by_link(link, "model_card")
    assert not fresh.exception and not [w.value for w in fresh.warning if "left out" in w.value]
    assert fresh.sidebar.multiselect(key="picked").value == app.sidebar.multiselect(key="picked").value


def test_a_link_names_a_folder_under_checkpoints_or_runs_without_the_servers_path(app, shipped):
    """Share links carried the added folder's absolute path (the server's folders, for anyone the link
    reaches): a folder under checkpoints/ travels as checkpoints/<name>, one in a run as runs/<id>/..."""
    import shutil

    from albert_lab.paths import runs_dir

    inside = runs_dir() / "20261101-000000-copy" / "checkpoint"
    shutil.copytree(shipped / "bert-nsp", inside)
    app.sidebar.text_input(key="add_source").set_value(str(inside))
    app.sidebar.button(key="add_button").click().run()
    at = goto(app, "oscillation")
    link = link_of(at)
    entry = f"{runs_dir().name}/20261101-000000-copy/checkpoint"
    assert entry in link["ckpt"].split(",") and str(runs_dir()) not in link["ckpt"]
    outside = opened_by_link({"ckpt": "/etc"}, "model_card")  # the refusal names the allowed folders by name only
    (warning,) = [w.value for w in outside.warning if "left out" in w.value]
    assert f"({shipped.name}/ and {runs_dir().name}/)" in warning and str(runs_dir()) not in warning, warning
    fresh = opened_by_link(link, "oscillation")
    assert not fresh.exception and not [w.value for w in fresh.warning if "left out" in w.value]
    assert fresh.sidebar.multiselect(key="picked").value == at.sidebar.multiselect(key="picked").value


def test_an_error_in_the_sidebar_or_a_page_is_a_message_not_a_traceback(app, monkeypatch):
    from albert_lab.errors import AlbertLabError
    from app.shell import loading, picker

    def unreadable(*args, **kwargs):
        raise AlbertLabError("runs/: cannot be read (Permission denied)")

    monkeypatch.setattr(picker, "available_checkpoints", unreadable)
    app.run()
    assert not app.exception, [e.value for e in app.exception]
    assert any("reading the sidebar: runs/: cannot be read" in e.value for e in app.error)
    monkeypatch.undo()
    monkeypatch.setattr(loading, "need_checkpoints", unreadable)
    at = goto(app, "model_card")
    assert any(e.value == "runs/: cannot be read (Permission denied)" for e in at.error), [e.value for e in at.error]


def test_a_bug_is_a_message_for_users_and_an_exception_under_tests(monkeypatch):
    """The page runs inside the guard: a user sees a bug as a message with its details folded away;
    the suite (ALBERT_LAB_STRICT=1, set in conftest) sees it raised, so no test misses it."""
    def page():
        from app.shell.guard import guard

        with guard("drawing"):
            raise ZeroDivisionError("a bug")

    strict = AppTest.from_function(page).run()
    assert strict.exception and strict.exception[0].value == "a bug"
    monkeypatch.setenv("ALBERT_LAB_STRICT", "0")
    shown = AppTest.from_function(page).run()
    assert not shown.exception and "Something went wrong while drawing: ZeroDivisionError: a bug" in shown.error[0].value


def test_bfloat16_says_beside_it_what_it_costs_here_and_goes_back_where_too_slow(app, monkeypatch):
    """The sidebar offered bfloat16 as 'faster on CPUs with AVX512-BF16/AMX' on a CPU where a
    2048^3 bf16 product did not finish in two minutes: picked, it now says what it measured
    here (devices.bf16_verdict), and where it is too slow to use, float32 stays."""
    from albert_lab import devices

    slower = "bfloat16 is 2.0x slower than float32 on this CPU"
    monkeypatch.setattr(devices, "bf16_verdict", lambda device: (True, slower))
    app.sidebar.selectbox(key="dtype").set_value("bfloat16").run()
    assert not app.exception and app.sidebar.selectbox(key="dtype").value == "bfloat16"
    assert slower in [c.value for c in app.sidebar.caption]
    monkeypatch.setattr(devices, "bf16_verdict", lambda device: (True, None))  # faster here: nothing to say
    app.run()
    assert not [c.value for c in app.sidebar.caption if "bfloat16" in c.value]
    too_slow = "bfloat16 is 200x slower than float32 on this CPU (no AVX512-BF16 or AMX): too slow to use here"
    monkeypatch.setattr(devices, "bf16_verdict", lambda device: (False, too_slow))
    app.sidebar.selectbox(key="dtype").set_value("float32").run()
    app.sidebar.selectbox(key="dtype").set_value("bfloat16").run()
    assert not app.exception and app.sidebar.selectbox(key="dtype").value == "float32"
    assert [w.value for w in app.sidebar.warning] == [f"{too_slow}: float32 it is."]


def test_a_releases_casing_given_in_the_sidebar_is_its_tokenizers_and_its_cards(app, monkeypatch, tmp_path):
    """Google's uncased BERT fixture added twice: with 'cased' (a tokenizer that keeps capitals, whose
    pieces this lower-case vocabulary lacks) and 'as the release says' (lower-cased). Each card says
    where its casing came from; the loader keys on the casing; a hub id or another folder refuses one."""
    import shutil

    from app.shell.selection import Selection

    release = tmp_path / "uncased_L-2_H-16_A-2"
    shutil.copytree(Path(__file__).parent / "fixtures" / "tf_releases" / release.name, release)
    monkeypatch.setenv("ALBERT_LAB_ALLOWED_DIRS", str(tmp_path))
    for casing in ("cased", "release"):
        app.sidebar.text_input(key="add_source").set_value(str(release))
        app.sidebar.selectbox(key="add_casing").set_value(casing)
        app.sidebar.button(key="add_button").click().run()
        assert not app.exception and not app.error, [e.value for e in app.error]
    cased, own = f"{release.name}-cased", release.name
    assert {cased, own} <= set(app.session_state["picked"])
    assert app.session_state["_shell"].casings == {cased: "cased"}

    cards = {}
    for name in (cased, own):
        app.session_state["picked"] = [name]
        at = goto(app, "model_card")
        assert not at.exception and not at.error, [e.value for e in at.error]
        cards[name] = next(v for t in at.table if "field" in t.value for f, v in zip(t.value["field"], t.value["value"])
                           if f == "casing")
    assert cards[cased] == f"cased: cased given in the sidebar (the release says lower-cased: the release's name {own!r} says uncased)"
    assert cards[own] == f"lower-cased: the release's name {own!r} says uncased"

    shell = app.session_state["_shell"]
    selection = Selection(tuple(shell.extra_sources.items()), "cpu", "float32", casings=tuple(shell.casings.items()))
    assert selection.key() != replace(selection, casings=()).key()
    bundles = selection.bundles()
    assert [bundle.card["provenance"]["casing"] for bundle in bundles] == [cards[cased], cards[own]]  # loaded, as from its files
    ids = {bundle.name.removeprefix(own) or "own": bundle.tokenizer("Paris is a city.", "She took the train.")["input_ids"]
           for bundle in bundles}
    vocab = [line.strip() for line in (release / "vocab.txt").read_text().splitlines()]
    assert [vocab[i] for i in ids["own"]] == ["[CLS]", "paris", "is", "a", "city", ".", "[SEP]", "she", "took", "the",
                                              "train", ".", "[SEP]"]
    assert [vocab[i] for i in ids["-cased"]] == ["[CLS]", "[UNK]", "is", "a", "city", ".", "[SEP]", "[UNK]", "took", "the",
                                                 "train", ".", "[SEP]"]  # 'Paris' and 'She' are not lower-case pieces

    app.session_state["picked"] = [cased, own]
    app.run()
    link = link_of(app)
    assert link["ckpt"].split(",") == [f"cased:{tmp_path.name}/{own}", f"{tmp_path.name}/{own}"]  # the casing travels
    fresh = AppTest.from_file(MAIN, default_timeout=120)  # the recipient, in a new session
    fresh.query_params.update(link)
    fresh.run()
    assert not fresh.exception and not fresh.warning, [w.value for w in fresh.warning]
    assert fresh.sidebar.multiselect(key="picked").value == [cased, own]
    assert fresh.session_state["_shell"].casings == {cased: "cased"}

    for text, casing in (("albert-sop", "uncased"), ("some-user/some-model", "cased")):  # a shipped folder, a hub id
        app.sidebar.text_input(key="add_source").set_value(text)
        app.sidebar.selectbox(key="add_casing").set_value(casing)
        app.sidebar.button(key="add_button").click().run()
        assert not app.exception
        (error,) = [e.value for e in app.error]
        assert "Casing applies to Google's original releases" in error and "\n" not in error, error
    hub = AppTest.from_file(MAIN, default_timeout=120)  # a link giving a hub id a casing: said, not dropped
    hub.query_params.update({"ckpt": "albert-sop,cased:some-user/some-model"})
    hub.run()
    assert not hub.exception and hub.sidebar.multiselect(key="picked").value == ["albert-sop"]
    assert any("left out: Casing applies to Google's original releases" in w.value for w in hub.warning)
