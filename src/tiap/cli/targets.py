"""``tiap targets``: build the Raw, Source, Canonical (and user-defined) targets of a store."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from tiap.cli.common import console, err_console

TargetsOption = Annotated[
    str,
    typer.Option(
        "--targets",
        help="Comma-separated target names (raw, source, canonical) or name=spec definitions, "
        "e.g. 'facts=kind in {fact,observation}'. Separate definitions containing commas with ';'.",
    ),
]


def split_targets(value: str) -> list[str]:
    """``raw,source`` or ``raw;facts=kind in {fact,observation}`` -> target definitions."""
    sep = ";" if ";" in value or "{" in value else ","
    return [t.strip() for t in value.split(sep) if t.strip()]


def targets_cmd(
    items: Annotated[Path, typer.Option("--items", help="The store: items.jsonl (gzip ok).")],
    queries: Annotated[Path, typer.Option("--queries", help="queries.jsonl (gzip ok).")],
    out: Annotated[Path, typer.Option("--out", help="Output folder.")],
    targets: TargetsOption = "raw,source,canonical",
) -> None:
    """Write the groups per (query, target), target-mapping rows, TREC qrels per target and
    the coverage summary."""
    from tiap.datasets.queryfile import read_queries
    from tiap.memory.store import read_items
    from tiap.targets import write_targets

    cov = write_targets(
        out, read_items(items), read_queries(queries), split_targets(targets),
        input_files={"items": items, "queries": queries},
    )
    t = Table(title=f"coverage ({cov.queries:,} queries, {cov.n_items:,} items)", title_justify="left")
    for col in ("target", "queries with a group", "zero-target", "groups", "mean group size"):
        t.add_column(col, justify="left" if col == "target" else "right")
    for tc in cov.targets:
        row = tc.to_json()
        t.add_row(tc.target, f"{row['defined']:,}", f"{row['zero_target']:,}",
                  f"{row['groups']:,}", f"{row['mean_group_size']:.2f}" if row["mean_group_size"] else "-")
    console.print(t)
    if cov.unknown_evidence:
        err_console.print(f"[yellow]warning[/]: {len(cov.unknown_evidence):,} queries name evidence "
                          f"units that no stored item reaches (listed in {out / 'coverage.json'})")
    err_console.print(f"wrote {out}")
