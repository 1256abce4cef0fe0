"""Shared CLI helpers: consoles, progress bars, error printing."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

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
from rich.table import Table

from tiap.errors import Problem, TiapError

if TYPE_CHECKING:
    from tiap.report import FlipSummary

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


#: Where stderr is not a terminal (a log file), a long loop prints a progress line this often.
LOG_EVERY = 60.0


def _duration(seconds: float) -> str:
    m, s = divmod(int(round(seconds)), 60)
    h, m = divmod(m, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def progress_line(description: str, done: int, total: int | None, elapsed: float) -> str:
    """``conv-26: add: 37/419 (8.8%), 41:02 elapsed, about 7:03:38 left``"""
    if not total:
        return f"{description}: {done:,} done, {_duration(elapsed)} elapsed"
    left = elapsed / done * (total - done) if done else None
    return (f"{description}: {done:,}/{total:,} ({100 * done / total:.1f}%), "
            f"{_duration(elapsed)} elapsed"
            + (f", about {_duration(left)} left" if left is not None and done < total else ""))


def track(items: Iterable[T], description: str, total: int | None = None) -> Iterator[T]:
    """Iterate with a progress bar on stderr; where stderr is not a terminal (a log), with a
    plain progress line every ``LOG_EVERY`` seconds instead (none for a short loop)."""
    import time

    from rich.markup import escape

    logged = not err_console.is_terminal
    started = last = time.monotonic()
    done = 0
    with progress_bar() as progress:
        task = progress.add_task(description, total=total)
        for item in items:
            yield item
            progress.advance(task)
            done += 1
            if logged and time.monotonic() - last >= LOG_EVERY:
                last = time.monotonic()
                err_console.print(escape(progress_line(description, done, total,
                                                       last - started)))

NoVerifyOption = Annotated[
    bool,
    typer.Option(
        "--no-verify",
        help="Read local data files without checking their pinned sha256 (for data you changed).",
    ),
]

ForceOption = Annotated[
    bool,
    typer.Option(
        "--force",
        help="Replace --out whole even if it is not an output of this command (what it holds "
        "is deleted). Without it such a folder is refused; an earlier output of the same "
        "command is always replaced whole.",
    ),
]


def print_warnings(warnings: Any, manifest: Path, *, who: str = "") -> int:
    """Print one line on stderr per warning counted in a manifest (``warnings``: the
    manifest's ``{code: entry}``, entries with ``message``, ``count`` and optionally
    ``queries`` and located ``examples``)::

        warning[code]: [who: ]message (N in Q queries, counted in MANIFEST); first: EXAMPLE

    Every command that counts warnings in the manifest of its output prints them with this,
    after the output is written. Returns the number of lines printed."""
    from rich.markup import escape

    from tiap.provenance import manifest_warnings

    lines = manifest_warnings(warnings, manifest, who=who)
    for code, text in lines:
        err_console.print(f"[yellow]warning\\[{escape(code)}][/]: " + escape(text),
                          highlight=False, soft_wrap=True)
    return len(lines)


def print_manifest_warnings(folder: Path) -> int:
    """:func:`print_warnings` of the ``warnings`` in ``folder/manifest.json`` (none printed
    when the manifest cannot be read)."""
    from tiap.provenance import peek_manifest

    man = peek_manifest(folder)
    return 0 if man is None else print_warnings(man.get("warnings"), folder / "manifest.json")


K_HELP = ("Cutoff: the headline measure is nDCG@K (default: the rescoring's headline "
          "measure, nDCG at its largest cutoff, nDCG@60 by default). --k K is --measure "
          "nDCG@K.")


def headline_option(measure: str | None, k: int | None) -> str | None:
    """The headline measure ``--measure M`` or ``--k K`` (nDCG@K) names; None: the default.
    Every command that needs one measure takes both, and the same ``--k`` as retrieval's
    depth and rescoring's cutoff."""

    if measure is not None and k is not None:
        raise TiapError(f"give --measure or --k, not both (--k {k} means --measure nDCG@{k})",
                        code="invalid-value")
    return f"nDCG@{k}" if k is not None else measure


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``known``, else ``""``."""
    import difflib

    by_lower = {k.lower(): k for k in known}
    close = difflib.get_close_matches(name.lower(), list(by_lower), n=1, cutoff=0.6)
    return f" (did you mean {by_lower[close[0]]!r}?)" if close else ""


def split_names(value: str, option: str, *, what: str = "names", sep: str = ",",
                known: Iterable[str] | None = None) -> list[str]:
    """The items of a ``sep``-separated option value, stripped.

    An empty value, an empty item (``a,,b``, a trailing ``,``), an item given twice and,
    when ``known`` is given, a name it does not hold (compared without case; with a
    did-you-mean) are errors (``invalid-value``) naming the option and what it takes, never
    silently dropped, merged or replaced by a default.
    """

    items = [v.strip() for v in value.split(sep)]
    if not any(items):
        raise TiapError(f"{option} {value!r} is empty: expected {what} separated by {sep!r}",
                        code="invalid-value")
    problems = [Problem(f"{option} {value!r}: item {i} is empty (expected {what} separated "
                        f"by {sep!r})", code="invalid-value")
                for i, v in enumerate(items, start=1) if not v]
    first: dict[str, int] = {}
    for i, v in enumerate(items, start=1):
        if v and v in first:  # a repeat is a slip (or a paste): never quietly merged
            problems.append(Problem(f"{option} {value!r}: item {i} ({v!r}) repeats item "
                                    f"{first[v]}", code="invalid-value"))
        first.setdefault(v, i)
    if known is not None:
        names = list(known)
        lower = {k.lower() for k in names}
        problems.extend(
            Problem(f"{option}: unknown {what.rstrip('s')} {v!r}{did_you_mean(v, names)}; "
                    f"known: {', '.join(names)}", code="invalid-value")
            for v in items if v and v.lower() not in lower)
    if problems:
        raise TiapError(problems=problems, code="invalid-value")
    return items


def in_range(limit: str, option: str):  # type: ignore[no-untyped-def]
    """A typer callback that refuses a value outside the declared range ``limit``
    (:data:`tiap.limits.LIMITS`), naming the option, the range and why, as the config
    schemas name an option's value: ``error[usage]: option --resamples: expected an integer
    from 1 to 10,000,000, got 0 (an integer)``, exit 2."""
    from tiap.limits import LIMITS

    declared = LIMITS[limit]

    def check(value: float | None) -> float | None:
        if value is None:
            return value
        wrong = declared.problem(value)
        if wrong is not None:
            from tiap.config import toml_value
            raise TiapError(f"option {option}: {wrong}, got {toml_value(value)}"
                            f"{declared.reason(value)}", code="usage")
        return value

    return check


def bounded(limit: str, *decls: str, help: str, schema: bool = False, **kw: Any) -> Any:
    """``typer.Option(*decls, ...)`` for a number whose values are the declared range
    ``limit`` of :data:`tiap.limits.LIMITS` (the same one the config key takes): ``--help``
    ends with the range, and a value outside it is refused naming the option.

    ``schema``: the option overrides a config key and the config's schema checks it (with
    the same range, naming the option), so that its problems are reported together with
    the other options' and the file's."""
    from tiap.limits import LIMITS

    return typer.Option(*decls, help=f"{help} {LIMITS[limit].help()}",
                        callback=None if schema else in_range(limit, decls[0]), **kw)


def one_of(*allowed: str):  # type: ignore[no-untyped-def]
    """A typer callback that accepts one of ``allowed`` (any case; returned as written in
    ``allowed``) and refuses anything else naming the option and the choices: exit 2."""

    def check(value: str | None) -> str | None:
        if value is None:
            return value
        for a in allowed:
            if value.strip().lower() == a.lower():
                return a
        raise typer.BadParameter(f"{value!r} is not one of {', '.join(allowed)}")

    return check


def print_flips(s: FlipSummary | None) -> None:
    """Winner flips on the headline measure, with the practical threshold a headline needs:
    what ``tiap audit-run`` and ``tiap sensitivity`` print (:func:`tiap.report.flip_summary`)."""
    if s is None:
        return
    # partial lineage: pairs whose flip the lineage leaves open, never counted as flips
    open_ = (f"; {s.undetermined} not determined by partial lineage (winner_flips.csv)"
             if s.undetermined else "")
    if not s.total:
        console.print(f"no winner flip between targets on any measure{open_}, so no headline "
                      f"winner flip on the primary measure ({s.path})", highlight=False)
        return
    if s.primary and not s.primary_flips:  # the flips shown are on another measure
        console.print(f"no headline winner flip on the primary measure ({', '.join(s.primary)}: "
                      f"no flip there); below, the flips on {s.headline}", highlight=False)
    several = len({r.get("dataset") for r in s.rows}) > 1  # name the dataset of each row
    t = Table(title=f"winner flips on {s.headline} ({len(s.rows)}; {s.significant} significant "
              f"{s.after_correction}, {s.headlines} of them headline; practical threshold: "
              f"{s.threshold}; {s.total} over all measures{open_}; gap = system_a - "
              "system_b)", title_justify="left")
    cols = ("system_a", "system_b", "target_1", "gap_1", "p adj", "target_2", "gap_2", "p adj ",
            "d_z 1 / 2", "headline")
    for col in ("dataset",) * several + cols:
        t.add_column(col, justify="right" if col.startswith(("gap", "p ", "d_z")) else "left")
    floor = False
    for r, c, verdict in list(zip(s.rows, s.cells, s.verdicts, strict=True))[:20]:
        floor |= "≤" in c["p_1"] + c["p_2"]
        t.add_row(*[r["dataset"]] * several, r["system_a"], r["system_b"], r["target_1"],
                  c["gap_1"], c["p_1"], r["target_2"], c["gap_2"], c["p_2"], c["effect"], verdict)
    console.print(t)
    if len(s.rows) > 20:
        console.print(f"... and {len(s.rows) - 20} more")
    if floor:
        console.print(f"≤: the raw p-value is the floor of {s.resamples:,} resamples, "
                      f"1/{s.resamples + 1:,}: an upper bound")
    if not s.headlines and (s.primary_flips or not s.primary):  # else said above
        console.print(f"no headline winner flip on the primary measure ({s.headline})",
                      highlight=False)
    console.print(f"all winner flips, with intervals and p-values: {s.path}")
