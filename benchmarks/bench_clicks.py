"""One browser clicking fast: 60 Start clicks on Training, 60 Convert clicks on the Model card.

One visitor must not exhaust the machine. A fresh server is started
as `albert-lab app` starts it (loopback, headless, a free port) on the shipped checkpoints and
a runs folder of its own; one Chromium context (one browser: one owner cookie) then
- opens Training with the lab-tiny preset, sets a cheap run (--steps steps, vocabulary 1,000,
  batch 4, sequence length 32) and clicks 'Start training' --clicks times, --gap seconds apart;
- opens the Model card with bert-nsp picked and clicks the 'Make an ALBERT of this BERT'
  form's 'Convert (seconds)' --clicks times, --gap seconds apart;
- waits for each page to settle, then cancels the runs it started and waits for their workers.
The cache of tokenizers and tokenised corpora is a fresh one (the first start trains its
tokenizer in the server, as on a fresh server or with a vocabulary nobody used), or with --warm
the project's. All along, every 0.25 s: the memory of the server and all its child processes
(RSS, and PSS, which counts pages two processes share once; psutil when installed, else /proc),
the worker processes among them, the runs queued or running, and the bytes under the runs folder.

Printed: peak memory (and the worker processes at that moment), the most workers and active runs
at once, runs created, conversion folders created, the disk used, and for each whether it stayed
within albert_lab/limits.py's budgets: MAX_RUNS_PER_VISITOR runs queued or running (so as many
worker processes), one of them training at a time (the others waiting without torch), one folder
for 60 identical conversions, APP_DISK_QUOTA bytes under runs/.

Bounded: every wait has a timeout, the whole run --timeout seconds; the server and the browser
are stopped whatever happens. Loopback only.

Run: .venv/bin/python benchmarks/bench_clicks.py [--clicks 60] [--gap 0.1] [--steps 20] [--warm]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from albert_lab import limits  # noqa: E402
from albert_lab.training.jobs import cancel_run  # noqa: E402
from albert_lab.training.runs import list_runs  # noqa: E402
from benchmarks.bench_app import FLAGS, free_port, wait_healthy  # noqa: E402
from benchmarks.served import machine, proc_descendants  # noqa: E402

WORKER = "albert_lab.training.worker"  # in the command line of a run's worker process (training.jobs.spawn_worker)
WAITING = 150 << 20  # a queued worker waits in some 20 MB, without torch (tests/test_training_budget.py: under 150 MB)
# While a script runs, what it has not drawn again yet is stale, all along; the Runs tab's fragment,
# rerun every 2 s while a run is active, makes its own elements stale for a fraction of a second.
BUSY = """() => [Boolean(document.querySelector('[data-testid="stSpinner"]')),
  Boolean(document.querySelector('[data-stale="true"]'))]"""
ERRORS = """() => [...document.querySelectorAll('[data-testid="stException"], [data-testid="stAlertContentError"]')]
  .map(e => e.innerText.slice(0, 160))"""


# ---- the server's processes, its runs folder ------------------------------------------------
@dataclass(frozen=True)
class Proc:
    pid: int
    rss: int  # resident bytes; pages shared with another process (a fork's, a library's) count in each
    pss: int  # proportional: each shared page split among its sharers, so the sum over processes is true
    command: str


def process_tree(pid: int) -> list[Proc]:
    """Process `pid` and all its descendants."""
    try:
        import psutil
    except ImportError:
        return _proc_tree(pid)
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []
    out = []
    for proc in procs:
        try:
            memory = proc.memory_full_info()
            out.append(Proc(proc.pid, memory.rss, memory.pss, " ".join(proc.cmdline())))
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return out


def _proc_tree(pid: int) -> list[Proc]:
    out = []
    for member in sorted(proc_descendants(pid)):
        try:
            rollup = dict(line.split(":", 1) for line in Path(f"/proc/{member}/smaps_rollup").read_text().splitlines()[1:])
            command = Path(f"/proc/{member}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            rss, pss = (int(rollup[key].split()[0]) << 10 for key in ("Rss", "Pss"))  # kB
            out.append(Proc(member, rss, pss, command.strip()))
        except (OSError, ValueError, KeyError):
            continue
    return out


@dataclass
class Peaks:
    memory: int = 0  # RSS of the server and all its children
    at_peak: tuple[Proc, ...] = ()  # the processes at that moment
    pss: int = 0  # PSS of the server and all its children
    server: int = 0  # the server process's own RSS
    workers: int = 0  # the most worker processes at once
    worker_memory: int = 0  # the most RSS the workers held together
    largest_worker: int = 0  # the most one worker held
    training: int = 0  # the most workers at once holding more than a queued one does (torch loaded)
    active_runs: int = 0  # the most runs queued or running at once
    disk: int = 0  # bytes under the runs folder
    samples: int = 0


class Sampler(threading.Thread):
    """Peaks of the server's process tree and runs folder, sampled every `every` seconds until stop()."""

    def __init__(self, pid: int, runs: Path, every: float = 0.25) -> None:
        super().__init__(daemon=True)
        self.pid, self.runs, self.every, self.peaks, self._done = pid, runs, every, Peaks(), threading.Event()

    def run(self) -> None:
        while not self._done.is_set():
            self.sample()
            self._done.wait(self.every)

    def sample(self) -> None:
        tree, p = process_tree(self.pid), self.peaks
        workers = [proc.rss for proc in tree if WORKER in proc.command]
        total = sum(proc.rss for proc in tree)
        if total > p.memory:
            p.memory, p.at_peak = total, tuple(tree)
        p.pss = max(p.pss, sum(proc.pss for proc in tree))
        p.server = max(p.server, next((proc.rss for proc in tree if proc.pid == self.pid), 0))
        p.workers, p.worker_memory = max(p.workers, len(workers)), max(p.worker_memory, sum(workers))
        p.largest_worker = max([p.largest_worker, *workers])
        p.training = max(p.training, sum(rss > WAITING for rss in workers))
        try:
            p.active_runs = max(p.active_runs, sum(r.active for r in list_runs(self.runs)))
        except Exception:  # a run.json being written: the next sample reads it
            pass
        p.disk = max(p.disk, limits.folder_bytes(self.runs))
        p.samples += 1

    def stop(self) -> Peaks:
        self._done.set()
        self.join()
        self.sample()
        return self.peaks


def start_server(runs: Path, cache: Path | None) -> tuple[subprocess.Popen, str]:
    """`albert-lab app` on a free loopback port, headless, with a runs folder of its own (and a cache, unless None)."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ALBERT_LAB_RUNS": str(runs)}
    if cache is not None:
        env["ALBERT_LAB_CACHE"] = str(cache)
    server = subprocess.Popen([sys.executable, "-m", "albert_lab", "app", "--port", str(port), "--server.headless", "true",
                               "--server.address", "127.0.0.1"],
                              cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return server, f"http://127.0.0.1:{port}"


# ---- the clicks -----------------------------------------------------------------------------
def settle(page, window: float = 6.0, timeout: float = 900.0) -> float:
    """Seconds until, for `window` s, the page showed no spinner and stale elements less than half the
    time (a script run keeps them stale throughout, the Runs tab's fragment for moments)."""
    start, seen = time.perf_counter(), []
    while time.perf_counter() - start < timeout:
        now = time.perf_counter()
        spinner, stale = page.evaluate(BUSY)
        seen = [s for s in seen if s[0] > now - window] + [(now, spinner, stale)]
        if now - start >= window and not any(s[1] for s in seen) and sum(s[2] for s in seen) < len(seen) / 2:
            return now - start - window
        page.wait_for_timeout(100)
    raise TimeoutError(f"the page did not settle within {timeout:.0f} s")


def click_many(page, button, clicks: int, gap: float) -> tuple[int, float]:
    """Click `button` `clicks` times, `gap` s apart, without waiting for the app: (clicks made, seconds)."""
    made, start = 0, time.perf_counter()
    for _ in range(clicks):
        try:
            button.click(force=True, timeout=5_000)
            made += 1
        except Exception:  # detached while the page redrew: the next click finds it again
            pass
        page.wait_for_timeout(gap * 1000)
    return made, time.perf_counter() - start


def set_number(page, label: str, value: int) -> None:
    box = page.get_by_label(label, exact=True)
    box.fill(str(value))
    box.press("Tab")  # a number input takes its value on blur (Enter would submit the form)


def start_clicks(page, url: str, clicks: int, gap: float, steps: int) -> dict:
    page.goto(f"{url}/training?tr_preset=lab-tiny", timeout=300_000)
    start = page.get_by_role("button", name="Start training")
    start.wait_for(timeout=300_000)
    for label, value in (("Steps", steps), ("Vocabulary (new tokenizer)", 1000), ("Batch size", 4),
                         ("Sequence length", 32), ("Warm-up steps", 0)):
        set_number(page, label, value)
    made, seconds = click_many(page, start, clicks, gap)
    return {"clicks": made, "click_s": seconds, "settle_s": settle(page), "errors": page.evaluate(ERRORS)}


def convert_clicks(page, url: str, clicks: int, gap: float) -> dict:
    page.goto(f"{url}/?ckpt=bert-nsp", timeout=300_000)
    page.get_by_text("Make an ALBERT of this BERT").click(timeout=300_000)
    convert = page.get_by_role("button", name="Convert (seconds)")
    convert.wait_for(timeout=60_000)
    made, seconds = click_many(page, convert, clicks, gap)
    return {"clicks": made, "click_s": seconds, "settle_s": settle(page), "errors": page.evaluate(ERRORS)}


def cancel_all(runs: Path, pid: int, timeout: float = 300.0) -> float:
    """Cancel every run still queued or running; seconds until no worker process is left."""
    start = time.perf_counter()
    for run in list_runs(runs):
        if run.active:
            cancel_run(run.path)
    while time.perf_counter() - start < timeout:
        if not any(WORKER in proc.command for proc in process_tree(pid)):
            return time.perf_counter() - start
        time.sleep(0.5)
    raise TimeoutError(f"workers still alive {timeout:.0f} s after the cancels")


def chromium(playwright):
    executable = shutil.which("chromium") or shutil.which("chromium-browser")
    if not executable:
        raise SystemExit("Debian's chromium is needed: scripts/test.sh installs it")
    return playwright.chromium.launch(executable_path=executable, args=FLAGS, headless=True)


# ---- the report -----------------------------------------------------------------------------
def gib(n: int) -> str:
    return f"{n / 2**30:.2f} GiB"


def report(peaks: Peaks, runs: Path, start: dict, convert: dict, server_rss: dict[str, int]) -> bool:
    created = list_runs(runs)
    conversions = [p for p in (runs / "albertized").iterdir() if not p.name.startswith(".")] \
        if (runs / "albertized").is_dir() else []
    disk = limits.folder_bytes(runs)
    checks = [
        ("worker processes at once", f"{peaks.workers}", f"<= {limits.MAX_RUNS_PER_VISITOR} (MAX_RUNS_PER_VISITOR)",
         peaks.workers <= limits.MAX_RUNS_PER_VISITOR),
        ("runs queued or running at once", f"{peaks.active_runs}", f"<= {limits.MAX_RUNS_PER_VISITOR} (MAX_RUNS_PER_VISITOR)",
         peaks.active_runs <= limits.MAX_RUNS_PER_VISITOR),
        ("workers holding torch at once (training)", f"{peaks.training}", "<= 1 (one run trains at a time; queued wait small)",
         peaks.training <= 1),
        ("conversion folders", f"{len(conversions)}", "1 (identical conversions reused)", len(conversions) == 1),
        ("disk under runs/ (peak)", gib(peaks.disk), f"<= {gib(limits.APP_DISK_QUOTA)} (APP_DISK_QUOTA)",
         peaks.disk <= limits.APP_DISK_QUOTA),
    ]
    print(f"\nStart: {start['clicks']} clicks in {start['click_s']:.1f} s, settled {start['settle_s']:.1f} s later; "
          f"Convert: {convert['clicks']} clicks in {convert['click_s']:.1f} s, settled {convert['settle_s']:.1f} s later")
    workers = [proc for proc in peaks.at_peak if WORKER in proc.command]
    print(f"peak memory: {gib(peaks.memory)} RSS of the server and its children ({gib(peaks.pss)} at most counting "
          f"shared pages once, PSS), {len(workers)} worker process(es) at the peak holding "
          f"{gib(sum(proc.rss for proc in workers))}; at that moment:")
    for proc in peaks.at_peak:
        print(f"    {gib(proc.rss):>9s}  pid {proc.pid:<7d} {proc.command[:90]}")
    print(f"one worker held at most {gib(peaks.largest_worker)}, the workers together {gib(peaks.worker_memory)}; "
          f"the server process alone peaked at {gib(peaks.server)}")
    print("server process: " + ", ".join(f"{what} {gib(rss)}" for what, rss in server_rss.items()))
    print(f"runs created: {len(created)} ({', '.join(sorted({r.status for r in created})) or 'none'}); "
          f"conversion folders created: {len(conversions)}; disk used under runs/: {gib(disk)} at the end, "
          f"{gib(peaks.disk)} at the peak ({peaks.samples} samples)")
    for what in ("start", "convert"):
        errors = (start if what == "start" else convert)["errors"]
        print(f"{what} page's error boxes at the end: {len(errors)}" + "".join(f"\n  {e!r}" for e in errors[:5]))
    print(f"\n  {'budget':42s} {'measured':>10s}  {'allowed':44s} held")
    for what, measured, allowed, held in checks:
        print(f"  {what:42s} {measured:>10s}  {allowed:44s} {'yes' if held else 'NO'}")
    return all(held for *_, held in checks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clicks", type=int, default=60, help="clicks on each button")
    parser.add_argument("--gap", type=float, default=0.1, help="seconds between two clicks")
    parser.add_argument("--steps", type=int, default=20, help="steps of each run started (lab-tiny)")
    parser.add_argument("--warm", action="store_true", help="use the project's cache of tokenizers (else a fresh one)")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds the whole benchmark may take")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    print(f"machine: {machine()}")
    timer = threading.Timer(args.timeout, lambda: os._exit(3))  # the last resort: nothing below waits unbounded
    timer.daemon = True
    timer.start()
    with tempfile.TemporaryDirectory(prefix="bench-clicks-") as scratch:
        runs = Path(scratch) / "runs"
        runs.mkdir()
        server, url = start_server(runs, None if args.warm else Path(scratch) / "cache")
        sampler = Sampler(server.pid, runs)
        server_rss: dict[str, int] = {}
        own = lambda: next((proc.rss for proc in process_tree(server.pid) if proc.pid == server.pid), 0)
        try:
            wait_healthy(url)
            sampler.start()
            with sync_playwright() as p:
                browser = chromium(p)
                try:
                    page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
                    server_rss["at the start"] = own()
                    start = start_clicks(page, url, args.clicks, args.gap, args.steps)
                    server_rss["after the Start clicks"] = own()
                    convert = convert_clicks(page, url, args.clicks, args.gap)
                    server_rss["after the Convert clicks"] = own()
                finally:
                    browser.close()
            print(f"cancelled the runs; their workers ended in {cancel_all(runs, server.pid):.1f} s")
            peaks = sampler.stop()
            held = report(peaks, runs, start, convert, server_rss)
        finally:
            if sampler.is_alive():
                sampler.stop()
            for run in list_runs(runs):
                if run.active:
                    cancel_run(run.path)
            server.terminate()
            try:
                server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                server.kill()
    print("\nevery budget held" if held else "\nA BUDGET WAS NOT HELD")
    sys.exit(0 if held else 1)


if __name__ == "__main__":
    main()
