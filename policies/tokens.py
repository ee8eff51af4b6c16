"""Counting tokens offline, CJK properly, to cut a prompt block to a budget.

No tokenizer vocabulary is downloaded at run time (``tiktoken`` fetches its
encodings from the network unless they are cached, which fails offline), so
the count is an estimate calibrated to the tokenizers of current chat models:
each run of ASCII letters or digits counts one token per four characters, at
least one; every other visible character (a CJK character, punctuation, a
symbol, an emoji) one; whitespace nothing. For
Chinese text this errs on the generous side (models pack about 1–1.5
characters into a token), so a block within the budget stays within it.
"""

from __future__ import annotations

import math

__all__ = ["count_tokens"]


def count_tokens(text: str) -> int:
    """The estimated token count of ``text`` (see the module docstring)."""
    total = 0
    latin = 0
    for ch in text:
        if ch.isascii() and ch.isalnum():
            latin += 1
            continue
        if latin:
            total += max(1, math.ceil(latin / 4))
            latin = 0
        if ch.isspace():
            continue
        total += 1
    if latin:
        total += max(1, math.ceil(latin / 4))
    return total
