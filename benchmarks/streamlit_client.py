"""A visitor without a browser: the app's pages asked for over Streamlit's own websocket, as the
browser asks for them, and the server's answer timed from the request to the end of the script run.

What a class on one server looks like when each student's browser runs on the student's own
machine: the server's cores do the server's work only. The client speaks Streamlit's protocol
(streamlit.proto: a BackMsg `rerun_script` with the page's hash and the link's query string; the
server's ForwardMsgs up to `script_finished`) and draws nothing. Errors the page shows (exception
boxes, "Something went wrong" boxes) are read from the elements it sends, and so is what the page last
said while the visitor waited (a queue's or a progress bar's words). Every wait is bounded: a websocket
the server closes ends the wait at once (said in the answer's errors), and closing one takes at most
CLOSE_SECONDS. Loopback only, for benchmarks/bench_class.py.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from urllib.parse import urlencode, urlsplit

import websockets
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.util import calc_hash

EARLY = ForwardMsg.ScriptFinishedStatus.FINISHED_EARLY_FOR_RERUN
CLOSE_SECONDS = 5.0  # a websocket's closing handshake at most; then its connection is dropped


@dataclass
class Answer:
    """One script run as this client saw it, perf_counter() seconds."""

    asked: float
    first: float | None = None  # the first element of the page
    done: float | None = None  # script_finished
    errors: list[str] = field(default_factory=list)
    shown: bool = False  # the text looked for was in one of the page's elements
    page: str = ""  # the script hash of the page the server ran
    said: str = ""  # the last words of an alert or a progress bar the page sent (what a waiting visitor is told)


class Session:
    """One visitor's websocket to the app at `url` (http://host:port). `cookies`: what the browser
    sends with it (one browser's tabs send the same owner cookie, app/shell/owner.py)."""

    def __init__(self, url: str, cookies: dict[str, str] | None = None) -> None:
        parts = urlsplit(url)
        self.url, self.ws_url = url, f"ws://{parts.netloc}/_stcore/stream"
        self.headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in cookies.items())} if cookies else {}
        self.ws = None
        self._reader: asyncio.Task | None = None
        self._answer: Answer | None = None
        self._text = b""
        self._finished = asyncio.Event()
        self.closed: str | None = None  # why the websocket closed, once it has

    async def __aenter__(self) -> Session:
        self.ws = await websockets.connect(self.ws_url, subprotocols=["streamlit"], max_size=None, origin=self.url,
                                           additional_headers=self.headers, ping_interval=None, open_timeout=120,
                                           close_timeout=CLOSE_SECONDS, compression=None)
        self._reader = asyncio.create_task(self._read())
        return self

    async def __aexit__(self, *exc) -> None:
        """Close the websocket within CLOSE_SECONDS, even when cancelled: a visitor stopped by a timeout
        must not wait on a server that no longer answers."""
        if self._reader is not None:
            self._reader.cancel()
        if self.ws is not None:
            try:
                await asyncio.wait_for(self.ws.close(), CLOSE_SECONDS + 1)
            except (TimeoutError, websockets.ConnectionClosed, OSError):
                self.ws.transport.abort()
            except asyncio.CancelledError:
                self.ws.transport.abort()
                raise

    async def _read(self) -> None:
        """Every message, until the websocket closes; then whoever waits for a script run is told why."""
        try:
            await self._messages()
        except websockets.ConnectionClosed:
            pass  # said below, from the close frame
        except Exception as err:  # a message this client cannot read ends the session too, said
            self.closed = f"the websocket's reader failed: {type(err).__name__}: {err}"
        finally:
            code = self.ws.close_code
            if self.closed is None and code is not None:
                self.closed = (f"the connection to the server was lost (no closing handshake, {code})" if code == 1006 else
                               f"the server closed the websocket ({code}: {self.ws.close_reason or 'no reason given'})")
            self.closed = self.closed or "the websocket's reader was stopped"
            self._finished.set()

    async def _messages(self) -> None:
        async for data in self.ws:
            now, msg = time.perf_counter(), ForwardMsg()
            msg.ParseFromString(data)
            answer, kind = self._answer, msg.WhichOneof("type")
            if answer is None:
                continue
            if kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
                element = msg.delta.new_element
                if answer.first is None:
                    answer.first = now
                answer.shown = answer.shown or (bool(self._text) and self._text in data)
                which = element.WhichOneof("type")
                if which == "exception":
                    answer.errors.append(f"exception: {element.exception.type}: {element.exception.message[:200]}")
                elif which == "alert" and "Something went wrong" in element.alert.body:
                    answer.errors.append(f"error box: {element.alert.body[:200]}")
                if which == "alert" or which == "progress":
                    answer.said = (element.alert.body if which == "alert" else element.progress.text)[:160]
            elif kind == "script_finished" and msg.script_finished != EARLY:
                answer.done = now
                self._finished.set()
            elif kind == "navigation":
                answer.page = msg.navigation.page_script_hash

    def waiting(self) -> str:
        """What this visitor's last request waits for, in words (said for a visitor a timeout stops)."""
        answer = self._answer
        if answer is None:
            return self.closed or "nothing asked"
        got = "nothing received" if answer.first is None else f"its first element after {answer.first - answer.asked:.1f} s"
        said = f"; the page last said: {answer.said}" if answer.said else ""
        return f"asked {time.perf_counter() - answer.asked:.0f} s before, {got}{said}"

    async def open(self, url_path: str, query: dict[str, str] | None = None, timeout: float = 600.0,
                   text: str = "") -> Answer:
        """Run the page at `url_path` ("" for the default page) with the link's `query`, as a browser
        opening that address or following a link to it does; returns when the script run has ended
        (Answer.shown: whether `text` was in one of the elements it sent)."""
        msg = BackMsg()
        state = msg.rerun_script
        state.query_string = urlencode(query or {})
        state.page_script_hash = calc_hash(url_path) if url_path else ""
        state.page_name = url_path
        self._text = text.encode()
        answer = self._answer = Answer(time.perf_counter())
        self._finished.clear()
        try:
            if self.closed is None:
                await asyncio.wait_for(self.ws.send(msg.SerializeToString()), max(timeout, 0.0))
                await asyncio.wait_for(self._finished.wait(), max(timeout - (time.perf_counter() - answer.asked), 0.0))
        except TimeoutError:
            answer.errors.append(f"no end of the script run within {timeout:.0f} s"
                                 + (f" (the page last said: {answer.said})" if answer.said else ""))
        except websockets.ConnectionClosed:
            pass  # said below, as the reader found it
        finally:
            self._answer = None
        if answer.done is None and self.closed is not None:
            answer.errors.append(self.closed)
        if url_path and answer.page != state.page_script_hash:
            answer.errors.append(f"asked for the page at /{url_path}, the server ran another")
        return answer
