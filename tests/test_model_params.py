"""Exact counts: closed form == meta-device model == materialised model, every strategy."""


import pytest
import torch

from albert_lab import paper
from albert_lab.models import Parts, build_model, unique_parameter_count
from albert_lab.params import count
from albert_lab.spec import PRESETS, ModelSpec

STRATEGIES = [("all", 1), ("all", 2), ("all", 4), ("attention", 1), ("attention", 2), ("ffn", 1), ("ffn", 2), ("none", 4)]


@pytest.mark.parametrize("sharing, groups", STRATEGIES)
@pytest.mark.parametrize("inner", [1, 2])
def test_unique_count_equals_materialised_model(sharing, groups, inner):
    spec = ModelSpec(vocab_size=97, embedding_size=8, hidden_size=16, num_layers=4, num_heads=2, ffn_size=24,
                     sharing=sharing, num_groups=groups, inner_group_num=inner, max_positions=32)
    model = build_model(spec, seed=0)
    materialised = sum(p.numel() for p in model.parameters())
    report = count(spec)
    assert report.total_with_heads == materialised == unique_parameter_count(model)
    assert report.total == sum(p.numel() for p in Parts.of(model).encoder.parameters())
    with torch.device("meta"):
        assert unique_parameter_count(build_model(spec)) == materialised


def test_bert_count_equals_materialised_model():
    spec = PRESETS["lab-bert"].replace(vocab_size=101, max_positions=32, hidden_size=32, num_heads=2)
    model = build_model(spec)
    assert count(spec).total_with_heads == sum(p.numel() for p in model.parameters())


def test_applied_counts_each_use_of_a_shared_block():
    spec = ModelSpec(vocab_size=100, embedding_size=8, hidden_size=16, num_layers=6, num_heads=2, sharing="all")
    r = count(spec)
    by = r.by_component()
    assert by["attention"]["applied"] == 6 * by["attention"]["unique"]
    assert by["FFN"]["applied"] == 6 * by["FFN"]["unique"]
    unshared = count(spec.replace(sharing="none"))
    assert r.applied == unshared.applied  # same computation, fewer parameters


def test_paper_exact_numbers():
    assert count(PRESETS["albert-base"]).total == 11_683_584
    assert count(PRESETS["albert-large"]).total == 17_683_968
    assert count(PRESETS["albert-xlarge"]).total == 58_724_864
    assert count(PRESETS["albert-xxlarge"]).total == 222_595_584
    assert count(PRESETS["bert-base"]).total == 109_482_240
    base = count(PRESETS["albert-base"])
    assert base.total_with_heads - base.total == 130_226


def test_paper_tables_are_reproduced_to_their_rounding():
    for row in paper.table1() + paper.table3() + paper.table4():
        if not row["note"]:  # rows without a documented inconsistency round to the paper's number
            assert -0.5 <= row["difference (M)"] < 1.0, row
    table4 = {(r["E"], r["sharing"]): r["exact (M)"] for r in paper.table4()}
    assert table4[(768, "shared-attention")] == 83.7 and table4[(128, "shared-FFN")] == 37.7


def test_flops_hand_computed():
    # H=4, F=8, E=2, V=10, L=1, T=5: projection 2*2*4; attention 8*16 + 4*5*4; FFN 4*4*8.
    spec = ModelSpec(vocab_size=10, embedding_size=2, hidden_size=4, num_layers=1, num_heads=1, ffn_size=8)
    by = count(spec, seq_len=5).by_component()
    assert by["E->H projection"]["flops_per_token"] == 16
    assert by["attention"]["flops_per_token"] == 8 * 16 + 4 * 5 * 4
    assert by["FFN"]["flops_per_token"] == 4 * 4 * 8
    assert by["MLM head"]["flops_per_token"] == 2 * 4 * 2 + 2 * 2 * 10


def test_xxlarge_count_is_instant_and_allocates_nothing():
    """Counted, not built: under a megabyte allocated at its peak (its weights would be 0.9 GB), read from
    Python's allocator instead of a clock (a 50 ms bound a loaded machine could miss); torch, whose tensors
    Python's allocator does not see, is not even imported (test_import_hygiene)."""
    import tracemalloc

    tracemalloc.start()
    try:
        report = count(PRESETS["albert-xxlarge"])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20, f"{peak:,} bytes"
    assert report.applied > report.total


def test_human_counts_stay_readable_past_billions():
    from albert_lab.params import human

    assert [human(n) for n in (950, 12_345_678, 2.56e12, 1.3e21)] == ["950", "12.3M", "2.6T", "1.30e+21"]  # was 1300000001430.0B
