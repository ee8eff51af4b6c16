"""The Rich progress bar every long SDK and CLI operation shows."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

__all__ = ["progress_bar"]


@contextlib.contextmanager
def progress_bar(
    label: str, total: int | None, *, enabled: bool = True, console: Console | None = None
) -> Iterator[Callable[[int], None]]:
    """Yield ``advance(n)``; draws a bar labelled ``label`` when enabled (else a no-op)."""
    if not enabled or total == 0:
        yield lambda n: None
        return
    bar = Progress(
        TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console
    )
    with bar:
        task = bar.add_task(label, total=total)
        yield lambda n: bar.advance(task, n)
