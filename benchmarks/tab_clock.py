"""A visitor of bench_class and what its browser tab tells of the time: the tab notes the time of every
websocket message it sends and receives (CLOCK, an init script), and says when a page is drawn
(STATE, WAIT: its heading, its main element, no spinner or stale element, every chart drawn), so that
one call per wait reads what happened (take) instead of a round trip per poll."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

ERRORS = """() => [
  ...[...document.querySelectorAll('[data-testid="stException"]')].map(e => 'exception: ' + e.innerText.slice(0, 200)),
  ...[...document.querySelectorAll('[data-testid="stAlertContentError"]')]
     .filter(e => e.innerText.includes('Something went wrong')).map(e => 'error box: ' + e.innerText.slice(0, 200)),
]"""
STATE = """([title, main, text]) => {
  const h1 = document.querySelector('h1');
  if (!h1 || h1.innerText.trim() !== title) return 'title';
  if (document.querySelector('[data-stale="true"], [data-testid="stSpinner"], [data-testid="stSkeleton"]')) return 'busy';
  if (document.querySelector('[data-testid="stProgress"]')) return 'busy';
  // any one shown: the first may sit in a tab not open (Sentence pairs' typed-pair chart, once the upload tab is)
  if (![...document.querySelectorAll(main)].some(el => el.getClientRects().length)) return 'main';
  if ([...document.querySelectorAll('[data-testid="stPlotlyChart"]')].some(c => !c.querySelector('.main-svg'))) return 'charts';
  if (text && !document.body.innerText.includes(text)) return 'text';
  return 'drawn';
}"""


@dataclass
class Visitor:
    number: int
    times: dict[str, float] = field(default_factory=dict)  # what -> seconds
    firsts: dict[str, float] = field(default_factory=dict)  # page -> seconds to its heading shown
    answers: dict[str, float] = field(default_factory=dict)  # what -> seconds to the server's last message for it
    asked: dict[str, float] = field(default_factory=dict)  # what -> seconds from the click to the browser's request
    frames: list[float] = field(default_factory=list)  # perf_counter() of every websocket message the browser received
    sent: list[float] = field(default_factory=list)  # ... and of every one it sent

    def answered(self, what: str, start: float, end: float) -> None:
        """The server's answer to `what`: from the browser's first message after the click (its request to
        run the page) to the server's last message before the page was drawn: what the server took, apart
        from the browser's own work before and after (on the first page the request comes once the browser
        has loaded the app)."""
        received = [t for t in self.frames if start <= t <= end]
        request = next((t for t in self.sent if start <= t <= end), None)
        if received:
            since = request if request is not None and request <= received[-1] else start
            self.answers[what] = received[-1] - since
            if request is not None:
                self.asked[what] = request - start
    spans: dict[str, tuple[float, float]] = field(default_factory=dict)  # what -> (start, end), perf_counter
    errors: list[str] = field(default_factory=list)
    doing: str = "starting"  # what the visitor waits for now (said when the --timeout stops it)
    since: float = field(default_factory=time.perf_counter)  # ... since when
    detail: Callable[[], str] | None = None  # that wait in words, where it can tell (streamlit_client.Session.waiting)

    def start(self, what: str) -> None:
        self.doing, self.since = what, time.perf_counter()

    def waiting(self) -> str:
        """What it waits for, in words: the page or step, for how long, and what its page last said."""
        if self.doing == "done":
            return "nothing: it was done"
        detail = self.detail() if self.detail is not None else f"for {time.perf_counter() - self.since:.0f} s"
        return f"{self.doing} ({detail})"


CLOCK = """(() => {
  const clock = window.__benchClock = {frames: [], sent: [], errors: [], waits: {}};
  const Native = window.WebSocket, send = Native.prototype.send;
  Native.prototype.send = function (...args) { clock.sent.push(Date.now()); return send.apply(this, args); };
  window.WebSocket = class extends Native {
    constructor(...args) { super(...args); this.addEventListener('message', () => clock.frames.push(Date.now())); }
  };
})()"""
WAIT = """([title, main, text, settle, key]) => {
  const clock = window.__benchClock, now = Date.now(), state = (""" + STATE + """)([title, main, text]);
  const wait = clock.waits[key] = clock.waits[key] || {first: null, calm: null, state: null};
  for (const error of (""" + ERRORS + """)()) if (!clock.errors.includes(error)) clock.errors.push(error);
  wait.state = state;
  if (wait.first === null && state !== 'title') wait.first = now;
  if (state !== 'drawn') { wait.calm = null; return false; }
  if (wait.calm === null) wait.calm = now;
  return now - wait.calm >= settle * 1000 ? {first: wait.first, calm: wait.calm} : false;
}"""
TAKE = "() => { const c = window.__benchClock; return c ? [c.frames.splice(0), c.sent.splice(0), c.errors.splice(0)] : [[], [], []]; }"
EVALUATE_SECONDS = 60.0  # a tab's answer to one call at most (it polls itself: a call is one round trip)
SINCE_EPOCH = time.perf_counter() - time.time()  # perf_counter() at the tab's Date.now() of 0, in seconds


def counter(ms: float) -> float:
    """A tab's Date.now() milliseconds as this process's perf_counter() seconds."""
    return ms / 1000 + SINCE_EPOCH


async def take(page, visitor: Visitor) -> None:
    """What the tab noted since the last take: its websocket messages' times and the error boxes it saw."""
    frames, sent, errors = await asyncio.wait_for(page.evaluate(TAKE), EVALUATE_SECONDS)
    visitor.frames += [counter(ms) for ms in frames]
    visitor.sent += [counter(ms) for ms in sent]
    visitor.errors += [e for e in errors if e not in visitor.errors]


async def drawn(page, visitor: Visitor, title: str, main: str, settle: float, timeout: float, text: str = "",
                first: list[float] | None = None) -> float:
    """perf_counter() time at which the page became drawn (and `text` shown) and stayed so for `settle` s;
    the time its heading was first shown is appended to `first`. Error boxes seen meanwhile are recorded on
    the visitor (once each). The tab polls itself every 50 ms (WAIT) and answers once."""
    key = f"{title}:{time.perf_counter()}"
    try:
        handle = await page.wait_for_function(WAIT, arg=[title, main, text, settle, key], polling=50, timeout=timeout * 1000)
        found = await handle.json_value()
    except Exception as err:
        try:
            state = await asyncio.wait_for(page.evaluate("(key) => window.__benchClock?.waits[key]?.state", key),
                                           EVALUATE_SECONDS)
            await take(page, visitor)
        except Exception:  # a tab that no longer answers: the wait's own error says enough
            state = "unknown: the tab did not answer"
        raise TimeoutError(f"{title}: not drawn within {timeout:.0f} s (last state: {state})") from err
    await take(page, visitor)
    if first is not None and found["first"] is not None:
        first.append(counter(found["first"]))
    return counter(found["calm"])
