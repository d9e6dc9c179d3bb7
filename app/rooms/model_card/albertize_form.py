"""The Model card's 'Make an ALBERT of this BERT' section: albertize from the browser."""

from __future__ import annotations

from pathlib import Path
from typing import get_args

import streamlit as st

from albert_lab.checkpoint.sources import portable_name
from app.rooms.model_card.state import ModelCardState
from app.shell import loading, making
from app.shell.guard import guard
from app.shell.registry import keys
from app.shell.state import kept

key = keys(__file__)  # this room's widget keys


def albertize_section(name: str, source: str, spec: dict) -> None:
    """For a BERT checkpoint: factorise its embedding and share its layers (albert-lab albertize),
    save the result under runs/albertized/ and offer it in the sidebar."""
    loading.import_model_code()  # albert_lab.convert is torch's: never beside the warm-up's import
    from albert_lab.convert import INIT_NOTES
    from albert_lab.spec import Sharing

    layers, hidden = spec["num_layers"], spec["hidden_size"]
    with st.expander("Make an ALBERT of this BERT (albertize: factorised embedding, shared layers)"):
        st.markdown("The word embeddings are factorised by truncated SVD to **E** dimensions (E = H keeps them whole), "
                    "and the layers are tied into shared blocks that start from the layers they replace. Heads the "
                    "BERT has are carried over where ALBERT has a counterpart, the others are left out (never random). "
                    "The result is converted, not trained: uptrain it with `albert-lab train --init-from`. What each "
                    "choice cost all-MiniLM-L6-v2: docs/ablation.md.")
        with st.form(key("albertize_form")):
            cols = st.columns(4)
            e = cols[0].number_input("E (embedding)", 1, hidden, min(128, hidden), key=key("albertize_e"))
            sharing = cols[1].selectbox("Sharing", get_args(Sharing), key=key("albertize_sharing"))
            groups = cols[2].selectbox("Groups", [g for g in range(1, layers + 1) if layers % g == 0], key=key("albertize_groups"),
                                       help="ignored when not shared (one group per layer)")
            init = cols[3].selectbox("Shared blocks start from", list(INIT_NOTES), key=key("albertize_init"),
                                     help="; ".join(f"{k}: {v}" for k, v in INIT_NOTES.items()))
            go = st.form_submit_button("Convert (seconds)", type="primary")
        if go:
            with guard("converting"), st.spinner("Converting ..."):
                made = albertize_into_runs(name, source, int(e), sharing, None if sharing == "none" else int(groups), init)
                kept(ModelCardState).albertize_done = (made.converted, str(made.folder))
        if kept(ModelCardState).albertize_done is not None:
            made_name, path = kept(ModelCardState).albertize_done
            from albert_lab.checkpoint.files import read_card
            from albert_lab.convert import attention_warning

            facts = read_card(Path(path))["conversion"]
            st.success(f"Saved {portable_name(path)}: E={facts['embedding_size']} keeps {facts['embedding_energy_kept']:.1%} of the word "
                       f"embeddings' energy (projection fit R² {facts['embedding_fit_r2']:.2f}); {facts['sharing']} sharing in "
                       f"{facts['groups']} group(s). MLM head: {facts['heads']['mlm']}; pair head: {facts['heads']['pair']}.")
            if warning := attention_warning(facts):
                st.warning(warning, icon=":material/warning:")
            making.offer(made_name, path, key("albertize_pick"))


def albertize_into_runs(name: str, source: str, e: int, sharing: str, groups: int | None, init: str) -> making.Made:
    """albertize into a fresh folder under runs/albertized/ (named after the source and the choices),
    or the folder of the same conversion made before, in this visitor's turn (app/shell/making.py)."""
    from albert_lab.convert import albertize_into

    stem = f"{name.replace('/', '-')}-e{e}-{sharing}" + (f"-g{groups}" if groups and groups > 1 else "") + f"-{init}"
    return making.make(f"Albertizing {name}", albertize_into, "albertized", stem, source, e, sharing, groups, init,
                       reused="The same conversion was made before")
