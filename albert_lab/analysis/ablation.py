"""The paper's Tables 3 and 4 on real weights: what the embedding size E and the sharing
strategy cost all-MiniLM-L6-v2, read from docs/ablation.json (written by
scripts/ablation.py) into one row per configuration, the paper's numbers beside.

No torch here: the Parameters page shows these without loading a model."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from albert_lab.errors import DataError
from albert_lab.paper import TABLE3, TABLE4
from albert_lab.paths import PROJECT_ROOT

ABLATION_JSON = PROJECT_ROOT / "docs" / "ablation.json"
PAPER_HIDDEN = 768  # ALBERT-base's H: the paper's E = H rows
# (column prefix, evaluation stage, domain, metric): the accuracies each row carries, with low and high
ACCURACIES = [("probe_mlm", "probe", "in", "mlm"), ("mlm", "uptrain", "in", "mlm"),
              ("sop_interior", "uptrain", "in", "sop_interior"), ("sop_ood", "uptrain", "out", "sop")]
_EXCEPTION_LINE = re.compile(r"^\s*[\w.]*(Error|Exception)\b.*?: ")


@dataclass
class AblationResults:
    rows: pd.DataFrame  # one row per (E, sharing): see ablation_rows
    source: str  # the model converted
    command: str  # the command that made the JSON
    device: str
    wall_s: float
    tokens: int  # tokens each uptraining run saw
    path: Path


def read_ablation(path: Path | None = None) -> AblationResults:
    """The ablation results at `path` (default docs/ablation.json); DataError naming the file
    and the command that makes it when it is absent or unreadable."""
    path = Path(path or ABLATION_JSON)
    remedy = "run scripts/ablation.py (it writes the file; see docs/ablation.md)"
    try:
        data = json.loads(path.read_text())
        rows = ablation_rows(data)
    except FileNotFoundError:
        raise DataError(f"{path}: no ablation results here; {remedy}") from None
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise DataError(f"{path}: not readable as ablation results ({type(err).__name__}: {err}); {remedy}") from None
    tokens = next((r["uptrain"]["tokens"] for r in data["rows"] if "uptrain" in r), 0)
    return AblationResults(rows=rows, source=data.get("source", ""), command=data.get("command", ""),
                           device=data.get("device", ""), wall_s=float(data.get("wall_s", 0)), tokens=int(tokens), path=path)


def ablation_rows(data: dict) -> pd.DataFrame:
    """One row per configuration: E, sharing, failed and failure (the error's own line),
    parameters, energy_kept and fit_r2 (the truncated SVD's), the accuracies of ACCURACIES
    with their 95% Wilson intervals (<name>, <name>_low, <name>_high; NaN for a failed row),
    the paper's ALBERT-base numbers for the same choice (paper_E, paper_params_m,
    paper_avg, paper_table; E = H maps to the paper's E = H = 768), and uptrain_note: a
    correction added after the runs to what the row's uptrained columns measured ('' if none)."""
    hidden = source_hidden(data)
    notes = {name: c["note"] for c in data.get("corrections", []) if c.get("stage") == "uptrain" for name in c["rows"]}
    rows = []
    for row in data["rows"]:
        e, sharing = int(row["embedding"]), row["sharing"]
        out: dict = {"name": row["name"], "E": e, "sharing": sharing, "failed": "error" in row,
                     "failure": failure_reason(row["error"]) if "error" in row else ""}
        conversion = row.get("conversion", {})
        out["parameters"] = row.get("parameters")
        out["energy_kept"] = conversion.get("embedding_energy_kept")
        out["fit_r2"] = conversion.get("embedding_fit_r2")
        for name, stage, domain, metric in ACCURACIES:
            found = _accuracy(row.get(stage, {}).get("evaluation", []), domain, metric)
            out |= {name: found.get("accuracy"), f"{name}_low": found.get("low"), f"{name}_high": found.get("high")}
        paper_e = PAPER_HIDDEN if e == hidden else e
        # the sharing study is Table 4, the E study Table 3 (they differ at E = 128 not shared: 81.6 and 81.7)
        table, (params_m, avg) = ((4, TABLE4[paper_e, sharing]) if (paper_e, sharing) in TABLE4 else
                                  (3, TABLE3[sharing, paper_e]) if (sharing, paper_e) in TABLE3 else (None, (None, None)))
        out |= {"paper_E": paper_e, "paper_params_m": params_m, "paper_avg": avg, "paper_table": table,
                "uptrain_note": notes.get(row["name"], "")}
        rows.append(out)
    return pd.DataFrame(rows).astype({"parameters": "Int64"})


def failure_reason(error: str) -> str:
    """The first sentence of the exception's own line in a failed row's traceback
    ('torch.OutOfMemoryError: CUDA out of memory.'), else of its last line."""
    lines = [line.strip() for line in error.splitlines() if line.strip()]
    line = next((line for line in reversed(lines) if _EXCEPTION_LINE.match(line)), lines[-1] if lines else "unknown error")
    head, dot, _ = line.partition(". ")
    return head + dot.strip()


def source_hidden(data: dict) -> int | None:
    """H of the converted model, from a conversion's record of its source ('BERT L=6 H=384 ...')."""
    for row in data["rows"]:
        if match := re.search(r"\bH=(\d+)", row.get("conversion", {}).get("source_spec", "")):
            return int(match.group(1))
    return None


def _accuracy(evaluation: list[dict], domain: str, metric: str) -> dict:
    return next((r for r in evaluation if r["domain"] == domain and r["metric"] == metric and r["source"] == "all"
                 and r["accuracy"] is not None), {})
