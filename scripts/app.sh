#!/usr/bin/env bash
# Install what is needed into .venv (first time only) and start ALBERT Lab on the
# shipped checkpoints: http://localhost:8501. Extra arguments go to `streamlit run`.
source "$(dirname "$0")/_venv.sh" requirements.txt
exec .venv/bin/albert-lab app "$@"
