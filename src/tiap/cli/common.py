"""Shared CLI helpers: consoles, progress bars, error printing."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Annotated, TypeVar

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

# Tables stay readable when output goes to a file or a pipe (rich would use 80 columns).
console = Console(width=None if sys.stdout.isatty() else 160)
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else 160)

T = TypeVar("T")

DataOption = Annotated[
    Path | None,
    typer.Option(
        "--data",
        help="Folder holding the benchmark files (default: $TIAP_DATA, else ../shared/data).",
        show_default=False,
    ),
]


def progress_bar() -> Progress:
    """The house progress bar on stderr (hidden when stderr is not a terminal)."""
    return Progress(
        SpinnerColumn(),
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err_console,
        transient=True,
        disable=not err_console.is_terminal,  # no bar, and no stray blank line, in logs
    )


def track(items: Iterable[T], description: str, total: int | None = None) -> Iterator[T]:
    """Iterate with a progress bar on stderr (hidden when stderr is not a terminal)."""
    with progress_bar() as progress:
        task = progress.add_task(description, total=total)
        for item in items:
            yield item
            progress.advance(task)

NoVerifyOption = Annotated[
    bool,
    typer.Option(
        "--no-verify",
        help="Read local data files without checking their pinned sha256 (for data you changed).",
    ),
]
