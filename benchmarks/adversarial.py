"""Hostile input: does text analysis stay linear, so a crafted 64 KiB write costs what an
ordinary one does?

Times ``find_pii``, ``mask_pii``, ``analyse_text`` (the write path's *analyse and mask*
stage: masking, entities, intent) and ``tokens`` (keyword tokens) on ordinary Chinese
e-commerce text (the fragments of :mod:`benchmarks.unstructured`, joined) and on
adversarial texts of the same size (one short unit repeated: runs that made the
backtracking patterns blow up, and texts that are nothing but PII or entities), best of
``--repeats`` runs each, and reports every time as a multiple of ordinary text's.

``--before REV`` also times the implementation at git revision REV (``policies/pii.py``,
``unstructured_memory/tokenize.py`` and the summariser's ``entities.py`` and
``summary.py`` loaded beside the current ones) on smaller inputs (``--before-kib``),
where it takes seconds rather than minutes, next to the current one on the same inputs.

The server's work for one 64 KiB write and for the writer's export afterwards is timed
through a client (:mod:`benchmarks.store_costs`, embedded PostgreSQL unless
``DUALTRACK_POSTGRES_DSN``): ordinary text, distinct phone numbers filling the text (each
one a vault entry), one phone repeated, and the cap of distinct values
(``MAX_PII_VALUES``). With ``--before REV`` the same writes run on REV's whole tree (a
child process), side by side; ``--no-store`` skips them.

    python -m benchmarks.adversarial [--quick] [--before b40aaa2] [--no-store]
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks import store_costs
from benchmarks.common import bench_client, console, print_table, write_result
from benchmarks.unstructured import Generator
from policies.pii import MAX_PII_VALUES, find_pii, mask_pii
from policies.validation import MAX_TEXT_BYTES
from unstructured_memory.summariser import analyse_text
from unstructured_memory.summariser import entities as _entities
from unstructured_memory.tokenize import _cached_tokens, tokens

__all__ = [
    "ADVERSARIAL",
    "Impl",
    "current",
    "inputs",
    "load_before",
    "main",
    "store_inputs",
    "store_rows",
]

ADVERSARIAL: dict[str, str] = {
    "city": "市",  # address admin prefix: 96 s for 20,000 before
    "road": "路",
    "road-number": "北京市朝阳区建国路88",
    "digits": "1",  # duration pattern: quadratic before
    "han-numbers": "一百",
    "at": "a@",
    "dots": "a.",
    "phones": "13812345678 ",  # nothing but PII: as many matches as can be
    "emails": "a@b.cc ",
    "dates": "明天",
    "orders": "订单88231，",
    "mixed": "市区路88号，" + "1" * 30 + " a@b.cc 明天到 #12345 订单88231 ",
}
"""Adversarial units, each repeated to the size measured."""

FUNCTIONS = ("find_pii", "mask_pii", "analyse_text", "tokens")


@dataclass(frozen=True)
class Impl:
    """One implementation of the functions timed, and the caches to clear between runs."""

    name: str
    functions: dict[str, Callable[[str], object]]
    caches: tuple[Any, ...]


def current() -> Impl:
    """The implementation in this checkout."""
    return Impl(
        "after",
        {
            "find_pii": find_pii,
            "mask_pii": mask_pii,
            "analyse_text": analyse_text,
            "tokens": tokens,
        },
        (_entities._entity_spans, _entities._line_shapes, _cached_tokens),
    )


_BEFORE_FILES = {
    "pii": "policies/pii.py",
    "tokenize": "unstructured_memory/tokenize.py",
    "entities": "unstructured_memory/summariser/entities.py",
    "summary": "unstructured_memory/summariser/summary.py",
}


def load_before(rev: str) -> Impl:
    """The implementation at git revision ``rev``, imported as a package of its own."""
    pkg = "_dualtrack_before"
    root = Path(tempfile.mkdtemp(prefix="bench-adversarial-"))
    (root / pkg).mkdir()
    (root / pkg / "__init__.py").write_text("")
    rewrites = [
        ("policies.pii", f"{pkg}.pii"),
        ("unstructured_memory.tokenize", f"{pkg}.tokenize"),
        ("unstructured_memory.summariser.entities", f"{pkg}.entities"),
        ('"dualtrack_patterns"', '"dualtrack_patterns_before"'),  # a spaCy component name
    ]
    for name, path in _BEFORE_FILES.items():
        source = subprocess.run(
            ["git", "show", f"{rev}:{path}"], capture_output=True, text=True, check=True
        ).stdout
        for old, new in rewrites:
            source = source.replace(old, new)
        (root / pkg / f"{name}.py").write_text(source)
    sys.path.insert(0, str(root))
    pii = importlib.import_module(f"{pkg}.pii")
    tok = importlib.import_module(f"{pkg}.tokenize")
    ent = importlib.import_module(f"{pkg}.entities")
    summary = importlib.import_module(f"{pkg}.summary")
    return Impl(
        f"before ({rev})",
        {
            "find_pii": pii.find_pii,
            "mask_pii": pii.mask_pii,
            "analyse_text": summary.analyse_text,
            "tokens": tok.tokens,
        },
        (ent._entity_spans, tok._cached_tokens),
    )


def _fill(unit: str, size: int) -> str:
    return unit * (size // len(unit.encode("utf-8")))


def ordinary(size: int) -> str:
    """Chinese e-commerce fragments (with phones, e-mails, ids, amounts), one a line,
    to at most ``size`` UTF-8 bytes."""
    gen = Generator()
    lines: list[str] = []
    used = 0
    while True:
        line = gen.fragments(1)[0].text + "\n"
        used += len(line.encode("utf-8"))
        if used > size:
            return "".join(lines)
        lines.append(line)


def inputs(size: int) -> dict[str, str]:
    """Ordinary text and every adversarial text, each at most ``size`` UTF-8 bytes."""
    return {"ordinary": ordinary(size)} | {
        name: _fill(unit, size) for name, unit in ADVERSARIAL.items()
    }


def time_ms(impl: Impl, function: str, text: str, repeats: int) -> float:
    """Best of ``repeats`` runs, in milliseconds, every cache cleared before each."""
    fn = impl.functions[function]
    best = float("inf")
    for _ in range(repeats):
        for cache in impl.caches:
            cache.cache_clear()
        started = time.perf_counter()
        fn(text)
        best = min(best, (time.perf_counter() - started) * 1000.0)
    return best


def measure(impl: Impl, texts: dict[str, str], repeats: int) -> dict[str, dict[str, float]]:
    """``{input: {function: ms}}``."""
    out: dict[str, dict[str, float]] = {}
    for name, text in texts.items():
        out[name] = {f: round(time_ms(impl, f, text, repeats), 2) for f in FUNCTIONS}
        console.print(f"  {impl.name} {name} {len(text.encode()) // 1024} KiB: {out[name]}")
    return out


def ratios(times: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """Each adversarial time as a multiple of ordinary text's."""
    base = times["ordinary"]
    return {
        name: {f: round(t[f] / base[f], 2) for f in FUNCTIONS}
        for name, t in times.items()
        if name != "ordinary"
    }


def _phones(n: int) -> list[str]:
    rnd = random.Random(7)
    return [f"13{rnd.randrange(3, 10)}{rnd.randrange(10**8):08d}" for _ in range(n)]


def store_inputs(size: int) -> dict[str, str]:
    """The writes timed through the store, each at most ``size`` UTF-8 bytes."""
    distinct = " ".join(_phones(size // 12))
    at_cap = " ".join(_phones(MAX_PII_VALUES - 1)) + " "
    return {
        "ordinary": ordinary(size),
        "phones, distinct": distinct.encode()[:size].decode().rsplit(" ", 1)[0],
        "phones, one repeated": _fill(ADVERSARIAL["phones"], size),
        f"phones, {MAX_PII_VALUES} distinct (the cap)": at_cap
        + _fill("13812345678 ", size - len(at_cap)),
    }


def _store_before(rev: str, texts: dict[str, str], repeats: int) -> dict[str, dict[str, Any]]:
    """:func:`store_costs.measure` on REV's tree, in a child process."""
    root = Path(tempfile.mkdtemp(prefix="bench-adversarial-tree-"))
    archive = subprocess.run(["git", "archive", rev], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(root)], input=archive, check=True)
    given, taken = root / "in.json", root / "out.json"
    given.write_text(json.dumps(texts), encoding="utf-8")
    subprocess.run(
        [
            sys.executable,
            "-P",
            store_costs.__file__,
            given,
            taken,
            ".dualtrack/bench-adv-before",
            str(repeats),
        ],
        env={**os.environ, "PYTHONPATH": str(root)},
        check=True,
    )
    result: dict[str, dict[str, Any]] = json.loads(taken.read_text(encoding="utf-8"))
    return result


def store_rows(
    after: dict[str, dict[str, Any]], before: dict[str, dict[str, Any]] | None
) -> list[list[Any]]:
    """Table rows: per input, write and export seconds (before, after), outcome, entries."""
    rows = []
    for name, a in after.items():
        b = before.get(name) if before else None
        rows.append(
            [
                name,
                *((b["write_s"], a["write_s"]) if b else (a["write_s"],)),
                *((b["export_s"], a["export_s"]) if b else (a["export_s"],)),
                *((b["vault_entries"],) if b else ()),
                a["vault_entries"],
                a["outcome"],
            ]
        )
    return rows


def _warm_up(impl: Impl) -> None:
    for fn in impl.functions.values():
        fn("订单88231的扫地机坏了，电话13812345678")


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Time every input at 64 KiB (and the ``--before`` revision on smaller ones)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="one run per measurement")
    parser.add_argument("--repeats", type=int, help="runs per measurement, best kept (3)")
    parser.add_argument("--before", metavar="REV", help="also time the code at this revision")
    parser.add_argument(
        "--before-kib", default="4,8", help="sizes (KiB) compared with --before (4,8)"
    )
    parser.add_argument("--no-store", action="store_true", help="skip the timed writes")
    args = parser.parse_args(argv)
    repeats = args.repeats or (1 if args.quick else 3)

    after = current()
    _warm_up(after)
    full = measure(after, inputs(MAX_TEXT_BYTES), repeats)
    full_ratios = ratios(full)
    print_table(
        f"Analysis of {MAX_TEXT_BYTES // 1024} KiB texts (ms, best of {repeats}; "
        "×: multiple of ordinary text)",
        ["input", *FUNCTIONS, *(f"× {f}" for f in FUNCTIONS)],
        [
            [name, *t.values(), *(full_ratios[name].values() if name in full_ratios else [])]
            for name, t in full.items()
        ],
    )
    worst = {f: max((r[f], name) for name, r in full_ratios.items()) for f in FUNCTIONS}
    for f, (ratio, name) in worst.items():
        console.print(f"worst {f}: {ratio}× ordinary ({name})")

    report: dict[str, Any] = {
        "size_bytes": MAX_TEXT_BYTES,
        "repeats": repeats,
        "ms": full,
        "ratio_to_ordinary": full_ratios,
        "worst_ratio": {f: {"ratio": r, "input": n} for f, (r, n) in worst.items()},
    }
    if args.before:
        before = load_before(args.before)
        _warm_up(before)
        report["before"] = {"revision": args.before, "sizes": {}}
        rows = []
        for kib in (int(k) for k in args.before_kib.split(",")):
            texts = inputs(kib * 1024)
            old, new = measure(before, texts, 1), measure(after, texts, repeats)
            report["before"]["sizes"][kib] = {"before_ms": old, "after_ms": new}
            rows += [
                [name, kib, *(v for f in FUNCTIONS for v in (old[name][f], new[name][f]))]
                for name in texts
            ]
        print_table(
            f"Before ({args.before}) and after on smaller inputs (ms)",
            ["input", "KiB", *(f"{f} {when}" for f in FUNCTIONS for when in ("before", "after"))],
            rows,
        )
    if not args.no_store:
        report["store"] = _store(args.before, repeats)
    write_result("adversarial-quick" if args.quick else "adversarial", report)
    return report


def _store(before_rev: str | None, repeats: int) -> dict[str, Any]:
    """The writes through the store (and REV's, side by side), printed and returned."""
    texts = store_inputs(MAX_TEXT_BYTES)
    with bench_client("adversarial") as mem:
        after = store_costs.measure(mem, texts, repeats)
    before = _store_before(before_rev, texts, repeats) if before_rev else None
    when = ("before", "after") if before else ("",)
    print_table(
        f"One {MAX_TEXT_BYTES // 1024} KiB write and the writer's export through the store "
        f"(s, best of {repeats}{f'; before: {before_rev}' if before else ''})",
        [
            "input",
            *(f"write {w}".strip() for w in when),
            *(f"export {w}".strip() for w in when),
            *(f"vault entries {w}".strip() for w in when),
            "outcome",
        ],
        store_rows(after, before),
    )
    return {"after": after, "before": before, "revision": before_rev}


if __name__ == "__main__":
    main()
