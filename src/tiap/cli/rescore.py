"""``tiap rescore``: score saved runs under several targets without re-running retrieval."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from tiap.cli.common import (
    ForceOption,
    bounded,
    console,
    err_console,
    one_of,
    print_warnings,
    split_names,
)
from tiap.cli.targets import split_targets
from tiap.scoring import DEFAULT_K

QRELS_HELP = (
    "A TREC qrels file as a target: NAME=PATH ('qid iter docid rel', gzip ok). Repeatable: "
    "one target per file. Replaces --items/--queries/--targets: each relevant judgment "
    "(rel > 0) is a group of one item, so group and set credit give the same, trec_eval's, "
    "values on binary qrels; graded qrels (rel > 1) need --credit set (gain = rel). The "
    "queries scored are the run's queries that some qrels file judges; a query a file does "
    "not judge, or judges only rel <= 0, is undefined (empty value) under that target. "
    "See docs/rescore.md."
)


def rescore_cmd(
    run: Annotated[list[str], typer.Option(
        "--run", help="A run file ([NAME=]PATH): TREC, JSONL rankings or ranked-trace rows, "
        "gzip ok. Repeatable.")],
    out: Annotated[Path, typer.Option("--out", help="Output folder.")],
    items: Annotated[list[str] | None, typer.Option(
        "--items", help="Store items.jsonl; NAME=PATH pairs a store with the run called NAME, "
        "a plain PATH serves every other run. Repeatable. Needs --queries.")] = None,
    queries: Annotated[Path | None, typer.Option(
        "--queries", help="queries.jsonl (gzip ok). Needs --items.")] = None,
    qrels: Annotated[list[str] | None, typer.Option("--qrels", help=QRELS_HELP)] = None,
    targets: Annotated[str | None, typer.Option(
        "--targets", help="With --items/--queries: comma-separated target names (raw, source, "
        "canonical) or name=spec definitions, e.g. 'facts=kind in {fact,observation}'. "
        "Separate definitions containing commas with ';'. Default: raw,source,canonical.",
        show_default=False)] = None,
    overlay: Annotated[list[str] | None, typer.Option(
        "--overlay", help="An evidence overlay, NAME=PATH (overlay.jsonl: other evidence for "
        "some queries, e.g. from `tiap datasets overlay locomo-audit`); target T~NAME scores T "
        "under it. Without --targets, every target is also scored under each overlay. "
        "Repeatable.", show_default=False)] = None,
    engine: Annotated[str, typer.Option(
        "--engine", help="Where the runs are scored: local, ray (a local Ray instance), "
        "ray://HOST:PORT or ray:auto (a cluster); a task per run, or per --query-shard "
        "queries of a run; the outputs the same.")] = "local",
    query_shard: Annotated[int | None, bounded(
        "count", "--query-shard", help="Queries per scoring task (default: a task per run): a "
        "run's shards are scored apart and concatenated in query order, the outputs the "
        "same.", show_default=False)] = None,
    tokenizer: Annotated[str | None, typer.Option(
        "--tokenizer", help="Tokenizer of cost.csv (context tokens of the top k) and of "
        "token-budget measures (nDCG@tok2000): cl100k_base (default, where the cost extra is "
        "installed), o200k_base, or none.", show_default=False)] = None,
    k: Annotated[int | None, bounded(
        "cutoff", "--k", help="Cutoff of the default measures nDCG@K,R@K,RR@K,Success@K "
        f"(default {DEFAULT_K}, as retrieval's depth).", show_default=False)] = None,
    measures: Annotated[str | None, typer.Option(
        "--measures", help="Measures instead of --k's, e.g. nDCG@20,nDCG@60,R@60,Success@1; "
        "`tiap measures` lists the syntax.", show_default=False)] = None,
    credit: Annotated[str, typer.Option(
        "--credit", help="group (the paper's scorer) or set (trec_eval semantics).",
        callback=one_of("group", "set"))] = "group",
    shared: Annotated[bool, typer.Option(
        "--shared", help="Average each system over the queries defined under every target "
        "(an error when no query is: a target defined on none).")] = False,
    missing: Annotated[str, typer.Option(
        "--missing", help="Queries a run does not rank: skip (left out, reported) or zero "
        "(scored as empty rankings).",
        callback=one_of("skip", "zero"))] = "skip",
    dedup: Annotated[str, typer.Option(
        "--dedup", help="A repeated id in one ranking: error, or first (keep the first, "
        "counted warning).",
        callback=one_of("error", "first"))] = "error",
    order: Annotated[str, typer.Option(
        "--order", help="How each query's items are ordered: rank (the rank column, or a "
        "JSONL ranking's list order, is the data; ranks must run 1..n without ties) or score "
        "(trec_eval's rule: the rank column is ignored, items sorted by score, highest first, "
        "equal scores by item id, the greater id as bytes first). See docs/rescore.md.",
        callback=one_of("rank", "score"))] = "rank",
    depth: Annotated[int | None, bounded(
        "cutoff", "--depth", help="Cut rankings to this depth.")] = None,
    parquet: Annotated[bool, typer.Option(
        "--parquet", help="Also write per_query/ as Parquet, partitioned by system and target "
        "(system=S/target=T/part-0.parquet).")] = False,
    force: ForceOption = False,
) -> None:
    """Rescore fixed runs under Raw, Source, Canonical (and custom) targets, or under TREC
    qrels files (--qrels): writes per_query.csv, summary.csv, pairwise.csv, zero_targets.csv,
    target_sizes.csv, queries.csv and manifest.json."""
    from tiap.config import command_options
    from tiap.scoring import rescore_files

    if measures is not None:  # the option's list syntax; rescore_files checks the measures
        split_names(measures, "--measures", what="measures such as nDCG@60")
    tlist = split_targets(targets) if targets is not None else None
    with command_options({"runs": "--run", "items": "--items", "queries": "--queries",
                          "qrels": "--qrels", "targets": "--targets", "overlays": "--overlay",
                          "tokenizer": "--tokenizer", "k": "--k", "measures": "--measures"}):
        done = rescore_files(run, out, items=items or [], queries=queries, qrels=qrels or [],
                             targets=tlist, overlays=overlay or [], engine=engine,
                             query_shard=query_shard, tokenizer=tokenizer, k=k,
                             measures=measures, credit=credit, shared=shared, missing=missing,
                             dedup=dedup, order=order, depth=depth, parquet=parquet,
                             force=force)
    for code, text in done.overlay_findings():
        err_console.print(f"[yellow]warning\\[{code}][/]: {escape(text)}", highlight=False,
                          soft_wrap=True)
    result = done.scores
    _print_findings(result, done.run_warnings, out)
    print_summary(result, shared)
    if getattr(result, "cost", ()):
        _print_cost(result)
    _print_integrity(result)
    err_console.print(f"wrote {out}")


def _print_integrity(result: Any) -> None:
    """integrity.csv's checks, one line per finding, naming the systems it holds for."""
    by_text: dict[str, list[str]] = {}
    for r in getattr(result, "integrity", ()):
        if r["check"] == "k_covers_pool" and r["flagged"]:
            text = (f"{r['flagged']:,} of {r['queries']:,} queries rank at least their whole "
                    f"pool in the top {r['cutoff']}: recall there is 1 whatever the order "
                    f"({r['detail']})")
        elif r["check"] == "lineage_known_at_k" and r["flagged"]:
            text = (f"lineage known for {r['share']:.1%} of the top-{r['cutoff']} items "
                    f"({r['detail']})")
        elif r["check"] == "evidence_one_session" and r["queries"]:
            undetermined = r["detail"].split(" ", 1)[0].replace(",", "") if r["detail"] else "0"
            if int(undetermined) == r["queries"]:
                text = ("whether a query's evidence lies in one session is not determined (no "
                        "raw item of the store carries its session)")
            else:
                text = (f"{r['flagged']:,} of {r['queries']:,} queries have all their evidence "
                        "in one session" + (f"; {r['detail']}" if r["detail"] else ""))
        else:
            continue
        by_text.setdefault(text, []).append(r["system"])
    for text, systems in by_text.items():
        who = ", ".join(systems[:3]) + (f" and {len(systems) - 3} more" if len(systems) > 3
                                         else "")
        err_console.print(f"integrity: {who}: {text}", highlight=False, soft_wrap=True)


def _print_cost(result: Any) -> None:
    """Context tokens of the top k per system (cost.csv), one line each."""
    tok = result.tokenizer.get("name", "?")
    for r in result.cost:
        if r["cutoff"] == "all" or r["mean_tokens"] is None:
            continue
        lat = (f", latency {r['mean_latency_ms']:.1f} ms mean ({r['latency_queries']:,} "
               "queries)" if r["mean_latency_ms"] is not None else "")
        err_console.print(f"cost: {r['system']}: top {r['cutoff']} = {r['mean_tokens']:,.0f} "
                          f"{tok} tokens mean, {r['median_tokens']:,.0f} median{lat}",
                          highlight=False, soft_wrap=True)


def _print_findings(result: Any, run_warnings: dict[str, Any], out: Path) -> None:
    """What rescoring found, on stderr: each run reader's counted warnings as
    ``warning[code]: SYSTEM: ...`` lines (:func:`tiap.cli.common.print_warnings`; they are in
    the manifest's ``systems.SYSTEM.run_warnings``), then the rescoring's own findings and
    the readers' notes."""
    manifest = out / "manifest.json"
    for rep in result.reports.values():
        print_warnings(run_warnings.get(rep.system), manifest, who=rep.system)
        for code, text in rep.findings():
            err_console.print(f"[yellow]warning\\[{code}][/]: {escape(f'{rep.system}: {text}')}"
                              f" (counted in {escape(str(manifest))})", highlight=False,
                              soft_wrap=True)
        for n in rep.run_notes:
            err_console.print(f"note: {rep.system}: {n}", highlight=False, soft_wrap=True)


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
    notes = []
    for s in result.systems:
        for tn in result.target_names:
            first = by[(s, tn, str(result.measures[0]))]
            cells = []
            for m in result.measures:
                r = by[(s, tn, str(m))]
                if r["mean"] is not None:
                    cells.append(f"{r['mean']:.4f}")
                elif r["lower"] is not None:
                    cells.append(f"[{r['lower']:.4f}, {r['upper']:.4f}]")
                else:
                    cells.append("-")
            n = f"{first['n']:,}"
            exact = min(by[(s, tn, str(m))]["n_exact"] for m in result.measures)
            inferred = max(by[(s, tn, str(m))].get("n_inferred", 0) for m in result.measures)
            if exact < first["n"]:
                n += (f" ({exact:,} exact, {inferred:,} inferred)" if inferred
                      else f" ({exact:,} exact)")
            if first["n_possibly_empty"]:
                notes.append(f"{s}/{tn}: {first['n_possibly_empty']:,} of the {first['n']:,} "
                             "queries may have an empty target (nothing proves it; kept)")
            t.add_row(s, tn, n, *cells)
    console.print(t)
    if result.bounded:
        err_console.print("[lower, upper]: the mean where some queries' values are not "
                          "determined (partial lineage, or a ranking too short for a "
                          "session/window cutoff), bounded over every value they may take "
                          "(intervals.csv per query, undetermined.csv why)",
                          highlight=False, markup=False)
    if any(r.get("n_inferred") for r in rows):
        err_console.print("inferred: values that rest on lineage the import assumed rather "
                          "than proved (--infer-from-text); not counted as exact "
                          "(inferred.csv per query)", highlight=False, markup=False)
    for line in notes:
        err_console.print(line, highlight=False, markup=False)
