"""Training: launch short pretraining runs (MLM + SOP / NSP / none), watch them live, cancel,
compare. Runs are separate processes; this page only reads their files."""

import streamlit as st

from albert_lab.paths import runs_dir
from albert_lab.training.runs import list_runs
from app.rooms.training import compare
from app.rooms.training import form as run_form
from app.rooms.training import views as run_views
from app.shell import draw, links
from app.shell.registry import keys

key = keys(__file__)  # this room's widget keys
(tab_new, tab_runs, tab_compare), _ = links.tabs(["New run", "Runs", "Compare runs"], key("tab"))
with tab_new:
    run_form.new_run_form()
    draw.paper_note("The recipe follows the paper: MLM with n-gram masking (n <= 3, p(n) proportional to 1/n), SOP "
                  "(swap two consecutive segments) or BERT's NSP (segment from another document), LAMB with linear "
                  "warm-up and decay, no dropout. One run trains at a time; others wait in the queue.")

with tab_runs:
    if not list_runs(runs_dir()):
        st.info("No runs yet: start one under 'New run'.")
    else:
        active = any(r.active for r in list_runs(runs_dir()))
        st.fragment(run_every=2 if active else None)(run_views.runs_view)()

with tab_compare:
    compare.compare_runs()
