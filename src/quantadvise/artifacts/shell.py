"""A small POSIX-shell lexer with line numbers and parameter expansion.

Shell text -> simple commands, each a list of :class:`Word` s that know their file line: line
continuations, quoting, comments, heredocs, redirections, ``$VAR`` / ``${VAR:-default}`` resolved
from earlier assignments and defaults (an unresolved reference stays visible, e.g. ``${MODEL}``, and
is listed on the word). Words are the common currency of every reader in this package. Pure. Expansion
draws on the file's :class:`~quantadvise.artifacts.budget.Budget`: past it a reference stays as written.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Mapping, Sequence

from ..errors import ConfigError
from ..results import record
from .budget import MAX_DEPTH, MAX_WORDS, Budget, current


@record
class Word:
    text: str
    line: int
    unresolved: tuple[str, ...] = ()
    assign: bool = False  # NAME=value in assignment position (not word-split)


class Unknown(tuple[str, ...]):
    """The value of a variable set from something unresolvable (``$(cmd)``, ``$1``)."""


class Array(tuple[Word, ...]):
    """A bash array assigned in the script (``ARGS=(--max-model-len 8192 -tp 2)``): its words."""


EnvValue = str | Unknown | Array | None
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SPECIAL = "@*#?$!-0123456789"
_BLANKS = re.compile(r"[ \t\r]+")
_PLAIN = re.compile(r"[^\s\\'\"$`<>&;|()=#]+")  # characters the lexer takes as they are, in an unquoted word


# --- a small POSIX-shell lexer with line numbers and parameter expansion --------------------------


class _Shell:
    """Split shell text into simple commands of :class:`Word` s, expanding variables.

    ``line_map[i]`` is the file line of the text's i-th physical line. ``expand=False`` only
    honours quoting (compose's ``command:`` string is split, not run by a shell).
    """

    _RESERVED = frozenset({"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "!", "{", "}",
                           "time", "esac", "exec", "nohup"})
    _DECLARE = frozenset({"export", "declare", "typeset", "readonly", "local"})

    def __init__(self, text: str, file: str, line_map: Sequence[int], env: dict[str, EnvValue] | None = None,
                 *, expand: bool = True, fragment: bool = False, budget: Budget | None = None, depth: int = 0):
        self.budget = budget if budget is not None else current(file)
        self.depth = depth  # how deep inside other expansions this text is (${A:-...}, eval, an array)
        self.s = text
        self.file = file
        self.line_map = list(line_map) or [1]
        self.env: dict[str, EnvValue] = env if env is not None else {}
        self.expand = expand
        self.fragment = fragment
        self.i = 0
        self.phys = 0
        self.commands: list[list[Word]] = []
        self._words: list[Word] = []
        self._reset_word()
        self._skip_next = False
        self._heredocs: deque[tuple[str, bool]] = deque()
        self._want_heredoc: bool | None = None

    # line bookkeeping
    @property
    def line(self) -> int:
        return self.line_map[min(self.phys, len(self.line_map) - 1)]

    def _advance_over(self, chunk: str) -> None:
        self.phys += chunk.count("\n")

    def _err(self, msg: str) -> ConfigError:
        return ConfigError(f"{self.file}: line {self.line}: {msg}")

    # word assembly
    def _reset_word(self) -> None:
        self._parts: list[str] = []
        self._unres: list[str] = []
        self._started = False
        self._literal = True  # only unquoted literal characters so far (for NAME= detection)
        self._assign = False
        self._eq_seen = False  # a '=' was met: NAME= is decided once per word (no re-join per '=')
        self._len = 0  # characters the word's expansions added (its allowance: budget.MAX_VALUE_CHARS)
        self._wline = 0

    def _start(self) -> None:
        if not self._started:
            self._started = True
            self._wline = self.line

    def _finish(self) -> None:
        if not self._started:
            return
        if self._want_heredoc is None and not self._skip_next and not self.budget.words(len(self._words), self._wline):
            self._reset_word()  # past the words a command may have: not even built
            return
        parts, unres = self._parts, self._unres
        w = Word(parts[0] if len(parts) == 1 else "".join(parts), self._wline,
                 tuple(dict.fromkeys(unres)) if unres else (), self._assign)
        self._reset_word()
        if self._want_heredoc is not None:
            self._heredocs.append((w.text, self._want_heredoc))
            self._want_heredoc = None
            return
        if self._skip_next:
            self._skip_next = False
            return
        self._words.append(w)

    def _end_command(self) -> None:
        self._finish()
        words, self._words = self._words, []
        self._skip_next = False
        if words:
            self._process(words)

    # parsing
    def run(self) -> list[list[Word]]:
        s, n = self.s, len(self.s)
        tick = self.budget.tick
        plain = _PLAIN.match
        while self.i < n:
            tick()
            m = plain(s, self.i)
            if m is not None:  # a run of ordinary characters (the hot path): as the last branch below takes it
                self._start()
                run = m.group(0)
                self._parts.append(run)
                self.i = m.end()
                tick(len(run))
                continue
            c = s[self.i]
            if c == "\\":
                if self.i + 1 < n and s[self.i + 1] == "\n":
                    self.i += 2
                    self.phys += 1
                    continue
                self._start()
                self._literal = False
                if self.i + 1 < n:
                    self._parts.append(s[self.i + 1])
                self.i += 2
                continue
            if c == "'":
                self._start()
                self._literal = False
                j = s.find("'", self.i + 1)
                if j < 0:
                    raise self._err("unterminated single quote")  # self.line is still the opening line
                chunk = s[self.i + 1:j]
                self._parts.append(chunk)
                self._advance_over(chunk)
                self.i = j + 1
                continue
            if c == '"':
                self._start()
                self._literal = False
                self._double_quoted()
                continue
            if c == "$" and self.expand:
                self._dollar(quoted=False)  # starts a word only if the expansion yields text
                continue
            if c == "`" and self.expand:
                self._start()
                self._backtick()
                continue
            if self.fragment:
                self._start()
                self._parts.append(c)
                self._advance_over(c)
                self.i += 1
                continue
            if c == "\n":
                self._end_command()
                if self.budget.full:
                    break  # the file's words are spent: the rest of it is not read (every word would be dropped)
                self.i += 1
                self.phys += 1
                self._read_heredoc_bodies()
                continue
            if c in " \t\r":
                self._finish()
                if self.budget.full:
                    break
                self.i = _BLANKS.match(s, self.i).end()  # type: ignore[union-attr]  # c is one
                continue
            if c == "#" and not self._started:
                j = s.find("\n", self.i)
                self.i = n if j < 0 else j
                continue
            if c in "<>" or (c == "&" and s.startswith("&>", self.i)):
                self._redirect()
                continue
            if c == "(" and self.expand and self._started and self._literal \
                    and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*\+?=", "".join(self._parts)):
                self._array()
                continue
            if c in ";&|()":
                self._end_command()
                self.i += 1
                continue
            self._start()
            if c == "=" and self._literal and not self._eq_seen:
                self._eq_seen = True
                self._assign = _NAME.fullmatch("".join(self._parts)) is not None
            m = _PLAIN.match(s, self.i)  # a run of ordinary characters at once (the hot path)
            run = m.group(0) if m else c
            self._parts.append(run)
            self.i += len(run)
            tick(len(run))
        if self.fragment:
            self._finish()
            words, self._words = self._words, []
            if words:
                self.commands.append(words)
        else:
            self._end_command()
        return self.commands

    def _array(self) -> None:
        """``NAME=( words )`` / ``NAME+=( words )``: a bash array, kept for ``"${NAME[@]}"``."""
        target = "".join(self._parts)
        name, append = target.rstrip("+="), target.endswith("+=")
        j = self._matching(self.i + 1, "(", ")")
        body = self.s[self.i + 1:j]
        if self.depth >= MAX_DEPTH:
            self.budget.expand(f"{name}=(...)", 0, self.depth + 1, self.line)
            self.env[name] = Unknown(("(...)",))
        else:
            sub = _Shell(body, self.file, self.line_map[self.phys:], self.env, expand=True, budget=self.budget,
                         depth=self.depth + 1)
            words = [w for cmd in sub.run() for w in cmd]
            old = self.env.get(name)
            if append and isinstance(old, Array):
                if not self.budget.expand(f"{name}+=(...)", sum(len(w.text) for w in old), self.depth, self.line):
                    words = []
                words = [*old, *words]
            if len(words) > MAX_WORDS:  # an array is at most a command's words
                self.budget.words(MAX_WORDS, self.line)
                words = words[:MAX_WORDS]
            self.env[name] = Array(words)
        self._advance_over(body)
        self.i = j + 1
        self._reset_word()  # the assignment is not a word of the command

    def _array_words(self, name: str, index: str, source: str) -> bool:
        """Emit ``${NAME[@]}`` / ``${NAME[*]}`` (every element a word) or ``${NAME[n]}``; False when
        NAME is no array this script assigned (the reference is then unresolved)."""
        value = self.env.get(name)
        if not isinstance(value, Array):
            return False
        items = list(value) if index in "@*" else list(value[int(index):int(index) + 1]) \
            if len(index) < 10 else []
        if not self.budget.expand(source, sum(len(w.text) for w in items), self.depth, self.line):
            return False
        for k, w in enumerate(items):
            if k > 0 or (self._started and "".join(self._parts)):
                self._finish()
            self._start()
            self._wline = w.line  # a flag from the array is located where the array writes it
            self._literal = False
            self._unres.extend(w.unresolved)
            self._parts.append(w.text)
        return True

    def _double_quoted(self) -> None:
        s, n = self.s, len(self.s)
        self.i += 1
        opened = self.line
        while True:
            if self.i >= n:
                raise ConfigError(f"{self.file}: line {opened}: unterminated double quote")
            c = s[self.i]
            if c == '"':
                self.i += 1
                return
            if c == "\\" and self.i + 1 < n and s[self.i + 1] in '$`"\\\n':
                if s[self.i + 1] == "\n":
                    self.phys += 1
                else:
                    self._parts.append(s[self.i + 1])
                self.i += 2
                continue
            if c == "$" and self.expand:
                self._dollar(quoted=True)
                continue
            if c == "`" and self.expand:
                self._backtick()
                continue
            if c == "\n":
                self.phys += 1
            self._parts.append(c)
            self.i += 1

    def _backtick(self) -> None:
        j = self.s.find("`", self.i + 1)
        if j < 0:
            raise self._err("unterminated backquote")
        chunk = self.s[self.i:j + 1]
        self._parts.append(chunk)
        self._unres.append("$(...)")
        self._advance_over(chunk)
        self.i = j + 1

    def _matching(self, start: int, open_: str, close: str) -> int:
        """Index of the ``close`` matching the ``open_`` before ``start`` (quotes skipped)."""
        s, depth, i = self.s, 1, start
        while i < len(s):
            c = s[i]
            if c == "\\":
                i += 2
                continue
            if c == "'":
                j = s.find("'", i + 1)
                if j < 0:
                    break
                i = j + 1
                continue
            if c == '"':
                i += 1
                while i < len(s) and s[i] != '"':
                    i += 2 if s[i] == "\\" else 1
                i += 1
                continue
            if c == open_:
                depth += 1
            elif c == close:
                depth -= 1
                if depth == 0:
                    return i
            i += 1
        raise self._err(f"unterminated '{open_}' ... '{close}'")

    def _dollar(self, *, quoted: bool) -> None:
        s, n, i = self.s, len(self.s), self.i
        nxt = s[i + 1] if i + 1 < n else ""
        if nxt == "{":
            j = self._matching(i + 2, "{", "}")
            body = s[i + 2:j]
            source = s[i:j + 1]
            self.i = j + 1
            self._advance_over(source)
            arr = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)\[([@*]|[0-9]+)\]", body)
            if arr and self._array_words(arr.group(1), arr.group(2), source):
                return
            value, unres = self._brace(body, source)
            if not unres and value and not self.budget.expand(source, self._len + len(value), self.depth, self.line):
                value, unres = source, (_NAME.findall(body)[:1] or ["${...}"])
        elif nxt == "(":
            j = self._matching(i + 2, "(", ")")
            source = s[i:j + 1]
            self.i = j + 1
            self._advance_over(source)
            value, unres = source, ["$(...)"]
        elif nxt == "'" and not quoted:  # $'...' ANSI-C quoting: taken literally
            j = s.find("'", i + 2)
            if j < 0:
                raise self._err("unterminated $' quote")
            self._start()
            self._literal = False
            self._parts.append(s[i + 2:j])
            self.i = j + 1
            return
        else:
            m = _NAME.match(s, i + 1)
            if m:
                name, self.i = m.group(0), m.end()
                value, unres = self._lookup(name, f"${name}")
                if not unres and value and not self.budget.expand(f"${name}", self._len + len(value), self.depth,
                                                                  self.line):
                    value, unres = f"${name}", [name]
            elif nxt and nxt in _SPECIAL:
                self.i = i + 2
                value, unres = f"${nxt}", [nxt]
            else:
                self.i = i + 1
                self._start()
                self._parts.append("$")
                return
        self._emit(value, unres, split=not quoted and not self._assign and not unres)

    def _lookup(self, name: str, source: str) -> tuple[str, list[str]]:
        v = self.env.get(name)
        if isinstance(v, Array):  # $ARGS is the array's first element
            return (v[0].text, list(v[0].unresolved)) if v else ("", [])
        if isinstance(v, Unknown):
            return source, [name, *v]
        if v is None:
            return source, [name]
        return v, []

    def _brace(self, body: str, source: str) -> tuple[str, list[str]]:
        m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[@*#?$!-])(?:(:?[-=+?])(.*))?", body, re.S)
        if not m:
            names = _NAME.findall(body)[:1] or ["${...}"]
            return source, names
        name, op, word = m.group(1), m.group(2), m.group(3)
        value = self.env.get(name)
        if isinstance(value, Array):  # ${ARGS} is the array's first element
            value = value[0].text if value else ""
        if isinstance(value, Unknown):  # set from something unresolvable: so is its expansion
            return source, [name, *value] if op is None or op[-1] in "-=+" else [name]
        if op is None:
            return (source, [name]) if value is None else (value, [])
        kind = op[-1]
        if value is None or (op[0] == ":" and value == ""):  # unset (or, with ':', empty): the word applies
            if kind in "-=":
                text, unres = self._fragment(word)
                if kind == "=" and not unres:
                    self.env[name] = text
                return text, unres
            if kind == "+":
                return "", []
            return source, [name]  # '?': an error when the script runs
        if kind == "+":
            return self._fragment(word)
        return value, []

    def _fragment(self, text: str) -> tuple[str, list[str]]:
        """Expand a word inside ``${NAME:-word}`` (quotes removed, no splitting); past the budget's depth it
        stays as written (unresolved)."""
        if self.depth >= MAX_DEPTH:
            self.budget.expand(text, 0, self.depth + 1, self.line)
            return text, _NAME.findall(text)[:1] or ["${...}"]
        sub = _Shell(text, self.file, [self.line], self.env, expand=self.expand, fragment=True, budget=self.budget,
                     depth=self.depth + 1)
        cmds = sub.run()
        if not cmds:
            return "", []
        w = cmds[0][0]
        return w.text, list(w.unresolved)

    def _emit(self, value: str, unres: list[str], *, split: bool) -> None:
        self._len += len(value)
        if not split or self.fragment:
            self._start()
            self._unres.extend(unres)
            self._literal = False
            self._parts.append(value)
            return
        pieces = re.split(r"[ \t\n]+", value)
        for k, piece in enumerate(pieces):
            if k > 0:
                self._finish()
            if piece:
                self._start()
                self._literal = False
                self._parts.append(piece)

    def _redirect(self) -> None:
        s = self.s
        if self._started and self._literal and "".join(self._parts).isdigit():
            self._reset_word()  # "2>" : the fd number is not an argument
        else:
            self._finish()
        if s.startswith("<<<", self.i):
            self.i += 3
            self._skip_next = True
            return
        if s.startswith("<<", self.i):
            self.i += 2
            strip = s.startswith("-", self.i)
            self.i += strip
            self._want_heredoc = strip
            return
        op = re.match(r"&>>?|[<>][>&|]?", s[self.i:])
        self.i += len(op.group(0)) if op else 1
        if op and op.group(0).endswith("&"):
            m = re.match(r"[0-9]+-?|-", s[self.i:])
            if m:
                self.i += len(m.group(0))
                return
        self._skip_next = True

    def _read_heredoc_bodies(self) -> None:
        while self._heredocs:
            delim, strip = self._heredocs.popleft()
            while self.i < len(self.s):
                j = self.s.find("\n", self.i)
                line = self.s[self.i: len(self.s) if j < 0 else j]
                self.i = len(self.s) if j < 0 else j + 1
                self.phys += 1
                if (line.lstrip("\t") if strip else line) == delim:
                    break

    # command bookkeeping: assignments update the environment, the rest is kept
    def _process(self, words: list[Word]) -> None:
        while words and words[0].text in self._RESERVED and not words[0].unresolved:
            words = words[1:]
        if not words:
            return
        first = words[0].text
        if first in self._DECLARE:
            for w in words[1:]:
                if w.assign:
                    self._assign_var(w)
            return
        if all(w.assign for w in words):
            for w in words:
                self._assign_var(w)
            return
        if first == "eval" and len(words) > 1 and (self.depth < MAX_DEPTH or self.budget.expand(
                "eval", 0, self.depth + 1, words[0].line)):  # too deep: the budget says so, the words stay as they are
            text = " ".join(w.text for w in words[1:])
            sub = _Shell(text, self.file, [words[1].line], self.env, expand=self.expand, budget=self.budget,
                         depth=self.depth + 1)
            self.commands.extend(sub.run())
            return
        self.commands.append(words)

    def _assign_var(self, w: Word) -> None:
        name, _, value = w.text.partition("=")
        self.env[name] = Unknown(w.unresolved) if w.unresolved else value


def split_shell(text: str, file: str = "<text>", *, first_line: int = 1, env: Mapping[str, EnvValue] | None = None,
                line_map: Sequence[int] | None = None, expand: bool = True) -> list[list[Word]]:
    """Shell text -> simple commands (lists of words with lines); variables expanded from ``env`` and
    from assignments earlier in the text."""
    lines = list(line_map) if line_map is not None else [first_line + k for k in range(text.count("\n") + 1)]
    return _Shell(text, file, lines, dict(env or {}), expand=expand).run()


def expand_word(text: str, file: str, line: int, env: Mapping[str, EnvValue]) -> Word | None:
    """One word expanded as a shell would (quotes removed, variables from ``env``, no splitting);
    None for empty text."""
    cmds = _Shell(text, file, [line], dict(env), fragment=True).run()
    return cmds[0][0] if cmds else None
