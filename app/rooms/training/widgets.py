"""How the Training page's form shows the options it offers: one Widget a row of the options table
(albert_lab.training.options), keyed by the row's name. The row says what an option is (its type,
bounds, choices, default, help on the command line); this table says how the page shows it. A row
with a widget here is in the form; form.py places it, under the key the room derives from the row's name
(registry.Room.key: 'max_steps' is 'tr_max_steps'), and the shell draws it (app/shell/rows.py)."""

from __future__ import annotations

from albert_lab.data.corpora import DEFAULT, PLUS
from albert_lab.limits import APP_MAX_MINUTES, APP_MAX_STEPS, MAX_SEED
from albert_lab.training.config import MAX_LR, SCRATCH_LR, UPTRAIN_LR
from app.shell.rows import Widget

WIDGETS: dict[str, Widget] = {
    # the architecture (spec rows), set from the preset picked
    "embedding_size": Widget("E (embedding size)", state=True, low=8, high=1024, step=16),
    "hidden_size": Widget("H (hidden size)", state=True, low=16, high=1024, step=16),
    "num_layers": Widget("L (layers)", state=True, high=24),
    "num_heads": Widget("Attention heads", state=True, high=16),
    "sharing": Widget("Cross-layer sharing", state=True),
    "objective": Widget("Inter-sentence loss", radio=True),
    # the run
    "corpus": Widget("Corpus", help=f"{DEFAULT}: the built-in mix of long documents; {PLUS}: it and four "
                     "software manuals, twice the text, when installed (see 'Corpora' below)"),
    "init_from": Widget("Start from", help="random weights, or a checkpoint picked in the sidebar (uptraining: "
                        "its weights, architecture and tokenizer; heads it lacks are added)"),
    "distil_from": Widget("Distil from", help="while uptraining, also match this checkpoint's hidden state "
                          "after every layer and, where its MLM head is trained, its MLM predictions (same width and "
                          "tokenizer); its pair head is never copied"),
    "pair_weight": Widget("Its weight", high=100.0,
                          help="the loss is MLM + weight x pair loss (the paper: 1). An uptrained encoder's MLM and "
                               "distillation gradients can be hundreds of times the pair loss's, which can then leave the "
                               "pair loss at chance for the whole run"),
    "vocab_size": Widget("Vocabulary (new tokenizer)", high=32000, step=500),
    "max_seq_len": Widget("Sequence length", high=512, step=16),
    "batch_size": Widget("Batch size", default=32, high=512),
    "lr": Widget("Learning rate", state=True, format="%.4f",
                 help=f"{SCRATCH_LR:g} from random weights; {UPTRAIN_LR:g} when starting from a checkpoint (set when you "
                      "pick one): a from-scratch rate can undo what a checkpoint knows. The shipped MiniLM models were "
                      f"uptrained with AdamW at 2e-4 (BERT) and 1.5e-3 (ALBERT). Above 0 and at most {MAX_LR:g}, as "
                      "`albert-lab train --lr`."),
    "optimizer": Widget("Optimizer"),
    "warmup_steps": Widget("Warm-up steps", default=50, high=100_000),
    "max_steps": Widget("Steps", default=200, high=APP_MAX_STEPS,
                        help=f"at most {APP_MAX_STEPS:,} from this page (and {APP_MAX_MINUTES:,.0f} minutes): the server's "
                             "one training slot is shared; longer runs with `albert-lab train`"),
    "max_minutes": Widget(f"or minutes (0: the page's {APP_MAX_MINUTES:,.0f})", default=0.0, off=0.0,
                          high=APP_MAX_MINUTES),
    "seed": Widget("Seed", help=f"weights, batches and masks: 0..{MAX_SEED:,}, as `albert-lab train --seed`"),
    "chunk_start": Widget("Pairs start at", help="document: each document's first segment, as in the paper; "
                          "random: a random segment, so more pairs come from inside documents"),  # random: not in the paper
    "name": Widget("Run name", placeholder="e.g. tiny-sop"),
}
