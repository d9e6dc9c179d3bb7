"""What the app asks of the browser beyond Streamlit's own elements.

The landing page draws no plotly chart (app/rooms/model_card/svg.py), so the browser has not loaded plotly.js
(4.7 MB, about a second on two cores) when the first page with one opens. `prefetch_plotly`
has it imported once the first page is drawn and the browser is idle.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from app.shell.state import shell

# Once the first page has stopped changing for 300 ms (it may still be fetching the chunks of its own
# elements while the main thread idles) and the browser is idle, this imports the chunk
# Streamlit will ask for, so that page finds it ready: the same URL is the same module.
_PREFETCH = """<script>(() => {
  const index = [...document.querySelectorAll("script[src]")].find(s => /\\/static\\/js\\/index\\.[\\w-]+\\.js/.test(s.src));
  if (!index) return;
  const url = new URL("CHUNK", index.src).href;
  const idle = window.requestIdleCallback || (f => setTimeout(f, 0));
  let quiet, started = false;
  const go = () => {
    if (started) return;
    started = true;
    watch.disconnect();
    idle(() => import(url).catch(() => {}), {timeout: 2000});
  };
  const watch = new MutationObserver(() => { clearTimeout(quiet); quiet = setTimeout(go, 300); });
  watch.observe(document.body, {subtree: true, childList: true, characterData: true});
  quiet = setTimeout(go, 300);
  setTimeout(go, 5000);  // a page that keeps changing (a live counter) waits no longer than this
})();</script>"""


def plotly_chunk() -> str | None:
    """File name of Streamlit's plotly chunk in this installation (hashed per version)."""
    found = sorted((Path(st.__file__).parent / "static" / "static" / "js").glob("PlotlyChart.*.js"))
    return found[0].name if found else None


def prefetch_plotly() -> None:
    """Once per session, after the first page: the browser imports plotly.js while idle."""
    if shell().plotly_prefetched or not (chunk := plotly_chunk()):
        return
    shell().plotly_prefetched = True
    with st.sidebar:
        st.html(_PREFETCH.replace("CHUNK", chunk), unsafe_allow_javascript=True)
