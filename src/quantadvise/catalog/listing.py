"""What ``quantadvise list`` returns: the bundled models, GPUs, scheme presets, KV cache presets and
engine releases, each with its aliases and key figures. Typed results, built by ``api/listing.py``
from the catalog rows."""

from ..results import Out, Result

# The weight matrix a scheme's effective bits are quoted for: a 4096 x 4096 linear (Llama-3-8B's
# attention projections), so group scales and zero-points count as a real checkpoint stores them.
EFFECTIVE_BITS_SHAPE = (4096, 4096)


class ModelItem(Out):
    id: str
    aliases: list[str]
    family: str
    kind: str  # dense GQA, MoE MLA ...
    params: int  # the published count
    max_context: int | None  # the config's max_position_embeddings
    source: str


class GpuItem(Out):
    id: str
    aliases: list[str]
    name: str
    vendor: str
    memory_bytes: int
    bandwidth_bytes_per_s: float
    peak_flops_bf16: float | None
    peak_flops_fp8: float | None
    peak_flops_fp4: float | None
    compute_capability: str | None
    source: str


class SchemeItem(Out):
    id: str
    aliases: list[str]
    description: str
    weight_bits: int | None  # None: weights stay 16-bit
    effective_bits_per_weight: float | None  # with scales / zero-points, for EFFECTIVE_BITS_SHAPE
    activation_bits: int | None
    checkpoint_format: str | None


class KvItem(Out):
    id: str
    aliases: list[str]
    description: str
    bits: int
    vllm_kv_cache_dtype: str | None
    sglang_kv_cache_dtype: str | None


class EngineItem(Out):
    engine: str
    versions: list[str]  # oldest first
    newest: str


class ModelList(Result):
    kind: str = "models"
    models: list[ModelItem]


class GpuList(Result):
    kind: str = "gpus"
    gpus: list[GpuItem]


class SchemeList(Result):
    kind: str = "schemes"
    effective_bits_shape: list[int] = list(EFFECTIVE_BITS_SHAPE)
    schemes: list[SchemeItem]


class KvList(Result):
    kind: str = "kv"
    kv_presets: list[KvItem]


class EngineList(Result):
    kind: str = "engines"
    engines: list[EngineItem]


Listing = ModelList | GpuList | SchemeList | KvList | EngineList
KINDS = ("models", "gpus", "schemes", "kv", "engines")
