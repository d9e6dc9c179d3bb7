"""The class benchmark's visitor without a browser (benchmarks/streamlit_client.py) against the app
served as the README serves it: it must time real script runs of the pages it names, see the typed
pair's scores, and report what the page shows going wrong, or the class's figures mean nothing."""

import asyncio

from benchmarks.streamlit_client import Session


def test_a_visitor_without_a_browser_times_the_pages_it_asks_for(server):
    async def walk():
        async with Session(server) as session:
            card = await session.open("", text="Model card")
            typed = await session.open("sentence_pairs", {"pair_a": "The Nile is a river in Africa.",
                                                          "pair_b": "It flows north into the Mediterranean Sea."},
                                       text="Preferred order")
            nothing = await session.open("sentence_pairs", text="no such words on the page")
            missing = await session.open("no_such_page")
            return card, typed, nothing, missing

    card, typed, nothing, missing = asyncio.run(walk())
    for answer in (card, typed, nothing):
        assert answer.done is not None and answer.asked < answer.first <= answer.done, answer
        assert not answer.errors, answer.errors
    assert card.shown and typed.shown and not nothing.shown
    assert missing.errors == ["asked for the page at /no_such_page, the server ran another"], missing.errors
