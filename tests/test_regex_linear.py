"""Hostile input: every analysis pattern runs in linear time, caches stay bounded.

Proved structurally, without timing (timings are in ``benchmarks/adversarial.py``):

* the PII and entity patterns are RE2 patterns (:class:`policies.linear_re.LinearPattern`),
  whose matching time is linear in the text;
* every pattern still on Python's backtracking ``re`` (features RE2 lacks: Unicode
  ``\\b``, lookaround) passes :func:`_linear_reason`, which rejects nested unbounded
  repeats, an unbounded repeat that something after it can make fail (the
  ``\\d+x``-on-``"1"*n`` quadratic), and bounded repeats whose combinations explode
  (the old address pattern);
* the RE2 emulation of one-character lookarounds finds what Python's ``re`` finds.
"""

from __future__ import annotations

import importlib
import math
import re
import sys
import types
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import policies.linear_re
import policies.pii
from policies.linear_re import LinearPattern, Subject
from policies.pii import PiiKind, find_pii, mask_pii
from unstructured_memory import tokenize
from unstructured_memory.summariser import (
    acts,
    analyse_text,
    cues,
    entities,
    intent,
    summary,
    topics,
)

# --------------------------------------------------------------------------- the checker

sre: Any = importlib.import_module("re._constants")  # the parser's opcodes (no stubs)
_parser: Any = importlib.import_module("re._parser")

_MAX_PATHS = 100_000
"""Most backtracking paths one start position may try (a constant, so linear overall)."""

_SINGLE_CHAR = {sre.LITERAL, sre.NOT_LITERAL, sre.IN, sre.ANY, sre.CATEGORY}
_REPEATS = {sre.MAX_REPEAT, sre.MIN_REPEAT, sre.POSSESSIVE_REPEAT}


def _paths(items: Any) -> float:
    """Upper bound on the paths a backtracking matcher tries from one start position.

    Unbounded repeats count one iteration: :func:`_linear_reason` only lets them
    stand where no backtracking into them can happen.
    """
    total = 1.0
    for op, av in items:
        if op in _SINGLE_CHAR or op is sre.AT:
            continue
        if op is sre.SUBPATTERN:
            total *= _paths(av[-1])
        elif op is sre.BRANCH:
            total *= sum(_paths(b) for b in av[1])
        elif op in _REPEATS:
            lo, hi, body = av
            p = _paths(body)
            if hi is sre.MAXREPEAT:
                total *= p
            elif p == 1:
                total *= hi - lo + 1
            else:
                total *= sum(p**k for k in range(lo, hi + 1))
        elif op in (sre.ASSERT, sre.ASSERT_NOT):
            total *= _paths(av[1])
        elif op is sre.ATOMIC_GROUP:
            total *= _paths(av)
        else:  # GROUPREF and friends: backreferences are not linear
            return math.inf
        if total > _MAX_PATHS:
            return math.inf
    return total


def _unbounded(items: Any, final: bool, nested: bool) -> Iterator[tuple[Any, bool, bool]]:
    """Every unbounded repeat: (its body, is it final, is it inside another repeat)."""
    last = len(items) - 1
    for i, (op, av) in enumerate(items):
        fin = final and i == last
        if op is sre.SUBPATTERN:
            yield from _unbounded(av[-1], fin, nested)
        elif op is sre.BRANCH:
            for b in av[1]:
                yield from _unbounded(b, fin, nested)
        elif op in _REPEATS:
            _, hi, body = av
            if hi is sre.MAXREPEAT:
                yield body, fin, nested
            yield from _unbounded(body, False, True)
        elif op in (sre.ASSERT, sre.ASSERT_NOT):
            yield from _unbounded(av[1], False, nested)
        elif op is sre.ATOMIC_GROUP:
            yield from _unbounded(av, False, nested)


def _linear_reason(pattern: re.Pattern[str]) -> str | None:
    """Why a backtracking search with ``pattern`` may be super-linear, or ``None``.

    Accepted: bounded work per start position (at most :data:`_MAX_PATHS` paths)
    and unbounded repeats only where they cannot be backtracked into: either at
    the very end of the pattern (greedy or lazy, nothing left to fail), or, in a
    pattern anchored with ``^`` (one start position), a single repeat of one
    character class.
    """
    parsed = _parser.parse(pattern.pattern, pattern.flags)
    items = parsed.data
    if _paths(items) > _MAX_PATHS:
        return "too many backtracking paths per start position"
    repeats = list(_unbounded(items, True, False))
    anchored = (
        bool(items)
        and items[0] == (sre.AT, sre.AT_BEGINNING)
        and not parsed.state.flags & re.MULTILINE
    ) or (bool(items) and items[0] == (sre.AT, sre.AT_BEGINNING_STRING))
    for body, final, nested in repeats:
        if nested:
            return "unbounded repeat inside a repeat"
        if any(True for _ in _unbounded(body, False, False)):
            return "unbounded repeat inside an unbounded repeat"
        if final:
            continue
        if anchored and len(repeats) == 1 and len(body) == 1 and body[0][0] in _SINGLE_CHAR:
            continue
        return "unbounded repeat followed by something that can fail"
    return None


@pytest.mark.parametrize(
    "bad",
    [
        r"\d+x",  # "1"*n: every start scans the run
        r"(a+)+b",  # nested
        r"(?:\d+|[一二三]+)\s?个?(?:工作日|天)",  # the old duration pattern
        r"[了啊\s]+$",  # the old trailing-particle strip
        r"(?:[\u4e00-\u9fff]{1,8}?(?:省|市|区)){0,4}[\u4e00-\u9fff]{1,11}?路\d{1,5}号",  # address
        r"(a)\1",  # backreference
        r"^\s*\d+$",  # anchored, but two repeats
    ],
)
def test_checker_rejects_super_linear_patterns(bad: str) -> None:
    assert _linear_reason(re.compile(bad)) is not None


@pytest.mark.parametrize(
    "good",
    [
        r"rf\d{6,}",
        r"^(你好|hi)[啊呀\s]*$",
        r"\brefund\b",
        r"退款.{0,6}(到账|进度)",
        r"[\u4e00-\u9fff]",
    ],
)
def test_checker_accepts_linear_patterns(good: str) -> None:
    assert _linear_reason(re.compile(good)) is None


# --------------------------------------------------------------------------- the patterns


def _collect(value: object, depth: int = 0) -> Iterator[object]:
    if isinstance(value, re.Pattern | LinearPattern):
        yield value
    elif isinstance(value, tuple | list | frozenset | set) and depth < 3:
        for item in value:
            yield from _collect(item, depth + 1)
    elif isinstance(value, dict) and depth < 3:
        for item in value.values():
            yield from _collect(item, depth + 1)


def _module_patterns(module: types.ModuleType) -> list[object]:
    found = [p for v in vars(module).values() for p in _collect(v)]
    if module is entities:
        found.append(entities._lexicon_re())
    if module is intent:
        found += [rx for _, rules in intent._rules() for rx, _ in rules]
    return found


_MODULES = [policies.pii, entities, summary, intent, tokenize]


@pytest.mark.parametrize("module", _MODULES, ids=lambda m: m.__name__)
def test_every_pattern_is_re2_or_provably_linear(module: types.ModuleType) -> None:
    patterns = _module_patterns(module)
    assert patterns
    for p in patterns:
        if isinstance(p, re.Pattern):
            assert _linear_reason(p) is None, p.pattern
        else:
            assert isinstance(p, LinearPattern)


def test_pii_and_entity_patterns_all_run_under_re2() -> None:
    for p in _module_patterns(policies.pii):
        assert isinstance(p, LinearPattern), p
    assert all(isinstance(rx, LinearPattern) for _, _, rx in entities._PATTERNS)
    assert isinstance(entities._lexicon_re(), LinearPattern)


def test_no_module_compiles_python_patterns_on_the_fly() -> None:
    """Inline ``re.sub``/``re.match`` calls escape the checks above."""
    for module in (policies.pii, entities):
        source = Path(module.__file__ or "").read_text(encoding="utf-8")
        assert not re.search(r"\bre\.(?:sub|match|search|fullmatch|finditer|findall)\(", source)


# --------------------------------------------------------------------------- RE2 fidelity


def _assigned() -> str:
    """Every character Python's Unicode database assigns, private use left out."""
    return "".join(
        chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) not in _UNASSIGNED
    )


_UNASSIGNED = frozenset({"Cn", "Co", "Cs"})


@pytest.mark.parametrize("cls", [r"\d", r"\D", r"\s", r"[-\s]", r"[^\d元]"])
def test_classes_keep_their_python_meaning(cls: str) -> None:
    text = _assigned()
    python = [m.span() for m in re.finditer(cls, text)]
    linear = list(LinearPattern(cls).scan(Subject(text)))
    assert linear == python


_LOOKAROUND_PAIRS = [
    (
        r"(?<![0-9A-Za-z])1[3-9]\d(?:\d{8}|[\s-]\d{4}[\s-]\d{4})(?!\d)",
        r"(?P<pre>[^0-9A-Za-z])1[3-9]\d(?:\d{8}|[\s-]\d{4}[\s-]\d{4})(?P<post>$|\D)",
    ),
    (r"(?<![a-z])ab(?![a-z])", r"(?P<pre>[^a-z])ab(?P<post>$|[^a-z])"),
    (r"(?<!\d)a\d?", r"(?P<pre>\D)a\d?"),
    (r"ab?(?!b)|a", r"a(?:b?(?P<post>$|[^b]))|a"),
]


@pytest.mark.parametrize(("python", "linear"), _LOOKAROUND_PAIRS)
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_lookaround_emulation_finds_what_python_finds(
    python: str, linear: str, data: st.DataObject
) -> None:
    text = data.draw(st.text(alphabet="13598 -ab\n市x", max_size=60))
    expected = [m.span() for m in re.finditer(python, text)]
    assert list(LinearPattern(linear).scan(Subject(text))) == expected


@pytest.mark.parametrize("pattern", [r"^a", r"(?:^|x)a", r"(?:^|[^0-9])(?P<n>\d{2,3})", r"a|^b"])
@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet="ab x123\n市", max_size=30))
def test_scan_matches_at_the_start_of_the_text_as_python_does(pattern: str, text: str) -> None:
    """A ``^`` matches where the text starts, though the scanned bytes open with a
    sentinel (a price, an enumerator said first in a turn: "899那个", "1）…")."""
    group = "n" if "(?P<n>" in pattern else None
    expected = [m.span(group or 0) for m in re.finditer(pattern, text)]
    assert LinearPattern(pattern).spans(text, group) == [e for e in expected if e[1] > e[0]]


_SEARCHED = [r"退款|退钱|(?i:refund)", r"\d{5,}", r"订单\s*(?P<id>\d+)", r"(?i:no\s+email)", r"市$"]


@pytest.mark.parametrize("pattern", _SEARCHED)
@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet="退款钱订单 1234567市\nrefundRENOmail\ud800", max_size=40))
def test_search_and_finditer_find_what_python_finds(pattern: str, text: str) -> None:
    """The quick refusal of a text without a match never hides one (lone surrogates too,
    which both read as U+FFFD), and a match is Python's, groups and all."""
    linear, python = LinearPattern(pattern), re.compile(pattern)
    safe = text.replace("\ud800", "\ufffd")
    found, expected = linear.search(text), python.search(safe)
    assert (found is None) == (expected is None)
    if found is not None and expected is not None:
        assert (found.span(), found.group(0)) == (expected.span(), expected.group(0))
    assert [m.span() for m in linear.finditer(text)] == [m.span() for m in python.finditer(safe)]


_SET_TEXTS = st.text(
    alphabet="退款钱订单 1234567市\nrefundRENOmail\ud800不是说错了以后微信", max_size=40
)


@settings(max_examples=300, deadline=None)
@given(text=_SET_TEXTS)
def test_pattern_set_presence_is_each_patterns_search(text: str) -> None:
    """One pass over a set tells exactly which patterns ``search`` finds (anchors and
    lone surrogates included), for the sets the act reader uses in place of a loop."""
    patterns = [LinearPattern(p) for p in [*_SEARCHED, r"^退", r"^$", r"(?P<pre>[^0-9])\d{3}"]]
    present = policies.linear_re.PatternSet(patterns).present(text)
    assert present == {k for k, rx in enumerate(patterns) if rx.search(text) is not None}
    for rxs in (
        [rx for _, rx in cues.REQUEST_FAMILIES],
        list(cues.CORRECTION),
        [t.pattern for t in topics.TOPICS],
        list(acts._CLAUSE_CUES),
    ):
        found = policies.linear_re.PatternSet(rxs).present(text)
        assert found == {k for k, rx in enumerate(rxs) if rx.search(text) is not None}


def test_lone_surrogates_do_not_break_scanning() -> None:
    text = "电话\ud83d13812345678\udc00"
    assert [(m.kind, m.value) for m in find_pii(text)] == [(PiiKind.PHONE, "13812345678")]


# --------------------------------------------------------------------------- adversarial input

_ADVERSARIAL = {
    "city": ("市", 20_000),
    "digits": ("1", 20_000),
    "at": ("a@", 5_000),
    "road": ("路", 20_000),
    "road-number": ("北京市朝阳区建国路88", 2_000),
    "dots": ("a.", 10_000),
    "mixed": ("市区路88号，" + "1" * 30 + " a@b.cc 明天到 #12345 订单88231 ", 600),
}


@pytest.mark.parametrize("name", list(_ADVERSARIAL))
def test_adversarial_text_is_masked_as_its_parts_are(name: str) -> None:
    unit, times = _ADVERSARIAL[name]
    masked_unit, unit_matches = mask_pii(unit)
    masked, matches = mask_pii(unit * times)
    assert masked == masked_unit * times
    assert len(matches) == len(unit_matches) * times
    if name != "mixed":
        assert matches == []


@pytest.mark.parametrize("name", list(_ADVERSARIAL))
def test_adversarial_text_is_analysed(name: str) -> None:
    unit, times = _ADVERSARIAL[name]
    text = unit * times + "，我的手机13912345678"
    analysis = analyse_text(text)
    assert analysis.masked_text.endswith("，我的手机139****5678")
    assert analysis.pii[-1].value == "13912345678"
    assert ("PHONE", "139****5678") in [(e.type, e.text) for e in analysis.entities]


# --------------------------------------------------------------------------- bounded caches


def test_token_cache_is_bounded() -> None:
    info = tokenize._cached_tokens.cache_info()
    assert info.maxsize is not None
    for i in range(info.maxsize + 100):
        tokenize.tokens(f"订单{i}的扫地机")
    assert tokenize._cached_tokens.cache_info().currsize <= info.maxsize


def test_caches_over_text_are_bounded() -> None:
    for module in (policies.pii, policies.linear_re, entities, summary, intent, tokenize):
        for name, value in vars(module).items():
            info = getattr(value, "cache_info", None)
            if info is not None:
                assert info().maxsize is not None, f"{module.__name__}.{name}"


# --------------------------------------------------------------------------- prefilters

_PREFILTER_TEXTS = [
    "订单号：88231 和 88232，退款编号 RF20260629001，手机 13912345678",
    "换货单 EX7781201，¥1,299.00，3-5个工作日，下周三 6月29日",
    "Order #88231, refund id RF123456, tracking 1Z999AA10123456784, a@b.cc",
    "北京市朝阳区建国路88号 阳光小区3栋2单元301 221B Baker Street",
    "１３８１２３４５６７８ 138\u200b1234\u200b5678 身份证 11010519491231002X",
    "什么时候能到账？\n",
    "hi\n",
    "does it work? 在吗",
    "",
]


@pytest.mark.parametrize("text", _PREFILTER_TEXTS)
def test_pattern_set_leaves_out_only_patterns_without_matches(text: str) -> None:
    subject = Subject(text)
    candidates = entities._PATTERN_SET.candidates(subject)
    for k, (_, _, rx) in enumerate(entities._PATTERNS):
        if k not in candidates:
            assert list(rx.scan(subject)) == [], rx.pattern


@pytest.mark.parametrize("text", _PREFILTER_TEXTS)
def test_intent_prefilter_leaves_out_only_rules_that_do_not_match(text: str) -> None:
    norm = unicodedata.normalize("NFKC", text).lower()
    candidates = intent._prefilter().candidates(norm)
    rules = [rx for _, patterns in intent._rules() for rx, _ in patterns]
    for k, rx in enumerate(rules):
        if k not in candidates:
            assert rx.search(norm) is None, rx.pattern


def test_python_prefilter_relaxes_assertions() -> None:
    prefilter = policies.linear_re.PythonPrefilter(
        [r"\brefund\b", r"到(?!账)", r"^hi$", r"(?<!a)b", r"x\w"]
    )
    assert prefilter.candidates("refund") >= {0}
    assert prefilter.candidates("什么时候到") >= {1}
    assert prefilter.candidates("hi\n") >= {2}
    assert prefilter.candidates("b") >= {3}
    assert 4 in prefilter.candidates("nothing")  # \w: left to Python, always a candidate


def test_grouping_skips_escapes_and_character_classes() -> None:
    """What finds a pattern's groups and top-level ``|`` ignores escaped characters and
    classes, a class's leading ``]`` included (as Python's ``re`` reads it)."""
    top_level = policies.linear_re._has_top_level_alternation
    assert top_level(r"订单|退款")
    assert not top_level(r"(订单|退款)")
    assert not top_level(r"[]|]\|88231")
    group_end = policies.linear_re._group_end
    assert group_end(r"(?=[)(]\))x", 0) == 10
    assert group_end(r"a(?![]]x)b", 1) == 9
    with pytest.raises(ValueError, match="unbalanced"):
        group_end(r"(?=[)]", 0)


def test_sub_keeps_a_replacement_outside_ascii() -> None:
    assert LinearPattern(r"您|你").sub("用户", "已为您下单") == "已为用户下单"
    assert LinearPattern(r"(\d+)元").sub(r"\1 元", "39元") == "39 元"
    assert LinearPattern(r"x").sub(lambda m: "用户", "axb") == "a用户b"
