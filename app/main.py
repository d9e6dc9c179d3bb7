"""ALBERT Lab in the browser: `streamlit run app/main.py` (or `albert-lab app`).

The entry point owns what all pages share (page config, the sidebar model picker);
each page is a folder of its own, app/rooms/<stem>/ (app/shell/registry.py lists them), whose
page.py is loaded with st.Page.
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # pages import `app.shell.*`
    sys.path.insert(0, str(ROOT))

import streamlit as st  # noqa: E402

from app.shell import browser, draw, links, loading, owner, pace, picker, presets, registry, serve, state  # noqa: E402
from app.shell.guard import guard  # noqa: E402

st.set_page_config(page_title="ALBERT Lab", page_icon=draw.PAGE_ICON, layout="wide")

BY_STEM = {room.stem: st.Page(room.script, title=room.title, icon=room.icon, url_path=room.url_path,
                              default=room.stem == registry.DEFAULT) for room in registry.PAGES}
PAGES = {section: [BY_STEM[room.stem] for room in rooms] for section, rooms in registry.sections().items()}
LIGHT = {BY_STEM[stem] for stem in registry.LIGHT}
STEM = {page: stem for stem, page in BY_STEM.items()}

with serve.traced() as run:  # the server's own time per run, when ALBERT_LAB_TRACE names a file
    page = st.navigation(PAGES)
    run["page"] = STEM[page]
    links.keep()  # the pages' controls keep their values through runs that do not draw them
    pace.use_threads(wait=False)  # one thread while a training run uses the cores
    with guard("reading the sidebar"):  # a link's odd value is a message above the page, never a traceback
        picker.sidebar()
    presets.presets(BY_STEM)
    state.shell().shared = False
    if page not in LIGHT:  # the model code, imported here or by the warm-up (waited for); a light page draws beside it
        serve.import_model_code()
    with guard():  # what a page's own guards leave: a message, the sidebar and the session kept
        st.title(registry.room(STEM[page]).heading)  # each page's heading, from the registry
        page.run()
    links.publish()  # what the page shared, into the link
    owner.remember()  # the browser keeps its owner token: a reload still owns the runs it started
    browser.prefetch_plotly()  # the browser loads plotly.js while idle; the landing page has no plotly chart
    loading.warm_up()  # after the page is drawn: model code imports in the background
