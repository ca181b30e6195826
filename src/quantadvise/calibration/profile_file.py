"""A profile as a file: the YAML text ``calibrate`` writes (with a header saying what it is) and
the writing itself. The I/O layer (tests/test_layers.py ``IO_MODULES``); reading a profile file
is ``catalog.load_perf_profile``'s.
"""

from __future__ import annotations

import math
from pathlib import Path

import yaml

from ..perf.profiles import PROXY_SHARED, PerfProfile


def _yaml_float(v: float) -> str:
    """A float PyYAML (YAML 1.1) reads back as the same float: a dot, and a signed exponent when
    there is one (``1.5e+12``, ``4.7e-05``, ``0.82``)."""
    if not math.isfinite(v):
        return ".nan" if math.isnan(v) else (".inf" if v > 0 else "-.inf")
    r = repr(float(v))
    if "e" not in r and abs(v) >= 1e6:
        for n in range(1, 17):
            cand = f"{v:.{n}e}"
            if float(cand) == v:
                r = cand
                break
    if "e" in r:
        mant, ex = r.split("e")
        if "." not in mant:
            mant += ".0"
        sign = ex[0] if ex[0] in "+-" else "+"
        digits = ex.lstrip("+-").rjust(2, "0")
        r = f"{mant}e{sign}{digits}"
    return r


def profile_yaml(profile: PerfProfile) -> str:
    """The profile as a YAML document ``parse_profile(yaml.safe_load(text))`` reads back equal, with
    a header saying what it is (and, for the simulated backend, that it is not a measurement)."""
    class _Dumper(yaml.SafeDumper):
        pass

    _Dumper.add_representer(float, lambda d, v: d.represent_scalar("tag:yaml.org,2002:float", _yaml_float(v)))
    doc = {"schema_version": profile.schema_version,
           **profile.model_dump(mode="json", exclude_defaults=True, exclude={"schema_version"})}
    doc["gpus"] = [{"gpu": e.pop("gpu"), **({"source": e.pop("source")} if "source" in e else {}), **e}
                   for e in doc.get("gpus", [])]
    for e in doc["gpus"]:  # a stand-in curve: its source's name and what differs from it
        curves = e.get("kernels", {})
        for c in curves.values():
            src = curves.get(c.get("proxy_of")) if c.get("basis") == "proxy" else None
            if src is not None:
                for k in PROXY_SHARED:
                    if k in c and c[k] == src.get(k):
                        del c[k]
    body = yaml.dump(doc, Dumper=_Dumper, sort_keys=False, default_flow_style=None, width=110, allow_unicode=True)
    cals = [e.calibration for e in profile.gpus if e.calibration is not None]
    head = ["# quantadvise efficiency profile (validated by quantadvise.perf.profiles.PerfProfile; docs/calibration.md)."]
    for c in cals:
        p = c.provenance
        if p.simulated:
            head.append("# SIMULATED TIMINGS: written by `calibrate --backend simulated` from a synthetic GPU. NOT A "
                        "MEASUREMENT;")
            head.append("# for demos and tests only.")
        else:
            head.append(f"# Measured on '{p.gpu_name}' on {p.measured_on.isoformat()} (driver {p.driver_version}, CUDA "
                        f"{p.cuda_version}, torch {p.torch_version}) with {p.tool}.")
    head.append("# Use it with --profile FILE (roofline, recommend, check); check it with `quantadvise validate FILE`.")
    return "\n".join(head) + "\n" + body


def write_profile(profile: PerfProfile, path: Path) -> Path:
    """Write :func:`profile_yaml` to ``path`` (its folder created); OSError when it cannot."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(profile_yaml(profile), encoding="utf-8")
    return path
