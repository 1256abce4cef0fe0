"""``tiap rescore``: score saved runs under several targets without re-running retrieval."""

from __future__ import annotations

import contextlib
import dataclasses
from pathlib import Path
from typing import Annotated, Any

import typer
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
from tiap.errors import TiapError
from tiap.io import split_named
from tiap.scoring import DEFAULT_K, default_measures


def load_runs(specs: list[str], dedup: str, *, columnar: bool = False,
              order: str = "rank") -> list[Any]:
    """The runs of ``[NAME=]PATH`` specs: a NAME renames a file's only system, or picks one
    of several. ``columnar`` reads them column-wise (the qrels path); ``order`` is the
    readers' (rank, or score as trec_eval orders)."""
    from tiap.runs import read_run, read_run_columnar

    def renamed(run: Any, name: str) -> Any:
        if columnar:
            return dataclasses.replace(run, system=name)
        return dataclasses.replace(run, system=name, rankings=tuple(
            dataclasses.replace(r, system=name) for r in run.rankings))

    read = read_run_columnar if columnar else read_run
    runs = []
    for spec in specs:
        name, path = split_named(spec, "--run")
        got = read(path, dedup=dedup, order=order)  # type: ignore[arg-type]
        if name is None:
            runs.extend(got)
        elif len(got) == 1:
            runs.append(renamed(got[0], name))
        else:
            chosen = [r for r in got if r.system == name]
            if not chosen:
                raise TiapError(f"{name}=: the file holds {len(got)} systems "
                                f"({', '.join(r.system for r in got)}); name one of them",
                                file=path)
            runs.extend(chosen)
    return runs


def load_qrels(specs: list[str]) -> dict:  # type: ignore[type-arg]
    """``NAME=PATH`` (or a plain PATH, named by its file name) -> {name: Qrels}."""
    from tiap.runs import read_qrels, system_from_path
    from tiap.targets import qrels_store

    out = {}
    for spec in specs:
        name, path = split_named(spec, "--qrels")
        if name is None:
            name = system_from_path(path)
            store = qrels_store(path) if path.exists() else None
            if store is not None:  # TIAP's qrels/<store>.<target>.qrels: named by the target
                name = name.removeprefix(f"{store}.")
        if name in out:
            raise TiapError(f"two qrels files are named {name!r}; name them with NAME=PATH",
                            file=path)
        out[name] = read_qrels(path)
    return out


#: Runs up to this size are read while the qrels files are read in a second thread.
CONCURRENT_READ_BYTES = 512 * 2**20

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
    from tiap.scoring import check_rescore_folder, write_rescore

    if measures is not None and k is not None:
        raise TiapError(f"give --k or --measures, not both (--k {k} means --measures "
                        f"{default_measures(k)})", code="invalid-value")
    measures = measures if measures is not None else default_measures(k or DEFAULT_K)
    _check_measures(measures)
    tlist = split_targets(targets) if targets is not None else None
    if qrels:
        given = [o for o, v in (("--items", items), ("--queries", queries),
                                ("--targets", targets), ("--overlay", overlay),
                                ("--tokenizer", tokenizer)) if v]
        if given:
            raise TiapError(f"--qrels replaces {', '.join(given)}: give one or the other "
                            "(each qrels file is a target)")
    else:
        missing_opts = [o for o, v in (("--items", items), ("--queries", queries)) if not v]
        if missing_opts:
            raise TiapError(f"missing {' and '.join(missing_opts)}: rescoring needs a store "
                            "and a queries file (--items, --queries), or qrels files (--qrels)")
    check_rescore_folder(out, force=force)
    from tiap.engine import make_engine, use_engine

    overlay_report: dict[str, Any] = {}
    eng = make_engine(engine, query_shard=query_shard)
    with contextlib.closing(eng), use_engine(eng):
        if qrels:
            result, inputs, run_warnings = _rescore_qrels(run, qrels, measures=measures,
                                                          credit=credit, missing=missing,
                                                          dedup=dedup, order=order,
                                                          depth=depth)
            judged: dict[str, None] = {}
            for s in result.systems:
                judged.update(dict.fromkeys(result.query_ids[s]))
            query_rows: list = [_JudgedQuery(q) for q in judged]  # type: ignore[type-arg]
        else:
            from tiap.targets import read_overlays

            overlays, overlay_files = read_overlays(overlay or [])
            names = tlist or ["raw", "source", "canonical"]
            if tlist is None:  # each target under each overlay too
                names = [*names, *(f"{t}~{o}" for o in overlays for t in names)]
            result, inputs, query_rows, run_warnings = _rescore_lineage(
                run, items or [], queries,  # type: ignore[arg-type]
                names, measures=measures, credit=credit, missing=missing, dedup=dedup,
                order=order, depth=depth, overlays=overlays, tokenizer=tokenizer)
            inputs.update({f"overlay:{o}": p for o, p in overlay_files.items()})
            overlay_report = _overlay_findings(overlays, query_rows, out)
    opts: dict[str, Any] = {"missing": missing, "dedup": dedup, "order": order,
                            "depth": depth}
    if not qrels and overlay_report:
        opts["overlays"] = overlay_report
    write_rescore(result, out, queries=query_rows, inputs=inputs, shared=shared, parquet=parquet,
                  options=opts, force=force)
    _print_findings(result, run_warnings, out)
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
    from rich.markup import escape

    manifest = out / "manifest.json"
    for rep in result.reports.values():
        print_warnings(run_warnings.get(rep.system), manifest, who=rep.system)
        for code, text in rep.findings():
            err_console.print(f"[yellow]warning\\[{code}][/]: {escape(f'{rep.system}: {text}')}"
                              f" (counted in {escape(str(manifest))})", highlight=False,
                              soft_wrap=True)
        for n in rep.run_notes:
            err_console.print(f"note: {rep.system}: {n}", highlight=False, soft_wrap=True)


def _warnings_of(runs: Any) -> dict[str, Any]:
    """system -> the manifest entries of its run reader's warnings (notes left out)."""
    from tiap.runs import warnings_json
    from tiap.scoring import NOTE_CODES

    return {r.system: warnings_json(w for w in r.warnings if w.code not in NOTE_CODES)
            for r in runs}


@dataclasses.dataclass(frozen=True)
class _JudgedQuery:
    """A query of the qrels path in ``queries.csv`` (no category or collection is known)."""

    query_id: str


def _check_measures(measures: str) -> None:
    """``--measures`` parses: an error names the option (nothing is read before)."""
    from tiap.scoring import parse_measures

    split_names(measures, "--measures", what="measures such as nDCG@60")
    try:
        parse_measures(measures)
    except TiapError as exc:
        raise TiapError(problems=[dataclasses.replace(p, message=f"--measures: {p.message}",
                                                      code="invalid-value")
                                  for p in exc.problems], code="invalid-value") from exc


def _overlay_findings(overlays: dict[str, Any], queries: Any, out: Path) -> dict[str, Any]:
    """Per overlay, for the manifest: its rows, the queries whose evidence it changes, and
    its rows for queries the queries file does not hold, which change nothing: counted and
    named (``warning[overlay_unknown_query]``), never dropped in silence."""
    own = {q.query_id: tuple(dict.fromkeys(q.evidence)) for q in queries}
    report: dict[str, Any] = {}
    for name, ev in overlays.items():
        stray = [q for q in ev if q not in own]
        changed = [q for q, e in ev.items() if q in own and set(e) != set(own[q])]
        report[name] = {"rows": len(ev), "changed_queries": len(changed),
                        "not_in_queries_file": len(stray), "examples": stray[:5]}
        if stray:
            err_console.print(f"[yellow]warning\\[overlay_unknown_query][/]: overlay {name}: "
                              f"{len(stray):,} of its {len(ev):,} queries are not in the "
                              f"queries file and change nothing (e.g. {', '.join(stray[:3])}; "
                              f"counted in {out / 'manifest.json'})",
                              highlight=False, soft_wrap=True)
    return report


def _rescore_lineage(  # type: ignore[no-untyped-def]
    run: list[str], items: list[str], queries: Path, targets: list[str], **opts
):
    from tiap import rescore

    stores: dict[str | None, Path] = {}
    inputs: dict[str, Path] = {"queries": queries}
    for spec in items:
        name, path = split_named(spec, "--items")
        if name in stores:
            raise TiapError(f"two stores given for {name or 'every run'}", file=path)
        stores[name] = path
        inputs[f"items:{name}" if name else "items"] = path
    dedup, order = opts.pop("dedup"), opts.pop("order")
    runs = []
    for spec in run:  # recorded under each system's name, so later steps find its run
        got = load_runs([spec], dedup, order=order)
        runs.extend(got)
        for r in got:
            inputs[f"run:{r.system}"] = split_named(spec, "--run")[1]
    result = rescore(runs, queries, stores, targets=targets, **opts)
    return result, inputs, list(result.queries), _warnings_of(runs)


def _rescore_qrels(run: list[str], qrels: list[str], **opts):  # type: ignore[no-untyped-def]
    from concurrent.futures import ThreadPoolExecutor

    from tiap.scoring import rescore_qrels

    dedup, order = opts.pop("dedup"), opts.pop("order")
    # the qrels files are read while the runs are (pyarrow parses without the GIL), unless
    # the runs are large: then one file at a time keeps the peak memory down
    run_bytes = sum(p.stat().st_size for p in (split_named(r, "--run")[1] for r in run) if p.is_file())
    if run_bytes <= CONCURRENT_READ_BYTES:
        with ThreadPoolExecutor(1) as pool:
            pending = pool.submit(load_qrels, qrels)
            runs = load_runs(run, dedup, columnar=True, order=order)
            judgments = pending.result()
    else:
        runs = load_runs(run, dedup, columnar=True, order=order)
        judgments = load_qrels(qrels)
    inputs: dict[str, Path] = {}
    for spec, name in zip(qrels, judgments, strict=True):
        inputs[f"qrels:{name}"] = split_named(spec, "--qrels")[1]
    for spec in run:
        name, path = split_named(spec, "--run")
        inputs[f"run:{name or path.name}"] = path
    return rescore_qrels(runs, judgments, **opts), inputs, _warnings_of(runs)


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
