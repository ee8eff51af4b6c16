"""Regular expressions in linear time: RE2 (``google-re2``) behind a small typed face.

Python's ``re`` backtracks: a pattern such as ``\\d+x`` takes quadratic time on
``"1" * n``, and nested bounded repeats multiply. RE2 simulates the automaton
instead, so a search takes time linear in the text whatever the pattern. The
PII and entity rules compile their patterns with :class:`LinearPattern`.

Patterns are written in Python syntax with these rules:

* ``\\d``, ``\\D`` and ``\\s`` keep their Python (Unicode) meaning: they are
  translated to ``\\p{Nd}``, ``\\P{Nd}`` and Python's white-space set (RE2's own
  are ASCII). ``\\b``, ``\\B``, ``\\w``, ``\\W`` and ``\\Z`` are refused, and RE2
  itself refuses lookaround and backreferences.
* A one-character negative lookbehind is written as a group named ``pre`` that
  opens the pattern (every branch of it) and consumes the character before the
  match: ``(?P<pre>[^0-9A-Za-z])`` stands for ``(?<![0-9A-Za-z])``. The start
  of the text counts as a newline, which such a negated class must admit.
* A one-character lookahead is written as a group whose name starts with
  ``post``, ending its branch of the pattern: ``(?P<post>$|\\D)`` stands for
  ``(?!\\d)``.

:meth:`LinearPattern.scan` reports each match without its ``pre``/``post``
context and resumes where Python's ``finditer`` would, so it finds exactly the
matches of the lookaround pattern.

RE2 itself is imported when a pattern is first used, not when one is defined:
``policies.pii`` and ``policies.validation`` (which the remote client imports to
check ids and fields before sending) cost no RE2 until a text is scanned.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Protocol, cast

__all__ = ["LinearMatch", "LinearPattern", "PatternSet", "PythonPrefilter", "Subject"]


@dataclass(frozen=True)
class _Engine:
    re2: Any
    """The ``re2`` module (``compile``, ``Options``)."""
    set: Any
    """``re2._re2.Set``."""
    unanchored: Any
    """``re2._Anchor.UNANCHORED``."""


@lru_cache(maxsize=1)
def _engine() -> _Engine:
    """RE2, imported on first use."""
    import re2  # type: ignore[import-untyped]
    from re2 import _re2

    return _Engine(re2, _re2.Set, re2._Anchor.UNANCHORED)


_RawMatch = Callable[[Any, bytes, int, int], list[tuple[int, int]]]
"""``re2._re2.RE2.Match``: the group spans of the first match in ``data[pos:endpos]``
(``(-1, -1)`` for a group that took no part), without the wrapper's match objects."""

_WS = (
    r"\t-\r\x{1c}-\x{20}\x{85}\x{a0}\x{1680}\x{2000}-\x{200a}"
    r"\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}"
)
"""Python's ``\\s`` for ``str`` patterns (the characters for which ``str.isspace()`` holds)."""

_OUTSIDE = {"d": r"\p{Nd}", "D": r"\P{Nd}", "s": f"[{_WS}]", "S": f"[^{_WS}]"}
_INSIDE = {"d": r"\p{Nd}", "s": _WS}
_REFUSED = frozenset("bBwWZ")


def _translate(pattern: str) -> str:
    """``pattern`` in RE2 syntax: Python's Unicode classes spelt out, ``\\uXXXX`` escapes
    as ``\\x{XXXX}``."""
    out: list[str] = []
    in_class = False
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            esc = pattern[i + 1]
            table = _INSIDE if in_class else _OUTSIDE
            if esc in table:
                out.append(table[esc])
            elif esc in _REFUSED or esc in "DS":
                raise ValueError(f"\\{esc} has no linear-time equivalent here")
            elif esc in "uU":
                width = 4 if esc == "u" else 8
                out.append(r"\x{" + pattern[i + 2 : i + 2 + width] + "}")
                i += width
            else:
                out.append(pattern[i : i + 2])
            i += 2
            continue
        if ch == "[" and not in_class:
            in_class = True
            out.append(ch)
            if pattern.startswith("^", i + 1):
                out.append("^")
                i += 1
        else:
            if ch == "]" and in_class:
                in_class = False
            out.append(ch)
        i += 1
    return "".join(out)


def _structure(pattern: str, start: int = 0) -> Iterator[tuple[int, str]]:
    """``(index, character)`` of ``pattern`` from ``start``, skipping escapes and character
    classes (a class's leading ``^`` and literal ``]`` included): what gives its grouping."""
    in_class = False
    i = start
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
            i += 1 + pattern.startswith("^", i + 1)
            i += pattern.startswith("]", i)
            continue
        else:
            yield i, ch
        i += 1


def _has_top_level_alternation(pattern: str) -> bool:
    depth = 0
    for _, ch in _structure(pattern):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "|" and depth == 0:
            return True
    return False


def _safe(text: str) -> str:
    """``text`` with lone surrogates (which UTF-8 cannot carry) as U+FFFD; same length."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in text)
    return text


@lru_cache(maxsize=256)
def _utf8(text: str) -> bytes:
    """``text`` as RE2 reads it (:func:`_safe`, UTF-8); the texts scanned last are kept, as
    one clause is tried with many patterns in a row."""
    return _safe(text).encode("utf-8")


class LinearMatch(Protocol):
    """A match of a :class:`LinearPattern` on a ``str`` (the subset of ``re.Match`` used)."""

    def __getitem__(self, group: int | str) -> str | None: ...

    def group(self, group: int | str = 0) -> str | None: ...

    def start(self, group: int = 0) -> int: ...

    def end(self, group: int = 0) -> int: ...

    def span(self, group: int = 0) -> tuple[int, int]: ...


class _Re2(Protocol):
    groupindex: dict[str, int]

    def search(self, text: str | bytes, pos: int = ...) -> LinearMatch | None: ...

    def match(self, text: str) -> LinearMatch | None: ...

    def fullmatch(self, text: str) -> LinearMatch | None: ...

    def finditer(self, text: str) -> Iterator[LinearMatch]: ...

    def sub(self, repl: str | Callable[[LinearMatch], str], text: str) -> str: ...


class Subject:
    """A text prepared once for scanning with several patterns (UTF-8, offsets mapped back).

    The bytes start with a ``"\\n"`` sentinel standing for "no character": it
    lies outside every ``pre`` class, so a match at the start of the text needs
    no special case.
    """

    __slots__ = ("_ascii", "_b", "_c", "data", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.data = b"\n" + _safe(text).encode("utf-8")
        self._ascii = len(self.data) == len(text) + 1
        self._b = 1
        self._c = 0

    def offset(self, pos: int) -> int:
        """The character offset of byte ``pos`` of :attr:`data`.

        Amortised O(1) for non-decreasing positions (as one scan asks), O(n) otherwise.
        """
        if self._ascii:
            return pos - 1
        if pos < self._b:
            self._b, self._c = 1, 0
        self._c += len(self.data[self._b : pos].decode("utf-8"))
        self._b = pos
        return self._c

    def char_before(self, pos: int) -> int:
        """The byte position of the character that ends at byte ``pos``."""
        pos -= 1
        while self.data[pos] & 0xC0 == 0x80:
            pos -= 1
        return pos

    def char_after(self, pos: int) -> int:
        """The byte position just after the character that starts at byte ``pos``."""
        pos += 1
        while pos < len(self.data) and self.data[pos] & 0xC0 == 0x80:
            pos += 1
        return pos


class _Compiled:
    """A pattern as RE2 compiled it, with what :meth:`LinearPattern.scan` reads."""

    __slots__ = ("caret", "groupindex", "match", "posts", "pre", "rx")

    def __init__(self, translated: str) -> None:
        self.rx = cast(_Re2, _engine().re2.compile(translated))
        self.caret = any(ch == "^" for _, ch in _structure(translated))
        """Whether the pattern anchors at the start of the text (``^``)."""
        self.match = cast(_RawMatch, cast(Any, self.rx)._regexp.Match)
        self.groupindex: dict[str, int] = dict(self.rx.groupindex)
        self.pre = self.groupindex.get("pre")
        self.posts = tuple(i for name, i in self.groupindex.items() if name.startswith("post"))

    def occurs_in(self, text: str) -> bool:
        """Whether the pattern matches somewhere in ``text``: one automaton run over its
        bytes (encoded once for every pattern tried on it), no match object."""
        data = _utf8(text)
        return self.match(_engine().unanchored, data, 0, len(data))[0][0] >= 0


class LinearPattern:
    """A pattern matched by RE2 in linear time (see the module docstring), compiled on
    first use; a refused escape or a misplaced ``pre`` group raises here."""

    __slots__ = ("_compiled", "_translated", "pattern")

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self._translated = _translate(pattern)
        if "(?P<pre>" in pattern and (
            not pattern.startswith("(?P<pre>") or _has_top_level_alternation(pattern)
        ):
            raise ValueError("a pre group must open the pattern, for every branch")
        self._compiled: _Compiled | None = None

    def _re2(self) -> _Compiled:
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = _Compiled(self._translated)
        return compiled

    @property
    def groupindex(self) -> dict[str, int]:
        """Group names and their numbers, as ``re.Pattern.groupindex``."""
        return self._re2().groupindex

    def __repr__(self) -> str:
        return f"LinearPattern({self.pattern!r})"

    def scan(self, subject: Subject, group: str | None = None) -> Iterator[tuple[int, int]]:
        """Character spans of the matches in ``subject``, as Python's ``finditer`` finds them.

        Each span is the match without its ``pre``/``post`` context, or the span
        of ``group`` where it is given and took part; empty spans are skipped.
        """
        compiled = self._re2()
        data = subject.data
        end = len(data)
        match = compiled.match
        pre = compiled.pre
        posts = compiled.posts
        anchor = _engine().unanchored
        index = None if group is None else compiled.groupindex[group]
        pos = 0 if pre is not None else 1
        at_start = compiled.caret and pre is None  # "^" must see the text start, not the sentinel
        while pos < end:
            if at_start:  # only the first match can start where the text does
                at_start = False
                found = match(anchor, data[1:], 0, end - 1)
                spans = [(a + 1, b + 1) if a >= 0 else (a, b) for a, b in found]
            else:
                spans = match(anchor, data, pos, end)
            start, stop = spans[0]
            if start < 0:
                return
            if pre is not None:
                start = spans[pre][1]
            for i in posts:
                if spans[i][0] >= 0:
                    stop = spans[i][0]
                    break
            a, b = (start, stop) if index is None or spans[index][0] < 0 else spans[index]
            if b > a:
                yield subject.offset(a), subject.offset(b)
            if stop <= start:
                pos = subject.char_after(stop)
            else:
                pos = subject.char_before(stop) if pre is not None else stop

    def spans(self, text: str, group: str | None = None) -> list[tuple[int, int]]:
        """:meth:`scan` over a text of its own."""
        return list(self.scan(Subject(text), group))

    def search(self, text: str) -> LinearMatch | None:
        """The first match in ``text`` (no ``pre``/``post`` handling), as ``re.search``.

        Most searches find nothing (cue words tried on every clause): those cost one
        :meth:`_Compiled.occurs_in`.
        """
        compiled = self._re2()
        return compiled.rx.search(_safe(text)) if compiled.occurs_in(text) else None

    def match(self, text: str) -> LinearMatch | None:
        """A match at the start of ``text``, as ``re.match``."""
        return self._re2().rx.match(_safe(text))

    def fullmatch(self, text: str) -> LinearMatch | None:
        """A match of the whole of ``text``, as ``re.fullmatch``."""
        return self._re2().rx.fullmatch(_safe(text))

    def finditer(self, text: str) -> Iterator[LinearMatch]:
        """Every match in ``text`` with its groups (no ``pre``/``post`` handling), as
        ``re.finditer``; a text with no match costs what :meth:`search` costs."""
        compiled = self._re2()
        return compiled.rx.finditer(_safe(text)) if compiled.occurs_in(text) else iter(())

    def sub(self, repl: str | Callable[[LinearMatch], str], text: str) -> str:
        """``text`` with every match replaced, as ``re.sub`` (``\\1``, ``\\g<name>`` in a
        replacement string). A string is expanded here: the RE2 binding would re-read one
        holding characters beyond ASCII as Latin-1."""
        if isinstance(repl, str):
            template = repl
            return self._re2().rx.sub(lambda m: _expand(template, m), _safe(text))
        return self._re2().rx.sub(repl, _safe(text))


def _expand(template: str, m: LinearMatch) -> str:
    """``template`` with its group references (``\\1``, ``\\g<name>``) filled from ``m``
    (an unmatched group is empty) and ``\\n``, ``\\t``, ``\\\\`` read, as
    ``re.Match.expand``."""
    out: list[str] = []
    at = 0
    while at < len(template):
        ch = template[at]
        nxt = template[at + 1 : at + 2]
        if ch != "\\" or not nxt:
            out.append(ch)
            at += 1
        elif nxt.isdigit():
            digits = nxt + (template[at + 2] if template[at + 2 : at + 3].isdigit() else "")
            out.append(m.group(int(digits)) or "")
            at += 1 + len(digits)
        elif nxt == "g" and (close := template.find(">", at)) > at + 2:
            key = template[at + 3 : close]
            out.append(m.group(int(key) if key.isdigit() else key) or "")
            at = close + 1
        else:
            out.append({"n": "\n", "t": "\t", "\\": "\\"}.get(nxt, ch + nxt))
            at += 2
    return "".join(out)


class PatternSet:
    """Several patterns checked in one linear pass (RE2's ``Set``): which match a text.

    :meth:`present` answers exactly what ``pattern.search(text) is not None`` answers
    for each pattern, in one automaton run instead of one per pattern (cue tables tried
    on every clause). :meth:`candidates` is a prefilter for :meth:`LinearPattern.scan`:
    a pattern left out of it finds no match in the subject, so scanning only the
    candidates finds exactly what scanning every pattern finds. Compiled on first use.
    """

    __slots__ = ("_all", "_linear", "_patterns", "_set")

    def __init__(self, patterns: Sequence[LinearPattern]) -> None:
        self._all = frozenset(range(len(patterns)))
        self._linear = tuple(patterns)
        self._patterns = tuple(p.pattern for p in patterns)
        self._set: Any = None

    def _compiled(self) -> Any:
        if self._set is not None:
            return self._set
        engine = _engine()
        built = engine.set(engine.unanchored, engine.re2.Options())
        # Index 0 matches every text: its absence means RE2 gave up (DFA out of memory).
        for i, rx in enumerate(("", *self._patterns)):
            if built.Add(_translate(rx).encode("utf-8")) != i:
                raise ValueError(f"RE2 refused pattern {i - 1} of the set")
        if not built.Compile():
            raise ValueError("RE2 could not compile the pattern set")
        self._set = built
        return built

    def candidates(self, subject: Subject) -> frozenset[int]:
        """Indices (into the patterns given) of the patterns that may match in ``subject``."""
        hits: list[int] = self._compiled().Match(subject.data)
        if 0 not in hits:
            return self._all
        return frozenset(i - 1 for i in hits if i)

    def present(self, text: str) -> frozenset[int]:
        """Indices (into the patterns given) of the patterns that match somewhere in
        ``text``: those whose :meth:`LinearPattern.search` finds a match."""
        hits: list[int] = self._compiled().Match(_utf8(text))
        if 0 not in hits:  # RE2 gave up: each pattern on its own
            return frozenset(i for i, p in enumerate(self._linear) if p.search(text) is not None)
        return frozenset(i - 1 for i in hits if i)


_LOOKAROUND = ("(?=", "(?!", "(?<=", "(?<!")


def _relax(pattern: str) -> str:
    """Python ``pattern`` without its zero-width assertions (``\\b``, ``\\B``, lookaround) and
    with ``$`` also taking a final newline (as Python's does): it matches wherever
    ``pattern`` matches, and maybe elsewhere."""
    out: list[str] = []
    in_class = False
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            if in_class or pattern[i + 1] not in "bB":
                out.append(pattern[i : i + 2])
            i += 2
        elif in_class:
            in_class = ch != "]"
            out.append(ch)
            i += 1
        elif ch == "[":
            in_class = True
            head = 2 if pattern.startswith("^", i + 1) else 1
            head += pattern.startswith("]", i + head)  # a leading "]" is literal
            out.append(pattern[i : i + head])
            i += head
        elif pattern.startswith(_LOOKAROUND, i):
            i = _group_end(pattern, i)
        else:
            out.append("(?:\\n?$)" if ch == "$" else ch)
            i += 1
    return "".join(out)


def _group_end(pattern: str, i: int) -> int:
    """The index just after the group opening at ``pattern[i]``."""
    depth = 0
    for at, ch in _structure(pattern, i):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return at + 1
    raise ValueError("unbalanced group")


class PythonPrefilter:
    """One RE2 pass telling which of several Python ``re`` patterns may match a text.

    Each pattern enters RE2's ``Set`` with its zero-width assertions dropped
    (:func:`_relax`), so it matches at least where the Python pattern does; a
    pattern RE2 cannot read is always a candidate. Searching only the
    candidates with Python's ``re`` finds exactly the patterns that match.
    """

    __slots__ = ("_all", "_always", "_ids", "_set")

    def __init__(self, patterns: Sequence[str]) -> None:
        engine = _engine()
        options = engine.re2.Options()
        options.log_errors = False
        self._set = engine.set(engine.unanchored, options)
        self._ids: list[int] = [-1]  # set index -> pattern index; 0 matches every text
        always: list[int] = []
        self._set.Add(b"")
        for i, pattern in enumerate(patterns):
            try:
                if "[]" in pattern or "[^]" in pattern:  # a literal "]" first: left to Python
                    raise ValueError(pattern)
                ok = self._set.Add(_translate(_relax(pattern)).encode("utf-8")) != -1
            except (ValueError, IndexError):
                ok = False
            if ok:
                self._ids.append(i)
            else:
                always.append(i)
        if not self._set.Compile():
            raise ValueError("RE2 could not compile the pattern set")
        self._always = frozenset(always)
        self._all = frozenset(range(len(patterns)))

    def candidates(self, text: str) -> frozenset[int]:
        """Indices of the patterns that may match somewhere in ``text``."""
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:
            return self._all
        hits: list[int] = self._set.Match(data)
        if 0 not in hits:
            return self._all
        return self._always.union(self._ids[i] for i in hits if i)
