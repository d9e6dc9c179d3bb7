"""CLI: albertize, a pretrained BERT made into an ALBERT (registered on import by cli.py)."""

from __future__ import annotations

import argparse
import shlex
import sys
from typing import get_args

from albert_lab.cli.arguments import path_option, seed_option, whole_number
from albert_lab.cli.common import command
from albert_lab.cli.outputs import check_not_input, check_outputs
from albert_lab.spec import Init, Sharing


def _albertize_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--checkpoint", required=True, help="a BERT folder, a sentence-transformers folder, or a hub id (online)")
    p.add_argument("--embedding", type=whole_number, default=128, metavar="E", help="embedding size E (truncated SVD); E = H is exact")
    p.add_argument("--sharing", choices=get_args(Sharing), default="all")
    p.add_argument("--groups", type=whole_number, metavar="N", help="sharing groups (default 1; L when not shared)")
    p.add_argument("--init", choices=get_args(Init), default="average", help="how each shared block starts")
    p.add_argument("--seed", type=seed_option(), default=0)
    p.add_argument("--out", type=path_option, required=True, help="the new checkpoint folder")


@command("albertize", "turn a pretrained BERT into an ALBERT checkpoint (factorised embedding, shared layers)")(_albertize_arguments)
def cmd_albertize(args: argparse.Namespace) -> int:
    from albert_lab.checkpoint.discover import resolve_checkpoint
    from albert_lab.checkpoint.files import read_card, read_spec
    from albert_lab.convert import albertize, attention_warning
    from albert_lab.params import count, human

    check_outputs(args, files=(), folders=("out",))  # never into the BERT it reads
    out = albertize(resolve_checkpoint(args.checkpoint), args.out, args.embedding, args.sharing, args.groups, args.init,
                    args.seed, command="albert-lab " + shlex.join(sys.argv[1:]))
    card = read_card(out)
    facts, spec = card["conversion"], read_spec(out, card)
    print(f"{out}: {spec.label} ({human(count(spec).total)} parameters), converted, not trained")
    print(f"  embedding: E={facts['embedding_size']}, SVD kept {facts['embedding_energy_kept']:.1%} of the word embeddings' "
          f"energy; projection fit R^2 {facts['embedding_fit_r2']:.3f}")
    print(f"  sharing: {facts['sharing']} in {facts['groups']} group(s); init {facts['init']}: {facts['init_note']}")
    if warning := attention_warning(facts):
        print(f"  attention: {warning}")
    print(f"  heads: MLM {facts['heads']['mlm']}; pair {facts['heads']['pair']}")
    return 0


def _import_tf_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("source", type=path_option, help="a release folder as its tarball unpacks (albert_base, uncased_L-12_H-768_A-12, ...) "
                   "or the .tar.gz / .zip itself")
    p.add_argument("--out", type=path_option, required=True, help="the new checkpoint folder")


@command("import-tf", "keep one of Google's original ALBERT or BERT releases (TF1 checkpoint) as a checkpoint folder")(_import_tf_arguments)
def cmd_import_tf(args: argparse.Namespace) -> int:
    from albert_lab.checkpoint.archive import is_archive, unpacked_release
    from albert_lab.checkpoint.loadable import check_outside_checkpoints
    from albert_lab.checkpoint.release import open_release
    from albert_lab.checkpoint.release_convert import convert_release
    from albert_lab.checkpoint.store import check_new_folder

    check_not_input(args.out, [("the release", args.source)], "--out")  # never into the release it reads
    check_outside_checkpoints(args.out, "--out")  # nor into any other checkpoint, or the cache
    out = check_new_folder(args.out)
    source = args.source
    release = open_release(unpacked_release(source) if source.is_file() and is_archive(source) else source)
    print(release.describe())
    if out.is_dir():
        out.rmdir()  # the empty folder check_new_folder allows; the conversion renames its own into place
    convert_release(release, out)
    kind = "SOP" if release.family == "albert" else "NSP"
    print(f"{out}: {ORIGIN_WORDS}; MLM and {kind} heads from the release (trained); load it with --checkpoint {out}")
    return 0


ORIGIN_WORDS = "Google's original release, converted"
