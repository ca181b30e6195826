"""Every option an engine release's server parser accepts, and how that parser reads a spelling.

``data/flags/<engine>-<version>.yaml`` (:class:`FlagVocabulary`) lists each option string
``vllm serve`` / SGLang's ``launch_server`` registers, extracted from the release's wheel by
``tools/extract_flags.py`` with the file and line that registers it. :meth:`FlagVocabulary.lookup`
answers what the engine's argparse parser does with a spelling found in a deployment file, the way
argparse does it (Python's ``ArgumentParser._parse_optional``): an option string it registered is
read; with ``allow_abbrev`` (argparse's default, which neither engine turns off) a unique prefix of a
long option is that option and a prefix of several is "ambiguous option: --x could match ..."; any
other spelling ends the start-up with "unrecognized arguments: --x". ``BooleanOptionalAction``
options also register ``--no-X`` (and, in vLLM releases with ``EnableDisableAction``, ``--enable-x``
pairs with ``--disable-x``).

The spelling given to :meth:`lookup` is the one the engine matches: the deployment readers already
apply vLLM's underscore rewrite (``--max_model_len`` -> ``--max-model-len``) and split ``--x=value``.

What a release's launcher does to the command line before argparse sees it is its parser sidecar
(``data/flags/parser/<engine>-<version>.yaml``, :class:`LauncherFacts`): vLLM's dotted JSON shorthand
(``-cc.mode=3``, ``--compilation-config.mode 3``: the option before the first dot gets ``{"mode": 3}``, read
by argparse as any other spelling, so ``-cc`` must be registered), what ``-O`` becomes per release (a
``-O.level=3`` key of ``--compilation-config`` up to 0.11, ``-O.x`` = ``-cc.x`` in 0.12, a value of
``--optimization-level`` from 0.13), the ``--config FILE`` it reads (YAML keys become options) and the
environment variables it declares.

Pure: the tables are values (``catalog.flag_vocabulary`` reads them).
"""

import bisect
from collections.abc import Iterable, Sequence
from datetime import date
from functools import cached_property
from typing import Literal

from ..results import Out, Strict, record
from .flags import engine_label, is_boolean
from .kernels import WheelSource

FLAG_DATA_VERSION = 1
OptionKind = Literal["value", "flag", "negatable"]


class ParserFacts(Strict):
    """How the release's parser is built and how it reads a spelling, each with its source line."""

    prog: str  # the name the engine's argparse errors start with ("vllm serve: error: ...")
    entry: str  # file:line of the function that builds the parser
    underscores: str | None = None  # file:line where --a_b is read as --a-b (None: not rewritten)
    abbreviations: bool = True  # argparse allow_abbrev: a unique prefix of a long option is that option
    abbreviations_source: str
    negation: str | None = None  # file:line of the BooleanOptionalAction use (--no-X)
    enable_disable: bool = False  # --enable-x also accepts --disable-x and the reverse (vLLM EnableDisableAction)
    short_o: str | None = None  # file:line where -O3 / -O=3 / -O 3 become --optimization-level (vLLM)
    dotted_json: str | None = None  # file:line where --x.key value becomes --x '{"key": value}' (vLLM)
    # the `python -m` server modules of this engine the wheel holds (those quantadvise reads launches of);
    # empty: not recorded
    modules: tuple[str, ...] = ()


class DottedJson(Strict):
    source: str  # file:line of the loop that rewrites `-x.key value` into `-x '{"key": value}'`
    prefix: str  # the arguments it rewrites start with this ("-": `-cc.x` and `--compilation-config.x` alike)
    list_suffix: str | None = None  # file:line where `-x.key+ a,b` gives a list


class ShortO(Strict):
    source: str  # file:line of the -O rewrite
    becomes: str  # "--optimization-level" (0.12 on), or "-O.level={level}" / "-O.mode={mode}" (a key of -O's JSON)
    dotted: bool  # -O.key is a dotted key of the compilation config (up to 0.12), not a value of -O


class ConfigFile(Strict):
    source: str  # file:line where `--config FILE` is read
    format: Literal["yaml"]


class EnvVars(Strict):
    source: str  # the file (and line) that declares them
    names: dict[str, int | str]  # name -> its line (vLLM: vllm/envs.py) or file:line (SGLang)


class LauncherFacts(Strict):
    """How one release's launcher reads a command line beyond its option list (the parser sidecar,
    ``data/flags/parser/<engine>-<version>.yaml``, written by tools/extract_flags.py)."""

    schema_version: int
    engine: Literal["vllm", "sglang"]
    version: str
    source: WheelSource
    as_of: date
    dotted_json: DottedJson | None = None
    short_o: ShortO | None = None
    config_file: ConfigFile | None = None
    not_extracted: tuple[str, ...] = ()
    json_options: tuple[tuple[str, ...], ...] = ()  # the options whose value is parsed as JSON (all spellings)
    env_vars: EnvVars | None = None


class OptionRow(Strict):
    names: tuple[str, ...]  # every option string of one add_argument call
    kind: OptionKind  # value: takes an argument; flag: takes none; negatable: BooleanOptionalAction
    source: str  # file:line of the add_argument call or the dataclass field
    # read only when the server is started this way, which takes the option (spelled exactly) out of argv
    # before the parser runs (SGLang's `sglang serve --model-type`); None: the parser registers it
    launcher: str | None = None


class Lookup(Out):
    """What the parser does with one spelling."""

    verdict: Literal["known", "abbreviation", "ambiguous", "unknown", "misread"]
    option: str | None = None  # the option string it is read as (known, abbreviation, misread)
    matches: tuple[str, ...] = ()  # ambiguous: every option it could be; unknown: the closest spellings
    source: str | None = None  # file:line of the option it is read as (misread: of the rewrite that misreads it)
    # how the launcher rewrote the spelling before argparse read it ("-cc.mode sets the key mode of
    # --compilation-config's JSON"); misread: why the value it gets cannot be read
    via: str | None = None

    def engine_error(self, prog: str, spelled: str) -> str | None:
        """The line argparse ends the start-up with, None when the spelling is read."""
        if self.verdict == "misread":
            return None  # the option's type refuses the value (its own words are not on file)
        if self.verdict == "ambiguous":
            return f"{prog}: error: ambiguous option: {spelled} could match {', '.join(self.matches)}"
        if self.verdict == "unknown":
            return f"{prog}: error: unrecognized arguments: {spelled}"
        return None


_MEMO_SIZE = 65_536  # spellings a vocabulary remembers (a file of more distinct options starts it afresh)
_UNKNOWN = Lookup(verdict="unknown")  # an unknown spelling without suggestions: one object for every one


HELP = ("-h", "--help")  # argparse's own option strings (add_help): registered after every row's


def registered_names(rows: Iterable[tuple[Sequence[str], str, str | None]], enable_disable: bool) -> dict[str, int]:
    """Every option string a parser registers -> the index of its row, from each row's ``(names, kind,
    launcher)`` in file order: a row's names, a negatable option's ``--no-X`` and, where the parser pairs them
    (``enable_disable``), ``--enable-X`` / ``--disable-X`` inverses; the first row to register a string keeps
    it; a row the launcher reads (``launcher`` set) registers nothing; argparse's own ``-h`` / ``--help`` last,
    as -1 (no row)."""
    out: dict[str, int] = {}
    for i, (names, kind, launcher) in enumerate(rows):
        if launcher is not None:
            continue
        for name in names:
            out.setdefault(name, i)
            if kind != "negatable" or not name.startswith("--"):
                continue
            out.setdefault("--no-" + name[2:], i)
            if enable_disable:
                for a, b in (("--enable-", "--disable-"), ("--disable-", "--enable-")):
                    if name.startswith(a):
                        out.setdefault(b + name[len(a):], i)
    for name in HELP:
        out.setdefault(name, -1)
    return out


@record(slots=True)
class OptionNames:
    """What a command writer reads of a release's option list (``engines.flags.OptionSet``): the release and
    every option string its parser registers (:meth:`FlagVocabulary.registered`'s keys), read without making
    the list's rows (``catalog.option_names``)."""

    version: str
    registered: frozenset[str]


class FlagVocabulary(Strict):
    """One engine release's server options (``data/flags/<engine>-<version>.yaml``)."""

    schema_version: int
    engine: Literal["vllm", "sglang"]
    version: str
    source: WheelSource  # the same stamp as the release's kernel table
    as_of: date
    parser: ParserFacts
    options: tuple[OptionRow, ...]
    not_extracted: tuple[str, ...] = ()  # what the extractor saw and could not read (said in the file)
    launcher: LauncherFacts | None = None  # the parser sidecar (catalog.flag_vocabulary joins it)

    @cached_property
    def json_options(self) -> dict[str, str]:
        """Every spelling of an option whose value is parsed as JSON -> the option's first spelling."""
        return {n: names[0] for names in (self.launcher.json_options if self.launcher else ()) for n in names}

    @cached_property
    def registered(self) -> dict[str, OptionRow]:
        """Every option string the parser registers -> its row (``--no-X`` and the enable/disable
        inverses included, as argparse registers them), plus argparse's own ``-h`` / ``--help``."""
        rows = self.options
        out: dict[str, OptionRow] = {
            name: rows[i] for name, i in registered_names(((r.names, r.kind, r.launcher) for r in rows),
                                                          self.parser.enable_disable).items() if i >= 0}
        help_row = OptionRow.model_construct(names=HELP, kind="flag", source="argparse (add_help)")
        for name in HELP:
            out.setdefault(name, help_row)
        return out

    @cached_property
    def _sorted(self) -> list[str]:
        return sorted(self.registered)

    def _starting(self, prefix: str) -> list[str]:
        """The registered option strings that start with ``prefix``, sorted (a binary search: a line of
        300,000 unknown options is 300,000 quick lookups, not a scan of every option for each)."""
        names = self._sorted
        i = bisect.bisect_left(names, prefix)
        out = []
        while i < len(names) and names[i].startswith(prefix):
            out.append(names[i])
            i += 1
        return out

    def lookup(self, spelled: str, suggest: bool = True, launcher: str | None = None) -> Lookup:
        """What the parser does with ``spelled`` (an option string as the engine matches it), the server
        started by ``launcher`` (``"sglang serve"``; None: the module's own entry point); ``suggest``
        False leaves out the closest spellings of an unknown one (a few ms each). The launcher's rewrites
        come first (:meth:`_rewritten`: ``-O3``, ``-cc.mode``), then argparse: an exact option string before
        any prefix (SGLang 0.5.7's ``--cuda-graph-max-bs`` is its own option, not a prefix of
        ``--cuda-graph-max-bs-decode``)."""
        if launcher is not None:  # only then: a scan of every option per spelling was 300,000 x 500 steps
            for own in self.options:
                if own.launcher == launcher and spelled in own.names:
                    return Lookup(verdict="known", option=spelled, source=own.source)
        elif not suggest:  # a reader asks twice of each option (is it a table flag's prefix? does it take a value?)
            memo = self._memo
            got = memo.get(spelled)
            if got is None:
                if len(memo) >= _MEMO_SIZE:
                    memo.clear()
                got = memo[spelled] = self._read(spelled, False)
            return got
        return self._read(spelled, suggest)

    @cached_property
    def _memo(self) -> dict[str, Lookup]:
        """:meth:`lookup`'s answers without suggestions, per spelling (:data:`_MEMO_SIZE` at most)."""
        return {}

    def _read(self, spelled: str, suggest: bool) -> Lookup:
        """:meth:`lookup` for the module's own entry point."""
        if self.launcher is not None:  # only a launcher rewrites (a call per spelling saved: 300,000-option lines)
            rewritten = self._rewritten(spelled, suggest)
            if rewritten is not None:
                return rewritten
        if self.launcher is None and self.parser.dotted_json and spelled.startswith("--") and "." in spelled:
            spelled = spelled.split(".", 1)[0]  # --compilation-config.mode 3: the option before the first dot
        if self.launcher is None and self.parser.short_o and spelled.startswith("-O") \
                and "--optimization-level" in self.registered:
            return Lookup(verdict="known", option="--optimization-level", source=self.parser.short_o)
        return self._argparse(spelled, suggest)

    def _argparse(self, spelled: str, suggest: bool) -> Lookup:
        """argparse's own reading (``_parse_optional``): an option string it registered, else a unique prefix
        of a long option (allow_abbrev), else ambiguous or unknown."""
        known = self.registered
        row = known.get(spelled)
        if row is not None:
            return Lookup(verdict="known", option=spelled, source=row.source)
        hits: list[str] = []
        if spelled.startswith("--"):  # argparse._get_option_tuples: long prefixes only with allow_abbrev
            if self.parser.abbreviations and len(spelled) > 2:
                hits = self._starting(spelled)
        elif spelled.startswith("-") and len(spelled) > 1:  # -q8 is -q 8; -t a prefix of -tp (always allowed)
            hits = sorted({*self._starting(spelled), *([spelled[:2]] if spelled[:2] in known else [])})
        if len(hits) > 1:
            return Lookup(verdict="ambiguous", matches=tuple(hits))
        if len(hits) == 1:
            hit = hits[0]
            verdict: Literal["known", "abbreviation"] = "known" if hit == spelled[:2] else "abbreviation"
            return Lookup(verdict=verdict, option=hit, source=known[hit].source)
        return Lookup(verdict="unknown", matches=tuple(closest(spelled, known))) if suggest else _UNKNOWN

    def _rewritten(self, spelled: str, suggest: bool) -> Lookup | None:
        """How the release's launcher rewrites ``spelled`` before argparse (vLLM's FlexibleArgumentParser,
        per the parser sidecar); None when it leaves it alone. ``-O<x>``: ``--optimization-level <x>`` (0.12
        on) or the ``level`` / ``mode`` key of ``-O``'s compilation config (up to 0.11); ``-x.key``: the key
        ``key`` of option ``-x``'s JSON value, ``-x`` read by argparse (exact, else a unique prefix)."""
        lf = self.launcher
        if lf is None:
            return None
        o = lf.short_o
        if o is not None and spelled == "-O":  # `-O 3`: -O's own option (up to 0.11), else --optimization-level
            if "-O" in self.registered or "--optimization-level" not in self.registered:
                return None
            return Lookup(verdict="known", option="--optimization-level", source=o.source,
                          via="-O N is --optimization-level N")
        if o is not None and spelled.startswith("-O") and not spelled.startswith("--"):
            dotted_key = spelled[2] == "."
            if dotted_key and o.dotted:  # -O.mode: a key of the compilation config (-cc.mode in 0.12)
                target = self.json_options.get("-O") or self.json_options.get("-cc") or "--compilation-config"
                return Lookup(verdict="known", option=target, source=o.source,
                              via=f"{spelled} sets the key {spelled[3:]} of {target}")
            if dotted_key:  # 0.13 on: -O.mode=3 is --optimization-level '.mode=3', not a level
                return Lookup(verdict="misread", option="--optimization-level", source=o.source,
                              via=f"{engine_label(self.engine)} {self.version} reads {spelled}... as --optimization-level "
                                  f"'{spelled[2:]}...' ({o.source}), not as a key of the compilation config: write "
                                  f"-cc{spelled[2:]}")
            if o.becomes == "--optimization-level":
                row = self.registered.get("--optimization-level")
                return Lookup(verdict="known", option="--optimization-level", source=row.source if row else o.source,
                              via=f"{spelled} is --optimization-level {spelled[2:].lstrip('=')}")
            target = self.json_options.get("-O", "--compilation-config")
            return Lookup(verdict="known", option=target, source=o.source,
                          via=f"{spelled} sets {o.becomes.split('=')[0][3:]} of {target}")
        d = lf.dotted_json
        if d is not None and spelled.startswith(d.prefix) and "." in spelled and spelled != "-":
            key, _, rest = spelled.removesuffix("+").partition(".")
            hit = self._argparse(key, suggest)
            if hit.verdict in ("known", "abbreviation") and hit.option is not None:
                return hit.model_copy(update={"via": f"{spelled} sets the key {rest} of {hit.option}'s JSON value "
                                                     f"({d.source})"})
            return hit
        return None


def closest(spelled: str, names: dict[str, OptionRow] | list[str], n: int = 3) -> list[str]:
    """The registered long options closest to a misspelling (difflib's ratio, cut-off 0.75)."""
    import difflib

    pool = [k for k in names if k.startswith("--")]
    return difflib.get_close_matches(spelled, pool, n=n, cutoff=0.75)


class OptionChange(Out):
    option: str
    before: str  # what the older release does with it: "value", "flag", "negatable", or "refused"
    after: str  # the newer release: a kind, "refused", "ambiguous", or "read as --x" (now a prefix of one option)


class OptionDiff(Out):
    """Two releases' server options: what a command written for the first finds in the second."""

    a: str
    b: str
    a_count: int  # options (add_argument calls) each registers
    b_count: int
    added: list[str]  # option strings only the second registers
    removed: list[OptionChange]  # option strings the first registers and the second does not read as themselves
    kind_changed: list[OptionChange]


def compare(a: FlagVocabulary, b: FlagVocabulary, label_a: str, label_b: str) -> OptionDiff:
    """What ``b`` does with every option string ``a`` declares, and what ``b`` adds (declared names,
    not the ``--no-X`` / ``--disable-x`` spellings each derives)."""
    kinds_a = {n: r.kind for r in a.options for n in r.names}
    kinds_b = {n: r.kind for r in b.options for n in r.names}
    removed, changed = [], []
    for name, kind in kinds_a.items():
        if name in kinds_b:
            if kinds_b[name] != kind:
                changed.append(OptionChange(option=name, before=kind, after=kinds_b[name]))
            continue
        hit = b.lookup(name, suggest=False)
        if hit.verdict == "known":  # still registered, now as a derived spelling (an enable/disable pair)
            continue
        after = {"unknown": "refused", "ambiguous": "ambiguous"}.get(hit.verdict, f"read as {hit.option}")
        removed.append(OptionChange(option=name, before=kind, after=after))
    added = sorted(n for n in kinds_b if n not in a.registered)
    return OptionDiff(a=label_a, b=label_b, a_count=len(a.options), b_count=len(b.options), added=added,
                      removed=sorted(removed, key=lambda c: c.option), kind_changed=sorted(changed, key=lambda c: c.option))


def takes_no_value(vocab: FlagVocabulary | None, name: str, hit: Lookup | None = None) -> bool:
    """Whether an option outside the flag table is given without a value (so the next token is not
    read as one): its kind in the release's option list ``vocab`` (``artifacts.launch._options``: data/flags/; the newest
    release on file when the image names none, or one not on file); an option no list registers falls back to
    ``engines.flags.is_boolean`` (options of older releases: ``--use-v2-block-manager``). ``hit``: ``vocab``'s
    lookup of ``name``, where the caller has it."""
    if vocab is not None:
        if hit is None:
            hit = vocab.lookup(name, suggest=False)
        if "." in name and hit.verdict in ("known", "misread") and hit.via is not None:
            return False  # -cc.mode 3: the launcher takes the next word as the key's value
        if hit.verdict in ("known", "abbreviation") and hit.option is not None:
            if not name.startswith("--") and hit.option != name and name != "-O":
                return True  # -q8, -O3: the value is attached
            row = vocab.registered.get(hit.option)
            return row is None or row.kind != "value"
    return is_boolean(name)
