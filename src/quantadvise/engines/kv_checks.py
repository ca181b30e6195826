"""The KV cache checks of :func:`~quantadvise.engines.resolution.resolve`: ``--kv-cache-dtype`` against the
release's choices, platforms and capabilities, the e4m3 KV scales a checkpoint installs, and a
compressed-tensors ``kv_cache_scheme`` the engine loads, ignores or refuses; then the KV dtype ``auto``
becomes for this checkpoint."""

from datetime import date
from typing import TYPE_CHECKING, Any, Literal

from ..results import Strict
from .data import EngineData, Method

if TYPE_CHECKING:  # pragma: no cover - typing only
    from ..checkpoint.quant import CheckpointQuant
    from .findings import Collector


class KvIssue(Strict):
    """A known issue of one engine's quantized KV cache on a model family (data/known_issues.yaml): a published
    report or measurement the recommender follows beyond what the engine accepts."""

    id: str
    engine: str
    versions: tuple[str, ...] = ()  # empty: every release on file
    model_types: tuple[str, ...]
    kv: tuple[str, ...]  # KV presets
    effect: Literal["capacity-only", "info"]
    message: str
    issues: tuple[str, ...]
    source: str
    as_of: date

    def applies(self, engine: EngineData, model_type: str | None, kv: str) -> bool:
        return (engine.engine == self.engine and (not self.versions or engine.version in self.versions)
                and model_type in self.model_types and kv in self.kv)


def check_kv(ctx: "Collector", engine: EngineData, ck: "CheckpointQuant | None", method: Method | None, kv: str,
              capability: int | None, platform: str) -> str | None:
    row = engine.kv_dtype(kv)
    if row is None:
        ctx.add("kv_dtype_unknown", "error", f"--kv-cache-dtype {kv} is not one of {engine.label}'s "
                f"{len(engine.kv_cache_dtypes)} choices: {', '.join(k.id for k in engine.kv_cache_dtypes)}", subject=kv)
        return None
    if row.error:
        ctx.add(row.error, "error", f"--kv-cache-dtype {kv} is still a choice of {engine.label}, but it refuses it"
                + (f": {row.notes}" if row.notes else ""), subject=kv)
    if platform in row.not_on:
        ctx.add("kv_dtype_platform", "error", f"--kv-cache-dtype {kv} is not available on {platform} in "
                f"{engine.label}", subject=kv)
    if capability is not None and row.min_capability is not None and capability < row.min_capability:
        ctx.add("kv_dtype_capability", "error", f"--kv-cache-dtype {kv} needs compute capability {row.min_capability} "
                f"in {engine.label}; this GPU has {capability}", subject=kv)
    if capability is not None and row.capability_majors and capability // 10 not in row.capability_majors:
        ctx.add("kv_dtype_capability", "error", f"--kv-cache-dtype {kv} runs only on SM"
                + "/SM".join(f"{m}x" for m in row.capability_majors) + f" GPUs in {engine.label}; this GPU has "
                f"{capability}", subject=kv)
    # a KV-scale method on attention + fp8_e5m2
    if kv == "fp8_e5m2" and method is not None and ck is not None and engine.message("fp8_e5m2_with_fp8_checkpoint"):
        installs = method.kv_scales_on_attention == "always" or (
            method.kv_scales_on_attention == "with_kv_scheme" and ck.kv_cache_raw is not None)
        if installs and method.kv_scales_on_attention == "always":
            ctx.add("fp8_e5m2_with_fp8_checkpoint", "error", f"{engine.label} gives every attention layer of a "
                    f"'{method.id}' checkpoint its KV-scale method (for e4m3 scales), which it never combines with "
                    "fp8_e5m2: pass --kv-cache-dtype fp8 (e4m3) or auto", subject=kv)
        elif installs:
            ctx.add("fp8_e5m2_with_fp8_checkpoint", "error", f"'{method.id}' loads e4m3 KV scales from the "
                    "checkpoint, which fp8_e5m2 cannot use: pass --kv-cache-dtype fp8 (e4m3) or auto", subject=kv)
    # a compressed-tensors kv_cache_scheme the engine cannot use
    ct = engine.compressed_tensors
    kv_ok = True
    if ck is not None and ck.kv_cache_raw is not None and ck.kv_cache is not None and ct is not None and \
            ck.family in ("compressed-tensors", "modelopt") and (method is None or method.config_class ==
                                                                  "CompressedTensorsConfig"):
        kv_ok = check_kv_scheme(ctx, engine, ck)
    if kv != "auto":
        return kv
    if ck is None:
        return "auto"
    if ck.kv_cache_algo:
        key = "nvfp4" if "FP4" in ck.kv_cache_algo.upper() else "fp8"
        rule = next((a for a in engine.auto_kv if a.checkpoint_kv == key), None)
        if rule is not None:
            return rule.becomes
    if ck.kv_cache_raw is not None and kv_ok:
        rule = next((a for a in engine.auto_kv if a.checkpoint_kv == "kv_cache_scheme"), None)
        if rule is not None:
            return rule.becomes
    return "auto"


def check_kv_scheme(ctx: "Collector", engine: EngineData, ck: "CheckpointQuant") -> bool:
    ct = engine.compressed_tensors
    assert ct is not None and ck.kv_cache is not None
    rule = ct.kv_cache_scheme
    a = ck.kv_cache
    type_ok, bits_ok = a.type in rule.types, a.num_bits in rule.num_bits
    bad_tb = (not type_ok and not bits_ok) if rule.type_and_bits == "either_must_match" else not (type_ok and bits_ok)
    problems: list[tuple[str, str, dict[str, Any]]] = []
    if bad_tb:
        problems.append(("kv_cache_scheme_unsupported", f"type {a.type}, {a.num_bits} bits",
                         {"num_bits": a.num_bits, "type": a.type}))
    elif a.strategy not in rule.strategies:
        problems.append(("kv_cache_scheme_strategy", f"strategy {a.strategy}", {"strategy": a.strategy}))
    elif rule.symmetric and not a.symmetric:
        problems.append(("kv_cache_scheme_symmetric", "asymmetric", {"symmetric": a.symmetric}))
    elif rule.dynamic and bool(a.dynamic) not in rule.dynamic:
        problems.append(("kv_cache_scheme_dynamic", "dynamic scales", {}))
    if not problems:
        return True
    kind, what, values = problems[0]
    accepted = (f"type {'/'.join(rule.types)}, {'/'.join(map(str, rule.num_bits))} bits, strategy "
                f"{' or '.join(rule.strategies)}, symmetric")
    if rule.on_violation == "error":
        ctx.add(kind, "error", f"kv_cache_scheme ({what}) cannot be loaded by {engine.label}, which accepts only "
                f"{accepted}", subject="kv_cache_scheme", **values)
    else:
        ctx.add("kv_cache_scheme_ignored", "warning", f"kv_cache_scheme ({what}) is ignored by {engine.label} (it uses "
                f"only {accepted}); the KV cache runs unquantized unless --kv-cache-dtype says otherwise",
                subject="kv_cache_scheme")
    return False

