"""The class benchmark's visitor without a browser (benchmarks/streamlit_client.py) when the server
closes its websocket: the wait for the script run ends then, saying why, instead of lasting the
whole timeout (a class of 50 waited past the benchmark's own --timeout). A stand-in server on
loopback, no Streamlit: it accepts the visitor, reads its request and closes."""

import asyncio

from websockets.asyncio.server import serve

from benchmarks.streamlit_client import Session

LONG = 60.0  # seconds a wait may last; the test waits on the answer, never on this


def test_a_websocket_the_server_closes_ends_the_wait_and_says_why():
    async def visit() -> tuple:
        asked = asyncio.Event()

        async def server_side(ws) -> None:
            await ws.recv()
            asked.set()
            await ws.close(1013, "too many visitors")

        async with serve(server_side, "127.0.0.1", 0, subprotocols=["streamlit"]) as server:
            port = server.sockets[0].getsockname()[1]
            async with Session(f"http://127.0.0.1:{port}") as session:
                first = await asyncio.wait_for(session.open("", timeout=LONG), 2 * LONG)
                again = await asyncio.wait_for(session.open("", timeout=LONG), 2 * LONG)
            return asked.is_set(), first, again

    asked, first, again = asyncio.run(visit())
    assert asked
    for answer in (first, again):  # the first asked and was cut off; the second never reached the server
        assert answer.done is None
        assert answer.errors == ["the server closed the websocket (1013: too many visitors)"], answer.errors


def test_a_websocket_that_fails_ends_the_wait_and_says_so():
    async def visit():
        async def server_side(ws) -> None:
            await ws.recv()
            ws.transport.abort()  # no closing handshake: the connection is lost

        async with serve(server_side, "127.0.0.1", 0, subprotocols=["streamlit"]) as server:
            port = server.sockets[0].getsockname()[1]
            async with Session(f"http://127.0.0.1:{port}") as session:
                return await asyncio.wait_for(session.open("", timeout=LONG), 2 * LONG)

    answer = asyncio.run(visit())
    assert answer.done is None
    assert answer.errors == ["the connection to the server was lost (no closing handshake, 1006)"], answer.errors
