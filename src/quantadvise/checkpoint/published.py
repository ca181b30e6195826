"""Published checkpoints: a quantized variant of a model that someone already put on the Hub (the
rows of ``data/checkpoints.yaml``, or the Hub's model tree with ``--hub``), what is known about it, and
the accuracy evidence its producer published.

:class:`Published` is the row as the rest of the package sees it (the catalog validates the data into
it); :func:`checkpoint_of` is the checkpoint an engine would read for it — the ``quantization_config``
snapshot when one was read whole, else the config a ``method`` export of its scheme carries (an
inference, and the verdict says so); :meth:`PublishedAccuracy.drop_pct` turns the producer's own
evaluation into an accuracy drop in points, the unit of ``--accuracy-tolerance``. Pure.
"""

from datetime import date
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from ..errors import ConfigError
from ..results import Out, by_identity

if TYPE_CHECKING:
    from ..model.arch import ModelArch
    from ..scheme.axes import DeployHints, Scheme
    from .quant import CheckpointQuant

ConfigStatus = Literal["full", "partial", "inferred", "not_read", "gguf"]


class _Row(Out):
    __light_config__ = {"extra": "forbid"}


class OtherRecovery(_Row):
    recovery_pct: float
    benchmark: str


class PublishedAccuracy(_Row):
    """The producer's own evaluation of the checkpoint, as its card publishes it."""

    recovery_pct: float | None = Field(default=None, gt=0, allow_inf_nan=False)  # stated by the card
    benchmark: str | None = None
    baseline_score: float | None = Field(default=None, ge=0, allow_inf_nan=False)  # the 16-bit model's average
    score: float | None = Field(default=None, ge=0, allow_inf_nan=False)  # this checkpoint's average
    bound_pct: float | None = Field(default=None, ge=0, allow_inf_nan=False)  # "within X% of the unquantized scores"
    caveat: str | None = None  # set: not to be used as evidence (a template copy ...)
    other: tuple[OtherRecovery, ...] = ()
    quote: str
    source: str

    @property
    def usable(self) -> bool:
        return self.caveat is None and self.drop_pct is not None

    @property
    def drop_pct(self) -> tuple[float, float] | None:
        """The accuracy drop in points this evaluation supports, as a closed range [low, high]:

        - both averages published: ``baseline - score`` exactly (0 when the checkpoint scores higher);
        - a recovery R% of an average S that is at most 100 points: the drop ``S x (1 - R/100)`` is at most
          ``100 - R`` points, and 0 when R >= 100, so the range is [0, max(0, 100 - R)];
        - "within X% of the unquantized scores" on every task: at most X points, [0, X];
        - else None (no figure to judge by)."""
        if self.baseline_score is not None and self.score is not None:
            d = round(max(0.0, self.baseline_score - self.score), 4)
            return (d, d)
        if self.recovery_pct is not None:
            return (0.0, round(max(0.0, 100.0 - self.recovery_pct), 4))
        if self.bound_pct is not None:
            return (0.0, self.bound_pct)
        return None

    def headline(self) -> str:
        """``99.7% recovery on OpenLLM v1`` / ``76.1 vs 78.9 on ...`` (the figure the card states)."""
        bench = f" on {self.benchmark}" if self.benchmark else ""
        if self.recovery_pct is not None:
            return f"{self.recovery_pct:g}% recovery{bench}"
        if self.baseline_score is not None and self.score is not None:
            return f"{self.score:g} vs {self.baseline_score:g} for the 16-bit model{bench}"
        if self.bound_pct is not None:
            return f"within {self.bound_pct:g}% of the 16-bit scores{bench}"
        return "published figures" + bench


class Popularity(_Row):
    downloads: int | None = Field(default=None, ge=0)
    likes: int | None = Field(default=None, ge=0)
    seen: str  # which listing showed them, and when (Hub listings do not date their counts)
    source: str


class Published(_Row):
    """One published quantized checkpoint of a model."""

    id: str
    model: str  # the bundled model it quantizes (or the model asked for, with --hub)
    base_model: str
    producer: str
    method: str | None  # the quant_method it declares (read or inferred); None: a 16-bit re-upload
    scheme: str | None  # the closest scheme preset (data/schemes.yaml)
    kv: str | None = None  # the KV preset when it carries KV cache scales
    scheme_note: str | None = None
    scheme_basis: str
    config_status: ConfigStatus
    config_note: str | None = None
    read_from: str | None = None  # the file the snapshot is from
    quantization_config: dict[str, Any] | None = None
    inferred_from: tuple[str, ...] = ()
    accuracy: PublishedAccuracy | None = None
    popularity: Popularity | None = None
    release_date: str | None = None
    notes: str | None = None
    source: str
    as_of: date

    @property
    def short_producer(self) -> str:
        return self.producer.split(" (")[0]


class Speculator(_Row):
    """A published speculative-decoding draft of a model (data/speculators.yaml): what the commands turn
    on when the workload prices speculative decoding."""

    id: str
    model: str
    base_model: str
    draft: str | None  # the draft's Hub id; None: the checkpoint's own MTP layers
    vllm_method: str
    sglang_algorithm: str
    notes: str = ""
    source: str
    as_of: date


# ModelOpt's quant_algo for the presets a ModelOpt export carries
_MODELOPT_ALGO = {"fp8-tensor": "FP8", "fp8-dynamic": "FP8_PER_CHANNEL_PER_TOKEN", "fp8-block": "FP8_PB_WO",
                  "nvfp4": "NVFP4", "nvfp4-a16": "W4A16_NVFP4", "mxfp8": "MXFP8"}


def assumed_config(p: Published, scheme: "Scheme | None", deploy: "DeployHints | None",
                   arch: "ModelArch | None" = None) -> dict[str, Any] | None:
    """The quantization_config a ``p.method`` export of ``p``'s scheme declares, for a checkpoint whose
    config was not read whole (an inference: the verdict says so). None when nothing can be assumed (no
    method, or a method whose config depends on what was not read)."""
    from ..scheme.axes import DeployHints as Hints
    from .write import quantization_config

    m = p.method
    if m is None or scheme is None and m not in ("gguf", "mlx", "bitsandbytes", "aqlm", "fp_quant",
                                                "compressed-tensors"):
        return None
    sparse = "2of4" in p.id.lower() or "2:4" in (p.scheme_note or "")
    if m == "compressed-tensors" and sparse:
        # a 2:4-sparse export (Sparse-Llama ...): llm-compressor writes this sparsity_config (the shape of
        # nm-testing/llama2.c-stories42M-pruned2.4-compressed's, tests/fixtures/checkpoints)
        written = quantization_config(scheme, (deploy or Hints()).model_copy(update={"checkpoint_format": m}), arch) \
            if scheme is not None else None
        cfg: dict[str, Any] = dict(written) if written else {"quant_method": m}
        cfg["sparsity_config"] = {"format": "sparse-24-bitmask", "sparsity_structure": "2:4", "targets": ["Linear"],
                                  "ignore": ["lm_head"]}
        return cfg
    if m in ("compressed-tensors", "awq", "gptq"):
        if scheme is None or not scheme.quantizes_weights:
            return None
        hints = (deploy or Hints()).model_copy(update={"checkpoint_format": m})
        return quantization_config(scheme, hints, arch)
    if m == "modelopt":
        algo = _MODELOPT_ALGO.get(p.scheme or "")
        return {"quant_method": "modelopt", "quant_algo": algo, "exclude_modules": ["lm_head"]} if algo else None
    if m == "fp8":
        if p.scheme == "fp8-block":
            return {"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [128, 128]}
        return {"quant_method": "fp8", "activation_scheme": "static" if p.scheme == "fp8-tensor" else "dynamic",
                **({"kv_cache_scheme": "static"} if p.kv else {})}
    if m == "mxfp4":
        return {"quant_method": "mxfp4"}
    if m == "bitsandbytes":
        return {"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4"}
    if m == "mlx":
        bits = 8 if "8bit" in p.id.lower() or "8-bit" in p.id.lower() else 4
        return {"bits": bits, "group_size": 64}
    if m == "quark" and p.scheme == "fp8-tensor":
        fp8: dict[str, Any] = {"dtype": "fp8_e4m3", "qscheme": "per_tensor", "is_dynamic": False}
        return {"quant_method": "quark", "global_quant_config": {"weight": fp8, "input_tensors": fp8}}
    return {"quant_method": m}  # gguf, aqlm, fp_quant ...: what the engines say about the name


@by_identity()  # the ranking and the deploy plan of every walk ask it of the same shipped row and scheme
def checkpoint_of(p: Published, scheme: "Scheme | None", deploy: "DeployHints | None",
                  arch: "ModelArch | None" = None) -> "tuple[CheckpointQuant | None, str]":
    """The checkpoint an engine reads for ``p``, and what it rests on: ``read`` (the snapshot, whole),
    ``assumed`` (the config a ``method`` export of the scheme declares), or ``none`` (nothing to judge)."""
    from .parse import parse_checkpoint, parse_quantization_config

    if p.quantization_config is not None and p.config_status == "full":
        try:
            where = p.read_from or "config.json"
            if where == "config.json":
                return parse_quantization_config(p.quantization_config), "read"
            if where == "hf_quant_config.json":
                return parse_quantization_config(None, hf_quant_config=p.quantization_config), "read"
            # a side file only the producer's loader reads: judged as if config.json carried the same
            # arguments (current exports write both; the row says which was read)
            side = parse_checkpoint({}, {where: p.quantization_config})
            if side is not None:
                raw = dict(p.quantization_config)
                raw.setdefault("quant_method", side.quant_method)
                return parse_quantization_config(raw), "read"
        except ConfigError:
            pass
    qc = assumed_config(p, scheme, deploy, arch)
    if qc is None:
        return None, "none"
    try:
        return parse_quantization_config(qc), "assumed"
    except ConfigError:
        return None, "none"
