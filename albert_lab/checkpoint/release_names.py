"""A release's TensorFlow variables mapped to transformers' names, every one accounted for.

ALBERT's shared blocks are `group_G/inner_group_I`, BERT's layers `layer_N`. A weight the
model needs and the file lacks, or a variable nobody knows, is refused in one line; only the
optimizer slots (`*/adam_m`, `*/adam_v`) and `global_step` are skipped, and never read.
TF-Hub exports, and graphs fine-tuned from one, hold the model under `module/`: read from there
(ALBERT's own loader does the same) whatever else the checkpoint holds outside it (global_step, a
task head, their optimizer slots), which is skipped, never read, and named on the card.
"""

from __future__ import annotations

from albert_lab.checkpoint.tf1 import WEIGHT_DTYPES, Bundle
from albert_lab.errors import CheckpointError
from albert_lab.spec import ModelSpec, transformers_fields

SKIPPED = ("/adam_m", "/adam_v")  # optimizer slots: never read
SKIPPED_NAMES = ("global_step",)
HUB_PREFIX = "module/"  # TF-Hub exports hold every variable under it
Names = dict[str, tuple[str, bool, tuple[int, ...]]]  # transformers key -> (TF variable, transpose, transformers shape)


# One encoder block's variables: (transformers' name, TF's name, in, out) under the block's own names;
# "h" the hidden size, "f" the FFN size, out None for a LayerNorm (its size the in). ALBERT's shared block
# (group_G/inner_group_I) and BERT's layer (layer_N) hold the same maths under different names.
BLOCK: dict[str, tuple[tuple[str, str, str, str | None], ...]] = {
    "albert": (("attention.query", "attention_1/self/query", "h", "h"), ("attention.key", "attention_1/self/key", "h", "h"),
               ("attention.value", "attention_1/self/value", "h", "h"), ("attention.dense", "attention_1/output/dense", "h", "h"),
               ("attention.LayerNorm", "LayerNorm", "h", None), ("ffn", "ffn_1/intermediate/dense", "h", "f"),
               ("ffn_output", "ffn_1/intermediate/output/dense", "f", "h"), ("full_layer_layer_norm", "LayerNorm_1", "h", None)),
    "bert": (("attention.self.query", "attention/self/query", "h", "h"), ("attention.self.key", "attention/self/key", "h", "h"),
             ("attention.self.value", "attention/self/value", "h", "h"), ("attention.output.dense", "attention/output/dense", "h", "h"),
             ("attention.output.LayerNorm", "attention/output/LayerNorm", "h", None), ("intermediate.dense", "intermediate/dense", "h", "f"),
             ("output.dense", "output/dense", "f", "h"), ("output.LayerNorm", "output/LayerNorm", "h", None)),
}


def mapped_names(spec: ModelSpec, bundle: Bundle, config: str) -> tuple[Names, tuple[str, ...]]:
    """The names of `spec`'s weights in `bundle` (under TF-Hub's `module/` when none is found bare and
    some are found there), checked against it, and the variables of training it holds, skipped: with
    the prefix, everything outside `module/` too."""
    expected = expected_names(spec)
    hub = (not any(tf in bundle.entries for tf, _, _ in expected.values())
           and any(HUB_PREFIX + tf in bundle.entries for tf, _, _ in expected.values()))
    prefix = HUB_PREFIX if hub else ""
    names = {hf: (prefix + tf, transpose, shape) for hf, (tf, transpose, shape) in expected.items()}
    skipped = tuple(n for n in bundle.entries if n.endswith(SKIPPED) or n.removeprefix(prefix) in SKIPPED_NAMES
                    or (hub and not n.startswith(HUB_PREFIX)))
    check_names(bundle, names, set(skipped), config)
    return names, skipped


def skipped_words(skipped: tuple[str, ...]) -> str:
    """What a conversion skipped, never reading it, in words for the card."""
    slots = sum(n.endswith(SKIPPED) for n in skipped)
    steps = [n for n in skipped if n.removeprefix(HUB_PREFIX) in SKIPPED_NAMES]
    other = [n for n in skipped if not n.endswith(SKIPPED) and n not in steps]
    parts = [f"optimizer slots (*/adam_m, */adam_v){f': {slots:,}' if other else ''}"] if slots else []
    parts += [" and ".join(steps)] if steps else []
    if other:
        parts.append(f"{len(other):,} variable{'s' * (len(other) != 1)} outside TF-Hub's module/, of the graph it was "
                     f"used in (a task head): {', '.join(other[:4])}{', ...' if len(other) > 4 else ''}")
    return f"{len(skipped):,} variable{'s' * (len(skipped) != 1)} never read: {'; '.join(parts) if other else ' and '.join(parts)}"


def expected_names(spec: ModelSpec) -> Names:
    """Every weight of transformers' pretraining model (the tied MLM decoder aside), its TF name and shape."""
    h, e, f, v = spec.hidden_size, spec.embedding_size, spec.ffn_size, spec.vocab_size
    names: Names = {}

    def norm(hf: str, tf: str, n: int) -> None:
        names[f"{hf}.weight"], names[f"{hf}.bias"] = (f"{tf}/gamma", False, (n,)), (f"{tf}/beta", False, (n,))

    def dense(hf: str, tf: str, n_in: int, n_out: int) -> None:
        names[f"{hf}.weight"], names[f"{hf}.bias"] = (f"{tf}/kernel", True, (n_out, n_in)), (f"{tf}/bias", False, (n_out,))

    sizes = {"h": h, "f": f}

    def block(hf: str, tf: str) -> None:
        """One encoder block's variables, from BLOCK's rows for the family."""
        for hf_part, tf_part, n_in, n_out in BLOCK[spec.family]:
            if n_out is None:
                norm(f"{hf}.{hf_part}", f"{tf}/{tf_part}", sizes[n_in])
            else:
                dense(f"{hf}.{hf_part}", f"{tf}/{tf_part}", sizes[n_in], sizes[n_out])

    model = spec.family  # 'albert.' or 'bert.' prefixes transformers' encoder
    for table, rows in (("word", v), ("position", spec.max_positions), ("token_type", spec.type_vocab_size)):
        names[f"{model}.embeddings.{table}_embeddings.weight"] = (f"bert/embeddings/{table}_embeddings", False, (rows, e))
    norm(f"{model}.embeddings.LayerNorm", "bert/embeddings/LayerNorm", e)
    if spec.family == "albert":
        dense("albert.encoder.embedding_hidden_mapping_in", "bert/encoder/embedding_hidden_mapping_in", e, h)
        groups = transformers_fields(spec)["num_hidden_groups"]
        for g in range(groups):
            for i in range(spec.inner_group_num):
                block(f"albert.encoder.albert_layer_groups.{g}.albert_layers.{i}", f"bert/encoder/transformer/group_{g}/inner_group_{i}")
        dense("albert.pooler", "bert/pooler/dense", h, h)
        mlm, pair = "predictions", "sop_classifier.classifier"
        dense(f"{mlm}.dense", "cls/predictions/transform/dense", h, e)
        norm(f"{mlm}.LayerNorm", "cls/predictions/transform/LayerNorm", e)
    else:
        for n in range(spec.num_layers):
            block(f"bert.encoder.layer.{n}", f"bert/encoder/layer_{n}")
        dense("bert.pooler.dense", "bert/pooler/dense", h, h)
        mlm, pair = "cls.predictions", "cls.seq_relationship"
        dense(f"{mlm}.transform.dense", "cls/predictions/transform/dense", h, h)
        norm(f"{mlm}.transform.LayerNorm", "cls/predictions/transform/LayerNorm", h)
    names[f"{mlm}.bias"] = ("cls/predictions/output_bias", False, (v,))
    names[f"{pair}.weight"] = ("cls/seq_relationship/output_weights", False, (2, h))  # already (out, in)
    names[f"{pair}.bias"] = ("cls/seq_relationship/output_bias", False, (2,))
    return names


def check_names(bundle: Bundle, names: Names, skipped: set[str], config: str) -> None:
    """Every weight present with the shape and a dtype the config implies; no variable left over."""
    index = bundle.index
    wanted = {tf for tf, _, _ in names.values()}
    if missing := sorted(wanted - set(bundle.entries)):
        raise CheckpointError(f"{index} lacks {len(missing):,} variable{'s' * (len(missing) != 1)} the config's model needs "
                              f"({', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''}); it would be random: "
                              "re-copy the release, or check that the config file belongs to this checkpoint")
    if unknown := sorted(set(bundle.entries) - wanted - skipped):
        raise CheckpointError(f"{index} holds {len(unknown):,} variable{'s' * (len(unknown) != 1)} the config's model has no "
                              f"place for ({', '.join(unknown[:3])}{', ...' if len(unknown) > 3 else ''}); it is not the "
                              "release the config describes (or a variant ALBERT Lab does not know)")
    for tf, transpose, shape in names.values():
        entry = bundle.entries[tf]
        stored = shape[::-1] if transpose else shape
        if entry.dtype not in WEIGHT_DTYPES or entry.sliced:
            raise CheckpointError(f"{index}: entry {tf!r} is {'partitioned' if entry.sliced else entry.dtype}, "
                                  f"expected one of {', '.join(WEIGHT_DTYPES)}; re-copy the release")
        if entry.shape != stored:
            raise CheckpointError(f"{index}: entry {tf!r} has shape {list(entry.shape)}, but {config} describes "
                                  f"{list(stored)}; the config file belongs to another model")
