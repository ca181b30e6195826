"""What tools/extract_engine.py reads from each engine's wheel, and where.

One function per engine (:func:`vllm`, :func:`sglang`) takes the :class:`~wheel_source.Wheel` and
the base version file and returns :class:`Facts`: the rows whose membership the wheel decides, the
values it gives (each with its line), the anchors that re-cite hand-written rows, and what a human
must look at. When a release moves a fact somewhere this spec does not look, the extraction says so
(``NotFound`` becomes a review item) instead of guessing.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from wheel_source import Fact, NotFound, Wheel, call_message, dict_items, literal, message_text

Key = tuple[str, str, str]


@dataclass
class Facts:
    commit: tuple[str | None, str | None] = (None, None)
    files: set[str] = field(default_factory=set)
    members: dict[str, list[Fact]] = field(default_factory=dict)
    member_what: dict[str, str] = field(default_factory=dict)
    values: dict[Key, tuple[Any, Fact, str]] = field(default_factory=dict)
    anchors: list[tuple[str, str, Fact, str]] = field(default_factory=list)
    hand: list[str] = field(default_factory=list)
    review: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    drops: list[tuple[str, str, str]] = field(default_factory=list)  # (section, id, why): not in this release
    # the code hand-written facts paraphrase: (label, file, class or None, function or assigned name);
    # --base-wheel compares each with the base release's and flags the ones that changed
    hand_defs: list[tuple[str, str, str | None, str]] = field(default_factory=list)
    skeletons: dict[str, Callable[[str], dict[str, Any]]] = field(default_factory=dict)
    # rows whose order the engine's code decides (an if/elif chain: the first match wins), by id
    orders: dict[str, list[str]] = field(default_factory=dict)
    # facts this release has that the spec could not read (written to the file's notes: never guessed)
    not_extracted: list[str] = field(default_factory=list)
    # rows the wheel's code defines that the base file may not have: (section, the row) added when missing
    new_rows: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def skeleton(self, section: str, rid: str) -> dict[str, Any]:
        return self.skeletons[section](rid)

    def set(self, section: str, rid: str, key: str, value: Any, f: Fact, what: str) -> None:
        self.values[(section, rid, key)] = (value, f, what)
        self.files.add(f.file)

    def anchor(self, section: str, rid: str, f: Fact, what: str) -> None:
        self.anchors.append((section, rid, f, what))
        self.files.add(f.file)

    def member(self, section: str, items: list[Fact], what: str) -> None:
        self.members[section] = items
        self.member_what[section] = what
        self.files.update(f.file for f in items)

    def attempt(self, what: str, fn: Callable[[], Any], dropped: bool = False) -> Any:
        """Run one extraction; a fact not where the spec looks becomes a review item (``dropped``: the
        rows it backs are dropped from the file, not kept)."""
        try:
            return fn()
        except NotFound as exc:
            self.review.append(f"{what}: not extracted ({exc}); " + (
                "the rows it backs are dropped" if dropped else "the hand-written value was kept"))
            return None


def _commit(w: Wheel, rel: str) -> tuple[str | None, str | None]:
    try:
        v, _, _ = w.assigned(rel, "commit_id")
    except NotFound:
        try:
            v, _, _ = w.assigned(rel, "__commit_id__")
        except NotFound:
            return None, f"{rel} carries no commit id"
    val = literal(v)
    if not isinstance(val, str) or not val:
        return None, f"wheel's _version.py carries commit_id {val!r}"
    return val.removeprefix("g"), f"short hash from {rel} commit_id '{val}'"


def _one(values: list[Fact], base_value: Any, what: str, facts: Facts) -> Fact | None:
    """The single literal a method returns; with several (platform branches), the one the base file
    holds (the CUDA value, hand-picked once) or a review item."""
    distinct = {repr(f.value) for f in values}
    if len(distinct) == 1:
        return values[0]
    for f in values:
        if f.value == base_value or (isinstance(f.value, list) and f.value == list(base_value or [])):
            facts.hand.append(f"{what}: {len(distinct)} return values {sorted(distinct)}; kept the base file's "
                              f"{base_value!r} ({f.cite()})")
            return f
    if values:
        facts.review.append(f"{what}: returns {sorted(distinct)} and none is the base file's {base_value!r}")
    return None


def _class_facts(w: Wheel, facts: Facts, mid: str, mod: str, cls: str, base_row: dict[str, Any] | None,
                 filenames: bool = True) -> None:
    b = base_row or {}
    label = f"methods[{mid}]"
    f = facts.attempt(f"{label} {cls}.get_min_capability", lambda: w.returns(mod, cls, "get_min_capability"))
    one = _one(f or [], b.get("min_capability"), f"{label} {cls}.get_min_capability", facts)
    if one is not None:
        facts.set("methods", mid, "min_capability", one.value, one, f"{cls}.get_min_capability")
    f = facts.attempt(f"{label} {cls}.get_supported_act_dtypes",
                      lambda: w.returns(mod, cls, "get_supported_act_dtypes"))
    one = _one(f or [], b.get("supported_act_dtypes"), f"{label} {cls}.get_supported_act_dtypes", facts)
    if one is not None:
        facts.set("methods", mid, "supported_act_dtypes", list(one.value), one, "get_supported_act_dtypes")
    f = facts.attempt(f"{label} {cls}.get_name", lambda: w.returns(mod, cls, "get_name"))
    one = _one(f or [], b.get("canonical") or mid, f"{label} {cls}.get_name", facts)
    if one is not None:
        facts.set("methods", mid, "canonical", one.value if one.value != mid else None, one, "get_name")
    if filenames:
        f = facts.attempt(f"{label} {cls}.get_config_filenames", lambda: w.returns(mod, cls, "get_config_filenames"))
        one = _one(f or [], b.get("config_filenames") or [], f"{label} {cls}.get_config_filenames", facts)
        if one is not None:
            facts.set("methods", mid, "config_filenames", list(one.value), one, "get_config_filenames")


def _messages(w: Wheel, facts: Facts, base: dict[str, Any], table: dict[str, tuple[Any, ...]],
              moved: dict[str, tuple[str, ...]] | None = None) -> None:
    """Each message's text from the call that prints it; hand text kept where the engine passes
    several exception arguments (``parts``) or where the hand text is a deliberate prefix. A file the
    release kept elsewhere is read there (``moved``)."""
    rows = {m["id"]: m for m in base.get("messages") or []}
    for mid, spec in table.items():
        rel, anchor = _loc(w, spec[0], moved), spec[1]
        names = spec[2] if len(spec) > 2 else {}
        subst = spec[3] if len(spec) > 3 else {}
        printf = spec[4] if len(spec) > 4 else ()
        try:
            got = call_message(w, rel, anchor, names)
        except NotFound as exc:
            if mid in rows:
                facts.drops.append(("messages", mid, f"the engine no longer/not yet prints it ({exc})"))
            continue
        first = got.value[0] if isinstance(got.value, tuple) else got.value
        text = first.replace("{{", "\x00").replace("}}", "\x01")
        for k, v in subst.items():
            text = text.replace("{" + k + "}", v)
        for name in printf:
            text = text.replace("%s", "{" + name + "}", 1)
        text = text.replace("\x00", "{{").replace("\x01", "}}")
        row = rows.get(mid)
        if row is None:
            facts.review.append(f"messages[{mid}]: printed at {got.cite()} but not in the base file: add the row")
            continue
        if mid in TEMPLATES:
            facts.anchor("messages", mid, got, "")
            for rel2, anchor2 in TEMPLATES[mid]:
                rel2 = _loc(w, rel2, moved)
                other = facts.attempt(f"messages[{mid}]", lambda rel2=rel2, anchor2=anchor2:
                                      call_message(w, rel2, anchor2))
                if other is not None:
                    facts.anchor("messages", mid, other, "")
            facts.hand.append(f"messages[{mid}].text: a hand-written template over the literal messages it cites")
            continue
        if isinstance(got.value, tuple):
            parts = [p.replace("%s", "{" + printf[0] + "}") if printf else p for p in got.value]
            if text != got.value[0]:
                parts[0] = text
            facts.set("messages", mid, "parts", parts, got, "raised with several arguments")
            if row.get("text") is not None:
                facts.review.append(f"messages[{mid}]: the file has one sentence, the engine raises with "
                                    f"{len(parts)} arguments ({got.cite()}): Python prints the tuple")
                row.pop("text")
            continue
        if row.get("parts"):
            facts.anchor("messages", mid, got, "raised with several arguments: parts hand-written")
            facts.hand.append(f"messages[{mid}].parts: hand-written (the engine passes the name as a second "
                              f"argument; {got.cite()})")
            continue
        hand = row.get("text") or ""
        if text != hand and text.startswith(hand.rstrip(".")) and hand:
            facts.anchor("messages", mid, got, "text: the sentence before the arguments the engine appends")
            facts.hand.append(f"messages[{mid}].text: kept the hand-written prefix of {got.cite()}")
            continue
        facts.set("messages", mid, "text", text, got, "")


def _config_rule(facts: Facts, rid: str, allowed: list[list[Any]], f: Fact, what: str) -> None:
    facts.set("config_rules", rid, "allowed", allowed, f, what)


def _str_constants(node: ast.AST, name: str) -> list[str]:
    """String constants ``name`` is compared with (``==``, ``in {...}``) under ``node``."""
    out: list[str] = []
    for n in ast.walk(node):
        if isinstance(n, ast.Compare) and isinstance(n.left, ast.Name) and n.left.id == name:
            for comp in n.comparators:
                v = literal(comp)
                if isinstance(v, str):
                    out.append(v)
                elif isinstance(v, (list, tuple, set, frozenset)):
                    out.extend(x for x in v if isinstance(x, str))
    return list(dict.fromkeys(out))


def _ct_dispatch(w: Wheel, facts: Facts, base: dict[str, Any], ct_file: str, schemes_pkg: str) -> None:
    """Each dispatch row's scheme (and fallback) minimum capability, and the line in
    ``_get_scheme_from_parts`` that returns it."""
    ct = base.get("compressed_tensors") or {}
    try:
        fn = w.function(ct_file, "_get_scheme_from_parts")
    except NotFound as exc:
        facts.review.append(f"compressed_tensors.dispatch: {exc}")
        return
    lines = w.lines(ct_file)
    for row in ct.get("dispatch") or []:
        rid = f"dispatch/{row['id']}"
        for key, cap_key in (("scheme", "min_capability"), ("fallback", "fallback_min_capability")):
            cls = row.get(key)
            if not cls:
                continue
            ln = next((i for i in range(fn.lineno, (fn.end_lineno or fn.lineno) + 1)
                       if re.search(rf"\b{cls}\b", lines[i - 1])), None)
            if ln is not None:
                facts.anchor("compressed_tensors", rid, Fact(cls, ct_file, ln), f"_get_scheme_from_parts -> {cls}")
            elif key == "scheme":
                facts.drops.append(("compressed_tensors", rid, f"{cls} is not returned by _get_scheme_from_parts"))
                break
            else:
                facts.drops.append(("compressed_tensors/fallback", rid, f"fallback {cls} is not returned by "
                                    "_get_scheme_from_parts: below the scheme's capability the row refuses"))
                continue
            try:
                caps = w.returns(schemes_pkg, cls, "get_min_capability")
            except NotFound as exc:
                if key == "scheme":  # the scheme class is not in this wheel (SGLang 0.4-0.5.3 imported vllm's)
                    facts.drops.append(("compressed_tensors", rid, f"{cls}.get_min_capability not read ({exc})"))
                    facts.not_extracted.append(f"compressed_tensors.dispatch[{row['id']}]: {cls} is not defined in "
                                               "this wheel (imported from another package): row not read")
                    break
                facts.drops.append(("compressed_tensors/fallback", rid, f"fallback {cls} not read ({exc})"))
                continue
            one = _one(caps or [], row.get(cap_key), f"compressed_tensors.{rid} {cls}.get_min_capability", facts)
            if one is not None and row.get("exact_capability") is None:
                facts.set("compressed_tensors", rid, cap_key, one.value, one, f"{cls}.get_min_capability")
            elif one is not None:
                facts.anchor("compressed_tensors", rid, one, f"{cls}.get_min_capability")
        if not row.get("scheme") and row.get("error"):
            msg = next((m for m in base.get("messages") or [] if m["id"] == row["error"]), None)
            text = (msg or {}).get("text") or ""
            anchor = text.split("{")[0][:50]
            # Python's own NameError: no call prints it; the line that uses a name the module never binds raises it
            unbound = re.fullmatch(r"name '(\w+)' is not defined", text) if (msg or {}).get("exception") == \
                "NameError" else None
            name = unbound.group(1) if unbound else ""
            got = facts.attempt(f"compressed_tensors.{rid}", lambda anchor=anchor, name=name: unbound_use(
                w, ct_file, fn, name) if name else call_message(w, ct_file, anchor))
            if got is not None:
                facts.anchor("compressed_tensors", rid, got, f"raises {row['error']}")
        facts.hand.append(f"compressed_tensors.{rid}: the weights/activations predicates are hand-written")


def unbound_use(w: Wheel, rel: str, fn: ast.FunctionDef, name: str) -> Fact:
    """Where ``fn`` loads ``name`` though the module binds it nowhere (no import, definition or assignment):
    Python raises ``NameError: name '<name>' is not defined`` there."""
    for node in ast.walk(w.tree(rel)):
        if isinstance(node, (ast.Import, ast.ImportFrom)) and any(
                (a.asname or a.name).split(".")[0] == name or a.name == "*" for a in node.names):
            raise NotFound(f"{rel}: {name} is imported")
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name or \
                isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store):
            raise NotFound(f"{rel}: {name} is defined")
    use = next((n for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id == name), None)
    if use is None:
        raise NotFound(f"{rel}: {fn.name} does not use {name}")
    return Fact(f"name '{name}' is not defined", rel, use.lineno, use.end_lineno)


def _quantization_names(test: ast.AST, shorthands: list[str]) -> tuple[set[str], set[str]]:
    """(--quantization names, config classes) an ``if`` test singles out: ``model_config.quantization
    == "x"`` / ``in ("x", ...)`` / ``in _ONLINE_SHORTHANDS`` and ``quant_cls is X``."""
    names: set[str] = set()
    classes: set[str] = set()
    for n in ast.walk(test):
        if not isinstance(n, ast.Compare) or len(n.ops) != 1:
            continue
        left, op, right = ast.unparse(n.left), n.ops[0], n.comparators[0]
        if left == "model_config.quantization" and isinstance(op, (ast.Eq, ast.In)):
            v = literal(right)
            if isinstance(v, str):
                names.add(v)
            elif isinstance(v, (list, tuple, set, frozenset)):
                names.update(x for x in v if isinstance(x, str))
            elif isinstance(right, ast.Name) and right.id == "_ONLINE_SHORTHANDS":
                names.update(shorthands)
        elif left == "quant_cls" and isinstance(op, ast.Is) and isinstance(right, ast.Name):
            classes.add(right.id)
    return names, classes


def _init_required(w: Wheel, mod: str, cls: str) -> tuple[str, list[str], bool, Fact] | None:
    """(``Owner.__init__``, its required parameters, keyword-only, where) of a config class; None when
    it needs none (or inherits QuantizationConfig's, which takes none)."""
    try:
        path, owner, node = w.method(mod, cls, "__init__")
    except NotFound:
        return None
    a = node.args
    pos = a.posonlyargs + a.args
    req = [p.arg for p in pos[:len(pos) - len(a.defaults)]][1:]  # self
    kw = [k.arg for k, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d is None]
    if not req and not kw:
        return None
    # CPython reports the missing positional parameters first; keyword-only ones only when none is
    return f"{owner}.__init__", req or kw, not req, Fact(owner, path, node.lineno, node.args.args[-1].lineno
                                                          if node.args.args else node.lineno)


def _without_config(w: Wheel, facts: Facts, base: dict[str, Any], rel: str, classes: dict[str, tuple[str, str]],
                    shorthands: list[str]) -> None:
    """What ``get_quant_config`` does when --quantization names a method and the checkpoint has no
    quantization config: the file lookup fails (``Cannot find the config file``) or, for a class with
    no config file names, ``quant_cls()`` is called with no arguments; the names and classes the
    function handles before either (online paths, special cases) build their config another way."""
    fn = facts.attempt("get_quant_config", lambda: w.function(rel, "get_quant_config"))
    if fn is None:
        return
    bare = next((n for n in ast.walk(fn) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                 and n.func.id == "quant_cls" and not n.args and not n.keywords), None)
    missing = facts.attempt("config_file_missing", lambda: call_message(w, rel, "Cannot find the config file for"))
    if bare is None or missing is None:
        facts.review.append(f"{rel} get_quant_config: no quant_cls() call or no 'Cannot find the config file' raise; "
                            "methods[*].without_config kept")
        return
    facts.anchor("messages", "config_class_needs_arguments", Fact("quant_cls()", rel, bare.lineno),
                 "quant_cls() with no arguments")

    def handled_before(line: int) -> tuple[dict[str, int], dict[str, int]]:
        """name / class -> the line of the last ``if`` that handles it (and returns) before ``line``."""
        names: dict[str, int] = {}
        cls: dict[str, int] = {}
        for node in sorted((n for n in ast.walk(fn) if isinstance(n, ast.If)), key=lambda n: n.lineno):
            if node.lineno < line and any(isinstance(x, ast.Return) for b in node.body for x in ast.walk(b)):
                n, c = _quantization_names(node.test, shorthands)
                for x in n:  # the closest handler before ``line`` is cited
                    names[x] = node.lineno
                for x in c:
                    cls[x] = node.lineno
        return names, cls

    names_file, _ = handled_before(missing.line)
    names_bare, cls_bare = handled_before(bare.lineno)
    rows = {m["id"]: m for m in base.get("methods") or []}
    for mid, (mod, cls) in classes.items():
        got = facts.values.get(("methods", mid, "config_filenames"))  # a method new to the base file: read too
        files = got[0] if got is not None else list((rows.get(mid) or {}).get("config_filenames") or [])
        value: dict[str, Any] | None = None
        if files:
            if mid in names_file:
                where = Fact(mid, rel, names_file[mid])
                facts.hand.append(f"methods[{mid}].without_config: none: get_quant_config handles '{mid}' at "
                                  f"{rel}:{names_file[mid]} before its file lookup fails")
            else:
                value, where = {"raises": "config_file_missing"}, missing
        elif mid in names_bare or cls in cls_bare:
            where = Fact(mid, rel, names_bare.get(mid) or cls_bare[cls])
        else:
            req = _init_required(w, mod, cls)
            where = Fact(mid, rel, bare.lineno)
            if req is not None:
                init, params, kw_only, at = req
                value = {"raises": "config_class_needs_arguments", "init": init, "missing": params}
                if kw_only:
                    value["keyword_only"] = True
                facts.anchor("methods", mid, at, f"{init} needs {', '.join(params)}")
        facts.set("methods", mid, "without_config", value, where,
                  "get_quant_config without a checkpoint quantization config")


def _algo_match(test: ast.AST) -> tuple[str, dict[str, Any]] | None:
    """(the variable, the QuantAlgoMatch) an ``if`` test on a quant_algo string makes:
    ``algo == "FP8"`` / ``algo in (...)`` is equality, ``"FP4" in algo`` a substring; ``or`` joins them.
    None when the test compares no string with a variable."""
    equals: list[str] = []
    contains: list[str] = []
    var: set[str] = set()
    upper = False
    for n in ast.walk(test):
        if isinstance(n, ast.BoolOp) and isinstance(n.op, ast.And):
            strs = [v for v in n.values if isinstance(v, ast.Compare) and any(
                isinstance(c, ast.Constant) and isinstance(c.value, str) for c in (v.left, *v.comparators))]
            if len(strs) > 1:
                raise NotFound(f"line {n.lineno}: two string tests joined by 'and': {ast.unparse(n)}")
        if not isinstance(n, ast.Compare) or len(n.ops) != 1:
            continue
        left, op, right = n.left, n.ops[0], n.comparators[0]
        if isinstance(left, ast.Name) and isinstance(op, (ast.Eq, ast.In)):
            v = literal(right)
            got = [v] if isinstance(v, str) else [x for x in v if isinstance(x, str)] if isinstance(
                v, (list, tuple, set, frozenset)) else []
            if got:
                equals += got
                var.add(left.id)
        elif isinstance(left, ast.Constant) and isinstance(left.value, str) and isinstance(op, ast.In) \
                and isinstance(right, ast.Name):
            contains.append(left.value)
            var.add(right.id)
        elif isinstance(left, ast.Constant) and isinstance(left.value, str) and isinstance(op, ast.In) \
                and isinstance(right, ast.Call) and isinstance(right.func, ast.Attribute) \
                and right.func.attr == "upper" and isinstance(right.func.value, ast.Name):  # "FP8" in algo.upper()
            contains.append(left.value)
            var.add(right.func.value.id)
            upper = True
    if not var:
        return None
    if len(var) > 1:
        raise NotFound(f"line {getattr(test, 'lineno', '?')}: strings compared with {sorted(var)}")
    match: dict[str, Any] = {}
    if equals:
        match["equals"] = equals
    if contains:
        match["contains"] = contains
    if upper:
        match["_upper"] = True  # compared upper-cased: not case sensitive
    return var.pop(), match


def _upper_cased(w: Wheel, path: str, owner: str | None, fn: ast.FunctionDef, var: str) -> bool:
    """Whether ``var`` holds an upper-cased string: assigned from ``... .upper()`` or from a helper
    (``cls._extract_modelopt_quant_algo(...)``) that upper-cases what it returns."""
    for node in ast.walk(fn):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == var for t in node.targets):
            if ".upper()" in ast.unparse(node.value):
                return True
            call = node.value if isinstance(node.value, ast.Call) else None
            f = call.func if call is not None else None
            own = isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in ("cls", "self")
            name = f.attr if own and isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
            if name is None:
                return False
            try:
                helper = w.method(path, owner, name)[2] if owner else w.function(path, name)
            except NotFound:
                return False
            return all(".upper()" in ast.unparse(r.value) for r in ast.walk(helper)
                       if isinstance(r, ast.Return) and r.value is not None and not (
                           isinstance(r.value, ast.Constant) and r.value.value is None))
    return False


def _guard_values(fn: ast.FunctionDef, var: str) -> tuple[list[Any], ast.If] | None:
    """The values ``var`` may take past ``if var != X: raise`` / ``if var not in [...]: raise`` in ``fn``."""
    for node in ast.walk(fn):
        if not (isinstance(node, ast.If) and isinstance(node.test, ast.Compare) and len(node.test.ops) == 1
                and ast.unparse(node.test.left) == var and any(isinstance(b, ast.Raise) for b in node.body)):
            continue
        op, v = node.test.ops[0], literal(node.test.comparators[0])
        if isinstance(op, ast.NotEq) and isinstance(v, (int, str)):
            return [v], node
        if isinstance(op, ast.NotIn) and isinstance(v, (list, tuple, set, frozenset)):
            return list(v), node
    return None


# =================================================================================================
# vLLM
# =================================================================================================

VQ = "vllm/model_executor/layers/quantization/"
V_MESSAGES: dict[str, tuple[Any, ...]] = {
    "method_mismatch": ("vllm/config/model.py", "Quantization method specified in the model config",
                        {"quant_method": "checkpoint_method", "self.quantization": "quantization"}),
    "unknown_method": ("vllm/config/model.py", "Unknown quantization method", {"self.quantization": "quantization",
                                                                             "supported_quantization": "supported"}),
    "deprecated_method": ("vllm/config/model.py", "deprecated and will be removed in future versions of vLLM. To"),
    "deprecated_method_allowed": ("vllm/config/model.py", "The quantization method %s is deprecated and will be "
                                  "removed in future versions of vLLM.", {}, {}, ("quantization",)),
    "platform_unsupported": ("vllm/platforms/interface.py", "quantization is currently not supported in",
                             {"quant": "quantization", "cls.device_name": "device"}),
    "capability_too_low": ("vllm/config/vllm.py", "is not supported for the current GPU",
                           {"model_config.quantization": "quantization",
                            "quant_config.get_min_capability()": "min_capability"}),
    "act_dtype_unsupported": ("vllm/config/vllm.py", "is not supported for quantization method",
                              {"model_config.dtype": "dtype", "model_config.quantization": "quantization",
                               "supported_dtypes": "supported"}),
    "block_static_activations": (VQ + "fp8.py", "The block-wise quantization only supports dynamic",
                                 {"activation_scheme": "activation_scheme"}),
    "fp8_block_dims": (VQ + "fp8.py", "The quantization block size of weight must have 2 dimensions",
                       {"len(weight_block_size)": "n"}),
    "fp8_online_deprecated": ("vllm/model_executor/model_loader/weight_utils.py",
                              "--quantization fp8 is deprecated for online quantization"),
    "fp8_e5m2_with_fp8_checkpoint": ("vllm/model_executor/layers/attention/attention.py",
                                     "fp8_e5m2 kv-cache is not supported with fp8 checkpoints"),
    "kv_cache_scheme_unsupported": (VQ + "compressed_tensors/compressed_tensors.py",
                                    "Currently supported kv cache quantization is", {"type_": "type"}),
    "kv_cache_scheme_strategy": (VQ + "compressed_tensors/compressed_tensors.py",
                                 "Invalid strategy for compressed-tensors KV cache",
                                 {}, {"supported_strategies": "('tensor', 'attn_head')"}),
    "kv_cache_scheme_symmetric": (VQ + "compressed_tensors/compressed_tensors.py",
                                  "Only support symmetric scaling factor", {"is_symmetric": "symmetric"}),
    "scheme_capability_too_low": (VQ + "compressed_tensors/compressed_tensors.py",
                                  "Quantization scheme is not supported for "),
    "ct_no_scheme": (VQ + "compressed_tensors/compressed_tensors.py", "No compressed-tensors compatible scheme"),
    "gptq_unsupported_config": (VQ + "auto_gptq.py", "Unsupported quantization config: bits=",
                                {"weight_bits": "bits", "is_sym": "sym"}),
    "awq_unsupported_bits": (VQ + "auto_awq.py", "Unsupported num_bits = ",
                             {"self.weight_bits": "w_bit", "supported": "supported"}),
    "modelopt_unknown_algo": ("vllm/transformers_utils/model_arch_config_convertor.py", "Unknown ModelOpt quant algo",
                              {"quant_algo": "quant_algo"}),
    "modelopt_unsupported_algo": (VQ + "modelopt.py", "ModelOpt currently only supports"),  # QUANT_ALGOS filled in
    "modelopt_fp8_algo": (VQ + "modelopt.py", "Unsupported ModelOpt FP8 quant_algo", {"self.quant_method": "quant_algo"}),
    "modelopt_nvfp4_algo": (VQ + "modelopt.py", "Unsupported ModelOpt NVFP4 quant_algo",
                            {"quant_method": "quant_algo"}),
    "config_file_missing": ("vllm/model_executor/model_loader/weight_utils.py", "Cannot find the config file for",
                            {"model_config.quantization": "quantization"}),
    "fp8_marlin_weight_only": (VQ + "utils/marlin_utils_fp8.py", "Your GPU does not have native support for FP8"),
    "no_weights": ("vllm/model_executor/model_loader/default_loader.py", "Cannot find any model weights with",
                   {"model_name_or_path": "model"}),
}


def _v_skeleton_method(mid: str) -> dict[str, Any]:
    return {"id": mid, "config_class": None, "kind": "checkpoint", "min_capability": None,
            "supported_act_dtypes": None, "optimized": None, "notes": "New in this release: review kind, bits, "
            "notes.", "source": "", "as_of": None}


# Where a fact's file lived in older releases: the spec names the newest path; ``_loc`` takes the first of
# these the release has (every citation names the file actually read). vLLM 0.8-0.9 kept all configs in
# vllm/config.py, 0.10 in vllm/config/__init__.py, 0.11 split them into vllm/config/<part>.py; the attention
# layer was vllm/attention/layer.py until 0.15; the default loader was model_loader/loader.py in 0.8; the
# ModelOpt hf_quant_config normalization lived in ModelConfig (config/__init__.py, then config/model.py)
# before model_arch_config_convertor.py (0.14).
V_MOVED: dict[str, tuple[str, ...]] = {
    "vllm/config/model.py": ("vllm/config/__init__.py", "vllm/config.py"),
    "vllm/config/vllm.py": ("vllm/config/__init__.py", "vllm/config.py"),
    "vllm/config/cache.py": ("vllm/config/__init__.py", "vllm/config.py"),
    "vllm/model_executor/layers/attention/attention.py": ("vllm/attention/layer.py",),
    "vllm/model_executor/model_loader/default_loader.py": ("vllm/model_executor/model_loader/loader.py",),
    "vllm/transformers_utils/model_arch_config_convertor.py": ("vllm/config/model.py", "vllm/config/__init__.py"),
    # the GPTQ / AWQ bit checks were GPTQMarlinConfig's / AWQMarlinConfig's before auto_gptq.py (0.22) and
    # auto_awq.py (0.24): the messages are read there (the config rules are not: see vllm())
    VQ + "auto_gptq.py": (VQ + "gptq_marlin.py",),
    VQ + "auto_awq.py": (VQ + "awq_marlin.py",),
}


def _loc(w: Wheel, rel: str, moved: dict[str, tuple[str, ...]] | None = None) -> str:
    """``rel``, or where the release kept it (``V_MOVED`` / ``S_MOVED``); ``rel`` when none is there."""
    if w.exists(rel):
        return rel
    return next((c for c in (moved or {}).get(rel, ()) if w.exists(c)), rel)


def _enum_values(w: Wheel, rel: str, cls: str) -> list[Fact]:
    """The string values of an ``Enum`` class's members (``FP8_PER_TENSOR = "fp8_per_tensor"``)."""
    _, node = w.find_class(rel, cls)
    return [Fact(it.value.value, rel, it.lineno) for it in node.body if isinstance(it, ast.Assign)
            and isinstance(it.value, ast.Constant) and isinstance(it.value.value, str)]


def _v_shorthands(w: Wheel, init: str, fn: ast.FunctionDef) -> tuple[list[Fact], Fact | None, str]:
    """The online shorthands ``get_quantization_config`` registers as methods, the line that registers
    them, and what they are read from: ``_ONLINE_SHORTHANDS`` (0.22+; ``setdefault`` from 0.24), the
    ``OnlineQuantScheme`` enum (0.20-0.21), none before."""
    cq = "vllm/config/quantization.py"
    loop = next((n for n in ast.walk(fn) if isinstance(n, ast.For) and any(
        isinstance(c, ast.Name) and c.id == "OnlineQuantizationConfig" for c in ast.walk(n))), None)
    if loop is None:
        return [], None, ""
    reg = next(st for st in loop.body if "OnlineQuantizationConfig" in ast.unparse(st))  # setdefault / [x] = ...
    at = Fact(ast.unparse(loop.iter), init, reg.lineno)
    src = ast.unparse(loop.iter)
    if src == "_ONLINE_SHORTHANDS":
        return w.strings(cq, "_ONLINE_SHORTHANDS"), at, "_ONLINE_SHORTHANDS"
    if src == "OnlineQuantScheme":
        return _enum_values(w, cq, "OnlineQuantScheme"), at, "OnlineQuantScheme"
    raise NotFound(f"{init}:{loop.lineno}: shorthands registered from {src}, which the spec does not read")


def vllm(w: Wheel, base: dict[str, Any]) -> Facts:
    facts = Facts()
    facts.commit = _commit(w, "vllm/_version.py")
    facts.skeletons = {
        "methods": _v_skeleton_method,
        "kv_cache_dtypes": lambda i: {"id": i, "mode": "REVIEW", "source": "", "as_of": None},
        "shorthands": lambda i: {"id": i, "linear": None, "moe": None, "source": "", "as_of": None},
        "platform_lists": lambda i: {"id": i, "allowed": [], "source": "", "as_of": None},
    }
    init = VQ + "__init__.py"
    base_methods = {m["id"]: m for m in base.get("methods") or []}
    names = w.strings(init, "QuantizationMethods")
    facts.member("methods", names, "QuantizationMethods")
    facts.counts["quantization_methods"] = len(names)
    try:
        dep = {f.value: f for f in w.strings(init, "DEPRECATED_QUANTIZATION_METHODS")}
    except NotFound:  # before 0.14: no deprecated list, nothing is deprecated
        dep = {}
        facts.hand.append(f"deprecated: {init} has no DEPRECATED_QUANTIZATION_METHODS in this release (none deprecated)")
    fn = w.function(init, "get_quantization_config")
    m2c, _, _ = w.assigned(init, "method_to_config", fn)
    imports = w.imports(init, fn)
    classes: dict[str, tuple[str, str, Fact]] = {}
    for key, val in dict_items(m2c, init):
        cname = ast.unparse(val)
        if cname not in imports:  # a local variable (deepseek_config): its first assignment
            try:
                v, ln, end = w.assigned(init, cname, fn)
            except NotFound:
                facts.review.append(f"methods[{key.value}]: method_to_config maps it to {cname}, not imported: "
                                    "not extracted")
                continue
            var, cname = cname, ast.unparse(v)
            facts.anchor("methods", key.value, Fact(cname, init, ln, end), f"{var} = {cname}")
        for node in ast.walk(fn):  # an aliased import: cite it, so the real class name is on a cited line
            if isinstance(node, ast.ImportFrom) and any(a.asname == cname for a in node.names):
                facts.anchor("methods", key.value, Fact(cname, init, node.lineno, node.end_lineno), "import")
        if cname not in imports:
            facts.review.append(f"methods[{key.value}]: {cname} is not imported by get_quantization_config: not extracted")
            continue
        mod, orig = imports[cname]
        classes[key.value] = (mod, orig, key)
    shorthands, setdefault, shorthand_src = facts.attempt("shorthands", lambda: _v_shorthands(w, init, fn)) or (
        [], None, "")
    if shorthands and setdefault is not None and "OnlineQuantizationConfig" in imports:
        mod, orig = imports["OnlineQuantizationConfig"]
        for s in shorthands:
            classes.setdefault(s.value, (mod, orig, setdefault))
    for n in names:
        mid = n.value
        if mid not in classes:
            facts.review.append(f"methods[{mid}]: in QuantizationMethods but not in method_to_config")
            continue
        mod, cls, where = classes[mid]
        facts.set("methods", mid, "config_class", cls, where, "method_to_config")
        facts.set("methods", mid, "deprecated", mid in dep, dep.get(mid, n),
                  "DEPRECATED_QUANTIZATION_METHODS" if mid in dep else "QuantizationMethods")
        _class_facts(w, facts, mid, mod, cls, base_methods.get(mid))
        facts.hand.append(f"methods[{mid}]: kind, weight/act bits, weight_type, rocm_allowed, kv_scales_on_attention, "
                          "scheme_gates, weight_only_*, notes hand-written")

    _without_config(w, facts, base, "vllm/model_executor/model_loader/weight_utils.py",
                    {n.value: classes[n.value][:2] for n in names if n.value in classes}, [f.value for f in shorthands])

    mc = _loc(w, "vllm/config/model.py", V_MOVED)
    vq = w.function(mc, "_verify_quantization")
    order = w.strings(mc, "overrides", vq)
    facts.set("doc", "_", "override_order", [f.value for f in order], order[0], "")
    facts.files.add(mc)
    method_ids = {n.value for n in names}
    claimed: set[str] = set()
    _v_marlin_overrides(w, facts, classes, base)
    claimed.update(r["id"] for sec, r in facts.new_rows if sec == "overrides")
    for ov in base.get("overrides") or []:
        probe = ov["probed_as"][0]
        if probe not in method_ids or (ov["returns"] not in method_ids and ov["returns"] != "checkpoint"):
            facts.drops.append(("overrides", ov["id"], f"'{probe}' / '{ov['returns']}' is not a method of this release"))
            continue
        if probe in classes:
            mod, cls, _ = classes[probe]
            try:
                path, owner, node = w.method(mod, cls, "override_quantization_method")
            except NotFound:
                facts.drops.append(("overrides", ov["id"], f"{cls} has no override_quantization_method in this release"))
                continue
            claimed.update(ov["probed_as"])
            facts.anchor("overrides", ov["id"], Fact(owner, path, node.lineno, node.end_lineno),
                         f"{owner}.override_quantization_method")
            if ov.get("quant_algo") is not None:
                facts.attempt(f"overrides[{ov['id']}].quant_algo", lambda path=path, owner=owner, node=node, ov=ov:
                              _override_algo(w, facts, ov["id"], path, owner, node))
            facts.hand_defs.append((f"overrides[{ov['id']}]", classes[probe][0], classes[probe][1],
                                    "override_quantization_method"))
        facts.hand.append(f"overrides[{ov['id']}]: the condition it fires on is hand-written"
                          + (" (quant_algo extracted)" if ov.get("quant_algo") is not None else ""))
    for f in order:  # a probe-order name whose class overrides, with no row: what it claims is not modelled
        if f.value in claimed or f.value not in classes:
            continue
        mod, cls, _ = classes[f.value]
        try:
            path, owner, node = w.method(mod, cls, "override_quantization_method")
        except NotFound:
            continue
        facts.review.append(f"overrides: '{f.value}' ({owner}.override_quantization_method, {path}:{node.lineno}) "
                            "is in this release's probe order but has no row: write one by hand")
        facts.not_extracted.append(f"overrides[{f.value}]: {owner}.override_quantization_method ({path}:{node.lineno})"
                                   " claims checkpoints in this release; its condition is not modelled")
    ctf0 = VQ + "compressed_tensors/compressed_tensors.py"
    facts.hand_defs += [
        ("compressed_tensors.dispatch predicates", ctf0, "CompressedTensorsConfig", "_get_scheme_from_parts"),
        ("compressed_tensors.kv_cache_scheme", ctf0, None, "validate_kv_cache_scheme"),
        ("shorthands expansions", "vllm/config/quantization.py", None, shorthand_src or "_ONLINE_SHORTHANDS"),
        ("fp8 online / config-file lookup (get_quant_config)", "vllm/model_executor/model_loader/weight_utils.py",
         None, "get_quant_config"),
        ("fp8 config checks", VQ + "fp8.py", "Fp8Config", "__init__"),
    ]

    for plat in ("rocm", "xpu"):
        rel = f"vllm/platforms/{plat}.py"
        try:
            items = w.strings(rel, "supported_quantization")
        except NotFound as exc:
            items = []
            facts.not_extracted.append(f"platform_lists[{plat}]: {exc}")
        if items:
            facts.set("platform_lists", plat, "allowed", [f.value for f in items], items[0], "supported_quantization")
        elif any(r["id"] == plat for r in base.get("platform_lists") or []):
            facts.drops.append(("platform_lists", plat, f"{rel} supported_quantization not read in this release"))

    cq = "vllm/config/quantization.py"
    facts.member("shorthands", shorthands, shorthand_src or "_ONLINE_SHORTHANDS")
    deferred = facts.attempt("_DEFERRED_ONLINE_SHORTHANDS", lambda: w.strings(cq, "_DEFERRED_ONLINE_SHORTHANDS")) \
        if shorthand_src == "_ONLINE_SHORTHANDS" and "_DEFERRED_ONLINE_SHORTHANDS" in w.text(cq) else []
    dset = {f.value for f in deferred or []}
    for s in shorthands:
        facts.set("shorthands", s.value, "deferred", s.value in dset, deferred[0] if s.value in dset and deferred
                  else s, "_DEFERRED_ONLINE_SHORTHANDS" if s.value in dset else "")
        facts.hand.append(f"shorthands[{s.value}]: linear / moe expansion hand-written")

    kv = w.strings(_loc(w, "vllm/config/cache.py", V_MOVED), "CacheDType")
    facts.member("kv_cache_dtypes", kv, "CacheDType")
    facts.counts["kv_cache_dtypes"] = len(kv)
    facts.hand.append("kv_cache_dtypes[*]: mode / storage / notes hand-written (vllm/v1/kv_cache_interface.py "
                      "KVQuantMode)")
    for a in base.get("auto_kv") or []:
        facts.hand.append(f"auto_kv[{a['id']}]: hand-written")

    # compressed-tensors inside vLLM
    ctf = VQ + "compressed_tensors/compressed_tensors.py"
    pin = w.metadata["requires"].get("compressed-tensors", "").lstrip("=")
    if pin:
        facts.set("compressed_tensors", "_", "pinned_version", pin,
                  Fact(pin, w.metadata_file, 1), "Requires-Dist")
    _kv_scheme_rule(w, facts, ctf)
    _ct_dispatch(w, facts, base, ctf, VQ + "compressed_tensors/schemes/__init__.py")
    wna = VQ + "compressed_tensors/schemes/compressed_tensors_wNa16.py"
    bits = facts.attempt("WNA16_SUPPORTED_TYPES_MAP", lambda: _int_keys(w, wna, "WNA16_SUPPORTED_TYPES_MAP"))
    if bits:
        facts.set("ct_weights", "wna16", "num_bits", sorted(f.value for f in bits), bits[0], "WNA16_SUPPORTED_TYPES_MAP")

    # config validation tables (a rule the release's code does not hold is dropped, never carried)
    conv = _loc(w, "vllm/transformers_utils/model_arch_config_convertor.py", V_MOVED)
    norm = facts.attempt("model_arch_config_convertor", lambda: w.function(conv, "_normalize_quantization_config"), dropped=True)
    if norm is not None:
        algos = _str_constants(norm, "quant_algo_upper")
        raise_line = w.grep(conv, r"Unknown ModelOpt quant algo")
        _config_rule(facts, "modelopt-hf-quant-config-algo", [[a] for a in algos],
                     Fact(algos, conv, norm.lineno, raise_line.line), "_normalize_quantization_config")
    mo = VQ + "modelopt.py"
    lin = facts.attempt("LINEAR_ALGOS", lambda: w.assigned(mo, "LINEAR_ALGOS")) \
        if re.search(r"^LINEAR_ALGOS\b[^=\n]*=", w.text(mo), re.M) else None
    qa = facts.attempt("QUANT_ALGOS", lambda: w.assigned(mo, "QUANT_ALGOS"))
    quant_algos: list[str] = []
    if qa is not None:
        owners = {k.value: literal(v)[0] for k, v in dict_items(lin[0], mo)} if lin is not None else {}
        extra = [e.value for e in qa[0].elts if isinstance(e, ast.Constant)] if isinstance(qa[0], ast.List) else []
        quant_algos = list(owners) + extra
        chk = w.grep(mo, r"if quant_method not in QUANT_ALGOS")
        _config_rule(facts, "modelopt-quant-algos", [[a] for a in quant_algos], Fact(quant_algos, mo, chk.line),
                     "QUANT_ALGOS check")
        facts.anchor("config_rules", "modelopt-quant-algos", Fact("", mo, lin[1] if lin else qa[1], qa[2]),
                     "LINEAR_ALGOS, QUANT_ALGOS" if lin else "QUANT_ALGOS")
        for rid, owner, anchor in (("modelopt-fp8-algos", "modelopt", "Unsupported ModelOpt FP8 quant_algo"),
                                   ("modelopt-nvfp4-algos", "modelopt_fp4", "Unsupported ModelOpt NVFP4 quant_algo")):
            if lin is not None:
                at = facts.attempt(rid, lambda owner=owner: w.grep(mo, rf'supported = algos_owned_by\("{owner}"\)'))
                if at is not None:
                    _config_rule(facts, rid, [[a] for a, o in owners.items() if o == owner], at,
                                 f'algos_owned_by("{owner}")')
                continue
            got = _elif_chain_values(w, mo, anchor)  # before LINEAR_ALGOS (0.29): an if/elif chain, then raise
            if got is not None:
                values, at = got
                _config_rule(facts, rid, [[a] for a in values], at, "if/elif quant_algo chain before the raise")
    for rid, mod, cls, check in (("auto-gptq-type-map", VQ + "auto_gptq.py", "AutoGPTQConfig",
                                  r"not in self\.TYPE_MAP"),
                                 ("auto-awq-type-map", VQ + "auto_awq.py", "AutoAWQConfig", r"not in self\.TYPE_MAP")):
        got = facts.attempt(rid, lambda mod=mod, cls=cls: w.assigned(mod, "TYPE_MAP", w.find_class(mod, cls)[1])) \
            if w.exists(mod) else None
        if got is not None:
            keys = [k for k in (literal(k) for k in got[0].keys) if k is not None]
            allowed = [list(k) if isinstance(k, (tuple, list)) else [k] for k in keys]
            at = w.grep(mod, check)
            _config_rule(facts, rid, allowed, at, f"{cls}.TYPE_MAP check")
            facts.anchor("config_rules", rid, Fact("", mod, got[1], got[2]), f"{cls}.TYPE_MAP")
    read = {rid for (sec, rid, _k) in facts.values if sec == "config_rules"}
    for r in base.get("config_rules") or []:
        if r["id"] not in read:
            facts.drops.append(("config_rules", r["id"], "the check it paraphrases is not where the spec reads it in "
                                "this release (not extracted)"))
            facts.not_extracted.append(f"config_rules[{r['id']}]: not read in this release (the class or function it "
                                       "paraphrases is not there); whatever check the release makes is not modelled")
    table = dict(V_MESSAGES)
    if quant_algos:
        spec = table["modelopt_unsupported_algo"]
        table["modelopt_unsupported_algo"] = (spec[0], spec[1], {}, {"QUANT_ALGOS": repr(quant_algos)})
    if lin is not None:
        owners = {k.value: literal(v)[0] for k, v in dict_items(lin[0], mo)}
        for mid, owner in (("modelopt_fp8_algo", "modelopt"), ("modelopt_nvfp4_algo", "modelopt_fp4")):
            spec = table[mid]
            joined = " / ".join(a for a, o in owners.items() if o == owner)
            table[mid] = (spec[0], spec[1], spec[2], {"' / '.join(supported)": joined, "join(supported)": joined})
    _messages(w, facts, base, table, V_MOVED)
    facts.attempt("humming_preferred", lambda: _humming_preferred(w, facts))
    return facts


# vLLM before AutoGPTQConfig (0.22) / AutoAWQConfig (0.24): GPTQMarlinConfig / AWQMarlinConfig claim a
# gptq / awq checkpoint Marlin can run (the same probe SGLang kept): (config file, class, compatibility check,
# the checkpoint fields its TYPE_MAP keys and has_zp read, as CheckpointQuant.details records them)
V_MARLIN = {
    "gptq": (VQ + "gptq_marlin.py", "GPTQMarlinConfig", "is_gptq_marlin_compatible", ["bits", "sym"]),
    "awq": (VQ + "awq_marlin.py", "AWQMarlinConfig", "is_awq_marlin_compatible", ["w_bit", "zero_point"]),
}


def _v_marlin_overrides(w: Wheel, facts: Facts, classes: dict[str, tuple[str, str, Fact]], base: dict[str, Any]) -> None:
    """The Marlin overrides of releases whose GPTQMarlinConfig / AWQMarlinConfig claim checkpoints: a row per
    class (what it returns, the checkpoint method its check requires, the --quantization values it
    accepts), which (bits, sym / zero_point) Marlin takes, its group sizes and minimum capability."""
    mu = VQ + "utils/marlin_utils.py"
    live = {}
    for kind, (rel, cls, check, _fields) in V_MARLIN.items():
        name = f"{kind}_marlin"
        if name not in classes or classes[name][1] != cls or not w.exists(rel):
            continue
        try:
            path, owner, ov = w.method(rel, cls, "override_quantization_method")
            chk = w.function(rel, check, cls)
        except NotFound:
            continue
        if owner != cls:
            continue
        methods = _str_constants(chk, "quant_method")
        user = [None] + _str_constants(next((n for n in ast.walk(ov) if isinstance(n, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "is_valid_user_quant" for t in n.targets)), ov), "user_quant")
        got = w.returns(rel, cls, "get_name")
        if not methods or not got or len({g.value for g in got}) != 1:
            facts.review.append(f"overrides[{name}]: {cls}.override_quantization_method not read (no quant_method "
                                "test or get_name literal)")
            continue
        live[kind] = (rel, cls, check, _fields)
        row = {"id": name, "returns": got[0].value, "probed_as": [name], "checkpoint_methods": methods,
               "user_in": user, "requires_marlin": kind, "source": "", "as_of": None}
        if "VLLM_BATCH_INVARIANT" in ast.unparse(ov):
            row["notes"] = "Not when VLLM_BATCH_INVARIANT is set (the override returns None: Marlin is not batch invariant)."
        facts.new_rows.append(("overrides", row))
        facts.anchor("overrides", name, Fact(owner, path, ov.lineno, ov.end_lineno), f"{owner}.override_quantization_method")
        facts.anchor("overrides", name, Fact(methods, rel, chk.lineno, chk.end_lineno), check)
    if not live:
        return
    _marlin_compatible(w, facts, mu, live)
    _marlin_limits(w, facts, mu, base)


def _marlin_limits(w: Wheel, facts: Facts, mu: str, base: dict[str, Any]) -> None:
    """Marlin's group sizes (``MARLIN_SUPPORTED_GROUP_SIZES``) and the capability below which
    ``query_marlin_supported_quant_types`` returns no type."""
    if not w.exists(mu):
        for key in ("marlin_group_sizes", "marlin_min_capability"):
            if base.get(key) is not None:
                facts.drops.append(("doc", key, f"{mu} is not in this wheel"))
                facts.not_extracted.append(f"{key}: {mu} is not in this wheel (Marlin limits not read)")
        return
    try:
        sizes, ln, end = w.assigned(mu, "MARLIN_SUPPORTED_GROUP_SIZES")
        facts.set("doc", "_", "marlin_group_sizes", literal(sizes), Fact(literal(sizes), mu, ln, end),
                  "MARLIN_SUPPORTED_GROUP_SIZES")
        fn = w.function(mu, "query_marlin_supported_quant_types")
        caps = [literal(n.test.comparators[0]) for n in ast.walk(fn) if isinstance(n, ast.If) and isinstance(
            n.test, ast.Compare) and ast.unparse(n.test.left) == "device_capability" and isinstance(
            n.test.ops[0], ast.Lt) and any(isinstance(b, ast.Return) for b in n.body)]
        if len(set(caps)) == 1:
            facts.set("doc", "_", "marlin_min_capability", caps[0], Fact(caps[0], mu, fn.lineno), "device_capability <")
        else:
            facts.review.append(f"marlin_min_capability: {mu} query_marlin_supported_quant_types gates on {caps}")
    except NotFound as exc:
        facts.review.append(f"marlin_group_sizes / marlin_min_capability: {exc}")


def _elif_chain_values(w: Wheel, rel: str, anchor: str) -> tuple[list[str], Fact] | None:
    """The strings an ``if x == "A": ... elif x == "B": ... else: raise X("<anchor>...")`` chain accepts,
    and the lines from its first test to the raise; None when no such chain raises the message."""
    for node in ast.walk(w.tree(rel)):
        if not isinstance(node, ast.If):
            continue
        values: list[str] = []
        cur: ast.stmt = node
        while isinstance(cur, ast.If):
            t = cur.test
            if not (isinstance(t, ast.Compare) and len(t.ops) == 1 and isinstance(t.ops[0], (ast.Eq, ast.In))):
                break
            v = literal(t.comparators[0])
            values += [v] if isinstance(v, str) else [x for x in v if isinstance(x, str)] if isinstance(
                v, (list, tuple, set, frozenset)) else []
            nxt = cur.orelse
            if len(nxt) == 1 and isinstance(nxt[0], ast.If):
                cur = nxt[0]
                continue
            raises = [r for r in nxt if isinstance(r, ast.Raise) and isinstance(r.exc, ast.Call) and r.exc.args]
            if raises and anchor in (message_text(raises[0].exc.args[0]) or "") and values:
                return values, Fact(values, rel, node.lineno, raises[0].end_lineno)
            break
    return None


def _humming_preferred(w: Wheel, facts: Facts) -> None:
    """vLLM's ``_HUMMING_PREFERRED_CAPABILITIES``: where ``prioritize_humming`` moves Humming ahead of
    Marlin in every linear-kernel list (so no Marlin warning is logged there). A release without the
    module lists Humming after Marlin with no reordering: none (cited at the kernel-list filter)."""
    pri = "vllm/model_executor/layers/quantization/utils/humming/priority.py"
    if w.exists(pri):
        val, ln, end = w.assigned(pri, "_HUMMING_PREFERRED_CAPABILITIES")
        got = literal(val)
        if not isinstance(got, list) or not all(isinstance(c, int) for c in got):
            raise NotFound(f"{pri}:{ln} _HUMMING_PREFERRED_CAPABILITIES is not a literal set of capabilities")
        caps = sorted(got)
        facts.set("doc", "_", "humming_preferred", caps, Fact(caps, pri, ln, end), "_HUMMING_PREFERRED_CAPABILITIES")
        return
    init = "vllm/model_executor/kernels/linear/__init__.py"
    if not any("humming" in n for n in w.names):  # no Humming kernel in the release at all: nothing reordered
        qinit = VQ + "__init__.py"
        facts.set("doc", "_", "humming_preferred", [], Fact([], qinit, 1), "no Humming kernel in this release")
        facts.hand.append("humming_preferred: [] (no file of this release names Humming)")
        return
    if not w.exists(init) or "prioritize_humming" not in w.text(init):  # Humming listed, never moved ahead
        fn = next((f for f in ("_resolve_backend_kernels", "choose_mp_linear_kernel") if w.exists(init)
                   and re.search(rf"def {f}\(", w.text(init))), None)
        at = Fact([], init, w.function(init, fn).lineno, w.function(init, fn).end_lineno) if fn else Fact(
            [], VQ + "__init__.py", 1)
        facts.set("doc", "_", "humming_preferred", [], at, "no prioritize_humming in this release")
        return
    fn = w.function(init, "_resolve_backend_kernels")
    if "prioritize_humming" in ast.unparse(fn):
        raise NotFound(f"{init} _resolve_backend_kernels calls prioritize_humming but {pri} is not in the wheel")
    facts.set("doc", "_", "humming_preferred", [], Fact([], init, fn.lineno, fn.end_lineno),
              "_resolve_backend_kernels: no prioritize_humming")


def _override_algo(w: Wheel, facts: Facts, rid: str, path: str, owner: str, fn: ast.FunctionDef) -> None:
    """The quant_algo test of an ``override_quantization_method`` (the ``if`` that returns the name)."""
    for node in ast.walk(fn):
        if isinstance(node, ast.If) and any(isinstance(b, ast.Return) for b in node.body):
            got = _algo_match(node.test)
            if got is None:
                continue
            var, match = got
            if not match.pop("_upper", False) and not _upper_cased(w, path, owner, fn, var):
                match["case_sensitive"] = True
            facts.set("overrides", rid, "quant_algo", match, Fact(match, path, node.lineno), "quant_algo test")
            return
    raise NotFound(f"{path} {owner}.override_quantization_method: no quant_algo test")


def _int_keys(w: Wheel, rel: str, name: str) -> list[Fact]:
    node, _, _ = w.assigned(rel, name)
    if not isinstance(node, ast.Dict):
        raise NotFound(f"{rel}: {name} is not a dict literal")
    return [Fact(k.value, rel, k.lineno) for k in node.keys if isinstance(k, ast.Constant)]


def _kv_scheme_rule(w: Wheel, facts: Facts, ctf: str) -> None:
    """vLLM's validate_kv_cache_scheme: ``type_ != "float" or num_bits != 8`` needs both; ``and``
    would need either. The accepted strategies come from its ``supported_strategies`` tuple."""
    fn = facts.attempt("validate_kv_cache_scheme", lambda: w.function(ctf, "validate_kv_cache_scheme"))
    if fn is None:
        return
    for node in ast.walk(fn):
        if isinstance(node, ast.If) and isinstance(node.test, ast.BoolOp):
            names = {n.left.id for n in node.test.values if isinstance(n, ast.Compare) and isinstance(n.left, ast.Name)}
            if {"type_", "num_bits"} <= names:
                rule = "both_must_match" if isinstance(node.test.op, ast.Or) else "either_must_match"
                facts.set("compressed_tensors", "kv_cache_scheme", "type_and_bits", rule,
                          Fact(ast.unparse(node.test), ctf, node.lineno), ast.unparse(node.test))
                types = [literal(c.comparators[0]) for c in node.test.values
                         if isinstance(c, ast.Compare) and isinstance(c.left, ast.Name) and c.left.id == "type_"]
                bits = [literal(c.comparators[0]) for c in node.test.values
                        if isinstance(c, ast.Compare) and isinstance(c.left, ast.Name) and c.left.id == "num_bits"]
                facts.set("compressed_tensors", "kv_cache_scheme", "types", types, Fact(types, ctf, node.lineno), "")
                facts.set("compressed_tensors", "kv_cache_scheme", "num_bits", bits, Fact(bits, ctf, node.lineno), "")
                break
    try:
        val, ln, end = w.assigned(ctf, "supported_strategies", fn)
        strat = [e.attr.lower() for e in getattr(val, "elts", []) if isinstance(e, ast.Attribute)]
        facts.set("compressed_tensors", "kv_cache_scheme", "strategies", strat, Fact(strat, ctf, ln, end),
                  "supported_strategies")
    except NotFound as exc:
        facts.review.append(f"compressed_tensors.kv_cache_scheme.strategies: {exc}")
    facts.hand.append("compressed_tensors.kv_cache_scheme: symmetric / on_violation / auto_dtype hand-written")


# =================================================================================================
# SGLang
# =================================================================================================

SQ = "sglang/srt/layers/quantization/"
S_MC = "sglang/srt/configs/model_config.py"
S_MESSAGES: dict[str, tuple[Any, ...]] = {
    "method_mismatch": (S_MC, "Quantization method specified in the model config",
                        {"quant_method": "checkpoint_method", "self.quantization": "quantization"}),
    "unknown_method": (S_MC, "Unknown quantization method", {"self.quantization": "quantization",
                                                             "supported_quantization": "supported"}),
    "platform_unsupported": (S_MC, "quantization is currently not supported in ROCm",
                             {"self.quantization": "quantization"}),
    "not_optimized": (S_MC, "quantization is not fully optimized yet", {}, {}, ("quantization",)),
    "compatible_override": (S_MC, "Using CLI-specified quantization", {"self.quantization": "quantization",
                                                                      "quant_method": "checkpoint_method"}),
    "requantization": (S_MC, "Requantizing from quant_method=", {"quant_method": "checkpoint_method",
                                                                 "self.quantization": "quantization"}),
    "marlin_forced_off": (SQ + "gptq/gptq.py", "Detected that the model can run with",
                          {"can_convert": "marlin", "user_quant": "quantization"}),
    "capability_too_low": ("sglang/srt/model_loader/loader.py", "is not supported for the current GPU",
                           {"model_config.quantization": "quantization",
                            "quant_config.get_min_capability()": "min_capability", "capability": "capability"}),
    "act_dtype_unsupported": ("sglang/srt/model_loader/loader.py", "is not supported for quantization method",
                              {"model_config.dtype": "dtype", "model_config.quantization": "quantization",
                               "supported_dtypes": "supported"}),
    "block_static_activations": (SQ + "fp8.py", "The block-wise quantization only supports dynamic",
                                 {"activation_scheme": "activation_scheme"}),
    "fp8_block_not_serialized": (SQ + "fp8.py", "The block-wise quantization only supports fp8-serialized"),
    "mxfp8_block_size": (SQ + "fp8.py", "MXFP8 requires weight_block_size"),
    "scheme_capability_too_low": (SQ + "compressed_tensors/compressed_tensors.py",
                                  "Quantization scheme is not supported for ",
                                  {"min_capability": "min_capability", "capability": "capability"}),
    "ct_no_scheme": (SQ + "compressed_tensors/compressed_tensors.py", "No compressed-tensors compatible scheme"),
    "config_file_missing": ("sglang/srt/model_loader/weight_utils.py", "Cannot find the config file for",
                            {"model_config.quantization": "quantization"}),
    "nvfp4_w4a4_marlin_fallback": (SQ + "compressed_tensors/compressed_tensors.py",
                                   "NVFP4 w4a4 requires compute capability >= 10.0"),
    "ct_wna16_unsupported": (SQ + "compressed_tensors/compressed_tensors.py", "Other method (CompressedTensorsW4A16"),
    "fp8_marlin_weight_only": (SQ + "marlin_utils_fp8.py", "Your GPU does not have native support for FP8"),
    "no_weights": ("sglang/srt/model_loader/loader.py", "Cannot find any model weights with",
                   {"model_name_or_path": "model"}),
    "nvfp4_w4a4_unsupported": (SQ + "compressed_tensors/compressed_tensors.py",
                               "Current platform does not support w4a4 nvfp4 quantization"),
    "kv_fp4_e2m1_deprecated": ("sglang/srt/mem_cache/kv_cache_dtype.py", "--kv-cache-dtype=fp4_e2m1 is deprecated"),
    "awq_unsupported_bits": (SQ + "awq/awq.py", "only 4-bit weight quantization is supported for",
                             {"self.weight_bits": "w_bit"}),
    "modelopt_fp8_algo": (SQ + "modelopt_quant.py", "ModelOptFp8Config only supports regular FP8",
                          {"quant_method": "quant_algo"}),
    "modelopt_unsupported_algo": (SQ + "modelopt_quant.py", "ModelOpt currently only supports: "),
    "modelopt_mixed_algo": (SQ + "modelopt_quant.py", "ModelOptMixedPrecisionConfig only supports MIXED_PRECISION"),
}

# Where SGLang kept a fact in older releases (see V_MOVED): QUANTIZATION_CHOICES and the --kv-cache-dtype
# field were in server_args.py before arg_groups/ (0.5.20).
S_MOVED: dict[str, tuple[str, ...]] = {
    "sglang/srt/arg_groups/choices.py": ("sglang/srt/server_args.py",),
    "sglang/srt/arg_groups/fields/model.py": ("sglang/srt/server_args.py",),
    # awq.py / gptq.py became packages (awq/awq.py, gptq/gptq.py) in 0.5.12-0.5.14
    SQ + "awq/awq.py": (SQ + "awq.py",),
    SQ + "gptq/gptq.py": (SQ + "gptq.py",),
}


def _arg_choices(w: Wheel, rel: str, option: str) -> list[Fact]:
    """The literal ``choices=[...]`` of the ``add_argument(option, ...)`` call in ``rel``."""
    for node in ast.walk(w.tree(rel)):
        if isinstance(node, ast.Call) and _name_of(node.func) == "add_argument" and node.args and \
                isinstance(node.args[0], ast.Constant) and node.args[0].value == option:
            kw = next((k for k in node.keywords if k.arg == "choices"), None)
            if kw is not None and isinstance(kw.value, (ast.List, ast.Tuple)):
                return [Fact(e.value, rel, e.lineno) for e in kw.value.elts
                        if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            raise NotFound(f"{rel}:{node.lineno}: {option} has no literal choices")
    raise NotFound(f"{rel}: no add_argument({option!r})")


def _name_of(node: ast.AST) -> str | None:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None


# Messages whose file row is a template over several literal messages (one per class).
TEMPLATES: dict[str, list[tuple[str, str]]] = {
    "marlin_forced_off": [(SQ + "awq/awq.py", "Detected that the model can run with awq_marlin")],
}

_PLATFORM_CALLS = {"is_cuda": "cuda", "is_npu": "npu", "is_cpu": "cpu", "is_xpu": "xpu", "is_mps": "mps",
                   "_is_gfx95_supported": "rocm_gfx95", "is_hip": "rocm", "is_musa": "musa"}


def _registry(w: Wheel, rel: str) -> tuple[dict[str, tuple[str, Fact]], dict[str, list[str]]]:
    """SGLang's BASE_QUANTIZATION_METHODS on CUDA (name -> class, line) and, per name, the platforms
    whose ``if is_x(): BASE_QUANTIZATION_METHODS.update({...})`` adds it."""
    tree = w.tree(rel)
    cuda: dict[str, tuple[str, Fact]] = {}
    plats: dict[str, list[str]] = {}
    try:
        base, _, _ = w.assigned(rel, "BASE_QUANTIZATION_METHODS")
    except NotFound:  # before 0.4.4: one QUANTIZATION_METHODS dict
        base, _, _ = w.assigned(rel, "QUANTIZATION_METHODS")
    for k, v in dict_items(base, rel):
        cuda[k.value] = (ast.unparse(v), k)
    for node in tree.body:
        if not isinstance(node, ast.If):
            continue
        guards = {_PLATFORM_CALLS[n.func.id] if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                  else _PLATFORM_CALLS[n.id]
                  for n in ast.walk(node.test)
                  if (isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in _PLATFORM_CALLS)
                  or (isinstance(n, ast.Name) and n.id in _PLATFORM_CALLS)}
        for call in ast.walk(node):
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "update" \
                    and call.args and isinstance(call.args[0], ast.Dict):
                for k, v in dict_items(call.args[0], rel):
                    plats.setdefault(k.value, []).extend(sorted(guards))
                    if "cuda" in guards:
                        cuda.setdefault(k.value, (ast.unparse(v), k))
    return cuda, plats


def _s_skeleton_method(mid: str) -> dict[str, Any]:
    return {"id": mid, "config_class": None, "kind": "checkpoint", "min_capability": None,
            "supported_act_dtypes": None, "optimized": False, "notes": "New in this release: review kind, bits, notes.",
            "source": "", "as_of": None}


def sglang(w: Wheel, base: dict[str, Any]) -> Facts:
    facts = Facts()
    facts.commit = _commit(w, "sglang/_version.py")
    facts.skeletons = {
        "methods": _s_skeleton_method,
        "kv_cache_dtypes": lambda i: {"id": i, "mode": "REVIEW", "source": "", "as_of": None},
        "compatible": lambda i: {"id": i, "checkpoint_methods": [], "source": "", "as_of": None},
    }
    base_methods = {m["id"]: m for m in base.get("methods") or []}
    choices_rel = _loc(w, "sglang/srt/arg_groups/choices.py", S_MOVED)
    try:
        choices = w.strings(choices_rel, "QUANTIZATION_CHOICES")
        choices_what = "QUANTIZATION_CHOICES"
    except NotFound:  # before 0.5.2: the literal choices of the --quantization add_argument
        choices_rel = "sglang/srt/server_args.py"
        choices = _arg_choices(w, choices_rel, "--quantization")
        choices_what = "--quantization choices"
    facts.counts["quantization_choices"] = len(choices)
    init = SQ + "__init__.py"
    cuda, plats = _registry(w, init)
    imports = w.imports(init)
    registry_only = [Fact(n, init, f.line) for n, (_, f) in cuda.items() if n not in {c.value for c in choices}]
    facts.member("methods", choices + registry_only, f"{choices_what} / BASE_QUANTIZATION_METHODS")
    vq = w.function(S_MC, "_verify_quantization")
    optimized = w.strings(S_MC, "optimized_quantization_methods", vq)
    rocm = w.strings(S_MC, "rocm_supported_quantization", vq)
    opt = {f.value for f in optimized}
    facts.set("doc", "_", "optimized_allow_list", [f.value for f in optimized], optimized[0],
              "optimized_quantization_methods")
    try:
        requant = w.strings(S_MC, "REQUANTIZATION_METHODS")
        facts.set("doc", "_", "requantization_methods", [f.value for f in requant], requant[0],
                  "REQUANTIZATION_METHODS")
    except NotFound:  # before 0.5.19: no requantization
        facts.set("doc", "_", "requantization_methods", [], Fact([], S_MC, vq.lineno, vq.end_lineno),
                  "no REQUANTIZATION_METHODS in this release")
    facts.set("platform_lists", "rocm", "allowed", [f.value for f in rocm], rocm[0], "rocm_supported_quantization")
    try:
        compat_node, _, _ = w.assigned(S_MC, "compatible_quantization_methods", vq)
        comp = [(k, [literal(v) for v in getattr(node, "elts", [])]) for k, node in dict_items(compat_node, S_MC)]
    except NotFound:  # before 0.4.5: a mismatching --quantization is refused outright
        comp = []
        facts.hand.append("compatible: _verify_quantization has no compatible_quantization_methods in this release")
    facts.member("compatible", [k for k, _ in comp], "compatible_quantization_methods")
    for k, vals in comp:
        facts.set("compatible", k.value, "checkpoint_methods", vals, k, "compatible_quantization_methods")
    cset = {c.value for c in choices}
    for f in choices + registry_only:
        mid = f.value
        b = base_methods.get(mid) or {}
        facts.set("methods", mid, "cli_choice", mid in cset, f,
                  "QUANTIZATION_CHOICES" if mid in cset else "BASE_QUANTIZATION_METHODS")
        if b.get("kind") == "escape_hatch":
            facts.hand.append(f"methods[{mid}]: escape hatch (arg_groups/serving_hook.py) hand-written")
            continue
        facts.set("methods", mid, "registered", mid in cuda, cuda[mid][1] if mid in cuda else f,
                  "BASE_QUANTIZATION_METHODS" if mid in cuda else "")
        facts.set("methods", mid, "optimized", mid in opt, next((o for o in optimized if o.value == mid), optimized[0]),
                  "optimized_quantization_methods")
        if mid in cuda:
            cname, where = cuda[mid]
            if cname not in imports:  # imported from vllm (0.4.x) or defined elsewhere: not read
                facts.set("methods", mid, "config_class", cname, where, "BASE_QUANTIZATION_METHODS")
                for key in ("min_capability", "supported_act_dtypes"):
                    facts.set("methods", mid, key, None, where, "not extracted")
                facts.not_extracted.append(f"methods[{mid}]: {cname} is not defined in this wheel (imported from "
                                           "another package, e.g. vllm): min_capability, activation dtypes and "
                                           "config files not read (left null)")
                continue
            mod, cls = imports[cname]
            facts.set("methods", mid, "config_class", cls, where, "BASE_QUANTIZATION_METHODS")
            _class_facts(w, facts, mid, mod, cls, base_methods.get(mid))
        else:
            facts.hand.append(f"methods[{mid}]: registered only on {', '.join(plats.get(mid, [])) or 'no platform'};"
                              " config class and gates hand-written")
        facts.hand.append(f"methods[{mid}]: kind, bits, weight_type, registered_on, rocm_allowed, scheme_gates, "
                          "weight_only_*, notes hand-written")
    _without_config(w, facts, base, "sglang/srt/model_loader/weight_utils.py",
                    {n: imports[c] for n, (c, _) in cuda.items() if c in imports}, [])
    members = {f.value for f in choices + registry_only}
    for ov in base.get("overrides") or []:
        probes = [p for p in ov.get("probed_as") or [] if p in cuda]
        if not probes or ov["returns"] not in members and ov["returns"] != "checkpoint":
            facts.drops.append(("overrides", ov["id"], f"{ov.get('probed_as')} / '{ov['returns']}' is not a method "
                                "of this release"))
            continue
        cls_name = cuda[probes[0]][0]
        if cls_name not in imports:
            facts.drops.append(("overrides", ov["id"], f"{cls_name} is not defined in this wheel (not read)"))
            facts.not_extracted.append(f"overrides[{ov['id']}]: {cls_name} is not defined in this wheel; whether "
                                       "and when it claims checkpoints is not read")
            continue
        mod, cls = imports[cls_name]
        try:
            path, owner, node = w.method(mod, cls, "override_quantization_method")
        except NotFound:
            facts.drops.append(("overrides", ov["id"], f"{cls} has no override_quantization_method in this release"))
            continue
        facts.hand.append(f"overrides[{ov['id']}]: the condition it fires on is hand-written")
        facts.hand_defs.append((f"overrides[{ov['id']}]", mod, cls, "override_quantization_method"))
        facts.anchor("overrides", ov["id"], Fact(owner, path, node.lineno, node.end_lineno),
                     f"{owner}.override_quantization_method")
    pm = facts.attempt("_parse_modelopt_quant_config", lambda: w.function(S_MC, "_parse_modelopt_quant_config"), dropped=True)
    at: dict[str, int] = {}
    for rw in base.get("rewrites") or []:
        facts.hand.append(f"rewrites[{rw['id']}]: checkpoint_method_prefix, has_nvfp4_layers hand-written; quant_algo "
                          "extracted")
        if pm is not None:
            lines = w.lines(S_MC)
            ln = next((i for i in range(pm.lineno, (pm.end_lineno or pm.lineno) + 1)
                       if f'"quant_method": "{rw["becomes"]}"' in lines[i - 1]), None)
            if ln:
                facts.anchor("rewrites", rw["id"], Fact(rw["becomes"], S_MC, ln), "_parse_modelopt_quant_config")
                at[rw["id"]] = ln
                facts.attempt(f"rewrites[{rw['id']}].quant_algo", lambda rw=rw, ln=ln: _rewrite_algo(
                    w, facts, rw["id"], pm, ln))
        if rw["id"] not in at:
            facts.drops.append(("rewrites", rw["id"], "_parse_modelopt_quant_config does not return "
                                f"quant_method '{rw['becomes']}' in this release"))
    if at:  # the if/elif chain's order: the first branch that matches wins
        facts.orders["rewrites"] = sorted(at, key=lambda r: at[r])
    _marlin_compatible(w, facts)
    if ("marlin_compatible" not in facts.members) and base.get("marlin_compatible"):
        for r in base["marlin_compatible"]:
            facts.drops.append(("marlin_compatible", r["id"], "query_marlin_supported_quant_types / TYPE_MAP not read"))
    _marlin_limits(w, facts, SQ + "marlin_utils.py", base)
    _s_config_rules(w, facts, cuda, imports)
    read = {rid for (sec, rid, _k) in facts.values if sec == "config_rules"}
    for r in base.get("config_rules") or []:
        if r["id"] not in read:
            facts.drops.append(("config_rules", r["id"], "the check it paraphrases is not where the spec reads it"))
            facts.not_extracted.append(f"config_rules[{r['id']}]: not read in this release; whatever check the "
                                       "release makes is not modelled")
    kv_rel = _loc(w, "sglang/srt/arg_groups/fields/model.py", S_MOVED)

    def kv_choices() -> list[Fact]:
        try:
            return _field_choices(w, kv_rel, "kv_cache_dtype")
        except NotFound:  # an add_argument("--kv-cache-dtype", choices=[...]) before the annotated fields
            return _arg_choices(w, "sglang/srt/server_args.py", "--kv-cache-dtype")

    kv = facts.attempt("kv_cache_dtype choices", kv_choices)
    if kv:
        facts.member("kv_cache_dtypes", kv, "--kv-cache-dtype choices")
        facts.counts["kv_cache_dtypes"] = len(kv)
    facts.hand.append("kv_cache_dtypes[*]: mode / storage / capability constraints hand-written "
                      "(mem_cache/kv_cache_dtype.py, arg_groups/kv_cache_hook.py)")
    for a in base.get("auto_kv") or []:
        facts.hand.append(f"auto_kv[{a['id']}]: hand-written")
    ctf = SQ + "compressed_tensors/compressed_tensors.py"
    if not w.exists(ctf):  # before 0.4.4 SGLang served compressed-tensors through vllm's classes
        facts.drops.append(("compressed_tensors", "*", f"{ctf} is not in this wheel"))
        facts.not_extracted.append(f"compressed_tensors: {ctf} is not in this wheel (compressed-tensors checkpoints "
                                   "ran through another package's classes): dispatch table not read")
        _messages(w, facts, base, S_MESSAGES, S_MOVED)
        return facts
    pin = w.metadata["requires"].get("compressed-tensors", "").lstrip("=")
    if pin:
        facts.set("compressed_tensors", "_", "pinned_version", pin,
                  Fact(pin, w.metadata_file, 1), "Requires-Dist")
    facts.hand.append("compressed_tensors.kv_cache_scheme: hand-written (SGLang ignores what it cannot use)")
    facts.hand_defs += [
        ("compressed_tensors.dispatch predicates", ctf, "CompressedTensorsConfig", "_get_scheme_from_parts"),
        ("ModelOpt rewrites", S_MC, "ModelConfig", "_parse_modelopt_quant_config"),
        ("--quantization checks (compatible, requantization, not optimized)", S_MC, "ModelConfig",
         "_verify_quantization"),
        ("kv cache dtype constraints", "sglang/srt/mem_cache/kv_cache_dtype.py", None, "*"),
        ("fp8 Marlin auto-enable", SQ + "fp8_utils.py", None, "can_auto_enable_marlin_fp8"),
    ]
    _ct_dispatch(w, facts, base, ctf, SQ + "compressed_tensors/schemes/__init__.py")
    wna = SQ + "compressed_tensors/schemes/compressed_tensors_wNa16.py"
    bits = facts.attempt("WNA16_SUPPORTED_TYPES_MAP", lambda: _int_keys(w, wna, "WNA16_SUPPORTED_TYPES_MAP"))
    if bits:
        facts.set("ct_weights", "wna16", "num_bits", sorted(f.value for f in bits), bits[0], "WNA16_SUPPORTED_TYPES_MAP")
    ok = any("transform_config" in w.text(n) for n in w.names if n.startswith(SQ) and n.endswith(".py"))
    facts.set("compressed_tensors", "_", "reads_transform_config", ok,
              Fact(ok, ctf, 1), "transform_config is read nowhere under " + SQ if not ok else "")
    _messages(w, facts, base, S_MESSAGES, S_MOVED)
    return facts


def _rewrite_algo(w: Wheel, facts: Facts, rid: str, pm: ast.FunctionDef, ln: int) -> None:
    """The quant_algo test of the ``if`` / ``elif`` branch of ``_parse_modelopt_quant_config`` that
    returns on line ``ln`` (the innermost one that tests a string)."""
    best: tuple[ast.If, str, dict[str, Any]] | None = None
    for node in ast.walk(pm):
        if isinstance(node, ast.If) and any(b.lineno <= ln <= (b.end_lineno or b.lineno) for b in node.body):
            got = _algo_match(node.test)
            if got is not None and (best is None or node.lineno > best[0].lineno):
                best = (node, *got)
    if best is None:
        raise NotFound(f"{S_MC}:{ln}: no quant_algo test above the return")
    node, var, match = best
    if not match.pop("_upper", False) and not _upper_cased(w, S_MC, "ModelConfig", pm, var):
        match["case_sensitive"] = True
    facts.set("rewrites", rid, "quant_algo", match, Fact(match, S_MC, node.lineno), "quant_algo test")


# (requires_marlin, config file, class, is_<kind>_marlin_compatible, the checkpoint fields its TYPE_MAP keys and
# the has_zp argument read, as CheckpointQuant.details records them)
S_MARLIN = {
    "awq": (SQ + "awq/awq.py", "AWQMarlinConfig", "is_awq_marlin_compatible", ["w_bit", "zero_point"]),
    "gptq": (SQ + "gptq/gptq.py", "GPTQMarlinConfig", "is_gptq_marlin_compatible", ["bits", "sym"]),
}


def _marlin_compatible(w: Wheel, facts: Facts, mu: str = SQ + "marlin_utils.py",
                       table: dict[str, tuple[str, str, str, list[str]]] | None = None) -> None:
    """Which (bits, sym / zero_point) ``is_<kind>_marlin_compatible`` accepts: the TYPE_MAP keys whose
    scalar type ``query_marlin_supported_quant_types(has_zp)`` lists (marlin_utils.py)."""
    table = S_MARLIN if table is None else table
    fn = facts.attempt("marlin_compatible", lambda: w.function(mu, "query_marlin_supported_quant_types"), dropped=True)
    if fn is None:
        return
    branch = next((n for n in ast.walk(fn) if isinstance(n, ast.If) and isinstance(n.test, ast.Name)
                   and n.test.id == "has_zp"), None)
    if branch is None:
        facts.review.append(f"marlin_compatible: {mu} query_marlin_supported_quant_types has no 'if has_zp:'")
        return

    def types(nodes: list[ast.stmt]) -> set[str]:
        return {a.attr for b in nodes for a in ast.walk(b) if isinstance(a, ast.Attribute)
                and ast.unparse(a.value) == "scalar_types"}

    supported = {True: types(branch.body), False: types(branch.orelse)}
    kinds: list[Fact] = []
    for kind, (rel, cls, check, _) in table.items():
        rel = _loc(w, rel, S_MOVED)
        try:
            tm, ln, end = w.assigned(rel, "TYPE_MAP", w.find_class(rel, cls)[1])
            chk = w.function(rel, check, cls)
        except NotFound as exc:
            facts.review.append(f"marlin_compatible[{kind}]: {exc}")
            continue
        call = next((n for n in ast.walk(chk) if isinstance(n, ast.Call)
                     and ast.unparse(n.func).endswith("check_marlin_supported")), None)
        if not isinstance(tm, ast.Dict) or call is None:
            facts.review.append(f"marlin_compatible[{kind}]: TYPE_MAP or the check_marlin_supported call not found")
            continue
        zp = next((k for k in call.keywords if k.arg == "has_zp"), None)
        allowed: list[list[Any]] = []
        for k, v in zip(tm.keys, tm.values, strict=True):
            key = literal(k) if k is not None else None
            t = v.attr if isinstance(v, ast.Attribute) else None
            if key is None or t is None:
                continue
            base_key = list(key) if isinstance(key, (list, tuple)) else [key]
            if zp is None:  # has_zp defaults to False; the key already holds every field
                if t in supported[False]:
                    allowed.append(base_key)
            else:
                allowed += [[*base_key, z] for z in (True, False) if t in supported[z]]
        kinds.append(Fact(kind, rel, call.lineno, call.end_lineno))
        facts.set("marlin_compatible", kind, "allowed", allowed, Fact(allowed, rel, ln, end), f"{cls}.TYPE_MAP")
        facts.anchor("marlin_compatible", kind, Fact("", mu, branch.lineno, branch.end_lineno),
                     "query_marlin_supported_quant_types: with / without zero points")
    facts.member("marlin_compatible", kinds, "check_marlin_supported")
    facts.skeletons["marlin_compatible"] = lambda i: {"id": i, "fields": list(table[i][3]), "allowed": [],
                                                      "source": "", "as_of": None}


# config rules SGLang's config classes check while they are built: (file, class, function, the value
# checked, checkpoint family, the CheckpointQuant.details field it is, message id)
S_CONFIG_RULES = {
    "awq-weight-bits": (SQ + "awq/awq.py", "AWQConfig", "__init__", "self.weight_bits", "awq", "w_bit",
                        "awq_unsupported_bits"),
    "modelopt-fp8-algo": (SQ + "modelopt_quant.py", "ModelOptFp8Config", "from_config", "quant_method", "modelopt",
                          "quant_algo", "modelopt_fp8_algo"),
    "modelopt-fp4-algos": (SQ + "modelopt_quant.py", "ModelOptFp4Config", "from_config", "quant_method", "modelopt",
                           "quant_algo", "modelopt_unsupported_algo"),
    "modelopt-mixed-algo": (SQ + "modelopt_quant.py", "ModelOptMixedPrecisionConfig", "from_config", "quant_algo",
                            "modelopt", "quant_algo", "modelopt_mixed_algo"),
}


def _s_config_rules(w: Wheel, facts: Facts, cuda: dict[str, tuple[str, Fact]],
                    imports: dict[str, tuple[str, str]]) -> None:
    rows: list[Fact] = []
    for rid, (rel, cls, fname, var, *_) in S_CONFIG_RULES.items():
        rel = _loc(w, rel, S_MOVED)
        try:
            fn = w.function(rel, fname, cls)
        except NotFound as exc:
            facts.review.append(f"config_rules[{rid}]: {exc}")
            continue
        got = _guard_values(fn, var)
        if got is None:
            facts.review.append(f"config_rules[{rid}]: {rel} {cls}.{fname} has no 'if {var} != ...: raise'")
            continue
        values, node = got
        methods = [n for n, (c, _) in cuda.items() if c in imports and imports[c][1] == cls]
        at = Fact(values, rel, node.lineno, node.end_lineno)
        rows.append(Fact(rid, rel, node.lineno, node.end_lineno))
        facts.set("config_rules", rid, "allowed", [[v] for v in values], at, f"{cls}.{fname}")
        facts.set("config_rules", rid, "methods", methods, next(f for n, (_, f) in cuda.items() if n == methods[0])
                  if methods else at, f"BASE_QUANTIZATION_METHODS -> {cls}")
    facts.member("config_rules", rows, "")  # the same lines as `allowed`, cited with the class below
    facts.skeletons["config_rules"] = lambda i: {
        "id": i, "methods": [], "family": S_CONFIG_RULES[i][4], "fields": [S_CONFIG_RULES[i][5]], "allowed": [],
        "message": S_CONFIG_RULES[i][6], "source": "", "as_of": None}


def _field_choices(w: Wheel, rel: str, field_name: str) -> list[Fact]:
    for node in ast.walk(w.tree(rel)):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == field_name:
            for kw in ast.walk(node.annotation):
                if isinstance(kw, ast.keyword) and kw.arg == "choices":
                    return [Fact(e.value, rel, e.lineno) for e in getattr(kw.value, "elts", [])
                            if isinstance(e, ast.Constant)]
    raise NotFound(f"{rel}: no choices for {field_name}")


SPECS: dict[str, Callable[[Wheel, dict[str, Any]], Facts]] = {"vllm": vllm, "sglang": sglang}
__all__ = ["SPECS", "Facts", "message_text"]
