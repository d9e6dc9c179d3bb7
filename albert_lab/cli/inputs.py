"""What a command reads from its flags: checkpoints loaded by shipped name, folder or hub id
(bf16 checked once, labels made distinct), and the texts an analysis reads."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from albert_lab.cli.common import fail


def check_bf16(asked: bool, device: str, flag: str) -> None:
    """Where bf16 was asked for: a one-line warning on stderr if it measures slower here than
    fp32, AlbertLabError (exit 2) if it is too slow to use (devices.bf16_verdict)."""
    if asked:
        from albert_lab.devices import check_bf16 as verdict
        from albert_lab.devices import resolve_device

        warning = verdict(resolve_device(device), flag)
        if warning:
            print(warning, file=sys.stderr)


def load_bundle(args: argparse.Namespace, source: str):
    from albert_lab.checkpoint.discover import resolve_checkpoint
    from albert_lab.checkpoint.load import load_checkpoint

    if not getattr(args, "_bf16_checked", False):  # once per command, before its first model
        check_bf16(args.dtype == "bfloat16", args.device, "--dtype bfloat16")
        args._bf16_checked = True

    return load_checkpoint(resolve_checkpoint(source), device=args.device, dtype=args.dtype,
                           allow_pickle=args.allow_pickle, name=source if "/" not in source else None,
                           casing=getattr(args, "casing", None))


def load_bundles(args: argparse.Namespace, sources: Sequence[str]) -> list:
    """Load each checkpoint; labels made distinct where folder names collide (a/model and
    b/model become 'a/model' and 'b/model'), so their rows never merge."""
    bundles = [load_bundle(args, source) for source in sources]
    for bundle, label in zip(bundles, distinct_labels([b.name for b in bundles], [b.source for b in bundles])):
        bundle.name = label
    return bundles


def distinct_labels(names: Sequence[str], sources: Sequence[str]) -> list[str]:
    """`names`, where two are equal: the last two parts of their paths, then ' (2)', ' (3)'..."""
    labels = list(names)
    for name in set(names):
        same = [i for i, n in enumerate(names) if n == name]
        if len(same) > 1:
            for i in same:
                parts = Path(sources[i]).expanduser().absolute().parts
                labels[i] = "/".join(parts[-2:]) if len(parts) >= 2 else name
    seen: dict[str, int] = {}
    for i, label in enumerate(labels):
        seen[label] = seen.get(label, 0) + 1
        if seen[label] > 1:
            labels[i] = f"{label} ({seen[label]})"
    return labels


def input_texts(args: argparse.Namespace) -> list[str]:
    """The texts a command analyses: --file's paragraphs (separated by blank lines), read a
    line at a time and only as far as an analysis reads (MAX_TEXTS, each cut to
    MAX_DOC_CHARS), so memory is bounded by the work, not by the file; else --text, else
    the built-in sample."""
    from albert_lab.data.corpus import MAX_DOC_CHARS
    from albert_lab.data.samples import sample_texts
    from albert_lab.data.textfile import open_user_file, text_blocks, text_lines
    from albert_lab.limits import MAX_TEXTS

    if not args.file:
        return args.text or sample_texts()
    texts: list[str] = []
    with open_user_file(args.file, limit=None, give="a .txt file") as raw:
        for _, block in text_blocks(text_lines(raw, str(args.file), MAX_DOC_CHARS), MAX_DOC_CHARS):
            if len(texts) == MAX_TEXTS:
                fail(f"{args.file}: more than {MAX_TEXTS} texts (paragraphs separated by blank lines); an analysis "
                     f"reads at most {MAX_TEXTS} at once: give a file of fewer")
            texts.append(block)
    return texts or fail(f"{args.file}: no text")
