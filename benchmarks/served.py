"""A served app and the processes around it, for the benchmarks that drive one (bench_class,
bench_memory, bench_starvation, bench_clicks): the server started on a free loopback port and waited for, the
memory and CPU time of a process tree, the machine in words, a visitor's typed pair, a p95."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_app import free_port  # noqa: E402

WORDS_TEXT = ("the river city people water north town school year history music world game light family war church "
         "village king station film road team book island power group century language field market song art "
         "mountain bridge house army forest coast park club library night system ship garden valley street")
WORDS = WORDS_TEXT.split()


def typed_pair(number: int) -> tuple[str, str]:
    """Visitor `number`'s own pair, typed in the form or sent in the link."""
    return (f"Visitor {number} walked along the river to the old stone bridge.",
            f"From there visitor {number} could see the whole town and the hills beyond it.")


def start_server(runs: Path, trace: Path) -> tuple[subprocess.Popen, str]:
    """`albert-lab app` on a free loopback port, headless, with a runs folder of its own, each script
    run's own time in the server appended to `trace` (app.shell.serve.traced)."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ALBERT_LAB_RUNS": str(runs), "ALBERT_LAB_TRACE": str(trace)}
    server = subprocess.Popen([sys.executable, "-m", "albert_lab", "app", "--port", str(port), "--server.headless", "true",
                               "--server.address", "127.0.0.1"],
                              cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return server, f"http://127.0.0.1:{port}"


def wait_answering(server: subprocess.Popen, url: str, seconds: float) -> None:
    """Until the server answers its health check. Raises TimeoutError when it has ended (a port taken
    meanwhile ends it at once) or `seconds` have passed first."""
    end = time.perf_counter() + seconds
    while True:
        if server.poll() is not None:
            raise TimeoutError(f"the server ended at its start (exit code {server.returncode})")
        try:
            urllib.request.urlopen(f"{url}/_stcore/health", timeout=1)
            return
        except OSError:
            if time.perf_counter() > end:
                raise TimeoutError(f"the server did not answer within {seconds:.0f} s") from None
            time.sleep(0.05)


def tree_rss(pid: int) -> int:
    """Resident bytes of process `pid` and all its descendants."""
    try:
        import psutil
    except ImportError:
        return _proc_tree_rss(pid)
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0
    total = 0
    for proc in procs:
        try:
            total += proc.memory_info().rss
        except psutil.NoSuchProcess:
            pass
    return total


def proc_descendants(pid: int) -> set[int]:
    """`pid` and every process below it, from /proc (where psutil is not installed)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                parents[int(entry.name)] = int(stat[stat.rindex(")") + 2:].split()[1])
            except (OSError, ValueError):
                pass
    tree, grew = {pid}, True
    while grew:
        more = {child for child, parent in parents.items() if parent in tree} - tree
        tree |= more
        grew = bool(more)
    return tree


def _proc_tree_rss(pid: int) -> int:
    page = os.sysconf("SC_PAGE_SIZE")
    total = 0
    for member in proc_descendants(pid):
        try:
            total += int(Path(f"/proc/{member}/statm").read_text().split()[1]) * page
        except (OSError, ValueError, IndexError):
            pass
    return total


def cpu_seconds(pids: set[int]) -> float:
    """CPU seconds (user + system) of these processes and of their children they have reaped."""
    tick, total = os.sysconf("SC_CLK_TCK"), 0
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            total += sum(int(v) for v in stat[stat.rindex(")") + 2:].split()[11:15])  # utime stime cutime cstime
        except (OSError, ValueError):
            pass
    return total / tick


class MemorySampler(threading.Thread):
    """The peak of tree_rss(pid), sampled every `every` seconds until stop(); also the CPU seconds
    of the server's tree and of the browsers' (every other process below this one), at the last sample."""

    def __init__(self, pid: int, every: float = 0.25) -> None:
        super().__init__(daemon=True)
        self.pid, self.every, self.peak, self._done = pid, every, 0, threading.Event()
        self.server_cpu = self.browser_cpu = 0.0

    def run(self) -> None:
        while not self._done.is_set():
            self.peak = max(self.peak, tree_rss(self.pid))
            server = proc_descendants(self.pid)
            self.server_cpu = max(self.server_cpu, cpu_seconds(server))
            self.browser_cpu = max(self.browser_cpu, cpu_seconds(proc_descendants(os.getpid()) - server - {os.getpid()}))
            self._done.wait(self.every)

    def stop(self) -> int:
        self._done.set()
        self.join()
        return self.peak


# Measured inside each tab, so that measuring costs the machine next to nothing: the tab notes the wall-clock
# milliseconds of each websocket message it receives and sends (Playwright's own websocket events would copy
# every message's bytes to this process) and polls its own page for WAIT (one call per wait, not one per poll).


def p95(values: list[float]) -> float:
    """The 95th percentile, interpolated between the ranked values (the worst of fewer than two)."""
    return statistics.quantiles(values, n=20, method="inclusive")[-1] if len(values) > 1 else max(values)


def machine() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        name = next((line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Model name")), "?")
    except OSError:
        name = "?"
    return f"{name}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the start"
