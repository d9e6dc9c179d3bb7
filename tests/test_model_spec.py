"""ModelSpec: the paper's defaults, the reference code's group mapping, validation, presets."""

import pytest

from albert_lab.errors import SpecError
from albert_lab.spec import PRESETS, ModelSpec


def test_defaults_follow_the_paper():
    spec = ModelSpec(hidden_size=1024, num_layers=24)
    assert (spec.num_heads, spec.ffn_size, spec.embedding_size) == (16, 4096, 128)
    assert spec.sharing == "all" and spec.num_groups == 1 and spec.dropout == 0.0
    assert ModelSpec(family="bert", hidden_size=512, sharing="none").embedding_size == 512
    assert ModelSpec(sharing="none", num_layers=6).num_groups == 6


def test_group_mapping_is_the_reference_codes():
    spec = ModelSpec(num_layers=12, num_groups=3)
    assert spec.group_of_layer == [int(i / 12 * 3) for i in range(12)] == [0] * 4 + [1] * 4 + [2] * 4


@pytest.mark.parametrize("changes, field, fragment", [
    (dict(hidden_size=100, num_heads=3), "num_heads", "divisible"),
    (dict(num_layers=12, num_groups=5), "num_groups", "allowed: [1, 2, 3, 4, 6, 12]"),
    (dict(sharing="some"), "sharing", "allowed: 'all', 'attention', 'ffn', 'none'"),
    (dict(objective="mlm"), "objective", "allowed: 'sop', 'nsp', 'none'"),
    (dict(num_layers=0), "num_layers", "positive integer"),
    (dict(hidden_size=-8), "hidden_size", "positive integer"),
    (dict(dropout=1.5), "dropout", "probability"),
    (dict(family="bert", hidden_size=64, embedding_size=32, sharing="none"), "embedding_size", "E must equal H"),
    (dict(family="bert", hidden_size=64, sharing="all"), "sharing", "allowed 'none'"),
    (dict(family="gpt"), "family", "allowed: 'albert', 'bert'"),
])
def test_validation_names_field_and_allowed_values(changes, field, fragment):
    with pytest.raises(SpecError) as err:
        ModelSpec(**changes)
    assert err.value.field == field
    assert str(err.value).startswith(f"{field}: ") and fragment in str(err.value)


def test_replace_recomputes_derived_defaults_but_keeps_explicit_ones():
    base = PRESETS["albert-base"]
    bigger = base.replace(hidden_size=1024)
    assert (bigger.num_heads, bigger.ffn_size) == (16, 4096)
    custom = ModelSpec(hidden_size=256, num_heads=2).replace(num_layers=3)
    assert custom.num_heads == 2
    assert base.replace(sharing="none").num_groups == 12


def test_round_trip_and_presets():
    for name, spec in PRESETS.items():
        assert ModelSpec.from_dict(spec.to_dict()) == spec, name
    with pytest.raises(SpecError, match="unknown preset 'albert-huge'; allowed: bert-base"):
        ModelSpec.from_name("albert-huge")
    with pytest.raises(SpecError, match="unknown field"):
        ModelSpec.from_dict({"hidden": 3})


def test_heads_derived_from_h_divide_it():
    """H // 64 = 63 for H = 4,092 made `params --hidden 4092` an error about 63 heads nobody asked for."""
    from albert_lab.spec import ModelSpec, derived_heads

    assert [derived_heads(h) for h in (768, 4096, 4092, 100, 240, 48, 32)] == [12, 64, 62, 1, 3, 1, 1]
    old = {h: max(1, h // 64) for h in range(16, 16385) if h % max(1, h // 64) == 0}  # every H that worked before
    assert all(derived_heads(h) == heads for h, heads in old.items())  # keeps its heads: a run's command stays its run
    assert ModelSpec(hidden_size=4092).num_heads == 62 and ModelSpec(hidden_size=4092, num_heads=31).num_heads == 31


def test_the_sharing_table_is_the_one_list_of_strategies():
    """spec.SHARING is the sharing rule's one home: its rows are the Literal's choices, and each
    rule's halves give what models tie, params count, convert averages and gradflow sums."""
    from typing import get_args

    from albert_lab.params import unique_blocks
    from albert_lab.spec import HALVES, SHARING, Sharing

    assert tuple(SHARING) == get_args(Sharing)
    assert [r.whole_block for r in SHARING.values()] == [True, False, False, False]
    assert [r.tied for r in SHARING.values()] == [False, True, True, False]
    spec = PRESETS["albert-base"]
    for name, rule in SHARING.items():  # attention and FFN blocks held: one per group where shared, else per layer
        groups = 2 if rule.shares else 12  # not shared: a group per layer
        held = unique_blocks(spec.replace(sharing=name, num_groups=groups))
        assert held == tuple(2 if half in rule.shares else 12 for half in HALVES), name
