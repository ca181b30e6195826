"""How an engine release's launcher reads a command line beyond its option list, read with ast.

Maintainer tool (never imported by ``quantadvise``); ``tools/extract_flags.py`` writes what it returns to
``data/flags/parser/<engine>-<version>.yaml`` (a sidecar of the release's option list, which the package's
``FlagVocabulary`` model does not read yet):

- **vLLM** (``FlexibleArgumentParser.parse_args``): the dotted JSON shorthand (``--x.key value`` /
  ``-cc.key=value`` become ``--x '{"key": value}'``): the line that detects it, the option prefix it tests
  (``-`` takes short aliases such as ``-cc`` too; ``--`` only long names), the ``+`` list suffix, and the
  options whose value is parsed as JSON (the only ones a dotted form can set: the config-dataclass and dict
  options; from ``flags_vllm``); what ``-O`` becomes (``--optimization-level`` from 0.13, the
  compilation-config key ``-O.level`` / ``-O.mode`` before); ``--config FILE`` (YAML, merged into argv);
  the environment variables ``vllm/envs.py`` declares (``environment_variables``).
- **SGLang**: ``--config FILE`` (where ``prepare_server_args`` merges it, and the file format), and the
  environment variables the package reads: the ``Envs`` class of ``sglang/srt/environ.py`` (0.5.x) and every
  literal ``SGLANG_*`` / ``SGL_*`` name passed to an env-reading call (``os.environ``, ``os.getenv``,
  ``get_bool_env_var`` ...), each with its first line.

What is not found is said (``None`` / a ``not_extracted`` line), never guessed.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from wheel_source import NotFound, Wheel

ENV_CALL = re.compile(r"""(?:get_bool_env_var|get_int_env_var|get_float_env_var|getenv|environ\.get|environ\[|"""
                      r"""environ\.setdefault|envs\.)\(?\s*["']((?:SGLANG|SGL)_[A-Z0-9_]+)["']""")
ENV_ATTR = re.compile(r"\benvs\.((?:SGLANG|SGL)_[A-Z0-9_]+)\b")


def _parse_args(w: Wheel) -> tuple[str, ast.FunctionDef]:
    from flags_vllm import SERVE

    path, cls = w.find_class(SERVE, "FlexibleArgumentParser")
    fn = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "parse_args"), None)
    if fn is None:
        raise NotFound(f"{path}: FlexibleArgumentParser.parse_args is gone")
    return path, fn


def _strs(node: ast.AST) -> list[str]:
    out = []
    for n in ast.walk(node):
        if isinstance(n, ast.Constant) and isinstance(n.value, str):
            out.append(n.value)
        elif isinstance(n, ast.JoinedStr):
            out.append("".join(v.value if isinstance(v, ast.Constant) else "{" + ast.unparse(v.value) + "}"
                               for v in n.values))
    return out


def vllm(w: Wheel, options: list[dict[str, Any]]) -> dict[str, Any]:
    notes: list[str] = []
    path, fn = _parse_args(w)
    out: dict[str, Any] = {}
    # dotted JSON: `if processed_arg.startswith("-") and "." in processed_arg:`
    dotted = None
    for n in ast.walk(fn):
        if isinstance(n, ast.If) and isinstance(n.test, ast.BoolOp):
            src = ast.unparse(n.test)
            m = re.search(r"""processed_arg\.startswith\(['"](-+)['"]\)""", src)
            if m and re.search(r"""['"]\.['"] in processed_arg""", src):
                plus = next((x.lineno for x in ast.walk(n) if isinstance(x, ast.Call)
                             and ast.unparse(x.func).endswith(".endswith") and _strs(x) == ["+"]), None)
                dotted = {"source": f"{path}:{n.lineno}", "prefix": m.group(1),
                          "list_suffix": f"{path}:{plus}" if plus else None}
                break
    out["dotted_json"] = dotted
    out["json_options"] = [o["names"] for o in options if o.get("json")] if dotted else []
    # -O: `elif arg.startswith("-O") and arg != "-O"...: processed_args.append(...)` / `+= [...]`
    o_rule = None
    for n in ast.walk(fn):
        if isinstance(n, ast.If) and re.search(r"""arg\.startswith\(['"]-O['"]\)""", ast.unparse(n.test)):
            made = [s for b in n.body for s in _strs(b) if s.startswith("-") and s not in ("-O",)]
            if made:
                o_rule = {"source": f"{path}:{n.lineno}", "becomes": made[0],
                          "dotted": "arg[2] != '.'" in ast.unparse(n.test).replace('"', "'")}
            break
    out["short_o"] = o_rule
    # --config FILE
    cfg = next((n.lineno for n in ast.walk(fn) if isinstance(n, ast.Compare) and _strs(n.left) == ["--config"]), None)
    fmt = None
    if cfg is not None:
        try:
            pull = w.method(path, "FlexibleArgumentParser", "_pull_args_from_config")[2]
            text = ast.unparse(pull)
            fmt = "yaml" if "yaml" in text or "yaml" in w.text(path) else None
        except NotFound:
            notes.append(f"{path}:{cfg}: --config handled, _pull_args_from_config not found: format not read")
    out["config_file"] = {"source": f"{path}:{cfg}", "format": fmt} if cfg else None
    # environment variables: vllm/envs.py environment_variables
    envs = "vllm/envs.py"
    try:
        node, ln, _end = w.assigned(envs, "environment_variables")
        names = {k.value: k.lineno for k in node.keys if isinstance(k, ast.Constant)} if isinstance(node, ast.Dict) \
            else {}
        out["env_vars"] = {"source": f"{envs}:{ln}", "names": names}
    except NotFound as exc:
        out["env_vars"] = None
        notes.append(f"env_vars: {exc}")
    out["not_extracted"] = notes
    return out


def sglang(w: Wheel, options: list[dict[str, Any]]) -> dict[str, Any]:
    notes: list[str] = []
    out: dict[str, Any] = {"dotted_json": None, "json_options": [], "short_o": None}
    sa = "sglang/srt/server_args.py"
    cfg = None
    for i, line in enumerate(w.lines(sa), 1):
        if re.search(r"""['"]--config['"] in (argv|args)""", line):
            cfg = i
            break
    fmt = None
    if cfg is not None:
        text = "\n".join(n for n in w.names if "config_parser" in n or "config_merger" in n)
        srcs = [w.text(n) for n in text.split("\n") if n] + [w.text(sa)]
        fmt = "yaml" if any("yaml" in s for s in srcs) else None
    out["config_file"] = {"source": f"{sa}:{cfg}", "format": fmt} if cfg else None
    names: dict[str, str] = {}
    env = "sglang/srt/environ.py"
    if w.exists(env):
        try:
            _, cls = w.find_class(env, "Envs")
            for it in cls.body:
                if isinstance(it, (ast.Assign, ast.AnnAssign)):
                    t = it.targets[0] if isinstance(it, ast.Assign) else it.target
                    if isinstance(t, ast.Name) and t.id.isupper():
                        names.setdefault(t.id, f"{env}:{it.lineno}")
        except NotFound as exc:
            notes.append(f"env_vars: {exc}")
    for n in sorted(w.names):
        if not (n.startswith("sglang/") and n.endswith(".py")):
            continue
        for i, line in enumerate(w.lines(n), 1):
            if "SGL" not in line:
                continue
            for m in ENV_CALL.finditer(line):
                names.setdefault(m.group(1), f"{n}:{i}")
            for m in ENV_ATTR.finditer(line):
                names.setdefault(m.group(1), f"{n}:{i}")
    out["env_vars"] = {"source": env if w.exists(env) else "literal names in env-reading calls",
                       "names": dict(sorted(names.items()))}
    out["not_extracted"] = notes + ["env_vars: names built at run time (f-strings, loops) are not listed"]
    return out


def extract(w: Wheel, engine: str, options: list[dict[str, Any]]) -> dict[str, Any]:
    return vllm(w, options) if engine == "vllm" else sglang(w, options)
