"""Which tensors a checkpoint quantizes, and the bytes it stores on disk.

A checkpoint's config groups name their layers three ways — exact module names, ``re:`` regexes
and module class names (compressed-tensors), glob patterns (ModelOpt, Quark, gpt-oss), substrings
(transformers' ``modules_to_not_convert``) — or not at all (AWQ, GPTQ, fp8 and bitsandbytes
quantize every decoder linear layer). This module expands the model inventory into the Hugging Face
module names the patterns are written against (``model.layers.3.self_attn.q_proj``,
``model.layers.3.block_sparse_moe.experts.7.w1`` ...), decides for every one which group (if any)
quantizes it, and sizes the checkpoint with :func:`quantadvise.memory.sizing.linear_bytes` and the
checkpoint's on-disk layout (packed int32 words are not parameters: a 4-bit pack-quantized layer
stores N*K/8 int32 words for N*K parameters).

Pure: no I/O.
"""

import fnmatch
import re
import time
from collections.abc import Callable
from dataclasses import field
from functools import lru_cache

from ..errors import ConfigError
from ..memory.sizing import BASELINE_BYTES_PER_PARAM, ComponentSize, linear_bytes
from ..model.arch import COMPONENTS, ModelArch, ParamGroup
from ..model.inventory import inventory_of
from ..results import Out, record
from ..scheme.axes import Scheme
from ..scheme.layout import Layout
from .quant import CheckpointQuant, QuantGroup


@record(slots=True)
class Module:
    """One weight tensor of the checkpoint: its module path, class name and inventory group, and
    ``aliases``: other spellings a config may use for the same module (Nemotron-H's safetensors say
    ``backbone.layers.<i>`` where transformers and vLLM say ``model.layers.<i>``)."""

    name: str
    cls: str
    group: ParamGroup
    layer: int | None
    aliases: tuple[str, ...] = ()


# -------------------------------------------------------------------------------------------------
# Module names, per transformers modeling file
# -------------------------------------------------------------------------------------------------

_MIXTRAL_EXPERT = {"gate": "w1", "up": "w3", "down": "w2"}


def _hybrid_leaf(g: ParamGroup) -> tuple[str, str]:
    """(module path under model.layers.<i>, class name) in a hybrid stack (Nemotron-H): each block
    holds one ``mixer`` — Mamba-2 (in_proj, out_proj), attention (q/k/v/o_proj), a squared-ReLU MLP
    (up/down_proj) or an MoE (gate, experts.<e>.up/down_proj, shared_experts.up/down_proj)."""
    comp, role = g.component, g.role
    if comp == "mamba":
        return f"mixer.{role}", "Linear"
    if comp == "router":
        return "mixer.gate", "NemotronHTopkRouter"  # not an nn.Linear: the engines leave it unquantized
    if comp == "experts":
        return f"mixer.experts.{{e}}.{role}_proj", "Linear"
    if comp == "shared_experts":
        return f"mixer.shared_experts.{role}_proj", "Linear"
    if comp in ("attention", "mlp"):
        return f"mixer.{role}_proj", "Linear"
    return f"mixer.{role}", "Linear"


def _leaf(arch: ModelArch, g: ParamGroup) -> tuple[str, str]:
    """(module path under model.layers.<i>, class name) for a linear group."""
    if arch.block_kinds:
        return _hybrid_leaf(g)
    mt = arch.model_type
    comp, role = g.component, g.role
    if comp in ("attention", "mla"):
        return f"self_attn.{role}_proj" if role in ("q", "k", "v", "o", "qkv", "q_a", "q_b", "kv_b") else (
            "self_attn.kv_a_proj_with_mqa" if role == "kv_a" else f"self_attn.{role}"), "Linear"
    if comp == "mlp":
        return f"mlp.{role}_proj", "Linear"
    if comp == "router":
        if role == "router" and g.shape[0] == 1:
            return "mlp.shared_expert_gate", "Linear"
        if mt == "mixtral":
            return "block_sparse_moe.gate", "Linear"
        if mt == "gpt_oss":
            return "mlp.router", "GptOssTopKRouter"
        if mt.startswith("deepseek"):
            return "mlp.gate", "MoEGate"
        return "mlp.gate", "Linear"
    if comp == "shared_experts":
        base = "mlp.shared_expert" if mt.startswith("qwen") else "mlp.shared_experts"
        return f"{base}.{role}_proj", "Linear"
    if comp == "experts":
        if mt == "mixtral":
            return f"block_sparse_moe.experts.{{e}}.{_MIXTRAL_EXPERT.get(role, role)}", "Linear"
        if mt == "gpt_oss":
            return f"mlp.experts.{role}_proj", "GptOssExperts"
        return f"mlp.experts.{{e}}.{role}_proj", "Linear"
    return f"{comp}.{role}", "Linear"


MAX_MODULES = 500_000  # linear tensors placed one by one (DeepSeek-V3: 45,872; Kimi K2: about 70,000)


@lru_cache(maxsize=8)
def modules(arch: ModelArch, include_mtp: bool = True) -> tuple[Module, ...]:
    """Every linear weight of the checkpoint as a module path (experts one by one), each on the layers
    :meth:`ModelArch.component_layers` gives its component — the layer pattern the inventory counts,
    so the modules hold exactly the inventory's linear parameters. Cached: a DeepSeek-V3 has 45,872
    of them, and one ``check`` places the same model once per deployment and candidate."""
    out: list[Module] = []
    mtp_layers = [arch.num_layers + j for j in range(arch.num_mtp_layers)]
    groups = [g for g in inventory_of(arch).serving_groups(include_mtp) if g.linear]
    total = sum(g.count for g in groups)
    if total > MAX_MODULES:  # counted before one is built: a config of two billion experts is no checkpoint
        raise ConfigError(f"config.json: the model has {total:,} linear tensors (layers x experts); quantadvise "
                          f"places at most {MAX_MODULES:,} one by one (the largest published models have under "
                          "100,000)", field="num_experts")
    for g in groups:
        if g.component == "embedding":
            if g.mtp:
                names = [f"model.layers.{i}.embed_tokens" for i in mtp_layers]
            else:
                names = ["model.embeddings" if arch.block_kinds else "model.embed_tokens"]
            out.extend(Module(n, "Embedding", g, None) for n in names)
            continue
        if g.component == "lm_head":
            names = [f"model.layers.{i}.shared_head.head" for i in mtp_layers] if g.mtp else ["lm_head"]
            out.extend(Module(n, "Linear", g, None) for n in names)
            continue
        if g.role == "eh_proj":
            out.extend(Module(f"model.layers.{i}.eh_proj", "Linear", g, i) for i in mtp_layers)
            continue
        leaf, cls = _leaf(arch, g)
        layers = mtp_layers if g.mtp else list(arch.component_layers(g.component))
        if not layers:  # pragma: no cover - the inventory counts a component only on layers that hold it
            layers = list(range(arch.num_layers))
        # g.count tensors over these layers: an equal share each (any remainder on the first layers,
        # so the total never drifts from the inventory's)
        share, extra = divmod(g.count, len(layers))
        for j, i in enumerate(layers):
            n = share + (j < extra)
            if "{e}" in leaf:
                out.extend(Module(f"model.layers.{i}.{leaf.format(e=e)}", cls, g, i) for e in range(n))
            else:
                out.extend(Module(f"model.layers.{i}.{leaf}", cls, g, i) for _ in range(n))
    if arch.block_kinds:
        # a hybrid's safetensors name its decoder "backbone" (transformers and vLLM load it as "model"):
        # configs written against either spelling match
        out = [Module(m.name, m.cls, m.group, m.layer, ("backbone." + m.name.removeprefix("model."),))
               if m.name.startswith("model.") else m for m in out]
    return tuple(out)


# -------------------------------------------------------------------------------------------------
# Pattern matching
# -------------------------------------------------------------------------------------------------


MAX_PATTERNS = 1_000  # regular expressions in one target or ignore list
MAX_PATTERN_CHARS = 1_000  # characters of one of them
MAX_REPEATS = 6  # repetitions (*, +, {m,n}) in one of them (a real one has two or three)
MAX_ASSIGN_SECONDS = 2.0  # of CPU, matching a checkpoint's patterns against its tensors


def _unsafe(body: str, compiled: re.Pattern[str]) -> str | None:
    """Why a layer pattern from a checkpoint could take exponential time to match (a repeated group
    that itself repeats or branches: ``(.*.*)*x``, ``(a|a)*b``), or is too long; None when it is safe.
    Python's regular expressions backtrack, and a config.json is hostile input."""
    if len(body) > MAX_PATTERN_CHARS:
        return f"is longer than {MAX_PATTERN_CHARS:,} characters"
    from re import _constants as sre_c  # type: ignore[attr-defined]
    from re import _parser as sre_parse  # type: ignore[attr-defined]

    repeats = (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, getattr(sre_c, "POSSESSIVE_REPEAT", sre_c.MAX_REPEAT))

    count = [0]  # repeats in the whole pattern: .*.*.*.*.*.*.*x backtracks as n**k without nesting

    def nested(items: object, inside: bool) -> bool:
        for op, av in items:  # type: ignore[attr-defined]
            if op in repeats:
                lo, hi, sub = av
                many = hi == sre_c.MAXREPEAT or hi > 1
                count[0] += many
                if inside and many:
                    return True
                if nested(sub, inside or many):
                    return True
            elif op == sre_c.BRANCH:
                if inside and len(av[1]) > 1:
                    return True
                if any(nested(b, inside) for b in av[1]):
                    return True
            elif op == sre_c.SUBPATTERN:
                if nested(av[-1], inside):
                    return True
            elif op in (sre_c.ASSERT, sre_c.ASSERT_NOT):
                if nested(av[1], inside):
                    return True
        return False

    try:
        parsed = sre_parse.parse(body, compiled.flags)
    except Exception:  # noqa: BLE001 - a pattern re compiled but its parser's internals refuse: not judged
        return None
    if nested(parsed, False):
        return "repeats a group that repeats or branches itself (its match time can grow exponentially with a " \
            "name's length)"
    return f"has more than {MAX_REPEATS} repetitions (its match time grows as a name's length to that power)" \
        if count[0] > MAX_REPEATS else None


class Matcher:
    """Compiled name patterns in one of the dialects checkpoints use."""

    def __init__(self, patterns: tuple[str, ...], style: str):
        self.style = style
        self.exact: set[str] = set()
        self.classes: set[str] = set()
        regexes: list[str] = []
        self.subs: list[str] = []
        for p in patterns:
            body = p[3:] if p.startswith("re:") else p if style == "regex" else None
            if body is not None:
                try:
                    compiled = re.compile(body)
                except (re.error, RecursionError, OverflowError):
                    self.exact.add(p)
                    continue
                why = _unsafe(body, compiled)
                if why is not None:
                    raise ConfigError(f"quantization_config: the layer pattern {p[:60]!r}{'...' if len(p) > 60 else ''}"
                                      f" {why}; quantadvise does not run it", field="ignore")
                regexes.append(f"(?:{body})")
                if len(regexes) > MAX_PATTERNS:
                    raise ConfigError(f"quantization_config: more than {MAX_PATTERNS:,} regular-expression layer "
                                      "patterns in one list (a checkpoint has a few)", field="ignore")
            elif any(c in p for c in "*?["):
                # a glob covers the module it names and everything under it
                g = fnmatch.translate(p).removesuffix(r"\Z").removeprefix("(?s:").removesuffix(")")
                regexes.append(f"(?:{g})(?:\\..*)?\\Z")
            elif style == "substring":
                self.subs.append(p)
            else:
                self.exact.add(p)
                if p[:1].isupper() and "." not in p:
                    self.classes.add(p)
        self.regex = re.compile("|".join(regexes), re.S) if regexes else None

    def __bool__(self) -> bool:
        return bool(self.exact or self.regex or self.subs or self.classes)

    def by_name(self, m: Module) -> bool:
        return any(self._name_matches(name) for name in (m.name, *m.aliases))

    def _name_matches(self, name: str) -> bool:
        exact = self.exact
        if exact:
            # the module itself, a parent (a name covers the modules under it), or a suffix without
            # the leading "model." (vLLM and compressed-tensors accept lm_head, mlp.gate ...): the name cut
            # at each dot, both ways (slices, not joins: a DeepSeek-V3 places 45,872 names)
            if name in exact:
                return True
            dot = name.find(".")
            while dot != -1:
                if name[:dot] in exact or name[dot + 1:] in exact:
                    return True
                dot = name.find(".", dot + 1)
        if self.regex is not None and self.regex.match(name):
            return True
        return any(s in name for s in self.subs)

    def by_class(self, m: Module) -> bool:
        if m.cls in self.classes:
            return True
        # "Linear" targets every linear layer; fused MoE expert modules count as Linear in the engines
        return "Linear" in self.classes and m.cls in ("GptOssExperts",)

    def matches(self, m: Module) -> bool:
        return self.by_name(m) or self.by_class(m)


def _in_scope(group: QuantGroup, m: Module, ck: CheckpointQuant) -> bool:
    comp = m.group.component
    if group.scope == "experts":
        return comp == "experts"
    if group.scope == "unknown":
        return False
    if comp == "embedding":
        return False
    if comp == "lm_head":
        return bool(ck.quantize_lm_head)
    if comp == "router":
        return group.scope == "all_linears" and m.cls == "Linear"
    return group.scope in ("decoder_linears", "all_linears")


class Assignment(Out):
    """One config group's share of the model."""

    group: str
    modules: int
    params: int
    bytes: int
    components: list[str]
    example: str | None = None


class DiskSize(Out):
    """Predicted bytes of the checkpoint's tensors (what a safetensors index calls total_size)."""

    total_bytes: int
    baseline_bytes: int
    total_params: int
    quantized_params: int
    compression_ratio: float
    components: list[ComponentSize]
    groups: list[Assignment]
    unquantized_linear: list[str]  # example module names left 16-bit
    unquantized_linear_modules: int
    stored_dtype: str
    includes_mtp: bool
    lm_head_stored_separately: bool
    notes: list[str] = []


MAX_GROUPS = 1_000  # config groups one checkpoint may have (each is matched against every tensor)


def assign(arch: ModelArch, ck: CheckpointQuant, include_mtp: bool = True) -> tuple[tuple[Module, QuantGroup | None], ...]:
    """For every linear module, the config group that quantizes it (None: left unquantized)."""
    ignore, matchers = _matchers(ck)
    tick = _deadline()
    return tuple((m, _choose(m, ck, ignore, matchers)) for k, m in enumerate(modules(arch, include_mtp)) if tick(k))


def _matchers(ck: CheckpointQuant) -> tuple[Matcher, list[tuple[QuantGroup, Matcher]]]:
    if len(ck.groups) > MAX_GROUPS:
        raise ConfigError(f"quantization_config: {len(ck.groups):,} config groups (a checkpoint has a few; "
                          f"quantadvise places at most {MAX_GROUPS:,})", field="config_groups")
    return (Matcher(ck.ignore, ck.ignore_style),
            [(g, Matcher(g.targets, "ct" if ck.ignore_style != "regex" else "regex")) for g in ck.groups])


def _deadline() -> Callable[[int], bool]:
    """A tick for the k-th module matched: True, or a ConfigError once the matching has taken more than
    :data:`MAX_ASSIGN_SECONDS` of CPU (layer patterns built to backtrack)."""
    deadline = time.process_time() + MAX_ASSIGN_SECONDS

    def tick(k: int) -> bool:
        if k % 256 == 0 and time.process_time() > deadline:
            raise ConfigError(f"quantization_config: matching its layer patterns against the model's tensors took more "
                              f"than {MAX_ASSIGN_SECONDS:g} s of CPU (patterns built to backtrack?)", field="ignore")
        return True

    return tick


def _choose(m: Module, ck: CheckpointQuant, ignore: Matcher,
            matchers: list[tuple[QuantGroup, Matcher]]) -> QuantGroup | None:
    """The config group that quantizes ``m`` (None: left unquantized)."""
    chosen: QuantGroup | None = None
    if not (ignore and ignore.by_name(m)):
        # vLLM's find_matched_target: names and regexes first, then class names
        for g, mt in matchers:
            if g.scope == "patterns" and mt.by_name(m):
                chosen = g
                break
        if chosen is None:
            for g, mt in matchers:
                if g.scope == "patterns" and mt.by_class(m):
                    chosen = g
                    break
        if chosen is None:
            for g, _ in matchers:
                if g.scope != "patterns" and _in_scope(g, m, ck):
                    chosen = g
                    break
    if chosen is not None and not chosen.quantizes_weights:
        chosen = None
    return chosen


@record(slots=True)
class Placed:
    """:func:`assign` counted: ``pairs`` holds (the first module, its config group, how many modules) per
    inventory group and config group (every module of an inventory group has its shape and component),
    in the order the pairs first appear; ``unquantized`` the first six decoder linear modules left
    16-bit, in module order, of ``unquantized_modules``."""

    pairs: tuple[tuple[Module, QuantGroup | None, int], ...]
    unquantized: tuple[str, ...]
    unquantized_modules: int


_PLACED: dict[tuple[ModelArch, str, bool], Placed] = {}
_PLACED_KEEP = 8


def place(arch: ModelArch, ck: CheckpointQuant | None, include_mtp: bool = True) -> Placed:
    """Which config group quantizes each linear module, counted (:class:`Placed`). Cached by value: one
    ``check`` or ``recommend`` places a model several times (a DeepSeek-V3 has 45,872 modules)."""
    key = (arch, ck.model_dump_json() if ck is not None else "", include_mtp)
    hit = _PLACED.get(key)
    if hit is None:
        if len(_PLACED) >= _PLACED_KEEP:
            _PLACED.pop(next(iter(_PLACED)))
        hit = _PLACED[key] = _place(arch, ck, include_mtp)
    return hit


def _place(arch: ModelArch, ck: CheckpointQuant | None, include_mtp: bool) -> Placed:
    mods = modules(arch, include_mtp)
    runs: dict[tuple[int, int], list] = {}
    if ck is not None and (ck.ignore or any(g.scope == "patterns" for g in ck.groups)):
        ignore, matchers = _matchers(ck)
        tick = _deadline()
        chosen = [_choose(m, ck, ignore, matchers) for k, m in enumerate(mods) if tick(k)]
    else:
        # no name is matched: the choice follows from the module's inventory group and class alone
        decided: dict[tuple[int, str], QuantGroup | None] = {}
        if ck is not None:
            ignore, matchers = _matchers(ck)
        chosen = []
        for m in mods:
            key = (id(m.group), m.cls)
            if key not in decided:
                decided[key] = _choose(m, ck, ignore, matchers) if ck is not None else None
            chosen.append(decided[key])
    for m, g in zip(mods, chosen, strict=True):
        r = runs.get((id(m.group), id(g)))
        if r is None:
            runs[(id(m.group), id(g))] = [m, g, 1]
        else:
            r[2] += 1
    unq = {k for k, (m, g, _) in runs.items()
           if (g is None or m.group.n * m.group.k == 0) and m.group.component not in ("embedding", "lm_head")
           and not m.group.mtp}
    names: list[str] = []
    if unq:
        for m, g in zip(mods, chosen, strict=True):
            if (id(m.group), id(g)) in unq:
                names.append(m.name)
                if len(names) == 6:
                    break
    return Placed(pairs=tuple((m, g, n) for m, g, n in runs.values()), unquantized=tuple(names),
                  unquantized_modules=sum(runs[k][2] for k in unq))


@record(slots=True, frozen=False)
class _Tally:
    """Running totals of one component (or of one config group)."""

    params: int = 0
    bytes: int = 0
    quantized_params: int = 0
    modules: int = 0
    components: set[str] = field(default_factory=set)
    example: str | None = None


def disk_size(arch: ModelArch, ck: CheckpointQuant | None, layouts: dict[str, Layout], *,
              stored_dtype: str = "bf16", include_mtp: bool = True,
              tied_lm_head_stored: bool = False) -> DiskSize:
    """Bytes of every tensor the checkpoint stores: quantized linears in their layout (packed words,
    scales, zero-points, g_idx), everything else in the 16-bit ``stored_dtype``."""
    from ..scheme.formats import get_format

    unq_bytes = get_format(stored_dtype).bits // 8
    placed_modules = place(arch, ck, include_mtp)
    comp: dict[str, _Tally] = {}
    per_group: dict[str, _Tally] = {}
    q_params = 0
    schemes: dict[str, Scheme] = {}
    linear_groups: dict[int, ParamGroup] = {}
    for m, g, count in placed_modules.pairs:
        linear_groups[id(m.group)] = m.group
        params = m.group.n * m.group.k
        name = "mtp" if m.group.mtp else m.group.component
        c = comp.setdefault(name, _Tally())
        if g is None or params == 0:
            b = params * unq_bytes
        else:
            s = schemes.get(g.name)
            if s is None:
                s = schemes[g.name] = g.scheme(layouts.get(g.layout) if g.layout else None)
            b = linear_bytes(s, m.group.n, m.group.k)
            c.quantized_params += params * count
            q_params += params * count
            pg = per_group.setdefault(g.name, _Tally(example=m.name))
            pg.modules += count
            pg.params += params * count
            pg.bytes += b * count
            pg.components.add(name)
        c.params += params * count
        c.bytes += b * count
    # everything that is not a linear weight: norms, biases, sinks, routers' bias ... in 16-bit
    # compared by value: the (cached) modules may hold an equal arch's group objects
    placed = set(linear_groups.values())
    for pgroup in inventory_of(arch).serving_groups(include_mtp):
        if pgroup.linear and pgroup in placed:
            continue
        c = comp.setdefault("mtp" if pgroup.mtp else pgroup.component, _Tally())
        c.params += pgroup.params
        c.bytes += pgroup.params * unq_bytes
    notes: list[str] = []
    lm_stored = False
    if tied_lm_head_stored and arch.tie_word_embeddings:
        emb = arch.vocab_size * arch.hidden_size
        c = comp.setdefault("lm_head", _Tally())
        c.params += emb
        c.bytes += emb * unq_bytes
        lm_stored = True
        notes.append("embedding and lm_head are tied, but this producer (AutoGPTQ) writes lm_head.weight as a "
                     "second copy")
    components = [
        ComponentSize(component=name, params=v.params, bytes=v.bytes,
                      bits_per_param=v.bytes * 8 / v.params if v.params else 0.0,
                      baseline_bytes=v.params * BASELINE_BYTES_PER_PARAM, quantized=v.quantized_params > 0,
                      tensor_groups=0)  # not counted for a checkpoint (the key is kept for the JSON)
        for name in COMPONENTS if (v := comp.get(name))
    ]
    total = sum(c.bytes for c in components)
    params = sum(c.params for c in components)
    if arch.num_mtp_layers and include_mtp:
        notes.append("includes the multi-token-prediction module stored in the checkpoint")
    groups = [Assignment(group=k, modules=v.modules, params=v.params, bytes=v.bytes,
                         components=sorted(v.components, key=COMPONENTS.index), example=v.example)
              for k, v in per_group.items()]
    return DiskSize(
        total_bytes=total, baseline_bytes=params * BASELINE_BYTES_PER_PARAM, total_params=params,
        quantized_params=q_params, compression_ratio=(params * BASELINE_BYTES_PER_PARAM) / total if total else 1.0,
        components=components, groups=groups, unquantized_linear=list(placed_modules.unquantized),
        unquantized_linear_modules=placed_modules.unquantized_modules,
        stored_dtype=stored_dtype, includes_mtp=bool(arch.num_mtp_layers and include_mtp),
        lm_head_stored_separately=lm_stored, notes=notes,
    )
