"""``tiap import SYSTEM PATH --out DIR``: bring other systems' traces in, with their lineage.

One subcommand per system registered in :data:`tiap.importers.IMPORTERS`. Systems with
options of their own have a command below; any other registered system gets a plain one
(``PATH --out DIR [--option KEY=VALUE ...]``). Every command prints the lineage coverage of
what it wrote (``lineage_coverage.json``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from tiap.cli.common import (
    DataOption,
    ForceOption,
    NoVerifyOption,
    console,
    err_console,
    print_manifest_warnings,
)
from tiap.errors import TiapError
from tiap.importers import COVERAGE_FILE, IMPORTERS, run_import

app = typer.Typer(help="Import traces of other systems with their lineage.", no_args_is_help=True,
                  rich_markup_mode=None)  # plain help: no boxes, wrapped to the terminal

OutOption = Annotated[Path, typer.Option("--out", help="Output folder.")]
SystemOption = Annotated[str | None, typer.Option(
    "--system", help="System name of the run (default: from the input's name).")]
DatasetOption = Annotated[str | None, typer.Option(
    "--dataset", help="Registered dataset whose turns (and, without --queries, queries with "
    "their evidence) are used, e.g. locomo.")]
QueriesOption = Annotated[Path | None, typer.Option(
    "--queries", help="A queries.jsonl to score against instead of --dataset.")]


def print_coverage(done: Any, title: str) -> None:
    """Print the lineage coverage of an import (:class:`tiap.importers.Imported`), its
    manifest's warnings, and where it wrote."""
    c, out = done.coverage, done.out
    file = out / COVERAGE_FILE
    t = Table(title=title, title_justify="left", show_header=False)
    t.add_row("queries", f"{c['queries']:,} ({c['queries_all_evidence_reached']:,} with all "
              "evidence reached by some item)")
    t.add_row("items", f"{c['items']:,}  " + ", ".join(f"{k} {v:,}" for k, v in c["kinds"].items()))
    t.add_row("items with no source", f"{c['items_with_no_source']:,}  " + ", ".join(
        f"{k} {v:,}" for k, v in c["items_with_no_source_by_kind"].items()))
    t.add_row("ranked positions with no source",
              f"{c['ranked_positions_with_no_source']:,} of {c['ranked_positions']:,}")
    if c.get("items_with_partial_lineage"):
        t.add_row("items with partial lineage (bounded)",
                  f"{c['items_with_partial_lineage']:,}  " + ", ".join(
                      f"{k} {v:,}" for k, v in c["items_with_partial_lineage_by_kind"].items()))
    if c.get("placeholder_items"):
        t.add_row("placeholder items (unseen, never ranked)", f"{c['placeholder_items']:,}")
    if c["unknown_ranked_ids"]:
        t.add_row("ranked ids that are not items", f"{c['unknown_ranked_ids']:,}")
    if c["unreached_evidence_units"]:
        t.add_row("evidence units no item reaches", f"{c['unreached_evidence_units']:,}")
    for key, value in c.get("importer", {}).items():
        if isinstance(value, (int, float, str)) and value:
            t.add_row(key.replace("_", " "), f"{value:,}" if isinstance(value, int) else str(value))
    console.print(t)
    if c["items_with_no_source"]:
        err_console.print(f"[yellow]note[/]: {c['items_with_no_source']:,} items have no "
                          f"recoverable source; no target credits them (listed in {file})")
    print_manifest_warnings(out)
    err_console.print(f"wrote {out}")


@app.command("mtel-trace")
def mtel_trace_cmd(
    path: Annotated[Path, typer.Argument(
        help="A trace*.jsonl(.gz) of the paper's MTEL-Mem release.")],
    out: Annotated[Path, typer.Option("--out", help="Output folder.")],
    system: Annotated[str | None, typer.Option(
        "--system", help="System name (default: the trace's folder name).")] = None,
    locomo: Annotated[Path | None, typer.Option(
        "--locomo", help="LoCoMo's locomo10.json (default: TIAP's data folder, verified).")] = None,
    infer_from_text: Annotated[bool, typer.Option(
        "--infer-from-text", help="Assign ambiguous derived items to gold turns by word overlap "
        "(a heuristic; reproduces the native traces' published figures).")] = False,
    force: ForceOption = False,
) -> None:
    """The paper's published MTEL-Mem traces, with the lineage they reveal.

    Writes items.jsonl, queries.jsonl, run.jsonl, mtel_report.json, lineage_coverage.json and
    a manifest, and says what lineage the trace does not reveal."""
    imp = run_import("mtel-trace", path, out, force=force, locomo_path=locomo, system=system,
                     infer_from_text=infer_from_text).result
    c = imp.report.counts()
    t = Table(title=f"imported {path.name} as {imp.run.system}", title_justify="left",
              show_header=False)
    t.add_row("queries", f"{c['queries']:,}")
    t.add_row("items", f"{c['items']:,}  " + ", ".join(f"{k} {v:,}" for k, v in c["kinds"].items()))
    for key in ("placeholder_items", "ambiguous_items", "ambiguous_raw_items",
                "text_inferred_items", "partial_lineage_items"):
        if c.get(key):
            t.add_row(key.replace("_", " "), f"{c[key]:,}")
    console.print(t)
    per = c.get("query_status", {})
    if per:
        s = Table(title="lineage per (query, target): exact / inferred / unknown",
                  title_justify="left")
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
                f"(query, target) pairs; rescoring gives their values as [lower, upper] "
                f"bounds (details per query in {out / 'mtel_report.json'})", highlight=False)
    print_manifest_warnings(out)
    err_console.print(f"wrote {out}")


@app.command("generic")
def generic_cmd(
    path: Annotated[Path, typer.Argument(help="A JSONL file of item, ranking and (optional) "
                                         "query records (docs/import.md).")],
    out: OutOption,
    system: SystemOption = None,
    dataset: DatasetOption = None,
    queries: QueriesOption = None,
    data: DataOption = None,
    force: ForceOption = False,
) -> None:
    """TIAP's generic export: ranked ids per query plus item lineage."""
    done = run_import("generic", path, out, force=force, system=system, dataset=dataset,
                      queries=queries, data_dir=data)
    print_coverage(done, f"imported {path.name} as {done.result.system}")


@app.command("memoryos")
def memoryos_cmd(
    path: Annotated[Path, typer.Argument(help="A MemoryOS run folder: results.jsonl plus the "
                                         "store's JSON files (docs/import.md).")],
    out: OutOption,
    system: SystemOption = None,
    dataset: DatasetOption = "locomo",
    queries: QueriesOption = None,
    data: DataOption = None,
    force: ForceOption = False,
) -> None:
    """MemoryOS: pages -> turns, session summaries -> pages.

    Pages (QA pairs) are matched to their turns by text and session date; what the text does
    not decide, and knowledge (no recorded source), is partial lineage that rescoring
    bounds."""
    done = run_import("memoryos", path, out, force=force, system=system, dataset=dataset,
                      queries=queries, data_dir=data)
    print_coverage(done, f"imported {path.name} as {done.result.system}")


@app.command("graphiti")
def graphiti_cmd(
    path: Annotated[Path, typer.Argument(help="JSONL of Graphiti/Zep search results, one query "
                                         "a line (docs/import.md).")],
    out: OutOption,
    graph: Annotated[Path | None, typer.Option(
        "--graph", help="JSONL of the graph's episodes, edges and nodes (their JSON dumps; an "
        "episode may carry 'sources', the turns it holds).")] = None,
    level: Annotated[str, typer.Option(
        "--level", help="What the run ranks: edge, node or episode.")] = "edge",
    system: SystemOption = None,
    dataset: DatasetOption = "locomo",
    queries: QueriesOption = None,
    data: DataOption = None,
    force: ForceOption = False,
) -> None:
    """Graphiti / Zep: edges -> their episodes -> turns; nodes -> their edges (graph targets)."""
    done = run_import("graphiti", path, out, force=force, graph=graph, level=level,
                      system=system, dataset=dataset, queries=queries, data_dir=data)
    print_coverage(done, f"imported {path.name} as {done.result.system} ({level} level)")


def _plain_command(name: str, help_text: str) -> None:
    def cmd(
        path: Annotated[Path, typer.Argument(help="The system's saved output.")],
        out: OutOption,
        option: Annotated[list[str] | None, typer.Option(
            "--option", help="KEY=VALUE passed to the importer. Repeatable.")] = None,
        force: ForceOption = False,
    ) -> None:
        opts: dict[str, Any] = {}
        for o in option or []:
            key, sep, value = o.partition("=")
            if not sep or not key.strip():
                raise TiapError(f"--option {o!r}: expected KEY=VALUE")
            opts[key.strip().replace("-", "_")] = value
        print_coverage(run_import(name, path, out, force=force, **opts),
                       f"imported {path.name} ({name})")

    cmd.__doc__ = help_text
    app.command(name)(cmd)


@app.command("mem0")
def mem0_cmd(
    path: Annotated[Path, typer.Argument(help="Saved Mem0 search results (JSONL or JSON).")],
    out: OutOption,
    memories: Annotated[Path | None, typer.Option(
        "--memories", help="The store's full content (Mem0 memories, JSONL), so unretrieved "
        "memories count in the families.", show_default=False)] = None,
    dataset: DatasetOption = None,
    queries: QueriesOption = None,
    sources_key: Annotated[str, typer.Option(
        "--sources-key", help="Metadata key holding the source unit ids.")] = "source_ids",
    kind_key: Annotated[str, typer.Option(
        "--kind-key", help="Metadata key holding the item kind.")] = "tiap_kind",
    window_key: Annotated[str, typer.Option(
        "--window-key", help="Metadata key holding the turns of a multi-turn add() call the "
        "memory came from (one or more of them: partial lineage, bounded).")
        ] = "source_window",
    default_kind: Annotated[str, typer.Option(
        "--default-kind", help="Kind of memories whose metadata names none.")] = "mem0_fact",
    system: Annotated[str, typer.Option("--system", help="System name in the run.")] = "mem0",
    data: DataOption = None,
    no_verify: NoVerifyOption = False,
    force: ForceOption = False,
) -> None:
    """Mem0 search results saved by any harness (ids, memory, metadata, score).

    Writes items.jsonl with lineage from each memory's metadata, queries.jsonl, run.jsonl,
    mem0_report.json, lineage_coverage.json and a manifest. Without --dataset or --queries,
    the queries come from the fields of the results file."""
    from tiap.cli.mem0 import print_mem0_report

    done = run_import("mem0", path, out, force=force, memories=memories, queries=queries,
                      dataset=dataset, data_dir=data, verify=not no_verify, system=system,
                      sources_key=sources_key, kind_key=kind_key, window_key=window_key,
                      default_kind=default_kind)
    print_mem0_report(done.result.report.counts(), out)
    print_coverage(done, "lineage coverage")


_DEDICATED = {"mtel-trace", "generic", "memoryos", "graphiti", "mem0"}
for _imp in IMPORTERS.values():
    if _imp.name not in _DEDICATED:
        _plain_command(_imp.name, _imp.help + ("" if _imp.available else
                                                " (not in this installation)"))
