"""The notebook's front door against the app's page, on the same analysis (issue 65): the paper's Figure 1
for two checkpoints on the page's 16 texts, in one process, one visitor.

- notebook: `al.oscillation(["albert-sop", "bert-nsp"], texts)` and what Jupyter shows of it
  (`_repr_html_`: the figure and the reading), the checkpoints named, so loaded by the call, as
  docs/library.md writes it;
- notebook, loaded: the same with the checkpoints `al.load`ed once before the rounds (a notebook that
  keeps them in a variable, as the app keeps them in its cache);
- app: the Oscillation page in Streamlit's AppTest (the whole script run a visitor's edit of the text
  makes: sidebar, the runner's computation, figures, verdicts, the comparison with the paper), on a
  session opened once by a link (?ckpt=albert-sop,bert-nsp, its own texts).

Every round gives both sides the same new texts (the sample, the first text marked with the round's
number), so the app's results kept for every visitor are never reused; its model cache is, as in a
served app. The three run in turn (notebook, loaded, app, notebook, ...) for --rounds rounds after
--warmup rounds not counted (imports, first loads, plotly.js's one-time bundle). Printed: median
[min-max] seconds of each, and each notebook's median of notebook / app over the rounds. Target: the
notebook within 1.2x of the app. Each round checks that the page shows the notebook's verdicts.

A runs folder of its own (empty): the app computes on one thread while a training run it sees is active,
the notebook on every core, which would time the machine's other work rather than the two doors.

Run: .venv/bin/python benchmarks/bench_notebook.py [--rounds 5] [--warmup 1] [--texts 16]
     [--models albert-sop,bert-nsp] [--timeout 600]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TARGET = 1.2  # the notebook's time over the app's, at most
SIDES = ("notebook", "notebook, loaded", "app")


def round_texts(texts: list[str], number: int) -> list[str]:
    """The texts of round `number`: new to the app's kept results, the same length give or take a word."""
    return [f"Round {number}. {texts[0]}", *texts[1:]]


def open_page(models: list[str], texts: list[str]):
    """The Oscillation page in AppTest, opened as a link opens it: these checkpoints, these texts typed."""
    from streamlit.testing.v1 import AppTest
    from streamlit.util import calc_hash

    from app.shell.registry import room

    at = AppTest.from_file(str(ROOT / "app" / "main.py"), default_timeout=600)
    at.query_params.update({"ckpt": ",".join(models), "osc_input": "My text", "osc_text": "\n\n".join(texts)})
    at._page_hash = calc_hash(room("oscillation").url_path)
    at.run()
    _check(at)
    return at


def _check(at) -> None:
    if at.exception or at.error:
        raise SystemExit("the page shows an error: " + "; ".join(e.value for e in [*at.exception, *at.error])[:2000])


def page_run(at, texts: list[str]) -> list[str]:
    """A visitor's edit of the text, and the script run it makes; the page's markdown."""
    at.text_area(key="osc_text").set_value("\n\n".join(texts))
    at.run()
    _check(at)
    return [m.value for m in at.markdown]


def notebook_run(models: list, texts: list[str]):
    """What a notebook cell `al.oscillation(models, texts)` does, its output drawn as Jupyter draws it."""
    import albert_lab as al

    result = al.oscillation(models, texts)
    html = result._repr_html_()
    assert "newPlot" in html, "no figure in the notebook's output"
    return result


def timed(work: Callable[..., object], *args: object) -> tuple[float, object]:
    start = time.perf_counter()
    out = work(*args)
    return time.perf_counter() - start, out


def same_verdicts(result, markdown: list[str]) -> None:
    """The page shows each verdict the notebook's Result says (the same numbers, as both print them)."""
    from albert_lab.analysis.oscillation import verdict
    from albert_lab.readings.oscillation import verdict_words

    for row in verdict(result.frame).itertuples():
        line = f"**{row.checkpoint}**: {verdict_words(row)}"
        if line not in markdown:
            raise SystemExit(f"the page does not show the notebook's verdict {line!r}")


def spread(values: list[float], unit: str = " s", digits: int = 3) -> str:
    return f"median {statistics.median(values):.{digits}f}{unit} [{min(values):.{digits}f}-{max(values):.{digits}f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5, help="rounds counted (default 5)")
    parser.add_argument("--warmup", type=int, default=1, help="rounds first, not counted (default 1)")
    parser.add_argument("--texts", type=int, default=16, help="texts per round, the page's sample size (default 16)")
    parser.add_argument("--models", default="albert-sop,bert-nsp", help="checkpoints, comma-separated (default %(default)s)")
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="seconds after which no new round starts; the rounds done are printed (default 600)")
    args = parser.parse_args()
    os.environ["ALBERT_LAB_RUNS"] = tempfile.mkdtemp(prefix="bench-notebook-runs-")  # no training run seen

    import albert_lab as al
    from albert_lab.data.samples import sample_texts

    load = " ".join(f"{v:.1f}" for v in os.getloadavg())
    deadline = time.monotonic() + args.timeout
    models = args.models.split(",")
    base = [" ".join(t.split()) for t in sample_texts(args.texts)]  # one paragraph each: the page splits on blank lines
    at = open_page(models, base)
    loaded = [al.load(m) for m in models]
    times: dict[str, list[float]] = {side: [] for side in SIDES}
    for number in range(args.warmup + args.rounds):
        if time.monotonic() > deadline:
            print(f"--timeout {args.timeout:g} s: stopped after {len(times['app'])} counted rounds", file=sys.stderr)
            break
        texts = round_texts(base, number)
        took = {"notebook": timed(notebook_run, models, texts), "notebook, loaded": timed(notebook_run, loaded, texts),
                "app": timed(page_run, at, texts)}
        same_verdicts(took["notebook"][1], took["app"][1])
        if number >= args.warmup:
            for side in SIDES:
                times[side].append(took[side][0])
    if not times["app"]:
        raise SystemExit("no round counted: raise --timeout")
    import torch

    rounds = len(times["app"])
    print(f"oscillation of {', '.join(models)} on {args.texts} texts, figure included; {rounds} rounds after "
          f"{args.warmup} warm-up, notebook, loaded and app in turn; torch on {torch.get_num_threads()} threads, "
          f"OMP_WAIT_POLICY {os.environ.get('OMP_WAIT_POLICY', 'unset')}; load average {load} at the start, "
          f"{' '.join(f'{v:.1f}' for v in os.getloadavg())} at the end")
    for side in SIDES:
        print(f"  {side:17s} {spread(times[side])}")
    for side in SIDES[:2]:
        ratios = [a / b for a, b in zip(times[side], times["app"], strict=True)]
        median = statistics.median(ratios)
        print(f"  {side} / app: {spread(ratios, 'x', 2)}; target: within {TARGET}x "
              f"({'met' if median <= TARGET else 'NOT met'})")


if __name__ == "__main__":
    main()
