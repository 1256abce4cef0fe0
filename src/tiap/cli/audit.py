"""``tiap audit``: contested credits, judges, agreement and graded targets (Stage III).

Thin wrappers over :mod:`tiap.audit`; see docs/audit.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from tiap.cli.common import (
    K_HELP,
    ForceOption,
    bounded,
    console,
    err_console,
    print_warnings,
    split_names,
)

app = typer.Typer(
    help="Semantic audit of contested credits: cases, judges, agreement, graded targets.",
    no_args_is_help=True,
    rich_markup_mode=None,  # plain help: no boxes, wrapped to the terminal
)


@app.command("cases")
def cases_cmd(
    rescore_dir: Annotated[Path, typer.Argument(help="The output folder of `tiap rescore`.")],
    out: Annotated[Path, typer.Option("--out", help="cases.jsonl to write.")],
    items: Annotated[list[str] | None, typer.Option(
        "--items", help="Store items.jsonl ([NAME=]PATH, repeatable; default: the stores the "
        "rescoring's manifest names).")] = None,
    queries: Annotated[Path | None, typer.Option(
        "--queries", help="queries.jsonl (default: the rescoring's).")] = None,
    run: Annotated[list[str] | None, typer.Option(
        "--run", help="Run file ([NAME=]PATH, repeatable; default: the rescoring's runs).")
        ] = None,
    targets: Annotated[str, typer.Option(
        "--targets", help="Relaxed targets to audit (comma-separated).")] = "source,canonical",
    raw: Annotated[str, typer.Option("--raw", help="The strict target.")] = "raw",
    measure: Annotated[str | None, typer.Option(
        "--measure", help="Measure whose values the cases carry and whose cutoff bounds the "
        "walk (default: the headline measure, nDCG at the rescoring's largest cutoff).",
        show_default=False)] = None,
    k: Annotated[int | None, bounded("cutoff", "--k", help=K_HELP, show_default=False)
                 ] = None,
    sample: Annotated[str, typer.Option(
        "--sample", help="all, or stratified by dataset, system, case type and rank bucket.")
        ] = "all",
    per_stratum: Annotated[int, bounded(
        "per_stratum", "--per-stratum", help="Cases drawn per stratum (--sample stratified).")
    ] = 10,
    seed: Annotated[int, bounded("seed", "--seed", help="Seed of the stratified draw.")] = 0,
    dataset: Annotated[str | None, typer.Option(
        "--dataset", help="Dataset name of every case (default: the run's benchmark, else the "
        "queries' dataset field).", show_default=False)] = None,
    each: Annotated[bool, typer.Option(
        "--each", help="One case per contested credit (every contested item gets judged, for "
        "graded targets), instead of one per (query, system, target) for the first.")] = False,
) -> None:
    """Find the contested credits of a rescoring: retrieved items a relaxed target credits
    and Raw does not, one case per (query, system, target)."""
    from tiap.audit import find_cases

    tlist = split_names(targets, "--targets", what="target names")
    res = find_cases(rescore_dir, out, items=items or [], queries=queries, runs=run or [],
                     targets=tlist, raw=raw, measure=measure, k=k, sample=sample,
                     per_stratum=per_stratum, seed=seed, dataset=dataset, each=each)
    t = Table(title=f"contested credits ({res.found:,} found, {res.written:,} written)",
              title_justify="left")
    for c in ("dataset", "system", "case_type", "rank_bucket", "n"):
        t.add_column(c, justify="right" if c == "n" else "left")
    for r in res.strata:
        t.add_row(r["dataset"] or "-", r["system"], r["case_type"], r["rank_bucket"],
                  f"{r['n']:,}")
    console.print(t)
    err_console.print(f"wrote {out}")


@app.command("judge")
def judge_cmd(
    cases: Annotated[Path, typer.Argument(help="cases.jsonl (tiap audit cases / import-paper).")],
    out: Annotated[Path, typer.Option("--out", help="Output folder (labels.jsonl, "
                                      "manifest.json, cache.sqlite).")],
    judge: Annotated[list[str], typer.Option(
        "--judge", help="A judge: lexical, embedding, openai, or NAME(key=value, ...), e.g. "
        "'openai(model=\"qwen2.5:7b\", name=\"qwen\")'. Repeatable.")],
    model: Annotated[str | None, typer.Option(
        "--model", help="Model of openai judges that do not name one.")] = None,
    base_url: Annotated[str | None, typer.Option(
        "--base-url", help="API root of openai judges, e.g. http://127.0.0.1:11434/v1 "
        "(default: $OPENAI_BASE_URL, else OpenAI's).", show_default=False)] = None,
    api_key_env: Annotated[str | None, typer.Option(
        "--api-key-env", help="Environment variable holding the API key (default: "
        "OPENAI_API_KEY); the key is never written.", show_default=False)] = None,
    concurrency: Annotated[int | None, bounded(
        "concurrency", "--concurrency", help="Requests in flight per openai judge (default: "
        "4).", show_default=False)] = None,
    max_retries: Annotated[int | None, bounded(
        "retries", "--max-retries", help="Retries on 429 / 5xx / timeouts (default: 4).",
        show_default=False)] = None,
    timeout: Annotated[float | None, bounded(
        "timeout", "--timeout", help="Seconds per request (default: 60).",
        show_default=False)] = None,
    backoff: Annotated[float | None, bounded(
        "wait", "--backoff", help="First retry wait in seconds, doubled each retry (default: "
        "1).", show_default=False)] = None,
    max_invalid: Annotated[float | None, bounded(
        "share", "--max-invalid", help="Stop (error[endpoint]) when more than this share of "
        "an openai judge's replies are invalid (default 0.5; 1: never). Invalid replies are "
        "never cached: a rerun asks for them again.", show_default=False)] = None,
    response_format: Annotated[str | None, typer.Option(
        "--response-format", help="Structured output openai judges ask for: json_schema (the "
        "default: the server holds the reply to the verdict's JSON schema), json_object (any "
        "JSON object) or none (the rubric's text alone). A server that refuses one is asked "
        "with the next; the manifest records what was used.", show_default=False)] = None,
    local_model: Annotated[str | None, typer.Option(
        "--local-model", help="Serve this local model (see `tiap llm models`) on "
        "127.0.0.1 for the run and give it to the openai judges (a judge naming another "
        "base_url or model is refused); defaults then fit a one-slot CPU server: "
        "--concurrency 1, --timeout 600.", show_default=False)] = None,
    local_port: Annotated[int, bounded(
        "port", "--local-port", help="Port of the --local-model server (fixed, so "
        "that the verdict cache's keys, which name the endpoint, hold across runs).")
    ] = 8089,
    cache: Annotated[Path | None, typer.Option(
        "--cache", help="Verdict cache (default: OUT/cache.sqlite, kept when OUT is "
        "replaced). Rerunning the command asks only for verdicts it does not hold.",
        show_default=False)] = None,
    retry_unscored: Annotated[bool, typer.Option(
        "--retry-unscored", help="Ask offline judges (lexical, embedding) again for the "
        "unscored verdicts they cached. Endpoint judges need no flag: their unscored "
        "verdicts (invalid replies) are never cached and always asked again.")] = False,
    limit: Annotated[int | None, bounded(
        "count", "--limit", help="Judge only the first N cases.")] = None,
    engine: Annotated[str, typer.Option(
        "--engine", help="Where the requests are asked: local (threads in this process), "
        "ray (tasks on a local Ray instance), ray://HOST:PORT or ray:auto (a Ray cluster; "
        "pip install -e '.[ray]'): one request per task, at most --concurrency in flight "
        "per openai judge; workers write each verdict to a shard beside the cache, so a "
        "killed worker or driver repeats no finished request.")] = "local",
    force: ForceOption = False,
) -> None:
    """Judge every case with every judge; writes OUT/labels.jsonl and OUT/manifest.json
    (OUT is replaced whole; the verdict cache in it is kept). Safe to kill and rerun:
    finished verdicts are kept in the cache and never asked for again."""

    from tiap.audit import judge_cases
    from tiap.config import command_options

    options = {"model": model, "base_url": base_url, "api_key_env": api_key_env,
               "concurrency": concurrency, "max_retries": max_retries, "timeout": timeout,
               "backoff": backoff, "max_invalid": max_invalid,
               "response_format": response_format}
    with command_options({k: "--" + k.replace("_", "-") for k in options}), Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
        TimeElapsedColumn(), console=err_console, transient=True,
        disable=not err_console.is_terminal,
    ) as bar:
        tasks: dict[str, Any] = {}

        def progress(name: str, done: int, total: int) -> None:
            if name not in tasks:
                tasks[name] = bar.add_task(name, total=total)
            bar.update(tasks[name], completed=done, total=total)

        res = judge_cases(cases, out, judge, **options, local_model=local_model,
                          local_port=local_port, cache=cache, retry_unscored=retry_unscored,
                          limit=limit, engine=engine, force=force, progress=progress,
                          log=lambda m: err_console.print(escape(m)))
    t = Table(title=f"verdicts on {res.n_cases:,} cases", title_justify="left")
    for c in ("judge", "requests", "from cache", "asked", "supports", "partial",
              "does_not_support", "unscored"):
        t.add_column(c, justify="left" if c == "judge" else "right")
    for s in res.stats:
        t.add_row(s.judge, f"{s.requests:,}", f"{s.cached:,}", f"{s.asked:,}",
                  *(f"{v:,}" for v in res.label_counts(s.judge).values()))
    console.print(t)
    for s in res.stats:
        for reason, n in s.unscored_reasons.items():
            err_console.print(f"[yellow]unscored[/]: {s.judge}: {n:,} x {reason}",
                              highlight=False)
    for entry in res.manifest["counts"]:  # as the manifest counts them (redacted)
        print_warnings(entry.get("warnings"), out / "manifest.json", who=entry["judge"])
    err_console.print(f"wrote {out / 'labels.jsonl'}")


@app.command("agreement")
def agreement_cmd(
    labels: Annotated[list[Path], typer.Argument(help="labels.jsonl files (any judges).")],
    out: Annotated[Path, typer.Option("--out", help="Output folder.")],
    human: Annotated[list[str] | None, typer.Option(
        "--human", help="Human labels ([NAME=]CSV): a case_id + label CSV, or the paper's "
        "validation files (semantic_validation_sample_115.csv, "
        "external_semantic_review_set_36*.csv); its case_id column holds case ids of "
        "cases.jsonl (labels of cases no judge labelled are counted and left out). "
        "Repeatable.")] = None,
    tie_rule: Annotated[str, typer.Option(
        "--tie-rule", help="Majority-vote ties: conservative (least support), lenient (most "
        "support) or none (no majority).")] = "conservative",
    judges: Annotated[str | None, typer.Option(
        "--judges", help="Only these judges (comma-separated), in this order; a name no "
        "label carries is an error.")] = None,
    force: ForceOption = False,
) -> None:
    """Agreement between judges: Fleiss' and Cohen's kappa, Krippendorff's alpha, percent
    agreement (3 classes and binary), majority vote, distributions, and human labels."""
    from tiap.audit import judge_agreement

    raters = None if judges is None else split_names(judges, "--judges", what="judge names")
    res = judge_agreement(labels, out, human=human or [], tie_rule=tie_rule, judges=raters,
                          force=force)
    rep, man = res.report, res.manifest
    s = rep.summary
    console.print(f"{len(rep.raters)} raters, {rep.n_cases:,} cases, {rep.n_complete:,} "
                  "labelled by every rater", highlight=False)
    if "fleiss_kappa" in s:
        t = Table(title="agreement", title_justify="left")
        for c in ("statistic", "three classes", "binary", "n"):
            t.add_column(c, justify="left" if c == "statistic" else "right")
        for key, title in (("fleiss_kappa", "Fleiss' kappa"),
                           ("krippendorff_alpha", "Krippendorff's alpha"),
                           ("mean_pairwise_agreement", "mean pairwise agreement")):
            v = s[key]
            t.add_row(title, _fmt(v["three_class"]), _fmt(v["binary"]), f"{v['n']:,}")
        console.print(t)
    d = s["majority"]["distribution"]
    total = sum(d.values()) or 1
    console.print("majority vote (ties: " + s["majority"]["tie_rule"] + "): " + ", ".join(
        f"{k} {v:,} ({v / total:.1%})" for k, v in d.items()), highlight=False)
    if rep.human:
        t = Table(title="agreement with human labels (all targets)", title_justify="left")
        for c in ("human", "rater", "n", "3-class", "kappa", "binary", "kappa "):
            t.add_column(c, justify="left" if c in ("human", "rater") else "right")
        rows = [r for r in rep.human if r["target"] == "all"]
        for r3 in (r for r in rows if r["scheme"] == "three_class"):
            r2 = next(r for r in rows if r["scheme"] == "binary" and r["human"] == r3["human"]
                      and r["rater"] == r3["rater"])
            t.add_row(r3["human"], r3["rater"], f"{r3['n']:,}", _fmt(r3["agreement"]),
                      _fmt(r3["cohen_kappa"]), _fmt(r2["agreement"]), _fmt(r2["cohen_kappa"]))
        console.print(t)
    print_warnings(man.get("warnings"), out / "manifest.json")
    err_console.print(f"wrote {out}")


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.3f}"


@app.command("graded")
def graded_cmd(
    rescore_dir: Annotated[Path, typer.Argument(help="The output folder of `tiap rescore`.")],
    labels: Annotated[list[Path], typer.Option("--labels", help="labels.jsonl (repeatable).")],
    out: Annotated[Path, typer.Option("--out", help="Output folder.")],
    items: Annotated[list[str] | None, typer.Option(
        "--items", help="Store items.jsonl ([NAME=]PATH; default: the rescoring's).")] = None,
    queries: Annotated[Path | None, typer.Option(
        "--queries", help="queries.jsonl (default: the rescoring's).")] = None,
    run: Annotated[list[str] | None, typer.Option(
        "--run", help="Run file ([NAME=]PATH; default: the rescoring's).")] = None,
    targets: Annotated[str, typer.Option(
        "--targets", help="Relaxed targets.")] = "source,canonical",
    raw: Annotated[str, typer.Option("--raw", help="The strict target.")] = "raw",
    k: Annotated[int | None, bounded(
        "cutoff", "--k", help="nDCG cutoff (default: the cutoff of the rescoring's "
        "headline measure, nDCG at its largest cutoff).", show_default=False)] = None,
    unjudged: Annotated[str | None, typer.Option(
        "--unjudged", help="Unjudged derived members: keep (relevance 2, support 1), partial "
        "(1, 0.5), drop (0, 0), each deciding every value exactly; or unknown: the "
        "composed-support measures are bounded [lower, upper] (the nDCG columns use keep). "
        "Default: keep for nDCG, unknown for composed support.", show_default=False)
    ] = None,
    judges: Annotated[str | None, typer.Option(
        "--judges", help="Use only these judges' labels (comma-separated); a name no label "
        "carries is an error.")] = None,
    tie_rule: Annotated[str, typer.Option(
        "--tie-rule", help="Combining several labels of one item: conservative or lenient.")
        ] = "conservative",
    force: ForceOption = False,
) -> None:
    """Graded targets: audit labels as relevance (supports 2, partial 1, does_not_support 0);
    how much of each relaxed target's nDCG gain over Raw survives them; and composed support
    at the same k (Coverage, GradedCoverage, Sufficient: do the top k together support every
    evidence unit?), bounded where unjudged members leave it open."""
    from tiap.audit import UNJUDGED, graded_audit

    tlist = split_names(targets, "--targets", what="target names")  # before anything is read
    jlist = None if judges is None else split_names(judges, "--judges", what="judge names")
    res = graded_audit(rescore_dir, labels, out, items=items or [], queries=queries,
                       runs=run or [], targets=tlist, raw=raw, k=k, unjudged=unjudged,
                       judges=jlist, tie_rule=tie_rule, force=force)
    result, man, cut = res.result, res.manifest, res.result.k
    t = Table(title=f"nDCG@{cut}, set credit: gain over Raw that survives the labels",
              title_justify="left")
    for c in ("system", "store", "target", "n", "raw", "binary", "retained", "survival",
              "graded"):
        t.add_column(c, justify="left" if c in ("system", "store", "target") else "right")
    for r in result.summary:
        t.add_row(r["system"], r["store"], r["target"], f"{r['n']:,}", _fmt(r["raw"]),
                  _fmt(r["binary"]), _fmt(r["retained"]),
                  "-" if r["survival"] is None else f"{r['survival']:.1%}", _fmt(r["graded"]))
    console.print(t)
    if result.unjudged != result.support_unjudged:
        console.print(f"unjudged derived members: {result.unjudged} (relevance "
                      f"{UNJUDGED[result.unjudged]}) in nDCG; {result.support_unjudged} in "
                      "composed support", highlight=False, markup=False)
    _print_support(result)
    print_warnings(man.get("warnings"), out / "manifest.json")
    for store, entry in man["stores"].items():
        err_console.print(f"qrels of store {store} (systems {', '.join(entry['systems'])}): "
                          + ", ".join(str(out / p) for p in entry["qrels"].values()),
                          highlight=False)
    err_console.print(f"wrote {out}")


def _print_support(result: Any) -> None:
    """The composed-support summary of ``tiap audit graded``: one row per (system, target)."""
    by = {(r["system"], r["target"], r["measure"]): r for r in result.support_summary}
    measures = list(dict.fromkeys(r["measure"] for r in result.support_summary))
    policy = result.support_unjudged
    how = ("unjudged members unknown: [lower, upper]" if policy == "unknown"
           else f"unjudged members: {policy}, exact under that assumption")
    t = Table(title=escape(f"composed support at k = {result.k} (means; {how})"),
              title_justify="left")
    for c in ("system", "store", "target", "n"):
        t.add_column(c, justify="right" if c == "n" else "left")
    for m in measures:
        t.add_column(m, justify="right")
        t.add_column("exact", justify="right")

    def cell(r: dict[str, Any]) -> str:
        if r["lower"] is None:
            return "-"
        if r["lower"] == r["upper"]:
            return f"{r['lower']:.4f}"
        return f"[{r['lower']:.4f}, {r['upper']:.4f}]"

    for (system, target) in dict.fromkeys((r["system"], r["target"])
                                          for r in result.support_summary):
        rows = [by[(system, target, m)] for m in measures]
        cells = [x for r in rows for x in (cell(r), f"{r['n_exact']:,}")]
        t.add_row(system, rows[0]["store"], target, f"{rows[0]['n']:,}", *cells)
    console.print(t)


@app.command("import-paper")
def import_paper_cmd(
    csv_path: Annotated[Path, typer.Argument(
        help="The paper's judged_cases.csv or an *_audit_cases.csv file.")],
    out: Annotated[Path | None, typer.Option(
        "--out", help="labels.jsonl to write (judged_cases.csv only).")] = None,
    cases_out: Annotated[Path | None, typer.Option(
        "--cases-out", help="cases.jsonl to write (judge them again with tiap audit judge).")
        ] = None,
) -> None:
    """Read the paper's audit CSVs as TIAP labels and cases; prints the label counts."""
    from tiap.audit import import_paper, label_counts

    res = import_paper(csv_path, out=out, cases_out=cases_out)
    if res.cases_out is not None:
        err_console.print(f"wrote {res.n_cases:,} cases to {res.cases_out}")
    if res.labels is not None:
        labs = res.labels
        t = Table(title=f"{len(labs):,} verdicts of {labs[0].judge if labs else '-'}",
                  title_justify="left")
        for c in ("dataset", "supports", "partial", "does_not_support", "n"):
            t.add_column(c, justify="left" if c == "dataset" else "right")
        by = label_counts(labs, "dataset")
        by["all"] = label_counts(labs)
        for ds, cnt in by.items():
            n_ds = sum(cnt.values())
            t.add_row(ds, *(f"{cnt.get(lab, 0):,} ({cnt.get(lab, 0) / n_ds:.1%})"
                            for lab in ("supports", "partial", "does_not_support")),
                      f"{n_ds:,}")
        console.print(t)
        err_console.print(f"wrote {out}")


@app.command("judges")
def judges_cmd() -> None:
    """List the registered judge factories."""
    from tiap.audit import list_judges

    for name in list_judges():
        console.print(name)
