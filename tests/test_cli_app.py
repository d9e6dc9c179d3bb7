"""albert-lab app and the server it starts: the port, what is imported when, threads, the icon."""

import os
import subprocess
import sys
import time

import pytest
from conftest import ROOT


@pytest.mark.parametrize("argv, port", [(["app"], 8501), (["app", "--port", "9100"], 9100),
                                        (["app", "--server.port", "9000"], 9000),
                                        (["app", "--server.port=9001", "--server.headless", "true"], 9001)])
def test_app_launcher_prints_the_port_it_starts(argv, port, monkeypatch, capsys):
    import os

    from albert_lab import cli

    calls = []
    monkeypatch.setattr(os, "chdir", lambda path: None)
    monkeypatch.setattr(os, "execve", lambda exe, command, env: calls.append(command))
    assert cli.main(argv) == 0
    assert f"http://localhost:{port}" in capsys.readouterr().err
    command = calls[0]
    assert command.count("--server.port") == 1 and command[command.index("--server.port") + 1] == str(port)
    assert command[1:4] == ["-m", "app.shell.serve", "run"] and command[4].endswith("main.py")  # streamlit run, imports warming


def test_app_on_a_busy_port_says_so_before_printing_an_address():
    """`app --port <busy>` printed 'ALBERT Lab: http://localhost:PORT', then Streamlit's 'Port ... is not available'."""
    import socket

    from conftest import one_line_error, run_cli

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = run_cli("app", "--port", str(port))
    one_line_error(result, f"port {port} is in use", "--port")
    assert "ALBERT Lab: http" not in result.stderr


def test_the_server_entry_point_imports_the_first_page_then_is_streamlit_run():
    """app.shell.serve imports what the first page needs, then hands its command line to streamlit's:
    the URL the server prints opens on a page that does not wait for imports, and torch (2.6 s)
    is imported after that page (loading.warm_up), not before the server listens. In a fresh
    interpreter, so that what is imported is the entry point's doing."""
    probe = ("import runpy, sys\n"
             "import streamlit.web.cli as cli\n"
             "cli.main = lambda prog_name: print(prog_name, sys.argv[1:], 'torch' in sys.modules,"
             " 'albert_lab.checkpoint.load' in sys.modules, 'plotly.express' in sys.modules)\n"
             "sys.argv = ['serve', 'run', 'app/main.py', '--server.port', '8600']\n"
             "runpy.run_module('app.shell.serve', run_name='__main__')\n")
    done = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[0] == ("streamlit ['run', 'app/main.py', '--server.port', '8600', "
                                          "'--runner.postScriptGC', 'false'] False False True")


def test_the_app_computes_on_one_thread_while_a_run_trains(monkeypatch):
    import torch

    from app.shell import pace

    threads = torch.get_num_threads()
    try:
        monkeypatch.setattr(pace, "active_run", lambda: True)
        torch.set_num_threads(2)
        pace.use_threads(wait=False)
        assert torch.get_num_threads() == 1
        monkeypatch.setattr(pace, "active_run", lambda: False)
        pace.use_threads()
        assert torch.get_num_threads() == max(1, os.cpu_count() or 1)
    finally:
        torch.set_num_threads(threads)


def test_favicon_is_drawn_locally():
    """The page icon is one emoji character, which the browser draws itself; a
    ':material/...' icon or an image address is fetched from the network on every load."""
    import unicodedata

    from app.shell import draw

    assert len(draw.PAGE_ICON) == 1 and unicodedata.category(draw.PAGE_ICON) == "So"


IMPORTS_AT_ONCE = """
import sys, threading
from app.shell import serve
serve.import_first_page()  # what a server has imported before the first page draws
errors = []
def page():  # a page's script: the model code first, then its own imports
    try:
        {wait}
        from albert_lab.analysis.pairs import score_pairs  # noqa: F401
        import albert_lab.models  # noqa: F401
    except ImportError as err:
        errors.append(str(err))
threads = [threading.Thread(target=serve.import_in_background), threading.Thread(target=page)]
[t.start() for t in threads]
[t.join() for t in threads]
print(errors)
"""


@pytest.mark.slow
def test_a_page_importing_beside_the_warm_up_gets_whole_modules():
    """`streamlit run app/main.py` opened on Sentence pairs showed "cannot import name
    'AlbertConfig' from 'transformers'" in 2 of 3 starts: the warm-up thread and the page's
    script imported torch and transformers at once, each waited on a module the other was
    importing, and Python handed the page a module half-imported. Without the wait below
    this fails every time here."""
    code = IMPORTS_AT_ONCE.replace("{wait}", "serve.import_model_code()")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0 and result.stdout.strip() == "[]", (result.stdout, result.stderr[-2000:])


LIGHT_PAGES = """
import json, sys, threading
from streamlit.testing.v1 import AppTest
import app.shell.loading as loading
from albert_lab.importing import MODEL_CODE
loading._WARMING = True  # no warm-up of its own: the thread below is the import, held
held, done = threading.Event(), threading.Event()
def importing():
    with MODEL_CODE:
        held.set()
        done.wait(600)
threading.Thread(target=importing, daemon=True).start()
held.wait()
at = AppTest.from_file(sys.argv[1], default_timeout=120).run()
drawn = {"": [not at.exception, [t.value for t in at.title], [s.options for s in at.sidebar.selectbox if s.label == "Device"]]}
for stem in sys.argv[2:]:
    at.switch_page(f"rooms/{stem}/page.py").run()
    drawn[stem] = [not at.exception, [t.value for t in at.title]]
done.set()
print(json.dumps([drawn, sorted(m for m in ("torch", "transformers.models.albert.modeling_albert") if m in sys.modules)]))
"""


@pytest.mark.slow
def test_the_light_pages_draw_without_the_model_code_while_it_is_being_imported():
    """app/main.py lets registry.LIGHT's pages draw without the model code (torch and transformers'
    models; every other page imports it or waits for it), the landing page among them: 20 visitors
    arriving at once all waited at the model card for the warm-up's import, which their browser tabs
    slowed to most of a minute. In a fresh interpreter, while another thread holds the import (a page
    that waited for it would never draw): each light page draws, the card with its device choices read
    without torch (the pinned CPU-only wheel), and neither torch nor transformers' ALBERT is imported."""
    import json

    from app.shell.registry import DEFAULT, LIGHT

    assert DEFAULT in LIGHT  # the first page: drawn while the warm-up has not begun
    result = subprocess.run([sys.executable, "-c", LIGHT_PAGES, str(ROOT / "app" / "main.py"), *LIGHT], cwd=ROOT,
                            capture_output=True, text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0, result.stderr[-3000:]
    drawn, imported = json.loads(result.stdout.strip().splitlines()[-1])
    assert drawn.pop("") == [True, ["Model card"], [["auto", "cpu"]]]
    assert sorted(drawn) == sorted(LIGHT) and all(ok and titles for ok, titles in drawn.values()), drawn
    assert imported == [], imported


def test_a_foreign_config_is_read_after_the_model_code_import(tmp_path):
    """A light page may read a config.json through transformers' AutoConfig while the warm-up
    imports transformers in another thread: the read waits for that import (one importer at a time)."""
    import threading

    from transformers import BertConfig

    from albert_lab.checkpoint.files import read_transformers_config
    from albert_lab.importing import MODEL_CODE

    BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
               intermediate_size=48).save_pretrained(tmp_path)
    read = threading.Event()
    reader = threading.Thread(target=lambda: (read_transformers_config(tmp_path), read.set()))
    with MODEL_CODE:  # the warm-up, importing
        reader.start()
        assert not read.wait(0.5)  # waits for the import to end
    reader.join(30)
    assert read.is_set()


def test_the_server_process_hands_the_gil_over_quickly_and_freezes_what_it_imports():
    """Each torch operation gives the GIL back and takes it again: beside other visitors' Python,
    at Python's 5 ms switch interval, a typed pair took 3.4-11 s instead of 0.07 s. The server
    process (app/shell/serve.py's prepare_process, before Streamlit starts) switches at 0.5 ms,
    with the first page's imports done and frozen out of the collector. Streamlit runs gc.collect(2)
    after every script run: over the objects of torch, transformers and the app's imports (about
    460,000) that took 0.3-0.5 s with the GIL held, per click, per visitor. Once the model code is
    imported, it is frozen out of the collector too. In a fresh interpreter, as a server starts."""
    code = ("import gc, sys\nfrom app.shell import serve\nserve.prepare_process()\n"
            "print(sys.getswitchinterval(), gc.get_freeze_count() > 0, 'pandas' in sys.modules)\n"
            "frozen, before = gc.get_freeze_count(), len(gc.get_objects())\nserve.import_model_code()\n"
            "print(gc.get_freeze_count() - frozen > 100_000, len(gc.get_objects()) < before)")  # about 460,000 frozen
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=600,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.stdout.split() == ["0.0005", "True", "True", "True", "True"], (result.stdout, result.stderr[-2000:])


def test_the_server_does_not_collect_garbage_after_every_script_run():
    """Streamlit's gc.collect(2) after every script run was, with twenty visitors, a third of the
    time the server held the GIL (py-spy --gil during benchmarks/bench_class.py): the server's
    command line turns it off, unless the user's command line sets it. Read back through
    Streamlit's own command line and config."""
    code = ("import sys\nfrom app.shell.serve import streamlit_argv\nimport streamlit.config as c\n"
            "c.show_config = lambda: print(c.get_option('runner.postScriptGC'))\n"
            "sys.argv = streamlit_argv(['streamlit', 'config', 'show', *sys.argv[1:]])\n"
            "from streamlit.web.cli import main\nmain(prog_name='streamlit')")
    for given, expected in (([], "False"), (["--runner.postScriptGC", "true"], "True"),
                            (["--runner.postScriptGC=true"], "True")):
        result = subprocess.run([sys.executable, "-c", code, *given], cwd=ROOT, capture_output=True, text=True,
                                timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert result.stdout.split() == [expected], (given, result.stdout, result.stderr[-2000:])


def test_each_script_run_is_timed_in_the_server_when_asked(tmp_path, monkeypatch):
    """ALBERT_LAB_TRACE: each script run's page, start and seconds in the server, one JSON line
    (benchmarks/bench_class.py reads them: the server's own time, apart from the browsers'); a run
    a rerun interrupts says so and the interruption goes on; without the variable nothing is written."""
    import json

    from app.shell import serve

    trace = tmp_path / "trace.jsonl"
    with serve.traced() as run:  # not asked: nothing written
        run["page"] = "model_card"
    assert not trace.exists()
    monkeypatch.setenv(serve.TRACE, str(trace))
    before = time.time()
    with serve.traced() as run:
        run["page"] = "model_card"
        time.sleep(0.05)

    class Rerun(Exception):
        pass

    with pytest.raises(Rerun), serve.traced() as run:
        run["page"] = "oscillation"
        raise Rerun
    done, interrupted = (json.loads(line) for line in trace.read_text().splitlines())
    assert done["page"] == "model_card" and done["ended"] == "done" and 0.05 <= done["seconds"] < 5
    assert before <= done["began"] <= time.time()
    assert interrupted["page"] == "oscillation" and interrupted["ended"] == "Rerun" and interrupted["seconds"] < 5


def test_the_server_reads_streamlit_options_without_waiting_for_their_lock(monkeypatch):
    """Twenty visitors' scripts waited ~100 s of a class for Streamlit's config lock (serve.read_config_without_lock):
    the server's reads give Streamlit's values, for every option, while another thread holds that lock."""
    import threading

    from streamlit import config

    from app.shell import serve

    monkeypatch.setattr(config, "get_option", config.get_option)  # put back after the test
    monkeypatch.setattr(config, "get_config_options", config.get_config_options)
    locked = config.get_option
    keys = list(config.get_config_options())
    serve.read_config_without_lock()
    assert config.get_option is not locked and [config.get_option(k) for k in keys] == [locked(k) for k in keys]
    with pytest.raises(RuntimeError, match="not defined"):
        config.get_option("no.suchOption")
    size, headless = locked("global.minCachedMessageSize"), locked("server.headless")
    held, done = threading.Event(), threading.Event()

    def hold():
        with config._config_lock:
            held.set()
            done.wait(10)

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    held.wait(10)
    try:
        started = time.monotonic()  # Streamlit's own would wait the 10 s the holder holds it
        assert config.get_option("global.minCachedMessageSize") == size and config.get_option("server.headless") == headless
        assert time.monotonic() - started < 1
    finally:
        done.set()
        holder.join(10)


def test_options_read_without_the_lock_are_old_or_new_while_a_changed_config_file_is_read_again(monkeypatch, tmp_path):
    """Streamlit reads its config files again when one changes while serving (bootstrap's config watcher:
    load_config_options, then get_config_options(force_reparse=True)): it puts a fresh copy of the
    defaults in place and fills it from the files and the command line after, under its lock. Pages
    reading the options without that lock, on other threads meanwhile, must see the old value or the
    new one of every option, never a default neither gives, never a missing key."""
    import threading

    from streamlit import config
    from streamlit.web import bootstrap

    from app.shell import serve

    monkeypatch.setattr(config, "get_option", config.get_option)  # Streamlit's own, put back after the test
    monkeypatch.setattr(config, "get_config_options", config.get_config_options)
    monkeypatch.setattr(config, "_config_options", config._config_options)  # the options before the test
    monkeypatch.chdir(tmp_path)  # the project's config file: $CWD/.streamlit/config.toml
    (tmp_path / ".streamlit").mkdir()
    file, flags = tmp_path / ".streamlit" / "config.toml", {"runner_postScriptGC": False}  # as serve.streamlit_argv's

    def config_file(colour: str) -> None:
        file.write_text(f'[server]\nheadless = true\n[theme.light]\nprimaryColor = "{colour}"\n')
        bootstrap.load_config_options(flags)

    config_file("#111111")
    serve.read_config_without_lock()
    allowed = {"runner.postScriptGC": {False}, "server.headless": {True}, "theme.light.primaryColor": {"#111111", "#222222"}}
    reads, wrong, done = [0], [], threading.Event()

    def page() -> None:
        while not done.is_set():
            for key, values in allowed.items():
                try:
                    value = config.get_option(key)
                except Exception as err:  # a missing key
                    wrong.append((key, repr(err)))
                    continue
                if value not in values:
                    wrong.append((key, value))
            reads[0] += 1

    pages = [threading.Thread(target=page, daemon=True)]
    for thread in pages:
        thread.start()
    try:
        for i in range(20):
            config_file("#222222" if i % 2 == 0 else "#111111")
    finally:
        done.set()
        for thread in pages:
            thread.join(10)
    assert reads[0] > 20 and not wrong, (reads[0], wrong[:5], len(wrong))
    assert config.get_option("theme.light.primaryColor") == "#111111"  # the last file's
