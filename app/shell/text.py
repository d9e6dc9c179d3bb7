"""Numbers and names as people read them: counts with separators, durations in minutes,
times to the minute, a card's field names in words; a visitor's text put in markdown as text
(`quoted`, `plain`). No plotly here: pages and the progress messages use them without building
a figure."""

from __future__ import annotations

import datetime
import math
import re

# ---- a visitor's text in markdown: text, never markup --------------------------------------------
# Streamlit draws captions, messages, labels and toasts as markdown: a run name, a link's filter, a
# column of an upload or an error quoting them would otherwise draw images fetched from anywhere,
# live links (javascript: ones too), emphasis, colours and icons. Text a visitor gave goes through
# one of these two on its way into any of them.
# What can start markup, and only that (a message's words, paths and snake_case names stay readable in the source):
# brackets (a link, an image, a footnote, a colour), '<' (HTML, an autolink; a '>' closes nothing without one), a
# backtick, '*', an entity, a ':' before a letter (an icon or emoji: ':material/...:'), an '_' at a word's edge (an
# intraword one never emphasises), a backslash (it would escape the next reference), a list, heading or quote's first
# character; and '~' or '$' where two of them could pair (strikethrough, LaTeX).
_MARKUP = re.compile(r"[\\`*\[\]<]|&(?=#?\w+;)|:(?=[A-Za-z_])|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])|^\s*[-+=#>]|(?<=^\d)[.)]"
                     r"|(?<=^\d\d)[.)]")
_PAIRED = re.compile(r"[~$]")
_AUTOLINKED = re.compile(r"(?i)(https?(?=:)|www(?=\.)|@)")  # where GFM's autolinks start: 'http:', 'www.', 'a@b'
JOINER = "\u2060"  # WORD JOINER: invisible, and no part of a URL or an address


def plain(text: object) -> str:
    """`text` as markdown that draws exactly those characters: each mark that could start markup
    written as a character reference (`&#91;` for '['), which CommonMark draws as the mark and never
    reads as markup (no link, image, HTML, emphasis, code, heading, list, LaTeX, colour or icon),
    and an invisible word joiner after 'http', 'www' and '@': Streamlit's GFM finds autolinks in the
    text after the references are read. Line breaks become spaces."""
    text = _AUTOLINKED.sub(lambda start: start[1] + JOINER, " ".join(str(text).splitlines()))
    reference = lambda mark: "".join(f"&#{ord(c)};" if not c.isspace() else c for c in mark[0])
    text = _MARKUP.sub(reference, text)
    return _PAIRED.sub(lambda mark: reference(mark) if text.count(mark[0]) >= 2 else mark[0], text)


def quoted(text: object) -> str:
    """`text` as inline code: drawn as typed, in a code font (a pattern, a name); the fence is
    longer than any run of backticks inside, as CommonMark asks."""
    text = " ".join(str(text).splitlines())
    if not text:
        return "''"
    fence = "`" * (max((len(run) for run in re.findall("`+", text)), default=0) + 1)
    pad = " " if text[0] in "` " or text[-1] in "` " else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def fmt_count(value: float | int) -> str:
    """515 -> '515', 25637385 -> '25,637,385' (never '515.0000')."""
    return f"{round(value):,}"


def fmt_tokens(value: float | int) -> str:
    """1501 -> '1,501', 22434249 -> '22.43M' (never '0.00M' for a short run)."""
    return f"{value / 1e6:.2f}M" if value >= 1e6 else fmt_count(value)


def plural(count: int, noun: str) -> str:
    """1 -> '1 pair', 5000 -> '5,000 pairs' (never '1 pairs')."""
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def si(value: float) -> str:
    """3 significant digits and an SI suffix, plotly's '~s': 669805300000 -> '670G',
    10_300_000 -> '10.3M', 514 -> '514', 0 -> '0' (never '669,805.3M' or '0.0M')."""
    for unit, scale in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(value) >= scale:
            return f"{value / scale:.3g}{unit}"
    return f"{value:.3g}"


def fmt_bytes(n: int) -> str:
    """312 -> '312 bytes', 52_224 -> '51 KB', 3_500_000 -> '3.3 MB' (a small file was '0 KB')."""
    if n < 1024:
        return f"{n:,} byte{'' if n == 1 else 's'}"
    return f"{n / 1024:,.0f} KB" if n < 1024**2 else f"{n / 1024**2:,.1f} MB"


def fmt_duration(seconds: float) -> str:
    """3565.4 -> '59 min', 42 -> '42 s', 7300 -> '2 h 2 min'."""
    if not math.isfinite(seconds):
        return "-"
    if seconds < 90:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 120 else f"{minutes // 60} h {minutes % 60} min"


def fmt_value(key: str, value: object) -> str:
    """A card value for a table: counts with separators, durations in minutes,
    other numbers with 4 significant digits, times to the minute; a record inside the
    card (where a run started, its teacher, its first stage) as 'field: value; ...' in the
    same words, held-out metrics as their accuracies, never as Python's dict text."""
    if isinstance(value, dict):
        if value and all(isinstance(v, dict) and "accuracy" in v for v in value.values()):  # held-out metrics
            return ", ".join(f"{metric_label(k)} {v['accuracy']:.3f}" for k, v in value.items())
        shown = [(k, v) for k, v in value.items() if v not in (None, "", [], {})]
        return "; ".join(f"{field_label(k)}: " + (f"({fmt_value(k, v)})" if isinstance(v, dict) else fmt_value(k, v))
                         for k, v in shown)
    if isinstance(value, (list, tuple)):
        return ", ".join(fmt_value(key, v) for v in value)
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, str) and ISO_TIME.fullmatch(value):
        return fmt_time(value)
    if key == "code" and isinstance(value, str) and re.match(r"[0-9a-f]{40}", value):
        return value[:12] + value[40:]  # git's short form: the full hash ran past the card's edge at 1400 px
    if isinstance(value, (int, float)) and (key.endswith("_s") or key.endswith("seconds")):
        return fmt_duration(float(value))
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer() and abs(value) >= 1):
        return fmt_count(value)
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1000 else fmt_count(value)
    return str(value)


FIELD_LABELS = {  # a model card's spec and provenance keys, in words
    "vocab_size": "vocabulary size (V)", "embedding_size": "embedding size (E)", "hidden_size": "hidden size (H)",
    "num_layers": "layers (L)", "num_heads": "attention heads", "ffn_size": "FFN size", "sharing": "cross-layer sharing",
    "num_groups": "layer groups", "inner_group_num": "blocks per layer", "max_positions": "positions",
    "type_vocab_size": "token types", "objective": "pair objective", "run_id": "run", "corpus_credit": "corpus credit",
    "corpus_fingerprint": "corpus fingerprint", "eval_corpus": "evaluated on", "tokens": "tokens seen", "wall_time_s": "wall time",
    "code": "code (git commit)", "created": "saved", "command": "command (reproduces it)",
    "command_as_run": "command as run (the paths of that day)", "init_from": "started from", "tokens_total": "tokens, all stages",
}
SUMMARY_FIELDS = ("folder", "name", "origin")  # what names a record inside a card in one cell


def provenance_view(card: dict) -> tuple[list[dict[str, str]], dict[str, dict]]:
    """A card's provenance as (rows of the main table, records shown on their own): a record
    (where the run started, its teacher, its first stage) is named in one short cell and
    shown whole beside it (it was one cell of 2,000 characters). Adds what a reader would
    otherwise work out: that a time budget stopped the run short of its steps, and that a
    run started from an earlier stage of this same model."""
    provenance = {k: v for k, v in card.get("provenance", {}).items() if k != "train_config"}
    config = card.get("provenance", {}).get("train_config") or {}
    steps, planned, minutes = provenance.get("steps"), config.get("max_steps"), config.get("max_minutes")
    spent = provenance.get("wall_time_s")
    if ("stopped" not in provenance and isinstance(steps, int) and isinstance(planned, int) and steps < planned and minutes
            and isinstance(spent, (int, float)) and spent >= 0.98 * 60 * minutes):  # not a cancel: the budget was spent
        provenance["stopped"] = f"the {minutes:g}-minute budget ended the run at step {steps:,} of {planned:,}"
    rows, records = [], {}
    for key, value in provenance.items():
        if isinstance(value, dict) and not all(isinstance(v, dict) and "accuracy" in v for v in value.values()):
            named = next((str(value[k]) for k in SUMMARY_FIELDS if value.get(k)), "")
            if not named and isinstance(value.get("steps"), int):  # a stage: how long it was
                named = f"{value['steps']:,} steps" + (f", {value['tokens']:,} tokens" if isinstance(value.get("tokens"), int)
                                                       else "")
            if key == "init_from" and value.get("name") == card.get("name"):
                named += " (this model as it was before this stage" + (", its first stage below)" if "first_stage" in
                                                                       provenance else ")")
            records[field_label(key)] = value
            rows.append({"field": field_label(key), "value": f"{named}; in full below" if named else "in full below"})
        else:
            rows.append({"field": field_label(key), "value": fmt_value(key, value)})
    return rows, records


def field_label(key: str) -> str:
    return FIELD_LABELS.get(key, key.replace("_", " "))


TASKS = {"mlm": "MLM", "nsp": "NSP", "sop": "SOP", "sop_lead": "SOP, lead pairs", "sop_interior": "SOP, interior pairs"}


def metric_label(key: str) -> str:
    """'ood_sop_interior' -> 'SOP, interior pairs (out of domain)'."""
    ood = key.startswith("ood_")
    task = key.removeprefix("ood_")
    return TASKS.get(task, task.replace("_", " ")) + (" (out of domain)" if ood else " (held-out)")


ISO_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?([+-]\d\d:?\d\d|Z)?")


def fmt_time(iso: str) -> str:
    """'2026-11-23T12:38:29+0000' -> '2026-11-23 12:38 UTC'. To the minute: a reader needs
    no seconds, and the browser holds back a cell with 'hh:mm:ss' (':38:' reads as an
    emoji code) until it has fetched its emoji plugin, a second on a first visit."""
    try:
        when = datetime.datetime.fromisoformat(iso.replace("Z", "+00:00"))
    except ValueError:
        return iso
    offset = when.strftime("%z")  # '' when the time has no zone, else '+0000', '-0530'
    zone = "" if not offset else " UTC" if offset == "+0000" else f" UTC{offset[:3]}:{offset[3:]}"
    return when.strftime("%Y-%m-%d %H:%M") + zone
