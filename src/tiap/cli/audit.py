"""``tiap audit``: contested credits, judges, agreement and graded targets (Stage III).

Thin wrappers over :mod:`tiap.audit`; see docs/audit.md.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from tiap.cli.common import (
    K_HELP,
    ForceOption,
    bounded,
    console,
    err_console,
    headline_option,
    print_warnings,
    split_names,
)
from tiap.errors import TiapError

#: The manifest ``command`` of ``tiap audit judge``.
JUDGE_COMMAND = "audit judge"

app = typer.Typer(
    help="Semantic audit of contested credits: cases, judges, agreement, graded targets.",
    no_args_is_help=True,
    rich_markup_mode="markdown",  # docstrings are wrapped text: join their lines
)


def _write_sidecar(path: Path, man: dict[str, Any]) -> Path:
    from tiap.io import atomic_write

    side = path.with_name(path.name + ".manifest.json")
    with atomic_write(side) as fh:
        fh.write(json.dumps(man, indent=2) + "\n")
    return side


def _option_measure(option: str, measure: str) -> Any:
    """The measure an option gives; a bad one is an error naming the option."""
    from tiap.scoring.measures import parse_measure

    try:
        return parse_measure(measure)
    except TiapError as exc:
        p = exc.problems[0]
        raise TiapError(f"{option}: {p.message}", code=p.code) from None


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
    from tiap.audit.cases import (
        CASES_SCHEMA_VERSION,
        RescoreDir,
        contested_cases,
        load_rescore_inputs,
        measure_cutoff,
        sample_cases,
        strata_counts,
        write_cases,
    )
    from tiap.provenance import input_entry, manifest_header
    from tiap.scoring.rescore import store_lineages

    measure = headline_option(measure, k)
    opt = "--k" if k is not None else "--measure"
    rd = RescoreDir.open(rescore_dir)
    m = str(_option_measure(opt, measure)) if measure else rd.default_measure()
    k = measure_cutoff(m)
    if measure is not None and m not in rd.measures:
        given = f"--k: {m!r}" if opt == "--k" else f"--measure {m!r}"
        raise TiapError(f"{given} is not a measure of the rescoring in {rd.path} "
                        f"(its measures: {', '.join(rd.measures) or 'none'})",
                        code="invalid-value")
    if k is None:
        raise TiapError(f"the measure {m!r} has no cutoff; pass e.g. --measure nDCG@60")
    stores, qs, runs, inputs = load_rescore_inputs(rd, items=items or [], queries=queries,
                                                   runs=run or [])
    values = rd.values(m)
    tlist = split_names(targets, "--targets", what="target names")
    found = contested_cases(runs, qs, stores, targets=tlist, raw_target=raw,
                            target_defs=rd.target_defs or None, k=k, credit=rd.credit,
                            values=values, measure=m, dataset=dataset, each=each)
    chosen = sample_cases(found, sample, per_stratum=per_stratum, seed=seed)  # type: ignore[arg-type]
    n = write_cases(out, chosen)
    man = manifest_header("audit cases", CASES_SCHEMA_VERSION)
    man["inputs"] = {"rescore_manifest": input_entry(rd.path / "manifest.json"),
                     "per_query": input_entry(rd.path / "per_query.csv"),
                     **{k2: input_entry(p) for k2, p in inputs.items()}}
    man["options"] = {"targets": tlist, "raw": raw, "measure": m, "k": k, "credit": rd.credit,
                      "each": each,
                      "sample": sample, "per_stratum": per_stratum if sample != "all" else None,
                      "seed": seed if sample != "all" else None}
    man["stores"] = {s: name for s, (name, _) in store_lineages(runs, stores).items()}
    man["counts"] = {"contested": len(found), "written": n,
                     "strata": strata_counts(chosen)}
    _write_sidecar(out, man)
    t = Table(title=f"contested credits ({len(found):,} found, {n:,} written)",
              title_justify="left")
    for c in ("dataset", "system", "case_type", "rank_bucket", "n"):
        t.add_column(c, justify="right" if c == "n" else "left")
    for r in strata_counts(chosen):
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
    from tiap.audit.cases import read_cases
    from tiap.io import check_output_folder
    from tiap.memory.build import cache_entries

    cache_path = cache or out / "cache.sqlite"
    keep = cache_entries(cache_path, out)  # used in place, kept across the swap
    check_output_folder(out, JUDGE_COMMAND, force=force, keep=keep)  # before any request
    all_cases = read_cases(cases)
    if not all_cases:
        raise TiapError("no cases in the file: nothing to judge (did `tiap audit cases` find "
                        "no contested credit?)", file=cases)
    if limit is not None:
        all_cases = all_cases[:limit]
    stack = contextlib.ExitStack()
    local: dict[str, Any] | None = None
    if local_model is not None:
        from tiap.audit.judges import parse_judge_spec
        from tiap.local_llm import CLIENT_DEFAULTS, LocalServer, local_endpoint

        _, served = local_endpoint(local_model, local_port, base_url=base_url, model=model)
        if not any(parse_judge_spec(j)[0] == "openai" for j in judge):
            raise TiapError("--local-model is for openai judges; none of the --judge "
                            "specs is one", code="usage")
        for spec in judge:  # an openai judge aimed elsewhere would not judge with the model
            name, kw = parse_judge_spec(spec)
            if name != "openai":
                continue
            if "base_url" in kw:
                raise TiapError(f"judge {spec!r} names its own base_url, so it would not use "
                                f"the --local-model server: drop one of the two",
                                code="usage")
            if kw.get("model", served) != served:
                raise TiapError(f"judge {spec!r} asks for model {kw['model']!r}, but "
                                f"--local-model serves {served!r}", code="usage")

        srv = stack.enter_context(LocalServer(local_model, port=local_port,
                                              log=lambda m: err_console.print(escape(m))))
        local = srv.settings()
        base_url, model = srv.base_url, model or srv.model
        concurrency = concurrency or CLIENT_DEFAULTS["concurrency"]
        timeout = timeout or CLIENT_DEFAULTS["timeout"]
    defaults = {"model": model, "base_url": base_url, "api_key_env": api_key_env,
                "concurrency": concurrency, "max_retries": max_retries, "timeout": timeout,
                "backoff": backoff, "max_invalid": max_invalid,
                "response_format": response_format}
    from tiap.engine import make_engine, use_engine

    with stack:
        eng = stack.enter_context(contextlib.closing(make_engine(engine)))
        with use_engine(eng):
            _judge_run(cases, out, judge, defaults, all_cases, cache_path, keep,
                       retry_unscored, limit, force, local, max_invalid, response_format)


def _judge_run(cases: Path, out: Path, judge: list[str], defaults: dict[str, Any],
               all_cases: list[Any], cache_path: Path, keep: Any, retry_unscored: bool,
               limit: int | None, force: bool, local: dict[str, Any] | None,
               max_invalid: float | None, response_format: str | None) -> None:
    """The judging of :func:`judge_cmd`, with the endpoints up."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from tiap.audit.judges import make_judge
    from tiap.audit.labels import LABELS_SCHEMA_VERSION, write_labels
    from tiap.audit.run import VerdictCache, run_judges
    from tiap.config import command_options
    from tiap.io import output_folder
    from tiap.provenance import input_entry, manifest_header

    with command_options({k: "--" + k.replace("_", "-") for k in defaults}):
        judges = [make_judge(spec, defaults) for spec in judge]
    endpoint_only = [f for f, v in (("--max-invalid", max_invalid),
                                     ("--response-format", response_format)) if v is not None]
    if endpoint_only and not any(j.endpoint for j in judges):
        for j in judges:
            j.close()
        raise TiapError(f"{' and '.join(endpoint_only)} "
                        f"{'are' if len(endpoint_only) > 1 else 'is'} for judges that call an "
                        f"endpoint (openai); none of {', '.join(j.name for j in judges)} does",
                        code="usage")
    try:
        with VerdictCache(cache_path) as vc, Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
            TimeElapsedColumn(), console=err_console, transient=True,
            disable=not err_console.is_terminal,
        ) as bar:
            tasks: dict[str, Any] = {}

            def progress(name: str, done: int, total: int) -> None:
                if name not in tasks:
                    tasks[name] = bar.add_task(name, total=total)
                bar.update(tasks[name], completed=done, total=total)

            result = run_judges(all_cases, judges, vc, retry_unscored=retry_unscored,
                                progress=progress)
    finally:
        for j in judges:
            j.close()
    man = manifest_header(JUDGE_COMMAND, LABELS_SCHEMA_VERSION)
    man["inputs"] = {"cases": input_entry(cases)}
    man["options"] = {"limit": limit, "retry_unscored": retry_unscored,
                      "cache": str(cache_path), "local_model": local}
    man["judges"] = list(result.judges)
    man["counts"] = [s.to_json() for s in result.stats]
    man["outputs"] = ["labels.jsonl"]
    with output_folder(out, JUDGE_COMMAND, force=force, keep=keep) as tmp:
        write_labels(tmp / "labels.jsonl", result.records)
        (tmp / "manifest.json").write_text(json.dumps(man, indent=2) + "\n", encoding="utf-8")
    t = Table(title=f"verdicts on {len(all_cases):,} cases", title_justify="left")
    for c in ("judge", "requests", "from cache", "asked", "supports", "partial",
              "does_not_support", "unscored"):
        t.add_column(c, justify="left" if c == "judge" else "right")
    for s in result.stats:
        recs = [r for r in result.records if r.judge == s.judge]
        cnt = {lab: sum(1 for r in recs if r.label == lab)
               for lab in ("supports", "partial", "does_not_support", "unscored")}
        t.add_row(s.judge, f"{s.requests:,}", f"{s.cached:,}", f"{s.asked:,}",
                  *(f"{v:,}" for v in cnt.values()))
    console.print(t)
    for s in result.stats:
        for reason, n in s.unscored_reasons.items():
            err_console.print(f"[yellow]unscored[/]: {s.judge}: {n:,} x {reason}",
                              highlight=False)
    for entry in man["counts"]:  # as the manifest counts them (redacted)
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
    from tiap.audit.agreement import AGREEMENT_COMMAND, agreement, write_agreement
    from tiap.audit.human import read_human_labels
    from tiap.audit.labels import read_labels
    from tiap.io import check_output_folder, split_named

    raters = None if judges is None else split_names(judges, "--judges", what="judge names")
    named = [split_named(spec, "--human") for spec in human or []]
    check_output_folder(out, AGREEMENT_COMMAND, force=force)  # before anything is read
    recs = read_labels(labels)
    hum = []
    inputs: dict[str, Path] = {f"labels:{i}": p for i, p in enumerate(labels)}
    for name, path in named:
        hum.extend(read_human_labels(path, name))
        inputs[f"human:{name or path.name}"] = path
    rep = agreement(recs, human=hum, tie_rule=tie_rule,  # type: ignore[arg-type]
                    raters=raters)
    man = write_agreement(rep, out, inputs=inputs, force=force)
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
    from tiap.audit.cases import RescoreDir, load_rescore_inputs, measure_cutoff
    from tiap.audit.graded import (
        GRADED_COMMAND,
        SUPPORT_POLICIES,
        UNJUDGED,
        graded_rescore,
        item_relevance,
        write_graded,
    )
    from tiap.audit.labels import read_labels
    from tiap.io import check_output_folder
    from tiap.scoring.rescore import store_lineages

    if unjudged is not None and unjudged not in SUPPORT_POLICIES:
        raise TiapError(f"--unjudged {unjudged!r}: expected one of "
                        f"{', '.join(SUPPORT_POLICIES)}", code="invalid-value")
    tlist = split_names(targets, "--targets", what="target names")  # before anything is read
    jlist = None if judges is None else split_names(judges, "--judges", what="judge names")
    check_output_folder(out, GRADED_COMMAND, force=force)
    rd = RescoreDir.open(rescore_dir)
    cut = (_option_measure("--k", f"nDCG@{k}").cutoff if k is not None
           else measure_cutoff(rd.default_measure()))
    if cut is None:
        raise TiapError("pass --k: the rescoring's nDCG measure has no cutoff")
    stores, qs, runs, inputs = load_rescore_inputs(rd, items=items or [], queries=queries,
                                                   runs=run or [])
    for r in runs:
        if r.system not in stores and None not in stores:
            raise TiapError(f"no store for run {r.system!r}: pass --items {r.system}=PATH")
    names = {name for name, _ in store_lineages(runs, stores).values()}
    rel = item_relevance(read_labels(labels), tie_rule=tie_rule,  # type: ignore[arg-type]
                         judges=jlist, stores=names)
    result = graded_rescore(runs, qs, stores, rel, targets=tlist, raw_target=raw,
                            target_defs=rd.target_defs or None, k=cut,
                            unjudged=unjudged)  # type: ignore[arg-type]
    for i, p in enumerate(labels):
        inputs[f"labels:{i}"] = p
    per_store = {n: sum(1 for key in rel if key[0] == n) for n in sorted(names)}
    man = write_graded(result, out, inputs=inputs,
                       options={"targets": tlist, "raw": raw, "judges": judges,
                                "tie_rule": tie_rule, "labelled_items": per_store,
                                "labelled_items_of_other_stores": len(rel) - sum(
                                    per_store.values())}, force=force)
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
    from tiap.audit.cases import write_cases
    from tiap.audit.labels import write_labels
    from tiap.audit.paper import label_counts, read_paper_cases, read_paper_labels
    from tiap.provenance import input_entry, manifest_header

    if out is None and cases_out is None:
        raise TiapError("nothing to write: pass --out LABELS.jsonl and/or --cases-out "
                        "CASES.jsonl")
    if cases_out is not None:
        n = write_cases(cases_out, read_paper_cases(csv_path))
        man = manifest_header("audit import-paper", 1)
        man["inputs"] = {"csv": input_entry(csv_path)}
        _write_sidecar(cases_out, man)
        err_console.print(f"wrote {n:,} cases to {cases_out}")
    if out is not None:
        labs = read_paper_labels(csv_path)
        write_labels(out, labs)
        man = manifest_header("audit import-paper", 1)
        man["inputs"] = {"csv": input_entry(csv_path)}
        _write_sidecar(out, man)
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
    from tiap.audit.judges import list_judges

    for name in list_judges():
        console.print(name)
