"""``tiap answers``: fixed answers, their judges, and what moves the score.

Thin wrappers over :mod:`tiap.answers`; see docs/answers.md.
"""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table

from tiap.cli.common import DataOption, ForceOption, bounded, console, print_warnings, split_names
from tiap.errors import TiapError

app = typer.Typer(
    help="Answers and judges: import answer sets, judge them, analyse what moves the score.",
    no_args_is_help=True,
    rich_markup_mode=None,  # plain help: no boxes, wrapped to the terminal
)

OutOption = Annotated[Path, typer.Option("--out", help="Output folder.")]


def _counts_table(answers: Any, title: str) -> Table:
    """Answers per system and verdicts per judge configuration."""
    from tiap.answers import answer_counts

    c = answer_counts(answers)
    t = Table(title=title, title_justify="left")
    t.add_column("system")
    t.add_column("answers", justify="right")
    for system, n in c["systems"].items():
        t.add_row(system, f"{n:,}")
    if c["judges"]:
        t.add_section()
        for judge, labels in c["judges"].items():
            t.add_row(f"verdicts of {judge}", ", ".join(f"{k} {v:,}"
                                                       for k, v in labels.items()))
    return t


@app.command("import")
def import_cmd(
    fmt: Annotated[str, typer.Argument(
        metavar="FORMAT", help="kit (the mnemoverse reproduction kit folder), "
        "memory-benchmarks (Mem0's results JSON), memos (MemOS / EverMemOS judged results), "
        "longmemeval (hypothesis JSONL).")],
    path: Annotated[Path, typer.Argument(help="The file or folder to read.")],
    out: OutOption,
    dataset: Annotated[str | None, typer.Option(
        "--dataset", help="Dataset of the answers (memory-benchmarks, memos, longmemeval).",
        show_default=False)] = None,
    system: Annotated[str | None, typer.Option(
        "--system", help="System name of the answers (not kit).", show_default=False)] = None,
    k: Annotated[int | None, bounded(
        "cutoff", "--k", help="memory-benchmarks: the cutoff whose answers to read "
        "(default: the file's only one).", show_default=False)] = None,
    judged: Annotated[Path | None, typer.Option(
        "--judged", help="longmemeval: the judged log (autoeval_label) of the same "
        "hypotheses.", show_default=False)] = None,
    judge_model: Annotated[str | None, typer.Option(
        "--judge-model", help="Model of the file's judgments, where it does not say "
        "(memory-benchmarks, memos).", show_default=False)] = None,
    data: DataOption = None,
    force: ForceOption = False,
) -> None:
    """Import an answer set with its verdicts, mapping its ids to TIAP's query ids; every
    id that cannot be mapped is counted and named."""
    from tiap.answers import FORMATS, import_answers
    from tiap.config import command_options

    given = {"dataset": dataset, "system": system, "k": k, "judged": judged,
             "judge_model": judge_model}
    opts = {key: v for key, v in given.items() if v is not None}
    if fmt in FORMATS:
        module, name = FORMATS[fmt]
        params = inspect.signature(getattr(importlib.import_module(module), name)).parameters
        bad = sorted(key for key in opts if key not in params)
        if bad:
            raise TiapError(f"{', '.join('--' + b.replace('_', '-') for b in bad)}: not an "
                            f"option of format {fmt}", code="usage")
        if data is not None and "locomo" in params:
            opts["locomo"] = data
    with command_options({"dataset": "--dataset", "system": "--system", "k": "--k",
                          "judged": "--judged", "judge_model": "--judge-model"}):
        answers, man = import_answers(fmt, path, out, force=force, **opts)
    console.print(_counts_table(answers, f"imported {len(answers):,} answers into {out}"))
    print_warnings(man.get("warnings") or {}, Path(out) / "manifest.json")


def _pct(x: Any) -> str:
    return "–" if x is None or x == "" else f"{100 * float(x):.1f}"


def _stores(items: list[str], option: str = "--items") -> dict[str, Path]:
    """``NAME=PATH`` specs -> {name: path} (a bare path: the folder's name)."""
    from tiap.io import split_named

    out: dict[str, Path] = {}
    for spec in items:
        name, path = split_named(spec, option)
        name = name or (path.parent.name if path.name == "items.jsonl" else path.stem)
        if name in out:
            raise TiapError(f"{option}: store {name!r} is given twice", code="usage")
        out[name] = path
    return out


ItemsOption = Annotated[list[str], typer.Option(
    "--items", help="A store's items.jsonl (or its folder), as NAME=PATH; repeatable, one per "
    "store the runs or contexts name.")]
QueriesFileOption = Annotated[Path, typer.Option(
    "--queries", help="queries.jsonl (the questions, reference answers and evidence).")]


@app.command("generate")
def generate_cmd(
    runs: Annotated[list[Path], typer.Argument(help="Run files (TIAP traces name their store).")],
    queries: QueriesFileOption,
    items: ItemsOption,
    out: OutOption,
    system: Annotated[list[str] | None, typer.Option(
        "--system", help="Only these systems of the runs (repeatable).", show_default=False)
    ] = None,
    dataset: Annotated[str | None, typer.Option(
        "--dataset", help="Dataset name of the answers (default: the runs' benchmark).",
        show_default=False)] = None,
    k: Annotated[int, bounded("cutoff", "--k", help="Items per context, at most.")] = 10,
    token_budget: Annotated[int, bounded(
        "max_tokens", "--token-budget", help="Context tokens, at most (TIAP's token rule).")
    ] = 1024,
    sample: Annotated[int | None, bounded(
        "count", "--sample", help="Answer a stratified sample (by category) of this many "
        "queries.", show_default=False)] = None,
    seed: Annotated[int, bounded("seed", "--seed", help="Seed of the sample.")] = 0,
    local_model: Annotated[str | None, typer.Option(
        "--local-model", help="Serve this local model for the run (tiap llm models).",
        show_default=False)] = None,
    local_port: Annotated[int, bounded(
        "port", "--local-port", help="Port of --local-model's server (keep it fixed: the "
        "cache's keys name the endpoint).")] = 8089,
    base_url: Annotated[str | None, typer.Option(
        "--base-url", help="An OpenAI-compatible endpoint (with --model).",
        show_default=False)] = None,
    model: Annotated[str | None, typer.Option(
        "--model", help="The endpoint's model.", show_default=False)] = None,
    prompt: Annotated[Path | None, typer.Option(
        "--prompt", help="Answer prompt template ({context}, {question}); default TIAP's.",
        show_default=False)] = None,
    cache: Annotated[Path | None, typer.Option(
        "--cache", help="Answer cache (default: TIAP's cache folder).", show_default=False)
    ] = None,
    max_tokens: Annotated[int, bounded("max_tokens", "--max-tokens",
                                       help="Reply tokens, at most.")] = 64,
    temperature: Annotated[float, bounded("temperature", "--temperature",
                                          help="Sampling temperature.")] = 0.0,
    force: ForceOption = False,
) -> None:
    """Answer queries with each system's top k items under a token budget, with TIAP's own
    prompt and any OpenAI-compatible endpoint; the context given is recorded as (store,
    item) ids. Cached: a rerun asks only what is not finished."""

    from tiap.answers import generate_files
    from tiap.config import command_options

    if (base_url is None) != (model is None):
        raise TiapError("give --base-url and --model together", code="usage")
    endpoint = (base_url, model) if base_url is not None and model is not None else None
    with Progress(TextColumn("answers"), BarColumn(), MofNCompleteColumn(),
                  console=console, transient=True) as bar:
        task = bar.add_task("answers", total=None)

        def progress(p: Any) -> None:
            bar.update(task, completed=p.done, total=p.total)

        with command_options({"k": "--k", "token_budget": "--token-budget",
                              "sample": "--sample", "sample_seed": "--seed",
                              "local_model": "--local-model", "local_port": "--local-port",
                              "endpoint": "--base-url",
                              "prompt": "--prompt", "cache": "--cache",
                              "max_tokens": "--max-tokens", "temperature": "--temperature",
                              "systems": "--system"}):
            answers, man = generate_files(
                runs, out, queries=queries, stores=_stores(items), systems=system,
                dataset=dataset, k=k, token_budget=token_budget, sample=sample,
                sample_seed=seed, local_model=local_model, local_port=local_port,
                endpoint=endpoint, prompt=prompt, cache=cache, max_tokens=max_tokens,
                temperature=temperature, progress=progress, force=force)
    console.print(_counts_table(answers, f"generated {len(answers):,} answers into {out}"))
    gen = answers.generation
    console.print(f"model {gen.get('model')}, prompt {gen.get('prompt')}, k {gen.get('k')}, "
                  f"budget {gen.get('token_budget')} tokens; {gen.get('from_cache', 0):,} "
                  "answers from the cache")
    print_warnings(man.get("warnings") or {}, Path(out) / "manifest.json")


@app.command("judge")
def judge_cmd(
    path: Annotated[Path, typer.Argument(
        help="answers.jsonl, or a folder of tiap answers import, judge or generate.")],
    out: OutOption,
    judge: Annotated[list[str], typer.Option(
        "--judge", help="A judge: locomo-f1, locomo-em, longmemeval-abstention, or "
        "llm(prompt='FILE', model=..., base_url=...), with keyword arguments "
        "(repeatable). An llm judge's prompt is a template file with {question}, {answer} "
        "(the reference) and {response} (the system's answer); default TIAP's own.")],
    runs: Annotated[int, bounded("runs", "--runs", help="Times each LLM judge is asked "
                                 "(run r: a distinct request, seed + r).")] = 1,
    temperature: Annotated[float | None, bounded(
        "temperature", "--temperature", help="Temperature of every LLM judge (default: "
        "each judge's own, 0).", show_default=False)] = None,
    system: Annotated[list[str] | None, typer.Option(
        "--system", help="Only these systems' answers (repeatable).", show_default=False)
    ] = None,
    sample: Annotated[int | None, bounded(
        "count", "--sample", help="Judge a stratified sample (by category) of this many "
        "questions, every selected system's answer to each.", show_default=False)] = None,
    seed: Annotated[int, bounded("seed", "--seed", help="Seed of the sample.")] = 0,
    local_model: Annotated[str | None, typer.Option(
        "--local-model", help="Serve this local model for the run and judge with it "
        "(tiap llm models).", show_default=False)] = None,
    local_port: Annotated[int, bounded(
        "port", "--local-port", help="Port of --local-model's server.")] = 8089,
    cache: Annotated[Path | None, typer.Option(
        "--cache", help="Verdict cache (keep it to resume a killed run; default: "
        "OUT.verdicts.sqlite beside --out).", show_default=False)] = None,
    force: ForceOption = False,
) -> None:
    """Judge fixed answers: offline judges (LoCoMo's token F1 and exact match, LongMemEval's
    abstention rule) and LLM judges with the prompt as a template file, --runs times at a
    stated temperature. Every verdict is cached: a rerun asks only what is not finished."""

    from tiap.answers import judge_files
    from tiap.config import command_options

    cache = cache or Path(f"{Path(out).resolve()}.verdicts.sqlite")
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  console=console, transient=True) as bar:
        tasks: dict[str, Any] = {}

        def progress(name: str, done: int, total: int) -> None:
            if name not in tasks:
                tasks[name] = bar.add_task(name, total=total)
            bar.update(tasks[name], completed=done, total=total)

        with command_options({"runs": "--runs", "temperature": "--temperature",
                              "systems": "--system", "sample": "--sample",
                              "sample_seed": "--seed", "local_model": "--local-model",
                              "local_port": "--local-port", "cache": "--cache"}):
            judged, man = judge_files(path, out, judge, runs=runs, temperature=temperature,
                                      cache=cache, systems=system, sample=sample,
                                      sample_seed=seed, local_model=local_model,
                                      local_port=local_port,
                                      progress=progress, force=force)
    console.print(_counts_table(judged, f"judged {len(judged):,} answers into {out}"))
    console.print(f"verdict cache: {cache}")
    print_warnings(man.get("warnings") or {}, Path(out) / "manifest.json")


@app.command("evidence")
def evidence_cmd(
    answers: Annotated[Path, typer.Argument(
        help="Judged answers that carry their context (a folder of tiap answers judge, or an "
        "answers.jsonl).")],
    queries: QueriesFileOption,
    items: ItemsOption,
    out: OutOption,
    targets: Annotated[str, typer.Option(
        "--targets", help="Targets whose credit of the context is counted (comma-separated).")
    ] = "raw,source,canonical",
    judge: Annotated[list[str] | None, typer.Option(
        "--judge", help="Only these judge configurations (repeatable).", show_default=False)
    ] = None,
    system: Annotated[list[str] | None, typer.Option(
        "--system", help="Only these systems (repeatable).", show_default=False)] = None,
    force: ForceOption = False,
) -> None:
    """Answers tied to retrieval: per system, target and judge, was the evidence in the
    context and was the answer judged correct (the 2x2 table), and which target's credit
    best predicts a correct answer (exact McNemar tests, Holm-corrected)."""
    from tiap.answers import evidence_files
    from tiap.config import command_options

    tlist = split_names(targets, "--targets", what="target names")
    with command_options({"targets": "--targets", "judges": "--judge",
                          "systems": "--system"}):
        res = evidence_files(answers, out, queries=queries, stores=_stores(items),
                             targets=tlist, judges=judge, systems=system, force=force)
    t = Table(title="evidence in the context x judged correct", title_justify="left")
    for c in ("system", "target", "judge", "hit & correct", "retrieved, not used",
              "not retrieved, correct", "not retrieved", "undetermined"):
        t.add_column(c, justify="left" if c in ("system", "target", "judge") else "right")
    for e in res.tables:
        t.add_row(e.system, e.target, e.judge, str(e.hit_correct), str(e.hit_wrong),
                  str(e.miss_correct), str(e.miss_wrong),
                  str(e.undetermined_correct + e.undetermined_wrong))
    console.print(t)
    for system_name in dict.fromkeys(e.system for e in res.tables):
        for judge_name in dict.fromkeys(e.judge for e in res.tables):
            best = res.best_target(system_name, judge_name)
            console.print(f"{system_name}, {judge_name}: "
                          + (f"{best} predicts a correct answer best" if best else
                             "no target predicts a correct answer significantly better"))
    console.print(f"wrote {out}")


@app.command("analyze")
def analyze_cmd(
    path: Annotated[Path, typer.Argument(
        help="answers.jsonl, or a folder of tiap answers import, judge or generate.")],
    out: OutOption,
    system: Annotated[list[str] | None, typer.Option(
        "--system", help="Only these systems (repeatable; default: all).",
        show_default=False)] = None,
    judge: Annotated[list[str] | None, typer.Option(
        "--judge", help="Only these judge configurations (repeatable; default: all). The "
        "variance decomposition needs configurations that cross its factors.",
        show_default=False)] = None,
    seed: Annotated[int, bounded("seed", "--seed", help="Seed of the tests and bootstrap.")
                    ] = 0,
    resamples: Annotated[int, bounded(
        "resamples", "--resamples", help="Sign-flip resamples per paired test.")] = 10_000,
    alpha: Annotated[float, bounded("alpha", "--alpha", help="Family-wise level.")] = 0.05,
    correction: Annotated[str, typer.Option(
        "--correction", help="Family-wise correction: holm, bonferroni, none.")] = "holm",
    min_effect: Annotated[float, bounded(
        "min_effect", "--min-effect", help="Practical threshold of a gap, in accuracy (0.02: "
        "two points).")] = 0.02,
    human: Annotated[str, typer.Option(
        "--human", help="The judge configuration holding human labels.")] = "human",
    bootstrap: Annotated[int, bounded(
        "resamples", "--bootstrap", help="Bootstrap resamples of questions for the variance "
        "components' intervals.")] = 1000,
    force: ForceOption = False,
) -> None:
    """What moves the score on fixed answers: accuracy per system and judge configuration,
    agreement (with humans too), paired tests, judge flips, variance components, run noise."""
    from tiap.answers import analyze_files
    from tiap.config import command_options

    with command_options({"systems": "--system", "judges": "--judge",
                          "seed": "--seed", "resamples": "--resamples", "alpha": "--alpha",
                          "correction": "--correction", "min_effect": "--min-effect",
                          "human": "--human", "bootstrap": "--bootstrap"}):
        result, _ = analyze_files(path, out, systems=system, judges=judge, force=force,
                                  seed=seed, resamples=resamples,
                                  alpha=alpha, correction=correction, min_effect=min_effect,
                                  human=human, bootstrap=bootstrap)
    rows = [r for r in result.rows("accuracy") if r["category"] == "all"]
    t = Table(title="accuracy (%) per system and judge configuration, Wilson 95% interval",
              title_justify="left")
    for c in ("system", "judge", "n", "accuracy", "interval"):
        t.add_column(c, justify="right" if c in ("n", "accuracy") else "left")
    for r in rows:
        t.add_row(r["system"], r["judge"], f"{r['n_scored']:,}", _pct(r["accuracy"]),
                  f"[{_pct(r['wilson_low'])}, {_pct(r['wilson_high'])}]")
    console.print(t)
    flips = result.rows("judge_flips")
    n_flip = sum(bool(r["flip"]) for r in flips)
    n_sig = sum(bool(r["significant_flip"]) for r in flips)
    n_head = sum(bool(r["headline"]) for r in flips)
    console.print(f"judge flips: {n_flip:,} of {len(flips):,} (system pair x judge pair); "
                  f"{n_sig:,} significant after {correction}, {n_head:,} headline")
    for r in result.rows("variance"):
        if r["level"] == "score" and r["share"] not in (None, ""):
            console.print(f"  share of system-score variance, {r['component']}: "
                          f"{_pct(r['share'])}% [{_pct(r['share_low'])}, "
                          f"{_pct(r['share_high'])}]")
    for note in result.notes:
        console.print(f"note: {note}")
    console.print(f"wrote {out}")
