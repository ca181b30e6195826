"""Published accuracy priors (data/accuracy.yaml) and how they judge a candidate scheme.

The decision tree uses them last, as a veto: a rule can remove a candidate or attach a caution,
never pick one. Pure.
"""

from __future__ import annotations

from datetime import date
from typing import Literal

from pydantic import BaseModel, ConfigDict

from ..formats import get_format
from ..scheme import Scheme


class AccuracyRule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    id: str
    description: str
    tasks: tuple[str, ...] = ()
    weight_bits_below: int | None = None
    activation_bits_below: int | None = None
    kv_bits_below: int | None = None
    w8a8_int: bool | None = None
    weight_only_int4: bool | None = None
    lm_head_quantized: bool | None = None
    tolerance_below: float | None = None
    action: Literal["veto", "caution", "info"]
    expected_drop_pct: tuple[float, float] | None = None
    message: str
    source: str
    as_of: date

    def matches(self, scheme: Scheme, task: str, tolerance: float) -> bool:
        if self.tasks and task not in self.tasks:
            return False
        if self.tolerance_below is not None and not tolerance < self.tolerance_below:
            return False
        w, a, kv = scheme.weight, scheme.activation, scheme.kv_cache
        wq = w is not None and w.is_quantized
        aq = a is not None and a.is_quantized
        kq = kv is not None and kv.is_quantized
        checks: list[bool] = []
        if self.weight_bits_below is not None:
            checks.append(wq and w.bits < self.weight_bits_below)  # type: ignore[union-attr]
        if self.activation_bits_below is not None:
            checks.append(aq and a.bits < self.activation_bits_below)  # type: ignore[union-attr]
        if self.kv_bits_below is not None:
            checks.append(kq and kv.bits < self.kv_bits_below)  # type: ignore[union-attr]
        if self.w8a8_int is not None:
            is_w8a8_int = (
                wq and aq and w.bits == 8 and a.bits == 8  # type: ignore[union-attr]
                and get_format(w.format).is_integer and get_format(a.format).is_integer  # type: ignore[union-attr]
            )
            checks.append(is_w8a8_int == self.w8a8_int)
        if self.weight_only_int4 is not None:
            is_int4_wo = scheme.weight_only and w.bits == 4 and get_format(w.format).is_integer  # type: ignore[union-attr]
            checks.append(is_int4_wo == self.weight_only_int4)
        if self.lm_head_quantized is not None:
            checks.append(wq and scheme.policy.quantize_lm_head == self.lm_head_quantized)
        return bool(checks) and all(checks)


class Verdict(BaseModel):
    model_config = ConfigDict(frozen=True, defer_build=True)
    rule: str
    action: str
    message: str
    source: str
    expected_drop_pct: tuple[float, float] | None = None


def judge(rules: tuple[AccuracyRule, ...], scheme: Scheme, task: str, tolerance: float) -> list[Verdict]:
    """Every rule that matches, vetoes first."""
    out = [
        Verdict(rule=r.id, action=r.action, message=r.message, source=r.source, expected_drop_pct=r.expected_drop_pct)
        for r in rules
        if r.matches(scheme, task, tolerance)
    ]
    order = {"veto": 0, "caution": 1, "info": 2}
    return sorted(out, key=lambda v: order[v.action])
