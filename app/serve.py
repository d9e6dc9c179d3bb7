"""Start the Streamlit server with the heavy imports warming up beside it.

`python -m app.serve [streamlit run options]` is `streamlit run app/main.py` plus one
thread that imports what the first page needs (torch, plotly; ~1.5 s on a 2-core CPU)
while the server starts and the browser fetches the front end. transformers is not
needed to paint the first page (albert_lab.catalog); app.ui.warm_up imports it after.
`albert-lab app` starts the app this way.
"""

import sys
import threading
from pathlib import Path

MAIN = Path(__file__).resolve().parent / "main.py"


def _warm_imports() -> None:
    import plotly.express  # noqa: F401

    import albert_lab.card  # noqa: F401
    import albert_lab.devices  # noqa: F401  (torch)


def main(argv: list[str]) -> None:
    from streamlit.web import cli

    threading.Thread(target=_warm_imports, name="albert-lab-warm-imports", daemon=True).start()
    cli.main(args=["run", str(MAIN), *argv], prog_name="streamlit")


if __name__ == "__main__":
    main(sys.argv[1:])
