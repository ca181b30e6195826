"""Reading the benchmark result files users already have (``validate --bench``, ``calibrate --from-bench``).

One function, :func:`parse_bench`, turns a file's text into its measured runs (:class:`BenchRun`): the
workload it recovered (model, concurrency or rate, mean prompt and output tokens, TP, GPU, scheme — each
with where it came from) and what was measured (output tokens/s, TTFT, TPOT, E2E). The formats, their keys
read from each tool's source (docs/calibration.md §10 cites file and line):

- ``vllm bench serve --save-result`` (JSON; ``--append-result``: one object per line): ``output_throughput``,
  ``mean_ttft_ms``, ``mean_tpot_ms``, ``mean_itl_ms``, ``mean_e2el_ms`` (else the mean of ``latencies``),
  ``max_concurrency``, ``request_rate``; mean lengths ``total_input_tokens / completed`` and
  ``total_output_tokens / completed``; GPU, TP, scheme and release only from ``--metadata`` keys;
- ``vllm bench latency --output-json``: ``avg_latency`` of one static batch; the batch and lengths are
  not recorded (give them);
- ``vllm bench throughput --output-json``: ``tokens_per_second`` counts input and output tokens; the
  lengths are not recorded (give them);
- SGLang ``bench_serving`` (JSONL, one run per line): ``random_input_len`` / ``random_output_len`` /
  ``random_range_ratio``, ``max_concurrency``, ``server_info`` (``model_path``, ``tp_size``,
  ``quantization``, ``kv_cache_dtype``, ``version``), ``output_throughput``, ``mean_ttft_ms``,
  ``mean_tpot_ms``, ``mean_e2e_latency_ms``;
- genai-perf ``profile_export_genai_perf.json``: ``output_token_throughput.avg``, ``time_to_first_token``,
  ``inter_token_latency``, ``request_latency`` (ms), ``input_sequence_length`` / ``output_sequence_length``
  means, ``input_config`` (``model_names``, ``perf_analyzer.stimulus.concurrency``);
- GuideLLM ``benchmarks.json``: per benchmark ``config.strategy`` (``concurrent`` streams, ``synchronous``)
  and the successful requests' means of ``output_tokens_per_second``, ``prompt_token_count``,
  ``output_token_count``, ``time_to_first_token_ms``, ``time_per_output_token_ms``, ``request_latency`` (s).

A file that is not one of these, or lacks a key its format always writes, is one :class:`BenchFileError`
naming the file (and line) and the key. Pure: text in, values out.
"""

import json
import math
from typing import Annotated, Any

from pydantic import ValidationError, field_validator

from ..engines.flags import ENGINES
from ..errors import ConfigError
from ..inputs import LIMITS, MAX_NESTING, MAX_NUMBER_CHARS, finite, json_depth, shown
from ..results import Validated

FORMATS = ("vllm-serve", "vllm-latency", "vllm-throughput", "sglang-serving", "genai-perf", "guidellm")
WORKLOAD_KEYS = ("model", "engine", "engine_version", "gpu", "tp", "scheme", "kv_cache_dtype", "concurrency",
                 "prompt", "output")


MAX_MEASURE = 1e12  # no count (requests, tokens), rate (tokens/s) or time (ms) of one benchmark run is larger
MIN_RATE = 1e-6  # output tokens/s of a run that finished: at least one token in the ~11 days this allows
# A measured latency (TTFT, TPOT / ITL, E2E) is 0 (the tool recorded none) or at least a microsecond: no
# serving benchmark times a first token, a token or a request faster (a token is a forward pass of
# microseconds to milliseconds), and 1e-320 ms made every relative error an infinity.
MIN_LATENCY_MS = 0.001


def measured_rate(x: float) -> bool:
    """Whether ``x`` is an output rate a finished run can have measured (0 tokens/s measured nothing)."""
    return MIN_RATE <= x <= MAX_MEASURE


class BenchFileError(ConfigError):
    """A benchmark file that is not a supported format, or is cut short."""


class BenchRun(Validated):
    """One measured run of a benchmark file: the workload recovered from it and what it measured."""

    file: str
    index: int  # the run within the file (0-based; a JSONL line, a GuideLLM benchmark)
    format: str
    model: str | None = None
    engine: str | None = None
    engine_version: str | None = None
    gpu: str | None = None
    tp: Annotated[int | None, LIMITS["gpus"].interval()] = None
    scheme: str | None = None
    quantization: str | None = None  # the server's --quantization, when recorded
    kv_cache_dtype: str | None = None
    concurrency: Annotated[int | None, LIMITS["batch"].interval()] = None  # requests in flight at most (closed loop)
    request_rate: float | None = None  # requests/s offered (inf: as fast as the concurrency allows)
    prompt: Annotated[float | None, LIMITS["prompt"].interval()] = None  # mean prompt tokens per request
    output: Annotated[float | None, LIMITS["output"].interval()] = None  # mean output tokens per request (>= 1)
    mode: str = "continuous"  # continuous | sync (a static batch: vllm bench latency)
    requests: int | None = None
    output_tok_s: float
    ttft_s: float | None = None
    tpot_s: float | None = None  # time per output token after the first (vLLM's tpot; genai-perf's ITL)
    e2e_s: float | None = None
    recovered: dict[str, str] = {}  # field -> where its value came from
    notes: list[str] = []

    @field_validator("output_tok_s")
    @classmethod
    def _a_measured_rate(cls, v: float) -> float:  # NaN: the format records none (latency, throughput files)
        if math.isnan(v) or measured_rate(v):
            return v
        raise ValueError(f"output tokens/s must be {MIN_RATE:g} to {MAX_MEASURE:.0e} (a finished run produced "
                         f"tokens), got {shown(v)}")

    def missing(self) -> list[str]:
        """The workload fields a prediction needs that the file does not say."""
        need = ("model", "gpu", "concurrency", "prompt", "output")
        return [k for k in need if getattr(self, k) is None]


def _err(name: str, where: str, msg: str) -> BenchFileError:
    return BenchFileError(f"{name}{where}: {msg}", field="bench")


def _docs(name: str, text: str) -> list[tuple[str, Any]]:
    """The JSON documents of a file: one object, or one per line (JSONL); (where, document) each."""
    stripped = text.strip()
    if not stripped:
        raise _err(name, "", "the file is empty")
    try:
        return [("", _json(stripped))]
    except json.JSONDecodeError:
        pass
    except (ValueError, RecursionError) as exc:  # a number of 5,000 digits, 100,000 brackets: one line
        raise _err(name, "", _not_json(exc)) from None
    out = []
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append((f" line {i}", _json(line)))
        except json.JSONDecodeError as exc:
            raise _err(name, f" line {i}", f"not JSON ({exc.msg}); a benchmark result file is JSON or JSON Lines "
                       "(one run per line)") from None
        except (ValueError, RecursionError) as exc:
            raise _err(name, f" line {i}", _not_json(exc)) from None
    return out


def _json(text: str) -> Any:
    """json.loads (``Infinity`` kept: SGLang writes an unbounded request rate so; each number is read by
    :func:`_num` / :func:`_int`, finite or refused); nesting past :data:`~quantadvise.inputs.MAX_NESTING` is
    a RecursionError, as Python 3.11's parser raises near 1,000 levels (3.12+ parse far deeper)."""
    doc = json.loads(text)
    if json_depth(doc) > MAX_NESTING:
        raise RecursionError(f"nested more than {MAX_NESTING} levels deep")
    return doc


def _not_json(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return f"JSON nested too deeply (more than {MAX_NESTING} levels); not a benchmark result"
    return f"invalid JSON value: {str(exc).split(';')[0][:120]}"


def detect(doc: Any) -> str | None:
    """The format of one parsed document (None: none of :data:`FORMATS`)."""
    if not isinstance(doc, dict):
        return None
    if isinstance(doc.get("benchmarks"), list) and ("metadata" in doc or "config" in doc):
        return "guidellm"
    if isinstance(doc.get("output_token_throughput"), dict) and "input_config" in doc:
        return "genai-perf"
    if "server_info" in doc or "total_output_tokens_retokenized" in doc or "mean_e2e_latency_ms" in doc:
        return "sglang-serving"
    if "output_throughput" in doc and ("endpoint_type" in doc or "tokenizer_id" in doc or "mean_tpot_ms" in doc
                                       or "model_id" in doc):
        return "vllm-serve"
    if "avg_latency" in doc and "latencies" in doc:
        return "vllm-latency"
    if "tokens_per_second" in doc and "elapsed_time" in doc:
        return "vllm-throughput"
    return None


def _num(d: dict[str, Any], key: str, name: str, where: str, *, required: bool = True,
         latency: str | None = None) -> float | None:
    """``d[key]`` as a finite number in [0, :data:`MAX_MEASURE`]. A ``latency`` (its unit, ``ms`` or ``s``)
    above 0 must also be at least :data:`MIN_LATENCY_MS` (0 is a latency the tool did not record)."""
    v = d.get(key)
    if v is None:
        if required:
            raise _err(name, where, f"no '{key}' (every file of this format has it: the run is cut short or "
                       "not this tool's output)")
        return None
    x = _from_text(v)
    f = finite(x)  # the one input layer: 10**400 or "1e999" is no measurement
    if f is None:
        number = isinstance(x, int | float) and not isinstance(x, bool)
        raise _err(name, where, f"'{key}' is {shown(v)}, not a {'finite ' if number else ''}number")
    if not 0 <= f <= MAX_MEASURE:
        raise _err(name, where, f"'{key}' is {shown(v)}: a count, rate or time of a run is >= 0 and "
                   f"<= {MAX_MEASURE:.0e}")
    if latency is not None:
        _a_latency(f, latency, key, name, where)
    return f + 0.0  # -0.0 is 0


def _a_latency(x: float, unit: str, key: str, name: str, where: str) -> None:
    """Refuse a latency above 0 but under :data:`MIN_LATENCY_MS` (``x`` in ``unit``: ms or s)."""
    low = MIN_LATENCY_MS if unit == "ms" else MIN_LATENCY_MS * 1e-3
    if 0 < x < low:
        raise _err(name, where, f"'{key}' is {shown(x)} {unit}: a measured latency is 0 (not recorded) or at "
                   f"least {low:g} {unit}, a microsecond (no serving benchmark times a token faster)")


def _ms(x: float | None) -> float | None:
    """A latency in milliseconds as seconds; 0 or none: None (the tool recorded none)."""
    return (x or 0.0) * 1e-3 or None


def _rate(d: dict[str, Any], name: str, where: str) -> float | None:
    """``request_rate``: none, ``Infinity`` or ``"inf"`` is every request at once (vLLM and SGLang write
    both spellings); else a finite number."""
    rate = d.get("request_rate")
    if rate is None or (isinstance(rate, float) and rate == math.inf) or \
            (isinstance(rate, str) and rate.strip().lower() in ("inf", "infinity")):
        return math.inf
    return _num(d, "request_rate", name, where)


def _from_text(v: Any) -> Any:
    """A number written as text (``"12.5"``) as the number; anything else as it is (at most
    :data:`~quantadvise.inputs.MAX_NUMBER_CHARS` characters are converted)."""
    if isinstance(v, str) and len(v.strip()) <= MAX_NUMBER_CHARS:
        try:
            return float(v)
        except ValueError:
            return v
    return v


def _int(v: Any) -> int | None:
    f = finite(_from_text(v))
    return int(f) if f is not None and 0 < f <= MAX_MEASURE else None


def _meta_common(run: dict[str, Any], meta: dict[str, Any], src: str) -> None:
    """Fill the workload fields that ``--metadata`` / ``--tag`` pairs name."""
    for key, field in (("gpu", "gpu"), ("tp", "tp"), ("tensor_parallel_size", "tp"), ("scheme", "scheme"),
                       ("quantization", "quantization"), ("kv_cache_dtype", "kv_cache_dtype"), ("engine", "engine"),
                       ("engine_version", "engine_version"), ("vllm", "engine_version"), ("sglang", "engine_version"),
                       ("random_input_len", "prompt"), ("random_output_len", "output"),
                       ("max_concurrency", "concurrency"), ("model", "model")):
        v = meta.get(key)
        if v in (None, "") or run.get(field) is not None:
            continue
        if field in ("tp", "concurrency"):
            v = _int(v)
        elif field in ("prompt", "output"):
            v = float(v) if _int(v) is not None else None
        else:
            v = str(v)
        if v is None:
            continue
        run[field] = v
        run["recovered"][field] = f"{src} {key}"
        if key in ENGINES and run.get("engine") is None:
            run["engine"] = key
            run["recovered"]["engine"] = f"{src} {key}"


def _vllm_serve(d: dict[str, Any], name: str, where: str) -> dict[str, Any]:
    done = _num(d, "completed", name, where)
    if not done:
        raise _err(name, where, "'completed' is 0: no request finished, nothing was measured")
    run: dict[str, Any] = {"engine": "vllm", "recovered": {"engine": "the format (vllm bench serve)"}}
    run["model"] = d.get("model") or d.get("model_id")  # --metadata model=... names the model a local path holds
    run["recovered"]["model"] = "--metadata model" if d.get("model") else "model_id"
    run["output_tok_s"] = _num(d, "output_throughput", name, where)
    run["requests"] = int(done)
    conc = _int(d.get("max_concurrency"))
    if conc is not None:
        run["concurrency"], run["recovered"]["concurrency"] = conc, "max_concurrency"
    run["request_rate"] = _rate(d, name, where)
    meta = {k: v for k, v in d.items() if k in ("gpu", "tp", "tensor_parallel_size", "scheme", "quantization",
                                                 "kv_cache_dtype", "engine", "engine_version", *ENGINES,
                                                 "random_input_len", "random_output_len", "model")}
    _meta_common(run, meta, "--metadata")
    if run.get("prompt") is None:
        run["prompt"] = _num(d, "total_input_tokens", name, where) / done  # type: ignore[operator]
        run["recovered"]["prompt"] = "total_input_tokens / completed (the mean)"
    if run.get("output") is None:
        run["output"] = _num(d, "total_output_tokens", name, where) / done  # type: ignore[operator]
        run["recovered"]["output"] = "total_output_tokens / completed (the mean)"
    run["ttft_s"] = _ms(_num(d, "mean_ttft_ms", name, where, required=False, latency="ms"))
    run["tpot_s"] = _ms(_num(d, "mean_tpot_ms", name, where, required=False, latency="ms"))
    e2e = _num(d, "mean_e2el_ms", name, where, required=False, latency="ms")
    lat = d.get("latencies")
    if e2e is not None:
        run["e2e_s"] = e2e * 1e-3
    elif isinstance(lat, list) and lat and all(0 <= (finite(x) or -1) <= MAX_MEASURE for x in lat):  # not 10**400
        run["e2e_s"] = sum(float(x) for x in lat) / len(lat) + 0.0
        _a_latency(run["e2e_s"], "s", "latencies' mean", name, where)
    return run


def _sglang(d: dict[str, Any], name: str, where: str) -> dict[str, Any]:
    done = _num(d, "completed", name, where)
    if not done:
        raise _err(name, where, "'completed' is 0: no request finished, nothing was measured")
    run: dict[str, Any] = {"engine": "sglang", "recovered": {"engine": "the format (sglang bench_serving)"}}
    raw_info = d.get("server_info")
    info: dict[str, Any] = raw_info if isinstance(raw_info, dict) else {}
    run["model"] = info.get("model_path") or d.get("model_id")
    if run["model"]:
        run["recovered"]["model"] = "server_info.model_path"
    if _int(info.get("tp_size")):
        run["tp"], run["recovered"]["tp"] = _int(info.get("tp_size")), "server_info.tp_size"
    for key in ("quantization", "kv_cache_dtype", "version"):
        v = info.get(key)
        if v not in (None, "", "auto"):
            field = "engine_version" if key == "version" else key
            run[field], run["recovered"][field] = str(v), f"server_info.{key}"
    run["output_tok_s"] = _num(d, "output_throughput", name, where)
    run["requests"] = int(done)
    conc = _int(d.get("max_concurrency"))
    if conc is not None:
        run["concurrency"], run["recovered"]["concurrency"] = conc, "max_concurrency"
    run["request_rate"] = _rate(d, name, where)
    measured = _int(d.get("concurrency")) and finite(d.get("concurrency"))
    if measured:
        run["measured_concurrency"] = measured
    tag = d.get("tag")
    if isinstance(tag, str) and "=" in tag:
        pairs = dict(p.split("=", 1) for p in tag.split(",") if "=" in p)
        if pairs.get("model"):  # the model a local checkpoint path holds
            run["model"], run["recovered"]["model"] = pairs["model"], "--tag model"
        _meta_common(run, pairs, "--tag")
    run["prompt"] = _num(d, "total_input_tokens", name, where) / done  # type: ignore[operator]
    run["output"] = _num(d, "total_output_tokens", name, where) / done  # type: ignore[operator]
    run["recovered"]["prompt"] = "total_input_tokens / completed (the mean)"
    run["recovered"]["output"] = "total_output_tokens / completed (the mean)"
    ratio = finite(d.get("random_range_ratio"))  # a fraction in [0, 1] (10**400 is none)
    if d.get("dataset_name") == "random" and ratio is not None and 0.0 <= ratio < 1.0:
        run.setdefault("notes", []).append(
            f"--random-range-ratio {ratio:g}: SGLang draws lengths in [max(L x {ratio:g}, 1), L], so they vary; the "
            "means recovered from the totals are used")
    run["ttft_s"] = _ms(_num(d, "mean_ttft_ms", name, where, required=False, latency="ms"))
    run["tpot_s"] = _ms(_num(d, "mean_tpot_ms", name, where, required=False, latency="ms"))
    run["e2e_s"] = _ms(_num(d, "mean_e2e_latency_ms", name, where, required=False, latency="ms"))
    return run


def _vllm_latency(d: dict[str, Any], name: str, where: str) -> dict[str, Any]:
    avg = _num(d, "avg_latency", name, where, latency="s")
    if not avg:
        raise _err(name, where, "'avg_latency' is 0")
    return {"engine": "vllm", "model": d.get("model_id"), "mode": "sync", "e2e_s": avg, "output_tok_s": math.nan,
            "recovered": {"engine": "the format (vllm bench latency)", "model": "model_id"},
            "notes": ["vllm bench latency records neither the batch nor the lengths: give --concurrency (its "
                      "--batch-size), --prompt (--input-len) and --output (--output-len)"]}


def _vllm_throughput(d: dict[str, Any], name: str, where: str) -> dict[str, Any]:
    tps = _num(d, "tokens_per_second", name, where)
    n = _num(d, "num_requests", name, where)
    _num(d, "elapsed_time", name, where)
    return {"engine": "vllm", "model": d.get("model_id"), "requests": int(n or 0), "concurrency": int(n or 0),
            "request_rate": math.inf, "output_tok_s": math.nan, "total_tok_s": tps,
            "recovered": {"engine": "the format (vllm bench throughput)", "model": "model_id",
                          "concurrency": "num_requests (all submitted at once; the engine runs what it admits)"},
            "notes": ["vllm bench throughput's tokens_per_second counts input and output tokens; the output rate is "
                      "tokens_per_second x output / (prompt + output), with the lengths given (--prompt, --output)"]}


def _stat(d: dict[str, Any], key: str, name: str, where: str, *, required: bool = True,
          latency: str | None = None) -> float | None:
    v = d.get(key)
    if not isinstance(v, dict):
        if required:
            raise _err(name, where, f"no '{key}' statistics")
        return None
    return _num(v, "avg", name, f"{where} {key}", required=required, latency=latency)


def _genai_perf(d: dict[str, Any], name: str, where: str) -> dict[str, Any]:
    raw_cfg = d.get("input_config")
    cfg: dict[str, Any] = raw_cfg if isinstance(raw_cfg, dict) else {}
    names = cfg.get("model_names")
    models = names if isinstance(names, list) else []
    pa = cfg.get("perf_analyzer")
    stim = pa.get("stimulus") if isinstance(pa, dict) else None
    stim = stim if isinstance(stim, dict) else {}
    run: dict[str, Any] = {"model": models[0] if models else None,
                           "recovered": {"model": "input_config.model_names[0]"}}
    if _int(stim.get("concurrency")):
        run["concurrency"], run["recovered"]["concurrency"] = _int(stim["concurrency"]), \
            "input_config.perf_analyzer.stimulus.concurrency"
    if stim.get("request_rate") is not None:
        run["request_rate"] = _num(stim, "request_rate", name, f"{where} input_config.perf_analyzer.stimulus")
    run["output_tok_s"] = _stat(d, "output_token_throughput", name, where)
    run["prompt"] = _stat(d, "input_sequence_length", name, where, required=False)
    run["output"] = _stat(d, "output_sequence_length", name, where, required=False)
    for k, src in (("prompt", "input_sequence_length.avg"), ("output", "output_sequence_length.avg")):
        if run[k] is not None:
            run["recovered"][k] = src
    run["ttft_s"] = _ms(_stat(d, "time_to_first_token", name, where, required=False, latency="ms"))
    run["tpot_s"] = _ms(_stat(d, "inter_token_latency", name, where, required=False, latency="ms"))
    run["e2e_s"] = _ms(_stat(d, "request_latency", name, where, required=False, latency="ms"))
    return run


def _summary_mean(metrics: dict[str, Any], key: str, name: str, where: str, required: bool = False,
                  latency: str | None = None) -> float | None:
    m = metrics.get(key)
    ok = m.get("successful") if isinstance(m, dict) else None
    if not isinstance(ok, dict):
        if required:
            raise _err(name, where, f"no 'metrics.{key}.successful'")
        return None
    return _num(ok, "mean", name, f"{where} metrics.{key}.successful", required=required, latency=latency)


def _guidellm(doc: dict[str, Any], name: str) -> list[dict[str, Any]]:
    out = []
    for i, b in enumerate(doc["benchmarks"]):
        where = f" benchmarks[{i}]"
        if not isinstance(b, dict) or not isinstance(b.get("metrics"), dict):
            raise _err(name, where, "no 'metrics'")
        m = b["metrics"]
        strat = b["config"].get("strategy") if isinstance(b.get("config"), dict) else None
        strat = strat if isinstance(strat, dict) else {}  # a strategy that is not an object says nothing
        run: dict[str, Any] = {"recovered": {}}
        kind = strat.get("type_")
        if kind == "concurrent" and _int(strat.get("streams")):
            run["concurrency"], run["recovered"]["concurrency"] = _int(strat["streams"]), "config.strategy.streams"
        elif kind == "synchronous":
            run["concurrency"], run["recovered"]["concurrency"] = 1, "config.strategy (synchronous)"
        run["output_tok_s"] = _summary_mean(m, "output_tokens_per_second", name, where, required=True)
        run["prompt"] = _summary_mean(m, "prompt_token_count", name, where)
        run["output"] = _summary_mean(m, "output_token_count", name, where)
        for k, src in (("prompt", "metrics.prompt_token_count"), ("output", "metrics.output_token_count")):
            if run[k] is not None:
                run["recovered"][k] = src + ".successful.mean"
        run["ttft_s"] = _ms(_summary_mean(m, "time_to_first_token_ms", name, where, latency="ms"))
        run["tpot_s"] = _ms(_summary_mean(m, "time_per_output_token_ms", name, where, latency="ms"))
        run["e2e_s"] = _summary_mean(m, "request_latency", name, where, latency="s")
        out.append(run)
    if not out:
        raise _err(name, "", "'benchmarks' is empty: no benchmark finished")
    return out


def _open_loop(run: dict[str, Any]) -> None:
    """An open-loop run (a request rate, no concurrency cap): the requests in flight on average are the
    rate times the mean end-to-end latency (Little's law), or SGLang's own measured mean (``concurrency``)."""
    if run.get("concurrency") is not None:
        return
    measured = run.pop("measured_concurrency", None)
    if measured:
        run["concurrency"] = max(1, round(measured))
        run["recovered"]["concurrency"] = "concurrency (the mean requests in flight the run measured)"
        return
    rate, e2e = run.get("request_rate"), run.get("e2e_s")
    if rate and e2e and math.isfinite(rate):
        run["concurrency"] = max(1, round(rate * e2e))
        run["recovered"]["concurrency"] = "request_rate x mean E2E (Little's law: the mean requests in flight)"


def parse_bench(name: str, text: str) -> list[BenchRun]:
    """Every measured run of one benchmark result file (``name`` is how errors name it)."""
    runs: list[tuple[str, dict[str, Any]]] = []
    for where, doc in _docs(name, text):
        fmt = detect(doc)
        if fmt is None:
            raise _err(name, where, "not a benchmark result quantadvise reads (vllm bench serve/latency/throughput "
                       "JSON, SGLang bench_serving JSONL, genai-perf profile_export_genai_perf.json, GuideLLM "
                       "benchmarks.json)")
        try:
            if fmt == "guidellm":
                runs += [(fmt, r) for r in _guidellm(doc, name)]
                continue
            reader = {"vllm-serve": _vllm_serve, "sglang-serving": _sglang, "vllm-latency": _vllm_latency,
                      "vllm-throughput": _vllm_throughput, "genai-perf": _genai_perf}[fmt]
            runs.append((fmt, reader(doc, name, where)))
        # a key of the wrong shape, a number no float holds: one line (every format's reader, GuideLLM's too)
        except (TypeError, AttributeError, KeyError, IndexError, ValueError, OverflowError) as exc:
            raise _err(name, where, f"not the shape of a {fmt} result ({type(exc).__name__}: {str(exc)[:80]})") \
                from None
    out = []
    for i, (fmt, r) in enumerate(runs):
        _open_loop(r)
        total = r.pop("total_tok_s", None)
        notes = list(r.pop("notes", []))
        if total is not None:
            notes.append(f"tokens_per_second (input + output) {total:,.1f}")
        try:
            out.append(BenchRun(file=name, index=i, format=fmt, notes=notes, **{"output_tok_s": math.nan, **r}))
        except ValidationError as exc:  # a model name that is a mapping, a GPU that is a list
            err = exc.errors()[0]
            msg = str(err["msg"]).removeprefix("Value error, ")  # pydantic's prefix for a validator's own words
            raise _err(name, f" (run {i + 1})", f"'{'.'.join(map(str, err['loc']))}': {msg}") from None
    return out


def with_workload(run: BenchRun, given: dict[str, Any]) -> BenchRun:
    """``run`` with the workload fields its file does not record taken from ``given`` (the flags); a field
    the file records is kept. vLLM latency and throughput files get their output rate from the lengths."""
    upd: dict[str, Any] = {}
    rec = dict(run.recovered)
    for k in WORKLOAD_KEYS:
        if getattr(run, k) is None and given.get(k) is not None:
            upd[k] = given[k]
            rec[k] = f"--{k.replace('_', '-')}"
    new = run.model_copy(update={**upd, "recovered": rec})
    rate = None
    if new.format == "vllm-latency" and new.concurrency and new.output and new.e2e_s:
        rate = new.concurrency * new.output / new.e2e_s
    if new.format == "vllm-throughput" and new.prompt and new.output:
        total = next((float(n.split()[-1].replace(",", "")) for n in new.notes if n.startswith("tokens_per_second")),
                     None)
        if total is not None:
            rate = total * new.output / (new.prompt + new.output)
    if rate is not None and measured_rate(rate):  # else no rate: the run cannot be priced, and says so
        new = new.model_copy(update={"output_tok_s": rate})
    return new
