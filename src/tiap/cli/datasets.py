"""``tiap datasets``: list, inspect and export the benchmark datasets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from tiap.cli.common import (
    DataOption,
    ForceOption,
    NoVerifyOption,
    console,
    err_console,
    track,
)
from tiap.datasets import DatasetStats, DataSource, dataset_stats, list_datasets

app = typer.Typer(help="List, inspect and export benchmark datasets.", no_args_is_help=True,
                  rich_markup_mode=None)  # plain help: no boxes, wrapped to the terminal

MAX_PROBLEMS_SHOWN = 25


@app.command("list")
def list_cmd(data: DataOption = None) -> None:
    """List the registered datasets and whether their files are present."""
    source = DataSource(data)
    table = Table(title=f"TIAP datasets (data: {source.describe()})")
    table.add_column("id")
    table.add_column("description")
    table.add_column("files here", justify="right")
    for row in list_datasets(source):
        table.add_row(row.dataset_id, row.description, f"{row.here}/{row.files}")
    console.print(table)


@app.command("stats")
def stats_cmd(
    dataset: Annotated[
        str | None, typer.Argument(help="Dataset id (see `tiap datasets list`); all when omitted.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object per dataset.")] = False,
    data: DataOption = None,
    no_verify: NoVerifyOption = False,
) -> None:
    """Counts per dataset and per category, and every evidence problem found."""
    for stats in dataset_stats(dataset, DataSource(data, verify=not no_verify), track=track):
        if as_json:
            print(json.dumps(stats.to_json(), ensure_ascii=False, allow_nan=False))
        else:
            _print_stats(stats)


def _print_stats(s: DatasetStats) -> None:
    t = Table(title=f"{s.dataset_id}", show_header=False, title_justify="left")
    for k, v in (
        ("collections", s.collections), ("sessions", s.sessions), ("turns", s.turns),
        ("queries", s.queries), ("queries with evidence", s.queries_with_evidence),
        ("abstention queries", s.abstention_queries), ("derived memories", s.derived_memories),
        ("evidence problems", len(s.evidence_problems)),
    ):
        t.add_row(k, f"{v:,}")
    console.print(t)
    c = Table(title=f"{s.dataset_id}: per category", title_justify="left")
    for col in ("category", "queries", "with evidence", "abstention"):
        c.add_column(col, justify="left" if col == "category" else "right")
    for cat, v in s.per_category.items():
        c.add_row(cat, f"{v['queries']:,}", f"{v['with_evidence']:,}", f"{v['abstention']:,}")
    console.print(c)
    if s.evidence_problems:
        p = Table(title=f"{s.dataset_id}: evidence problems", title_justify="left")
        for col in ("query", "evidence as given", "problem", "detail"):
            p.add_column(col)
        for e in s.evidence_problems[:MAX_PROBLEMS_SHOWN]:
            p.add_row(e.query_id, e.evidence, e.problem, e.detail)
        console.print(p)
        if len(s.evidence_problems) > MAX_PROBLEMS_SHOWN:
            console.print(f"... and {len(s.evidence_problems) - MAX_PROBLEMS_SHOWN} more "
                          f"(all of them: tiap datasets stats {s.dataset_id} --json)")
    for n in s.notes[:10]:
        console.print(f"[yellow]note[/]: {n}")
    if len(s.notes) > 10:
        console.print(f"... and {len(s.notes) - 10} more notes (--json lists them all)")
    console.print()


@app.command("export")
def export_cmd(
    dataset: Annotated[str, typer.Argument(help="Dataset id (see `tiap datasets list`).")],
    out: Annotated[Path, typer.Option("--out", help="Output folder.")],
    data: DataOption = None,
    no_verify: NoVerifyOption = False,
    force: ForceOption = False,
) -> None:
    """Write turns.jsonl, queries.jsonl, memories.jsonl, problems.jsonl and a manifest
    (the folder is replaced whole; one that is not an earlier export needs --force). Every
    file the dataset reads must be present or downloadable: a missing one is an error, never
    an export without it."""
    from tiap.datasets import export_dataset

    counts = export_dataset(dataset, out, force=force,
                            source=DataSource(data, verify=not no_verify))
    err_console.print(
        f"wrote {out}: {counts['turns']:,} turns, {counts['queries']:,} queries, "
        f"{counts['memories']:,} derived memories, {counts['problems']:,} evidence problems"
    )


@app.command("overlay")
def overlay_cmd(
    name: Annotated[str, typer.Argument(
        help="The overlay: locomo-audit (the corrected LoCoMo evidence of "
        "dial481/locomo-audit, CC BY-NC 4.0).")],
    out: Annotated[Path, typer.Option("--out", help="Output folder.")],
    data: DataOption = None,
    no_verify: NoVerifyOption = False,
    force: ForceOption = False,
) -> None:
    """Write an evidence overlay (overlay.jsonl: other evidence for some queries; the format
    is in docs/datasets.md), problems.jsonl (every audited id that could not be mapped to a
    query, every evidence id that could not be resolved) and a manifest. Rescore under it
    with `tiap rescore ... --overlay NAME=OUT/overlay.jsonl`."""
    from tiap.datasets import export_overlay

    res = export_overlay(name, out, source=DataSource(data, verify=not no_verify), force=force)
    ov, n, changed = res.overlay, res.rows, res.changed
    for p in ov.problems[:MAX_PROBLEMS_SHOWN]:
        err_console.print(f"[yellow]warning\\[{p.kind}][/]: {p.record}: {p.detail}",
                          highlight=False, soft_wrap=True)
    err_console.print(f"wrote {out}: {n:,} queries with overlay evidence ({changed:,} differ "
                      f"from the dataset's), {len(ov.problems):,} ids or evidence not usable "
                      "(problems.jsonl)", highlight=False)
