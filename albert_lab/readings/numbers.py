"""Numbers as the readings write them, where Python's own formatting would mislead a reader."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal


def two(share: float) -> str:
    """A share to two decimals, a half rounded up as people round it: 19/40 = 0.475 -> '0.48' (f"{0.475:.2f}"
    gives '0.47': the float lies just below 0.475); the shortest decimal that reads back as the float is rounded."""
    return str(Decimal(repr(float(share))).quantize(Decimal("0.01"), ROUND_HALF_UP)) if share == share else "nan"
