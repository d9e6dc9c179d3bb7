"""A class on one server: N visitors at once in real Chromium sessions against one app.

For each N in --visitors (default 1,5,20) a fresh server is started as `albert-lab app`
starts it (loopback, headless, a free port), and N browser contexts of one Chromium open it
at the same moment. Each visitor walks every page of app/shell/registry.py from the model card on
and, on Sentence pairs, scores a pair of its own typed into the form. Visitor 1 instead goes
from the model card straight to Sentence pairs and uploads a 5,000-pair CSV there; the others
arrive as its file is dropped, so that their typed pairs are scored while the upload is being
scored (with 50 they had all been scored before the uploader's tab got there); then it walks the rest. The
uploader opens the app's link with --upload-checkpoints picked (default: one, as a teacher
scoring a file would; an empty value keeps the sidebar's default four, about four times
the work).

Before the class arrives, a teacher walks every page once, as one preparing the class would
(--no-teacher: the class arrives at a server nobody has opened): what the class then sees was
computed before for another visitor, except each visitor's own typed pair and the upload.
The browsers share the server's cores here, where a class's run on their own machines:
--browser-nice N starts Chromium at that niceness (default 10), so the tabs take what the
server leaves and the server's work is not queued behind 20 tabs' drawing; 0 runs them as
equals. Niceness weighs each process: twenty tabs at nice 10 still took 60% of two cores while the
server waited for them (its CPU seconds and theirs are printed). --browser-idle starts Chromium
under Linux's SCHED_IDLE (`chrt --idle 0`): the tabs run only on CPU time nothing else of the
machine wants. --without-browsers takes the class's browsers off the machine, as a class's run on
the students' own: every visitor but the uploader asks for the pages over Streamlit's websocket
(benchmarks/streamlit_client.py), and a page's time is the server's whole answer.

Printed per page: the median, 95th percentile and worst seconds to the page's first draw
(its heading shown), to the browser's request (its first websocket message after the click), the
server's answer (from that request to the server's last message for it, as the browser received
them: what the server took, apart from the browser's own work) and to a drawn result ("drawn" as in benchmarks/bench_app.py: title, main
element, no stale element, spinner or undrawn chart, held for --settle seconds), for the typed pair the median and worst from the submit to
its scores, those scored while the upload ran apart; the upload's own time; the errors seen
(Streamlit exception boxes, "Something went wrong" boxes, page errors, console errors) and
the server's peak memory (RSS of the server process and its children, sampled every
0.25 s with psutil when installed, else from /proc).

Each tab measures itself (CLOCK, WAIT): it notes its websocket messages' times and polls its own page,
answering once per wait, so that measuring takes next to nothing of the cores the class shares.

Bounded: every wait has a timeout and the whole run --timeout seconds, its end included: the class
stops RESERVE seconds before it, each visitor's wait then said (the page or step, for how long, what
the page last said), and its cleanup (websockets, contexts, the browser, Playwright) gets a bounded
time (benchmarks/bounded.py), after which Chromium and Playwright's driver are ended by their ids. The
server and the browser are stopped whatever happens. Loopback only.

Run: .venv/bin/python benchmarks/bench_class.py [--visitors 1,5,20] [--timeout 2400]
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from app.shell import registry  # noqa: E402
from benchmarks.bench_app import CHART, FLAGS, MAIN_ELEMENT  # noqa: E402
from benchmarks.bounded import GRACE, bounded, end_children, run_until  # noqa: E402
from benchmarks.served import WORDS, MemorySampler, machine, p95, start_server, typed_pair, wait_answering  # noqa: E402
from benchmarks.tab_clock import CLOCK, Visitor, drawn  # noqa: E402

UPLOAD_PAIRS = 5000
PAGE_TIMEOUT, UPLOAD_TIMEOUT = 600.0, 1500.0  # seconds one wait may take before the visitor gives up
UPLOAD_START = 300.0  # seconds the class waits for the uploader's file to be dropped before it arrives anyway
SERVER_STOP = 15.0  # seconds the server has to stop when asked, before it is killed
RESERVE = 2 * GRACE + SERVER_STOP + 10.0  # seconds before --timeout's end the class stops: its cleanup and the report
def pairs_csv(path: Path, n: int = UPLOAD_PAIRS, seed: int = 0) -> Path:
    """n labelled pairs of made-up sentences of 8-24 words (about 0.8 MB for 5,000)."""
    rng = random.Random(seed)

    def sentence() -> str:
        return " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 24))).capitalize() + "."

    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["sentence_a", "sentence_b", "label"])
        for _ in range(n):
            writer.writerow([sentence(), sentence(), rng.randint(0, 1)])
    return path


async def visit_page(page, url: str, visitor: Visitor, room: registry.Room, settle: float) -> None:
    visitor.start(room.stem)
    start = visitor.since
    if room.stem == registry.DEFAULT:
        await page.goto(url, timeout=PAGE_TIMEOUT * 1000)
    else:
        await page.get_by_role("link", name=room.title, exact=True).click(timeout=PAGE_TIMEOUT * 1000)
    first: list[float] = []
    end = await drawn(page, visitor, room.heading, MAIN_ELEMENT.get(room.stem, CHART), settle, PAGE_TIMEOUT, first=first)
    visitor.times[room.stem], visitor.spans[room.stem] = end - start, (start, end)
    visitor.firsts[room.stem] = first[0] - start
    visitor.answered(room.stem, start, end)


async def score_typed(page, visitor: Visitor, settle: float) -> None:
    """Type a pair of this visitor's own into the form and wait for its scores."""
    a, b = typed_pair(visitor.number)
    await page.get_by_label("Sentence A").fill(a)
    await page.get_by_label("Sentence B").fill(b)
    visitor.start("typed pair")
    start = visitor.since
    await page.get_by_role("button", name="Score this pair").click()
    # the link carries the typed pair once the script has read it; the scores follow in the same run
    deadline = time.perf_counter() + PAGE_TIMEOUT
    while f"Visitor+{visitor.number}+walked" not in page.url and f"Visitor%20{visitor.number}%20walked" not in page.url:
        if time.perf_counter() > deadline:
            raise TimeoutError("the typed pair never reached the page's link")
        await page.wait_for_timeout(50)
    room = registry.room("sentence_pairs")
    end = await drawn(page, visitor, room.heading, CHART, settle, PAGE_TIMEOUT, "Preferred order")
    visitor.times["typed pair"], visitor.spans["typed pair"] = end - start, (start, end)
    visitor.answered("typed pair", start, end)


async def upload(page, visitor: Visitor, path: Path, settle: float, dropped: asyncio.Event) -> None:
    """Drop the file on the upload tab (`dropped` is set: the class arrives) and wait for its scores."""
    pairs = sum(1 for _ in csv.reader(path.open(newline=""))) - 1
    await page.get_by_role("tab", name="Upload pairs").click()
    visitor.start("upload")
    start = visitor.since
    visitor.spans["upload"] = (start, float("inf"))  # until it is drawn (a --timeout may come first)
    await page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(str(path))
    dropped.set()
    room = registry.room("sentence_pairs")
    end = await drawn(page, visitor, room.heading, CHART, settle, UPLOAD_TIMEOUT, f"{pairs:,} pairs scored from")
    visitor.times["upload"], visitor.spans["upload"] = end - start, (start, end)


async def walk(browser, url: str, visitor: Visitor, csv_path: Path | None, settle: float, pick: str,
               dropped: asyncio.Event | None = None) -> None:
    """The visitor's walk in a tab of its own; the uploader (`csv_path`) sets `dropped` once its file is dropped
    (or once it gives up: the class does not wait for an upload that will not come)."""
    context = await asyncio.wait_for(browser.new_context(viewport={"width": 1400, "height": 1000}), PAGE_TIMEOUT)
    await asyncio.wait_for(context.add_init_script(CLOCK), PAGE_TIMEOUT)
    page = await asyncio.wait_for(context.new_page(), PAGE_TIMEOUT)
    page.on("pageerror", lambda err: visitor.errors.append(f"page error: {err}"))
    page.on("console", lambda msg: visitor.errors.append(f"console error: {msg.text[:200]}") if msg.type == "error" else None)
    rooms = list(registry.PAGES)
    if csv_path is not None:  # the uploader: Sentence pairs right after the model card
        pairs = registry.room("sentence_pairs")
        rooms.remove(pairs)
        rooms.insert(1, pairs)
    try:
        for room in rooms:
            await visit_page(page, f"{url}/?ckpt={pick}" if csv_path is not None and pick else url, visitor, room, settle)
            if room.stem == "sentence_pairs":
                if csv_path is not None:
                    await upload(page, visitor, csv_path, settle, dropped or asyncio.Event())
                else:
                    await score_typed(page, visitor, settle)
        visitor.start("done")
    except Exception as err:  # a visitor that gives up says why; the others go on
        visitor.errors.append(f"gave up: {type(err).__name__}: {str(err)[:300]}")
    finally:
        if dropped is not None:
            dropped.set()
        await bounded(context.close())


async def walk_without_browser(url: str, visitor: Visitor, settle: float) -> None:
    """The visitor's walk over Streamlit's websocket (benchmarks/streamlit_client.py), its browser elsewhere:
    every page in turn, `settle` s between them as the browser's walk waits to see each drawn, and on
    Sentence pairs a pair of its own, sent as a link carrying it (the form's submit runs the page the same way).
    A page's time is the server's whole answer (to the end of its script run), its first draw the first element."""
    from benchmarks.streamlit_client import Session

    a, b = typed_pair(visitor.number)
    steps = [(room.stem, room.url_path, {}, "") for room in registry.PAGES]
    at = [stem for stem, *_ in steps].index("sentence_pairs") + 1
    steps.insert(at, ("typed pair", "sentence_pairs", {"pair_a": a, "pair_b": b}, "Preferred order"))
    try:
        async with Session(url) as session:
            visitor.detail = session.waiting
            for what, url_path, query, text in steps:
                visitor.start(what)
                answer = await session.open(url_path, query, PAGE_TIMEOUT, text)
                visitor.errors += [e for e in answer.errors if e not in visitor.errors]
                if answer.done is None:
                    raise TimeoutError(f"{what}: no answer within {PAGE_TIMEOUT:.0f} s")
                if text and not answer.shown:
                    visitor.errors.append(f"{what}: '{text}' not shown")
                visitor.times[what] = visitor.answers[what] = answer.done - answer.asked
                visitor.spans[what] = (answer.asked, answer.done)
                if answer.first is not None and what != "typed pair":
                    visitor.firsts[what] = answer.first - answer.asked
                await asyncio.sleep(settle)
        visitor.start("done")
    except Exception as err:
        visitor.errors.append(f"gave up: {type(err).__name__}: {str(err)[:300]}")
    finally:
        visitor.detail = None  # its session is closed: what it waited for is its own words now


def chromium(nice: int, scratch: Path, idle: bool = False) -> str:
    """Chromium's path, or a script that starts it at niceness `nice`, or under SCHED_IDLE."""
    binary = shutil.which("chromium") or "/usr/bin/chromium"
    if not nice and not idle:
        return binary
    script = scratch / "chromium-nice"
    start = "chrt --idle 0" if idle else f"nice -n {int(nice)}"
    script.write_text(f'#!/bin/sh\nexec {start} {binary} "$@"\n')
    script.chmod(0o755)
    return str(script)


async def class_of(teacher: Visitor | None, visitors: list[Visitor], url: str, csv_path: Path | None, settle: float, pick: str,
                   browser_path: str, began: list[float], without_browsers: bool = False) -> None:
    """The teacher's walk, then the class's; `began` gets the epoch seconds the class arrived (the uploader
    first, the others as its file is dropped). Without browsers, every visitor but the uploader walks over
    the websocket alone (walk_without_browser). Closing the browser and Playwright is bounded."""
    from playwright.async_api import async_playwright

    playwright = await asyncio.wait_for(async_playwright().start(), PAGE_TIMEOUT)
    try:
        browser = await asyncio.wait_for(playwright.chromium.launch(executable_path=browser_path, args=FLAGS), PAGE_TIMEOUT)
        try:
            if teacher is not None:  # every page once, before the class
                await walk(browser, url, teacher, None, settle, pick)
            began.append(time.time())
            dropped = asyncio.Event()
            if csv_path is None:
                dropped.set()

            async def arrive(v: Visitor) -> None:
                if v.number == 1 and csv_path is not None:
                    return await walk(browser, url, v, csv_path, settle, pick, dropped)
                v.start("the uploader's file dropped")
                try:
                    await asyncio.wait_for(dropped.wait(), UPLOAD_START)
                except TimeoutError:
                    pass
                await (walk_without_browser(url, v, settle) if without_browsers else walk(browser, url, v, None, settle, pick))

            await asyncio.gather(*(arrive(v) for v in visitors))
        finally:
            await bounded(browser.close())
    finally:
        await bounded(playwright.stop())


def run_class(n: int, csv_path: Path | None, settle: float, end: float, scratch: Path, pick: str, teacher: Visitor | None,
              browser_path: str, without_browsers: bool = False) -> tuple[list[Visitor], int, float]:
    """N visitors on a fresh server, after the teacher if any, stopped RESERVE seconds before `end` (perf_counter
    seconds) where they have not finished: (visitors, peak server memory in bytes, wall seconds)."""
    trace = scratch / f"trace-{n}.jsonl"
    server, url = start_server(scratch / f"runs-{n}", trace)
    sampler = MemorySampler(server.pid)
    sampler.start()
    start, visitors, began = time.perf_counter(), [Visitor(i + 1) for i in range(n)], []
    everyone = [teacher, *visitors] if teacher else visitors

    def stopped() -> None:  # at the deadline, before the visitors are cancelled: what each was waiting for
        for v in everyone:
            if v.doing != "done":
                v.errors.append(f"stopped by the --timeout while waiting for: {v.waiting()}")

    try:
        wait_answering(server, url, end - RESERVE - time.perf_counter())
        run_until(class_of(teacher, visitors, url, csv_path, settle, pick, browser_path, began, without_browsers),
                  end - RESERVE - time.perf_counter(), stopped)
    except TimeoutError as err:  # the server never answered
        for v in everyone:
            v.errors.append(f"stopped by the --timeout while waiting for: the server to answer ({err})")
    finally:
        if ended := end_children(keep=server.pid):
            print(f"  ended {len(ended)} process(es) the class left running (Chromium, Playwright's driver)")
        peak = sampler.stop()
        print(f"  CPU seconds: the server {sampler.server_cpu:.0f}, the browsers {sampler.browser_cpu:.0f} "
              f"(over {time.perf_counter() - start:.0f} s of wall time on {os.cpu_count()} CPUs)")
        server.terminate()
        try:
            server.wait(timeout=SERVER_STOP)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        script_runs(trace, began[0] if began else float("inf"))
    return visitors, peak, time.perf_counter() - start


def script_runs(trace: Path, began: float) -> None:
    """The class's script runs (those from `began` on, epoch seconds) as the server timed them (from
    the script's start to its end, the browsers apart): per page, the runs, median, p95 and worst seconds."""
    runs: dict[str, list[float]] = {}
    for line in trace.read_text().splitlines() if trace.is_file() else []:
        run = json.loads(line)
        if run["began"] >= began and run["page"]:
            runs.setdefault(run["page"], []).append(run["seconds"])
    print("  script runs in the server (the class's, as the server timed them): runs, median, p95, worst s")
    for page, seconds in runs.items():
        print(f"    {page:<16} {len(seconds):5d} {statistics.median(seconds):8.2f} {p95(seconds):6.2f} {max(seconds):7.2f}")


def report(n: int, visitors: list[Visitor], peak: int, wall: float, teacher: Visitor | None) -> None:
    if teacher is not None:
        print("\nthe teacher, alone before the class: " + ", ".join(f"{what} {s:.1f}" for what, s in teacher.times.items())
              + (f"; errors: {teacher.errors}" if teacher.errors else ""))
    upload_span = visitors[0].spans.get("upload")
    rows: dict[str, list[float]] = {room.stem: [] for room in registry.PAGES}
    rows.update({f"{room.stem}, first draw": [] for room in registry.PAGES})
    rows.update({f"{room.stem}, browser's request": [] for room in registry.PAGES})
    rows.update({f"{room.stem}, server's answer": [] for room in registry.PAGES})
    rows.update({"typed pair": [], "typed pair during the upload": [], "typed pair, browser's request": [],
                 "typed pair, server's answer": [], "upload": []})
    for v in visitors:
        for what, seconds in v.times.items():
            rows[what].append(seconds)
        for what, seconds in v.firsts.items():
            rows[f"{what}, first draw"].append(seconds)
        for what, seconds in v.answers.items():
            rows[f"{what}, server's answer"].append(seconds)
        for what, seconds in v.asked.items():
            rows[f"{what}, browser's request"].append(seconds)
        typed = v.spans.get("typed pair")
        if upload_span and typed and typed[0] < upload_span[1] and typed[1] > upload_span[0]:
            rows["typed pair during the upload"].append(v.times["typed pair"])
    if "upload" not in visitors[0].times and upload_span:
        print(f"  (the upload was still being scored after {time.perf_counter() - upload_span[0]:.0f} s)")
    print(f"\n{n} visitor(s): {wall:.0f} s in all, server peak memory {peak / 2**30:.2f} GiB")
    print(f"  {'what':32s} {'n':>3s} {'median s':>9s} {'p95 s':>6s} {'worst s':>8s}")
    for what, values in rows.items():
        if values:
            print(f"  {what:32s} {len(values):3d} {statistics.median(values):9.2f} {p95(values):6.2f} {max(values):8.2f}")
    errors = [(v.number, e) for v in visitors for e in v.errors]
    print(f"  errors: {len(errors)}")
    for number, error in errors[:30]:
        print(f"    visitor {number}: {error}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--visitors", default="1,5,20", help="comma-separated class sizes, each on a fresh server")
    parser.add_argument("--settle", type=float, default=0.4, help="seconds a page must stay drawn")
    parser.add_argument("--upload-checkpoints", default="albert-sop-minilm",
                        help="what the uploader picks (the link's ?ckpt=); empty: the sidebar's default")
    parser.add_argument("--timeout", type=float, default=2400.0, help="seconds the whole benchmark may take")
    parser.add_argument("--upload-pairs", type=int, default=UPLOAD_PAIRS,
                        help="pairs visitor 1 uploads while the others type theirs (0: no upload)")
    parser.add_argument("--teacher", action=argparse.BooleanOptionalAction, default=True,
                        help="a teacher walks every page once before the class arrives (default: yes)")
    parser.add_argument("--browser-nice", type=int, default=10,
                        help="Chromium's niceness: the tabs take what the server leaves (0: as equals)")
    parser.add_argument("--browser-idle", action="store_true",
                        help="Chromium under SCHED_IDLE: the tabs run only on CPU time the server leaves")
    parser.add_argument("--without-browsers", action="store_true",
                        help="every visitor but the uploader asks for the pages over Streamlit's websocket, without a "
                             "browser here (its browser on its own machine): times are the server's answers")
    args = parser.parse_args()
    sizes = [int(s) for s in args.visitors.split(",") if s.strip()]
    print(f"machine: {machine()}; teacher first: {'yes' if args.teacher else 'no'}; Chromium "
          f"{'under SCHED_IDLE' if args.browser_idle else f'at nice {args.browser_nice}'}"
          + ("; the class without browsers here (the uploader and the teacher in Chromium): a page's time is the "
             "server's whole answer, its first draw the first element sent" if args.without_browsers else ""))
    end = time.perf_counter() + args.timeout
    with tempfile.TemporaryDirectory(prefix="bench-class-") as scratch:
        csv_path = pairs_csv(Path(scratch) / "pairs.csv", args.upload_pairs) if args.upload_pairs else None
        for n in sizes:
            if end - time.perf_counter() <= RESERVE:
                print(f"\n{n} visitor(s): not run, the --timeout of {args.timeout:.0f} s was spent")
                continue
            teacher = Visitor(0) if args.teacher else None
            visitors, peak, wall = run_class(n, csv_path, args.settle, end, Path(scratch), args.upload_checkpoints,
                                             teacher, chromium(args.browser_nice, Path(scratch), args.browser_idle),
                                             args.without_browsers)
            report(n, visitors, peak, wall, teacher)


if __name__ == "__main__":
    main()
