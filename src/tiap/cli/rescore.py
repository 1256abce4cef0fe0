"""``tiap rescore``: score saved runs under several targets without re-running retrieval."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from tiap.cli.common import console, err_console
from tiap.cli.targets import TargetsOption, split_targets
from tiap.errors import TiapError


def parse_named(value: str) -> tuple[str | None, Path]:
    """``NAME=PATH`` -> (NAME, PATH); a plain ``PATH`` -> (None, PATH)."""
    if "=" in value:
        name, _, path = value.partition("=")
        if name and not Path(value).exists():
            return name.strip(), Path(path)
    return None, Path(value)


def load_runs(specs: list[str], dedup: str) -> list:  # type: ignore[type-arg]
    from tiap.traces.runs import read_run

    runs = []
    for spec in specs:
        name, path = parse_named(spec)
        got = read_run(path, dedup=dedup)  # type: ignore[arg-type]
        if name is None:
            runs.extend(got)
        elif len(got) == 1:
            runs.append(dataclasses.replace(got[0], system=name,
                                            rankings=tuple(dataclasses.replace(r, system=name)
                                                           for r in got[0].rankings)))
        else:
            chosen = [r for r in got if r.system == name]
            if not chosen:
                raise TiapError(f"{name}=: the file holds {len(got)} systems "
                                f"({', '.join(r.system for r in got)}); name one of them",
                                file=path)
            runs.extend(chosen)
    return runs


def rescore_cmd(
    items: Annotated[list[str], typer.Option(
        "--items", help="Store items.jsonl; NAME=PATH pairs a store with the run called NAME, "
        "a plain PATH serves every other run. Repeatable.")],
    queries: Annotated[Path, typer.Option("--queries", help="queries.jsonl (gzip ok).")],
    run: Annotated[list[str], typer.Option(
        "--run", help="A run file ([NAME=]PATH): TREC, JSONL rankings or ranked-trace rows, "
        "gzip ok. Repeatable.")],
    out: Annotated[Path, typer.Option("--out", help="Output folder.")],
    targets: TargetsOption = "raw,source,canonical",
    measures: Annotated[str, typer.Option(
        "--measures", help="Measures, e.g. nDCG@60,R@60,RR@60,Success@60.")] = "nDCG@60,R@60,RR@60,Success@60",
    credit: Annotated[str, typer.Option(
        "--credit", help="group (the paper's scorer) or set (trec_eval semantics).")] = "group",
    shared: Annotated[bool, typer.Option(
        "--shared", help="Average each system over the queries defined under every target.")] = False,
    missing: Annotated[str, typer.Option(
        "--missing", help="Queries a run does not rank: skip (left out, reported) or zero "
        "(scored as empty rankings).")] = "skip",
    dedup: Annotated[str, typer.Option(
        "--dedup", help="A repeated id in one ranking: error, or first (keep the first, "
        "counted warning).")] = "error",
    depth: Annotated[int | None, typer.Option("--depth", help="Cut rankings to this depth.")] = None,
    parquet: Annotated[bool, typer.Option("--parquet", help="Also write per_query.parquet.")] = False,
) -> None:
    """Rescore fixed runs under Raw, Source, Canonical (and custom) targets: writes
    per_query.csv, summary.csv, pairwise.csv, zero_targets.csv and manifest.json."""
    from tiap.datasets.queryfile import read_queries
    from tiap.memory.store import read_items
    from tiap.scoring.output import write_rescore
    from tiap.scoring.rescore import rescore

    stores: dict[str | None, list] = {}  # type: ignore[type-arg]
    inputs: dict[str, Path] = {"queries": queries}
    for spec in items:
        name, path = parse_named(spec)
        if name in stores:
            raise TiapError(f"two stores given for {name or 'every run'}", file=path)
        stores[name] = read_items(path)
        inputs[f"items:{name}" if name else "items"] = path
    qs = read_queries(queries)
    runs = load_runs(run, dedup)
    for spec in run:
        name, path = parse_named(spec)
        inputs[f"run:{name or path.name}"] = path
    result = rescore(runs, qs, stores, targets=split_targets(targets), measures=measures,
                     credit=credit, missing=missing, depth=depth)  # type: ignore[arg-type]
    for rep in result.reports.values():
        for w in rep.warnings():
            err_console.print(f"[yellow]warning[/]: {w}", highlight=False)
    write_rescore(result, out, queries=qs, inputs=inputs, shared=shared, parquet=parquet,
                  options={"missing": missing, "dedup": dedup, "depth": depth})
    print_summary(result, shared)
    err_console.print(f"wrote {out}")


def print_summary(result, shared: bool) -> None:  # type: ignore[no-untyped-def]
    rows = result.summary_rows(shared=shared)
    t = Table(title=f"mean per target ({result.credit} credit"
              f"{', shared subset' if shared else ''})", title_justify="left")
    t.add_column("system")
    t.add_column("target")
    t.add_column("n", justify="right")
    for m in result.measures:
        t.add_column(str(m), justify="right")
    by = {(r["system"], r["target"], r["measure"]): r for r in rows}
    for s in result.systems:
        for tn in result.target_names:
            first = by[(s, tn, str(result.measures[0]))]
            cells = []
            for m in result.measures:
                v = by[(s, tn, str(m))]["mean"]
                cells.append("-" if v is None else f"{v:.4f}")
            t.add_row(s, tn, f"{first['n']:,}", *cells)
    console.print(t)
