"""``tiap import``: bring other systems' traces in, with the lineage they carry."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from tiap.cli.common import console, err_console

app = typer.Typer(help="Import traces of other systems with their lineage.", no_args_is_help=True)


@app.command("mtel-trace")
def mtel_trace_cmd(
    path: Annotated[Path, typer.Argument(help="A trace*.jsonl(.gz) of the paper's MTEL-Mem release.")],
    out: Annotated[Path, typer.Option("--out", help="Output folder.")],
    system: Annotated[str | None, typer.Option(
        "--system", help="System name (default: the trace's folder name).")] = None,
    locomo: Annotated[Path | None, typer.Option(
        "--locomo", help="LoCoMo's locomo10.json (default: TIAP's data folder, verified).")] = None,
    infer_from_text: Annotated[bool, typer.Option(
        "--infer-from-text", help="Assign ambiguous derived items to gold turns by word overlap "
        "(a heuristic; reproduces the native traces' published figures).")] = False,
) -> None:
    """Write items.jsonl, queries.jsonl, run.jsonl, mtel_report.json and a manifest, and say
    what lineage the trace does not reveal."""
    from tiap.traces.mtel import import_mtel_trace, write_mtel_import

    imp = import_mtel_trace(path, locomo_path=locomo, system=system, infer_from_text=infer_from_text)
    write_mtel_import(imp, out)
    c = imp.report.counts()
    t = Table(title=f"imported {path.name} as {imp.run.system}", title_justify="left",
              show_header=False)
    t.add_row("queries", f"{c['queries']:,}")
    t.add_row("items", f"{c['items']:,}  " + ", ".join(f"{k} {v:,}" for k, v in c["kinds"].items()))
    for key in ("placeholder_items", "ambiguous_items", "assumed_items", "text_inferred_items",
                "partial_lineage_items"):
        if c.get(key):
            t.add_row(key.replace("_", " "), f"{c[key]:,}")
    console.print(t)
    per = c.get("query_status", {})
    if per:
        s = Table(title="lineage per (query, target): exact / inferred / unknown", title_justify="left")
        s.add_column("target")
        for col in ("exact", "inferred", "unknown"):
            s.add_column(col, justify="right")
        for tname, d in per.items():
            s.add_row(tname, *(f"{d.get(k, 0):,}" for k in ("exact", "inferred", "unknown")))
        console.print(s)
        unknown = sum(d.get("unknown", 0) for d in per.values())
        if unknown:
            err_console.print(
                f"[yellow]note[/]: the trace does not reveal the full lineage of {unknown:,} "
                f"(query, target) pairs; their Source/Canonical values are not the paper's "
                f"(details per query in {out / 'mtel_report.json'})")
    err_console.print(f"wrote {out}")
