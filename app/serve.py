"""`streamlit run`, with the model code importing while the server starts.

`albert-lab app` execs `python -m app.serve run app/main.py ...`. Torch's and transformers'
model code takes about 3 s to import; started here, in a background thread, that happens
while the server comes up and the browser loads Streamlit's own scripts, so the first page
that loads a model (the Model card, which opens first) does not wait for it. The app's
`ui.warm_up` calls the same function after the first page, for `streamlit run app/main.py`
users (a no-op when this module already did it).
"""

import threading


def import_model_code() -> None:
    import albert_lab.checkpoints  # noqa: F401  torch, transformers' ALBERT and BERT


if __name__ == "__main__":
    threading.Thread(target=import_model_code, name="albert-lab-import", daemon=True).start()
    from streamlit.web.cli import main

    main(prog_name="streamlit")  # the command line is streamlit's: run app/main.py --server.port ...
