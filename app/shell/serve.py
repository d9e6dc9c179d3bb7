"""`streamlit run`, after importing what the first page needs, so that the URL it prints
opens on a page that draws at once.

`albert-lab app` execs `python -m app.shell.serve run app/main.py ...`. Before the first page
can draw, its script needs pandas, plotly and Streamlit's emoji table (which
`st.set_page_config` compiles, a quarter of a second): imported before the server listens
(0.4 s). The landing page (the model card) needs no torch; torch and transformers' model
code (2.6 s of imports on a 2-core CPU) are imported after it has drawn, in the background
(`loading.warm_up`, a second after the page), or by a page that needs them before that. Imported
before the server listened, they held up the first page: from `scripts/app.sh` to the card
drawn took 6.1 s, now 3.0 s, and to the Oscillation page clicked as soon as the card is drawn
10.0 s, now 9.3 s (medians of 3, benchmarks/bench_app_start.py, docs/benchmarks.md). Imported
in a thread while the server started and the browser drew the first page, they took the cores
the browser needed (a first visit of 4.2 s where a page of constants with the same elements
takes 3.0 s).

The model code is imported by one thread at a time (albert_lab.importing.MODEL_CODE, see
there why); a page that needs it waits for the warm-up's import. The light pages
(registry.LIGHT) need none of it and draw beside that import: what they may do with
transformers (a foreign config.json read by AutoConfig) takes the same lock in the library,
and their buttons that do heavy work (a probe, albertize) call import_model_code first. With
20 visitors arriving at once, all 20 model cards waited for the warm-up's import, which their
20 browser tabs slowed to most of a minute (docs/benchmarks.md).

Streamlit collects garbage after every script run (`runner.postScriptGC`, gc.collect(2)), which
walks every object the process holds: with torch, transformers and four models loaded, 0.3-0.5 s
of a 2-core CPU with the GIL held, after every click of every visitor (a fifth of the server's
time with 20 visitors, py-spy). What is imported here lives as long as the server, so it is frozen
out of the collector (gc.freeze) once imported: a collection then takes 1-3 ms. With twenty visitors
the objects made since (their sessions, kept results, figures, Streamlit's own) still made that
collection a third of the time the server held the GIL (py-spy --gil during
benchmarks/bench_class.py), so the server runs without it (`runner.postScriptGC false`, unless the
command line says otherwise): Python's own collector still runs when enough objects were made.
"""

import functools
import gc
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from albert_lab.importing import MODEL_CODE


def import_first_page() -> None:
    """Third-party code only: the app's own modules are imported by the script, under
    Streamlit's runtime (their caches are made there)."""
    import pandas as pd
    import streamlit.emojis  # noqa: F401  set_page_config tests the page icon against it

    import albert_lab.card  # the model card from a checkpoint's files
    import albert_lab.checkpoint.discover  # noqa: F401  the sidebar's list of checkpoints
    from albert_lab.figures.parameters import parameter_bars

    # plotly's first figure imports its validators (plotly express and a bar chart, as the pages' figures)
    parameter_bars(pd.DataFrame({"component": ["a"], "unique": [1], "applied": [1]}), "")


_model_code_imported = threading.Event()


def import_model_code() -> None:
    """torch and transformers' ALBERT and BERT (and the modules of theirs the analyses use),
    by one thread at a time; a thread that comes while another imports them waits for it.
    Call it holding no import lock (from a thread's start, or before a page's script runs),
    never from a module being imported: the thread importing might need that module."""
    if _model_code_imported.is_set():
        return
    with MODEL_CODE:
        if not _model_code_imported.is_set():
            import transformers.activations  # noqa: F401  albert_lab.kernels'

            import albert_lab.analysis.reapply
            import albert_lab.checkpoint.load
            import albert_lab.models
            import albert_lab.tokenizer  # noqa: F401
            gc.freeze()  # what was imported lives as long as the server: no collection walks it again
            _model_code_imported.set()


def import_in_background() -> None:
    """import_model_code from a thread of its own (loading.warm_up, after the first page). At the
    thread's normal priority: at the lowest (nice 19), on a busy machine it was starved while the
    next page, which needs the model code, waited for it (Oscillation clicked at once: 22 s against
    18 s when the import came before the server listened), and every page that waits needs it."""
    import_model_code()


SWITCH_INTERVAL = 0.0005  # seconds a thread holds the GIL while another asks for it (Python's default: 0.005)


def prepare_process() -> None:
    """Before the server starts: what the first page needs imported (the model code after the
    first page, loading.warm_up), frozen out of the collector, and a shorter GIL switch interval.
    torch hands the GIL back around every operation and must take it again after; while other
    visitors' scripts run Python (pages, charts, tables), each taking back waited up to Python's
    5 ms switch interval: one typed pair (about 1,000 operations through four models) took
    3.4 s beside one busy Python thread and 11 s beside three, instead of 0.07 s alone. At
    0.5 ms: 0.9 s beside three, while those threads lose about a tenth of their pace."""
    import_first_page()
    gc.freeze()
    sys.setswitchinterval(SWITCH_INTERVAL)
    read_config_without_lock()


def read_config_without_lock() -> Callable[[], None]:
    """Streamlit reads its config options under one lock for the whole process (`get_option`), on
    every message a script sends and every widget, while the event loop holds the same lock to
    copy the theme section for every script run. With twenty visitors, their script threads waited
    for it about 100 s in a 460 s class (py-spy --idle on the server, bench_class.py): whoever held it
    waited for the GIL with the lock held. So the server reads them without the lock, from the last
    options dict Streamlit finished. The dict is replaced when a config file changes while serving
    (bootstrap's config watcher: `config.get_config_options(force_reparse=True)`), by a fresh copy
    of the defaults filled from the files, the environment and the command line after, all under the
    lock: read in between, an option had its default, which neither the old config nor the new one
    gives (`runner.postScriptGC` back on, the theme's colours gone). `get_config_options` is wrapped
    to keep the dict it returns under the lock once a parse is done (its callbacks, which may still
    change options, included); reads go there, and until the first parse, or for options not in
    it, to Streamlit's own (its error included). Returns what puts Streamlit's functions back."""
    from streamlit import config

    locked, parse = config.get_option, config.get_config_options
    with config._config_lock:
        finished = [config._config_options]  # a parse is done under the lock: what is there now is whole

    @functools.wraps(parse)
    def get_config_options(force_reparse: bool = False, options_from_flags: dict[str, Any] | None = None) -> Any:
        if not force_reparse and finished[0]:
            return parse(force_reparse, options_from_flags)
        with config._config_lock:  # reentrant: Streamlit's parse takes it again
            finished[0] = parse(force_reparse, options_from_flags)
            return finished[0]

    @functools.wraps(locked)
    def get_option(key: str) -> Any:
        options = finished[0]
        return options[key].value if options and key in options else locked(key)

    def put_back() -> None:
        config.get_option, config.get_config_options = locked, parse

    config.get_config_options, config.get_option = get_config_options, get_option
    return put_back


GC_AFTER_RUN = "--runner.postScriptGC"


def streamlit_argv(argv: list[str]) -> list[str]:
    """`streamlit run ...`'s command line with Streamlit's collection after every script run off,
    unless the command line sets it."""
    if any(arg == GC_AFTER_RUN or arg.startswith(GC_AFTER_RUN + "=") for arg in argv):
        return argv
    return [*argv, GC_AFTER_RUN, "false"]


TRACE = "ALBERT_LAB_TRACE"  # a file: each script run's page and seconds in this server, one JSON line (bench_class)


@contextmanager
def traced() -> Iterator[dict[str, Any]]:
    """Time the script run in the block; with the environment variable TRACE naming a file, append
    {"page", "began" (epoch seconds), "seconds", "ended": "done" or the exception's class} to it: the
    server's own time per run, apart from the browsers' (benchmarks/bench_class.py reads it)."""
    run: dict[str, Any] = {"page": None, "began": time.time()}
    start = time.perf_counter()
    try:
        yield run
        run["ended"] = "done"
    except BaseException as err:  # a rerun or a visitor who left interrupts the script
        run["ended"] = type(err).__name__
        raise
    finally:
        if path := os.environ.get(TRACE):
            run["seconds"] = time.perf_counter() - start
            with open(path, "a", encoding="utf-8") as file:
                file.write(json.dumps(run) + "\n")


if __name__ == "__main__":
    # Streamlit first: its import configures plotly's theme, which tests values against
    # pandas' types (and fails on a pandas imported half-way by another thread).
    from streamlit.web.cli import main

    prepare_process()
    sys.argv = streamlit_argv(sys.argv)
    main(prog_name="streamlit")  # the command line is streamlit's: run app/main.py --server.port ...

