"""Published accuracy priors (data/accuracy.yaml) and how they judge a candidate scheme.

Every rule has one shape: *which* schemes it describes (the weight / activation / KV-cache formats,
lm_head, the model's size, the workload's task and prompt length) and *what the sources measured*:
the expected accuracy drop as a closed range ``[low, high]`` in %-points. What a rule does with a
workload follows from that range and the workload's tolerance, the same way for every format
(boundaries inclusive):

- ``veto``    — tolerance <= low: even the best published case uses up the whole tolerance;
- ``caution`` — low < tolerance <= high: the published range reaches the tolerance;
- ``info``    — high < tolerance: within the tolerance on every published figure.

The decision tree uses them as a filter before ranking (a rule can remove a candidate or attach a
caution, never pick one) and the expected drop as evidence when two candidates tie on speed. Pure.
"""

from datetime import date
from typing import Literal

from pydantic import model_validator

from ..results import Out
from ..scheme.axes import Scheme, TensorQuant
from ..scheme.formats import get_format

Action = Literal["veto", "caution", "info"]


class _Row(Out):
    """A row of data/accuracy.yaml: unknown keys refused (a light class: ``results/light.py``)."""

    __light_config__ = {"extra": "forbid"}


class TensorMatch(_Row):
    """Which quantized tensors a rule describes (every field set must hold; bit bounds inclusive)."""

    bits_min: int | None = None
    bits_max: int | None = None
    type: Literal["int", "float"] | None = None
    scale: str | None = None  # the format of the first-level scale (e8m0: OCP MX; fp8_e4m3: NVFP4)

    def matches(self, t: TensorQuant | None) -> bool:
        if t is None or not t.is_quantized:
            return False
        fmt = get_format(t.format)
        if self.bits_min is not None and t.bits < self.bits_min:
            return False
        if self.bits_max is not None and t.bits > self.bits_max:
            return False
        if self.type == "int" and not fmt.is_integer:
            return False
        if self.type == "float" and not fmt.is_float:
            return False
        if self.scale is not None and (t.scale is None or t.scale.format != self.scale):
            return False
        return True


class AccuracyRule(_Row):
    """One published finding about a family of schemes (a row of data/accuracy.yaml)."""

    id: str
    description: str
    tasks: tuple[str, ...] = ()  # workload tasks it applies to (empty: every task)
    weights: TensorMatch | None = None  # None: any weights (quantized or not)
    activations: TensorMatch | Literal["none"] | None = None  # "none": weight-only (16-bit activations)
    kv_cache: TensorMatch | None = None
    lm_head_quantized: bool | None = None
    params_min: int | None = None  # the model's total parameters, inclusive bounds
    params_max: int | None = None
    prompt_min: int | None = None  # prompt tokens per sequence at least this (long-context findings)
    replaces: tuple[str, ...] = ()  # general rules this task- or size-specific finding refines
    expected_drop_pct: tuple[float, float]
    message: str
    evidence: str  # the published figures the range is read from
    source: str
    as_of: date

    @model_validator(mode="after")
    def _shape(self) -> "AccuracyRule":
        lo, hi = self.expected_drop_pct
        if not 0 <= lo <= hi:
            raise ValueError(f"expected_drop_pct must be [low, high] with 0 <= low <= high, got [{lo}, {hi}]")
        if self.weights is None and self.activations is None and self.kv_cache is None \
                and self.lm_head_quantized is None:
            raise ValueError("a rule must describe the weights, activations, KV cache or lm_head it applies to")
        return self

    def matches(self, scheme: Scheme, task: str, *, params: int | None = None, prompt_tokens: int | None = None) -> bool:
        if self.tasks and task not in self.tasks:
            return False
        if self.params_min is not None and (params is None or params < self.params_min):
            return False
        if self.params_max is not None and (params is None or params > self.params_max):
            return False
        if self.prompt_min is not None and (prompt_tokens is None or prompt_tokens < self.prompt_min):
            return False
        if self.weights is not None and not self.weights.matches(scheme.weight):
            return False
        a = scheme.activation
        if self.activations == "none":
            if a is not None and a.is_quantized:
                return False
            if not scheme.quantizes_weights:
                return False
        elif self.activations is not None and not self.activations.matches(a):
            return False
        if self.kv_cache is not None and not self.kv_cache.matches(scheme.kv_cache):
            return False
        if self.lm_head_quantized is not None and \
                not (scheme.quantizes_weights and scheme.policy.quantize_lm_head == self.lm_head_quantized):
            return False
        return True

    def action(self, tolerance: float) -> Action:
        """What this finding means at ``tolerance`` %-points (inclusive boundaries)."""
        return action_of(self.expected_drop_pct, tolerance)

    @property
    def general(self) -> bool:
        """A finding about the scheme on general benchmarks (no task, no prompt length): what a
        checkpoint's own published evaluation replaces."""
        return not self.tasks and self.prompt_min is None


def action_of(expected_drop_pct: tuple[float, float], tolerance: float) -> Action:
    """The one rule for a published drop range [low, high] at ``tolerance`` %-points, boundaries inclusive:
    veto when even the best case uses the tolerance up (tolerance <= low); caution when the range reaches
    it, including a range that straddles it (low < tolerance <= high); info when it stays below it."""
    lo, hi = expected_drop_pct
    if tolerance <= lo:
        return "veto"
    if tolerance <= hi:
        return "caution"
    return "info"


class Verdict(Out):
    rule: str
    action: Action
    message: str
    source: str
    expected_drop_pct: tuple[float, float] | None = None


_ORDER = {"veto": 0, "caution": 1, "info": 2}


def judge(rules: tuple[AccuracyRule, ...], scheme: Scheme, task: str, tolerance: float, *,
          params: int | None = None, prompt_tokens: int | None = None) -> list[Verdict]:
    """Every rule that describes ``scheme`` for this workload, vetoes first. Findings are combined
    pessimistically (each one judges on its own range), except that a task- or size-specific
    finding replaces the general ones it names in ``replaces``."""
    matched = [r for r in rules if r.matches(scheme, task, params=params, prompt_tokens=prompt_tokens)]
    replaced = {rid for r in matched for rid in r.replaces}
    out = [
        Verdict(rule=r.id, action=r.action(tolerance), message=r.message, source=r.source,
                expected_drop_pct=r.expected_drop_pct)
        for r in matched if r.id not in replaced
    ]
    return sorted(out, key=lambda v: _ORDER[v.action])


def expected_drop(verdicts: list[Verdict]) -> tuple[float, float]:
    """The most pessimistic published range among the findings (0, 0 when none applies): the
    accuracy evidence ties are broken with."""
    ranges = [v.expected_drop_pct for v in verdicts if v.expected_drop_pct is not None]
    if not ranges:
        return (0.0, 0.0)
    return (max(r[0] for r in ranges), max(r[1] for r in ranges))
