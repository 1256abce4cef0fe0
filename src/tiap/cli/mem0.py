"""``tiap mem0-run``: a real Mem0 over a dataset, offline (``tiap import mem0``, for Mem0
search results saved by any harness, is in :mod:`tiap.cli.imports`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from tiap.cli.common import (
    DataOption,
    ForceOption,
    NoVerifyOption,
    bounded,
    console,
    err_console,
    print_manifest_warnings,
    split_names,
    track,
)


def mem0_run_cmd(
    dataset: Annotated[str, typer.Argument(help="Dataset id (see `tiap datasets list`).")],
    out: Annotated[Path, typer.Option("--out", help="Output folder.")],
    collections: Annotated[str | None, typer.Option(
        "--collections", help="Comma-separated collection ids (default: all).",
        show_default=False)] = None,
    infer: Annotated[bool, typer.Option(
        "--infer/--no-infer", help="Let Mem0's LLM derive memories (needs --llm-base-url and "
        "--llm-model), or store the turns verbatim.")] = False,
    llm_base_url: Annotated[str | None, typer.Option(
        "--llm-base-url", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:11434/v1 "
        "(--infer only; the key, if any, is read from OPENAI_API_KEY and never written).",
        show_default=False)] = None,
    llm_model: Annotated[str | None, typer.Option(
        "--llm-model", help="Model name at the endpoint (--infer only).",
        show_default=False)] = None,
    window: Annotated[int, bounded(
        "window", "--window", help="Turns per add() call with --infer (a derived memory comes "
         "from one "
        "or more of them: partial lineage, bounded; 1 gives exact per-turn lineage).")] = 2,
    max_tokens: Annotated[int, bounded(
        "mem0_max_tokens", "--max-tokens", help="Cap on each extraction reply (--infer; a reply "
         "the cap cuts "
        "is not valid JSON: Mem0 stores nothing for that call, and the run counts it).")
    ] = 512,
    limit: Annotated[int, bounded("cutoff", "--limit", help="Results per search (trace depth).")
                     ] = 60,
    threshold: Annotated[float, bounded(
        "unit", "--threshold", help="Mem0's minimum semantic score (Mem0's default 0.1 can cut "
         "lists "
        "short).")] = 0.0,
    sessions: Annotated[int | None, bounded(
        "count", "--sessions", help="Feed only the first N sessions of each collection and "
         "search the "
        "queries whose evidence lies in them.", show_default=False)] = None,
    system: Annotated[str, typer.Option("--system", help="System name in the run.")] = "mem0",
    local_model: Annotated[str | None, typer.Option(
        "--local-model", help="Serve this local model (see `tiap llm models`) on 127.0.0.1 "
        "for the run, with the 16k-token context Mem0's extraction request needs (--infer "
        "only; instead of --llm-base-url and --llm-model).", show_default=False)] = None,
    local_port: Annotated[int, bounded(
        "port", "--local-port", help="Port of the --local-model server (fixed: the "
        "run's fingerprint names the endpoint, so finished collections are reused).")] = 8089,
    fresh: Annotated[bool, typer.Option(
        "--fresh", help="Discard the Mem0 stores of an earlier run in --out.")] = False,
    data: DataOption = None,
    no_verify: NoVerifyOption = False,
    force: ForceOption = False,
) -> None:
    """Run a real Mem0 (local Qdrant, local MiniLM, telemetry off) over a dataset and write
    items.jsonl (lineage from each memory's metadata), queries.jsonl, run.jsonl and a manifest.
    Finished collections are skipped on a rerun (their Mem0 stores in OUT/mem0_store are
    kept; every other file of OUT is replaced by this run's), and an interrupted one resumes
    after its last saved add() call (saved after every call with --infer)."""
    from rich.markup import escape

    from tiap.config import command_options
    from tiap.importers import run_mem0_files

    wanted = (None if collections is None
              else split_names(collections, "--collections", what="collection ids"))
    with command_options({"infer": "--infer", "window": "--window", "limit": "--limit",
                          "threshold": "--threshold", "llm_base_url": "--llm-base-url",
                          "llm_model": "--llm-model", "max_sessions": "--sessions",
                          "system": "--system", "max_tokens": "--max-tokens",
                          "local_model": "--local-model"}):
        res = run_mem0_files(
            dataset, out, collections=wanted, local_model=local_model, local_port=local_port,
            data=data, verify=not no_verify, progress=track,
            log=lambda m: err_console.print(escape(m)), fresh=fresh, force=force,
            infer=infer, window=window, limit=limit, threshold=threshold,
            llm_base_url=llm_base_url, llm_model=llm_model, max_tokens=max_tokens,
            max_sessions=sessions, system=system)
    t = Table(title=f"Mem0 on {dataset} ({'infer' if infer else 'no infer'})",
              title_justify="left")
    for col in ("collection", "turns fed", "add calls", "memories", "queries", "add s",
                "search s"):
        t.add_column(col, justify="left" if col == "collection" else "right")
    for d in res.collections:
        t.add_row(d["collection"] + (" (done before)" if d["collection"] in res.skipped else ""),
                  f"{d['turns_fed']:,}", f"{d['add_calls']:,}", f"{d['memories']:,}",
                  f"{d['queries']:,}", f"{d['seconds_add']:.1f}", f"{d['seconds_search']:.1f}")
    console.print(t)
    for d in res.collections:  # queries not searched are counted, never silently gone
        out_ = d.get("queries_left_out") or {}
        if out_.get("outside_slice"):
            err_console.print(f"{d['collection']}: {out_['outside_slice']:,} queries not "
                              f"searched: their evidence lies beyond the first {sessions} "
                              "session(s) (--sessions)")
        if d.get("adds_unparsed"):
            bad = d["adds_unparsed"]
            err_console.print(
                f"[yellow]warning[/]: {d['collection']}: {len(bad):,} of {d['add_calls']:,} "
                "add() calls stored nothing because Mem0 could not parse the model's reply "
                "(cut by --max-tokens, or not JSON): turns "
                f"{', '.join(','.join(b) for b in bad[:5])}{', ...' if len(bad) > 5 else ''}"
                " (all in adds.jsonl)")
        if out_.get("blank"):
            err_console.print(f"[yellow]warning[/]: {d['collection']}: {out_['blank']:,} "
                              "queries not searched: no question text")
    print_mem0_report(res.imported.report.counts(), out)
    print_manifest_warnings(out)
    err_console.print(f"wrote {out}")


def print_mem0_report(c: dict[str, Any], out: Path) -> None:
    t = Table(title="imported", title_justify="left", show_header=False)
    t.add_row("queries", f"{c['queries']:,}")
    t.add_row("items", f"{c['items']:,}  " + ", ".join(f"{k} {v:,}" for k, v in c["kinds"].items()))
    t.add_row("retrieved items", f"{c['retrieved_items']:,}")
    t.add_row("depth", f"{c['depth']['min']}-{c['depth']['max']}")
    console.print(t)
    for key, what in (("items_without_source", "items with no recoverable source"),
                      ("raw_not_single", "raw items without exactly one source"),
                      ("retrieved_not_in_memories", "retrieved items missing from --memories"),
                      ("queries_without_scores", "queries without scores"),
                      ("queries_without_evidence", "queries without evidence")):
        if c.get(key):
            err_console.print(f"[yellow]note[/]: {c[key]:,} {what} "
                              f"(listed in {out / 'mem0_report.json'})")
