"""Intent classifier: unit behaviour and evaluation on the shipped labelled sets.

``tests/data/intent_eval.jsonl`` (339 utterances) was written after the rules
and first scored blind (accuracy 0.726); the rules were then widened on its
errors, so its score is optimistic. ``tests/data/intent_holdout.jsonl`` (80
utterances) was written after that tuning and never used to tune: its score is
the honest estimate. Run with ``pytest -s`` to see the tables.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from policies.errors import InvalidText
from unstructured_memory.summariser import classify_intent
from unstructured_memory.summariser.intent import classify_turns
from values.sessions import Intent

_DATA = Path(__file__).parent / "data"


def _load(name: str) -> list[dict[str, str]]:
    with (_DATA / name).open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _evaluate(rows: list[dict[str, str]]) -> dict[str, Any]:
    gold = [Intent(r["label"]) for r in rows]
    pred = [classify_intent(r["text"]).label for r in rows]
    by_lang: dict[str, list[bool]] = {}
    for r, g, p in zip(rows, gold, pred, strict=True):
        by_lang.setdefault(r["lang"], []).append(g == p)
    tp = Counter(g for g, p in zip(gold, pred, strict=True) if g == p)
    n_gold, n_pred = Counter(gold), Counter(pred)
    per_class: dict[Intent, tuple[float, float, float, int]] = {}
    for intent in Intent:
        prec = tp[intent] / n_pred[intent] if n_pred[intent] else 0.0
        rec = tp[intent] / n_gold[intent] if n_gold[intent] else 0.0
        f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
        per_class[intent] = (prec, rec, f1, n_gold[intent])
    return {
        "accuracy": sum(g == p for g, p in zip(gold, pred, strict=True)) / len(rows),
        "by_lang": {lang: sum(v) / len(v) for lang, v in sorted(by_lang.items())},
        "n_lang": {lang: len(v) for lang, v in sorted(by_lang.items())},
        "per_class": per_class,
    }


def _table(title: str, report: dict[str, Any]) -> str:
    lines = [f"\n{title}", f"  accuracy overall {report['accuracy']:.3f}"]
    for lang, acc in report["by_lang"].items():
        lines.append(f"  accuracy {lang:<7} {acc:.3f}  (n={report['n_lang'][lang]})")
    lines.append(f"  {'intent':<17}{'prec':>6}{'rec':>7}{'F1':>7}{'n':>5}")
    for intent, (p, r, f1, n) in report["per_class"].items():
        lines.append(f"  {intent.value:<17}{p:>6.3f}{r:>7.3f}{f1:>7.3f}{n:>5}")
    return "\n".join(lines)


def test_eval_set_is_well_formed() -> None:
    rows = _load("intent_eval.jsonl")
    labels = Counter(r["label"] for r in rows)
    langs = Counter(r["lang"] for r in rows)
    assert len(rows) >= 300
    assert langs["zh"] >= 200
    assert langs["en"] >= 100
    assert set(labels) == {i.value for i in Intent}
    assert min(labels.values()) >= 25
    assert len({r["text"] for r in rows}) == len(rows)
    holdout = {r["text"] for r in _load("intent_holdout.jsonl")}
    assert not holdout & {r["text"] for r in rows}


def test_accuracy_on_eval_set(capsys: pytest.CaptureFixture[str]) -> None:
    report = _evaluate(_load("intent_eval.jsonl"))
    with capsys.disabled():
        print(_table("intent_eval.jsonl (rules tuned on it; blind score was 0.726)", report))
    assert report["accuracy"] >= 0.88  # measured 0.932
    assert report["by_lang"]["zh"] >= 0.86  # measured 0.916
    assert report["by_lang"]["en"] >= 0.90  # measured 0.964
    for intent, (_, _, f1, _) in report["per_class"].items():
        assert f1 >= 0.80, intent  # measured minimum 0.863


def test_accuracy_on_holdout_set(capsys: pytest.CaptureFixture[str]) -> None:
    report = _evaluate(_load("intent_holdout.jsonl"))
    with capsys.disabled():
        print(_table("intent_holdout.jsonl (never tuned on)", report))
    assert report["accuracy"] >= 0.70  # measured 0.762
    for intent, (_, _, f1, _) in report["per_class"].items():
        assert f1 >= 0.55, intent  # measured minimum 0.600


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("扫地机器人无法回充，我要申请退款", Intent.RETURN_REQUEST),
        ("退款怎么还没到账", Intent.REFUND_STATUS),
        ("我的 iPhone 15 Pro 还没发货", Intent.TRACKING_INQUIRY),
        ("客服态度太差，我要投诉", Intent.COMPLAINT),
        ("S10 Pro 和 S10 有什么区别", Intent.PRODUCT_CONSULT),
        ("发票抬头写错了", Intent.INVOICE),
        ("忘记密码了", Intent.ACCOUNT),
        ("你好", Intent.OTHER),
        ("I want to return my headphones", Intent.RETURN_REQUEST),
        ("where is my refund?", Intent.REFUND_STATUS),
    ],
)
def test_clear_cases(text: str, label: Intent) -> None:
    result = classify_intent(text)
    assert result.label is label
    assert 0.0 < result.confidence <= 1.0


def test_no_cue_is_other_with_low_confidence() -> None:
    result = classify_intent("🙂🙂")
    assert result.label is Intent.OTHER
    assert result.confidence < classify_intent("我要投诉你们，态度太差").confidence


def test_deterministic() -> None:
    text = "订单88231退款到账了吗？'; DROP TABLE x; --"
    assert {classify_intent(text) for _ in range(5)} == {classify_intent(text)}


def test_first_turn_weighs_double() -> None:
    turns = ["扫地机坏了，我要退货", "快递什么时候上门取件"]
    assert classify_turns(turns).label is Intent.RETURN_REQUEST
    with pytest.raises(InvalidText):
        classify_turns(["", "  "])


@pytest.mark.parametrize("bad", ["", " \t", "\x00"])
def test_invalid_text(bad: str) -> None:
    with pytest.raises(InvalidText):
        classify_intent(bad)
