"""``tiap answers``: fixed answers, their judges, and what moves the score.

Thin wrappers over :mod:`tiap.answers`; see docs/answers.md.
"""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from tiap.cli.common import DataOption, ForceOption, console, print_warnings
from tiap.errors import TiapError

app = typer.Typer(
    help="Answers and judges: import answer sets, judge them, analyse what moves the score.",
    no_args_is_help=True,
    rich_markup_mode="markdown",  # docstrings are wrapped text: join their lines
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
    k: Annotated[int | None, typer.Option(
        "--k", help="memory-benchmarks: the cutoff whose answers to read (default: the "
        "file's only one).", show_default=False)] = None,
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
    seed: Annotated[int, typer.Option("--seed", help="Seed of the tests and bootstrap.")] = 0,
    resamples: Annotated[int, typer.Option(
        "--resamples", help="Sign-flip resamples per paired test.")] = 10_000,
    alpha: Annotated[float, typer.Option("--alpha", help="Family-wise level.")] = 0.05,
    correction: Annotated[str, typer.Option(
        "--correction", help="Family-wise correction: holm, bonferroni, none.")] = "holm",
    min_effect: Annotated[float, typer.Option(
        "--min-effect", help="Practical threshold of a gap, in accuracy (0.02: two points).")
    ] = 0.02,
    human: Annotated[str, typer.Option(
        "--human", help="The judge configuration holding human labels.")] = "human",
    bootstrap: Annotated[int, typer.Option(
        "--bootstrap", help="Bootstrap resamples of questions for the variance "
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
