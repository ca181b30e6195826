"""How an engine release runs its serving loop on one GPU — pure.

The facts are rows of ``data/serving.yaml`` (:class:`LoopRelease`, one per release, each with the wheel's
file and line) and the start-up facts of ``data/engine_startup.yaml`` (the per-step token budget, the
running-request cap and the CUDA-graph ceiling, which the engines pick by GPU memory). :func:`loop_facts`
resolves them for one GPU and tensor-parallel degree into :class:`LoopFacts`, what the serving-loop model
(:mod:`quantadvise.perf.loop`) reads:

- vLLM (V1 scheduler): chunked prefill on, prefill chunks and decode tokens share one budget of
  ``max_num_batched_tokens`` per step (8192 on an 80-141 GB GPU, 16384 at >= 160 GiB); async
  scheduling; CUDA graphs captured for decode batches 1, 2, 4, 8..248 step 8, 256.. step 16 up to
  ``min(2 x max_num_seqs, 512)`` (1024 on SM100); preemption recomputes.
- SGLang: a prefill batch of up to ``chunked_prefill_size`` tokens is its own forward pass (no mixed
  chunks); the overlap scheduler; decode graphs 1, 2, 4, 8, 12, 16..256 step 8, 272..496 step 16,
  512.. step 32 up to ``cuda_graph_max_bs`` (256 below 160 GB at TP < 4, else 512); retraction recomputes.
"""

import bisect
from datetime import date
from typing import Literal

from ..results import Strict, record
from .startup import StartupFacts, vllm_batch_tier

MiB = 1024**2


class LoopRelease(Strict):
    """One release's serving-loop facts (a row of ``data/serving.yaml``)."""

    id: str
    engine: Literal["vllm", "sglang"]
    version: str
    source: str
    as_of: date
    mixed_prefill: bool  # prefill chunks share a step with decode (vLLM) or run as their own pass (SGLang)
    overlap: bool  # async scheduling / the overlap scheduler: host work of step n+1 overlaps step n
    preemption: Literal["recompute"]
    policy: str
    graph_ranges: tuple[tuple[int, int | None, int], ...]  # [first, last (None: up to the max), step]
    graph_captures_budget: bool = False  # vLLM: max_num_batched_tokens and max_num_seqs captured when below the max
    graph_max_seqs_factor: int = 0  # vLLM: the largest size is min(max_num_seqs x this, cap)
    graph_max_cap: int = 0
    graph_max_cap_sm100: int = 0
    lines: dict[str, str]

    def cite(self, fact: str) -> str:
        return f"{self.engine} {self.version} {self.lines.get(fact, 'source on file').split(' (')[0]}"


class LoopTable(Strict):
    schema_version: Literal[1]
    releases: tuple[LoopRelease, ...]


@record(slots=True)
class LoopFacts:
    """One engine release's serving loop on one GPU and tensor-parallel degree."""

    engine: str
    version: str
    graph_sizes: tuple[int, ...]  # decode batches with a captured CUDA graph, ascending
    token_budget: int  # tokens one forward pass may carry (vLLM max_num_batched_tokens, SGLang chunked_prefill_size)
    max_seqs: int  # running requests the scheduler admits at most (vLLM max_num_seqs; SGLang: its pool decides)
    mixed_prefill: bool
    overlap: bool
    preemption: str
    cites: tuple[str, ...]  # "<what>: <engine> <version> <file:line>"
    carried_from: str | None = None  # the release on file whose loop facts stand in for ``version``

    @property
    def graph_max(self) -> int:
        return self.graph_sizes[-1] if self.graph_sizes else 0

    def padded(self, batch: int) -> int:
        """The captured size a decode batch of ``batch`` sequences runs at (itself past the largest)."""
        i = bisect.bisect_left(self.graph_sizes, batch)
        return self.graph_sizes[i] if i < len(self.graph_sizes) else batch

    def eager(self, batch: int) -> bool:
        """True when ``batch`` is past the largest captured size (the step runs without a full graph)."""
        return batch > self.graph_max

    def label(self) -> str:
        """``vLLM 0.33.0: 8,192 tokens per step (prefill chunks mixed into decode), CUDA graphs up to 512, async``."""
        name = "vLLM" if self.engine == "vllm" else "SGLang"
        mix = "prefill chunks mixed into decode" if self.mixed_prefill else "prefill as its own pass"
        carried = f" (loop facts of {self.carried_from}, the nearest release on file)" if self.carried_from else ""
        return (f"{name} {self.version}{carried}: {self.token_budget:,} tokens per step ({mix}), CUDA graphs up to "
                f"batch {self.graph_max:,}" + (", overlapped scheduling" if self.overlap else ""))


def graph_sizes(ranges: tuple[tuple[int, int | None, int], ...], top: int, extra: tuple[int, ...] = ()) -> tuple[int, ...]:
    """The capture sizes ``ranges`` give up to ``top`` (and ``top`` itself, and each of ``extra`` below it)."""
    out: set[int] = set()
    for first, last, step in ranges:
        end = top if last is None else min(last, top)
        out.update(range(first, end + 1, step))
    out.add(top)
    out.update(x for x in extra if 0 < x <= top)
    return tuple(sorted(x for x in out if x > 0))


def loop_facts(release: LoopRelease, startup: StartupFacts, *, gpu_memory_bytes: int, gpu_names: tuple[str, ...],
               capability: int | None, tp: int, version: str | None = None) -> LoopFacts:
    """``release``'s serving loop on a GPU of ``gpu_memory_bytes`` at tensor-parallel degree ``tp``, every
    default as the release fills it in when no flag sets it. ``version``: the release asked for when
    ``release`` is the nearest on file standing in for it (the facts then say so)."""
    cites = [f"mixed prefill: {release.cite('mixed_prefill')}", f"overlap: {release.cite('overlap')}",
             f"CUDA-graph sizes: {release.cite('graph_ranges')}", f"preemption: {release.cite('preemption')}"]
    if release.engine == "vllm":
        tier = vllm_batch_tier(startup, gpu_memory_bytes, gpu_names, capability)
        budget = tier.max_num_batched_tokens if tier is not None else 2048
        seqs = tier.max_num_seqs if tier is not None else 128
        seqs = min(seqs, budget)
        cap = release.graph_max_cap_sm100 if capability is not None and capability // 10 == 10 else release.graph_max_cap
        top = min(seqs * release.graph_max_seqs_factor, cap, budget)
        extra = (budget, seqs) if release.graph_captures_budget else ()
        cites.append(f"max_num_batched_tokens / max_num_seqs: {startup.cite('batch_defaults')}")
        cites.append(f"largest CUDA graph: {release.cite('graph_max')}")
    else:
        mib = gpu_memory_bytes / MiB
        st = next(t for t in startup.fraction_tiers if t.below_memory_mib is None or mib < t.below_memory_mib)
        budget = st.chunked_prefill_size
        top = st.cuda_graph_max_bs_tp4 if tp >= 4 else st.cuda_graph_max_bs
        seqs = startup.max_running_requests_max or 4096
        extra = ()
        cites.append(f"chunked_prefill_size / cuda_graph_max_bs: {startup.cite('fraction_tiers')}")
    sizes = graph_sizes(release.graph_ranges, top, extra)
    carried = release.version if version is not None and version != release.version else None
    if carried:
        cites.append(f"serving-loop facts carried from {release.engine} {carried}: {version} has no row in data/serving.yaml")
    return LoopFacts(engine=release.engine, version=version or release.version, graph_sizes=sizes,
                     token_budget=budget, max_seqs=seqs, mixed_prefill=release.mixed_prefill, overlap=release.overlap,
                     preemption=release.preemption, cites=tuple(cites), carried_from=carried)


def pick_loop_release(table: LoopTable, engine: str, version: str) -> LoopRelease:
    """The release's row, else the closest older one on file (else the oldest): the loop facts were read
    from the wheels of the releases in data/serving.yaml; an engine release on file without a row of its
    own (data/engines holds every release people pin) runs with the nearest row's facts, and
    :func:`loop_facts` says so."""
    from .versions import nearest_version

    rows = {r.version: r for r in table.releases if r.engine == engine}
    if not rows:
        from ..errors import DataError

        raise DataError(f"data/serving.yaml has no {engine} release")
    return rows[nearest_version(rows, version)]
