"""Order statistics for noisy timings: medians, spreads (p10/p90, IQR) and tail percentiles."""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["percentile", "ratio_summary", "summary"]


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (q in [0, 100]) of a non-empty sample."""
    if not values:
        raise ValueError("percentile of an empty sample")
    ordered = sorted(values)
    if len(ordered) == 1:
        return float(ordered[0])
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = math.ceil(position)
    fraction = position - low
    return float(ordered[low] + (ordered[high] - ordered[low]) * fraction)


def summary(values: Sequence[float], *, digits: int = 3) -> dict[str, float | int | None]:
    """n, median, p10/p25/p75/p90/p95/p99, IQR, min, max of a sample (all None when it is empty)."""
    quantiles = (("median", 50), ("p10", 10), ("p25", 25), ("p75", 75), ("p90", 90), ("p95", 95), ("p99", 99))
    if not values:
        return {"n": 0, **{name: None for name, _ in quantiles}}
    out: dict[str, float | int | None] = {"n": len(values)}
    for name, q in quantiles:
        out[name] = round(percentile(values, q), digits)
    out["iqr"] = round(percentile(values, 75) - percentile(values, 25), digits)
    out["min"] = round(min(values), digits)
    out["max"] = round(max(values), digits)
    return out


def ratio_summary(
    numerators: Sequence[float], denominators: Sequence[float]
) -> dict[str, float | int | None]:
    """Per-pair ratios (pairs measured in the same round) summarised: median and p10/p90."""
    ratios = [n / d for n, d in zip(numerators, denominators, strict=True) if d > 0]
    stats = summary(ratios, digits=4)
    return {"n": stats["n"], "median": stats["median"], "p10": stats["p10"], "p90": stats["p90"]}
