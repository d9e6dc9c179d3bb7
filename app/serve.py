"""`streamlit run`, with the first page's code and then the model code importing while
the server starts.

`albert-lab app` execs `python -m app.serve run app/main.py ...`. Before the first page
can draw, its script needs pandas, plotly, torch and Streamlit's emoji table (which
`st.set_page_config` compiles, a quarter of a second); a page that loads a model also
needs transformers' model code: about 3 s of imports in all on a 2-core CPU. Started
here, in a background thread, they happen while the server comes up and the browser
loads Streamlit's own scripts, and in that order: what the first page (the Model card,
drawn from the checkpoint's files) needs first, then what the pages after it need. The
app's `ui.warm_up` calls `import_model_code` after the first page, for `streamlit run
app/main.py` users (a no-op when this module already did it).
"""

import threading


def import_first_page() -> None:
    """Third-party code only: the app's own modules are imported by the script, under
    Streamlit's runtime (their caches are made there)."""
    import pandas  # noqa: F401
    import plotly.express as px
    import streamlit.emojis  # noqa: F401  set_page_config tests the page icon against it
    import torch  # noqa: F401

    import albert_lab.card  # noqa: F401  the model card from a checkpoint's files

    px.bar(x=[1], y=["a"], orientation="h")  # plotly's first figure imports its validators


def import_model_code() -> None:
    import albert_lab.checkpoints  # noqa: F401  transformers' ALBERT and BERT


def warm_up() -> None:
    import_first_page()
    import_model_code()


if __name__ == "__main__":
    # Streamlit first, in this thread: its import configures plotly's theme, which tests
    # values against pandas' types, and a pandas half-imported by the other thread fails that.
    from streamlit.web.cli import main

    threading.Thread(target=warm_up, name="albert-lab-import", daemon=True).start()

    main(prog_name="streamlit")  # the command line is streamlit's: run app/main.py --server.port ...
