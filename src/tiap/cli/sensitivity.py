"""``tiap sensitivity``: how much the conclusions of rescored runs depend on the target."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table as RichTable

from tiap.cli.common import console, err_console


def sensitivity_cmd(
    dirs: Annotated[list[str], typer.Argument(
        help="Output folders of 'tiap rescore' ([NAME=]PATH). Folders with the same queries "
        "file are pooled into one dataset; systems are compared within a dataset.")],
    out: Annotated[Path, typer.Option("--out", help="Output folder.")],
    seed: Annotated[int, typer.Option("--seed", help="Seed of every bootstrap and "
                                      "randomization test.")] = 0,
    resamples: Annotated[int, typer.Option(
        "--resamples", help="Bootstrap resamples and random sign vectors per comparison.")
    ] = 10_000,
    alpha: Annotated[float, typer.Option("--alpha", help="1 - confidence level.")] = 0.05,
    configs: Annotated[list[str] | None, typer.Option(
        "--configs", help="A configuration group NAME=SYSTEM,SYSTEM,... (e.g. "
        "density=lexical_f1,lexical_f5,lexical_f8) for design recommendations. "
        "Repeatable.")] = None,
    primary: Annotated[str | None, typer.Option(
        "--primary", help="Headline measure (default: nDCG at its largest cutoff).")] = None,
    answers: Annotated[bool | None, typer.Option(
        "--answers/--no-answers", help="Answer-level alignment (default: when the rescore "
        "inputs, or --queries/--items/--run, can be read).", show_default=False)] = None,
    queries: Annotated[Path | None, typer.Option(
        "--queries", help="queries.jsonl for the answer alignment (default: from the rescore "
        "manifest).")] = None,
    items: Annotated[list[str] | None, typer.Option(
        "--items", help="[SYSTEM=]items.jsonl for the answer alignment (default: from the "
        "rescore manifest). Repeatable.")] = None,
    run: Annotated[list[str] | None, typer.Option(
        "--run", help="[SYSTEM=]run file for the answer alignment (default: from the rescore "
        "manifest). Repeatable.")] = None,
    answer_depth: Annotated[int, typer.Option(
        "--answer-depth", help="Top items the extractive answerer reads.")] = 5,
    no_category_tests: Annotated[bool, typer.Option(
        "--no-category-tests", help="Skip the bootstrap of winner flips within categories.")
    ] = False,
) -> None:
    """Per-query change, winner flips (bootstrap CIs, sign-flip tests), design
    recommendations, categories, cardinality, depth, aggregation and answer alignment:
    CSVs and a manifest in --out (docs/sensitivity.md)."""
    from tiap.cli.rescore import parse_named
    from tiap.sensitivity import analyze, parse_configs, write_sensitivity

    overrides: dict[str, object] = {}
    if queries:
        overrides["queries"] = queries
    for key, specs in (("items", items), ("runs", run)):
        if specs:
            overrides[key] = {name: path for name, path in map(parse_named, specs)}
    res = analyze(dirs, seed=seed, resamples=resamples, alpha=alpha,
                  configs=parse_configs(configs or []), primary=primary, answers=answers,
                  answer_inputs=overrides, answer_depth=answer_depth,
                  by_category_tests=not no_category_tests)
    write_sensitivity(res, out)
    for n in res.notes:
        err_console.print(f"[yellow]note[/]: {n}", highlight=False, soft_wrap=True)
    _print_flips(res)
    err_console.print(f"wrote {out}")


def ci_text(lo: float | None, hi: float | None) -> str:
    return "-" if lo is None or hi is None else f"{lo:+.3f}, {hi:+.3f}"


def _print_flips(res) -> None:  # type: ignore[no-untyped-def]
    from tiap.sensitivity.flips import gap_text

    flips = [r for r in res.table("winner_flips") if r["flip"]]
    primary = res.options["primary"]
    rows = [r for r in flips if r["measure"] == primary.get(r["dataset"])]
    if not rows:
        console.print(f"no winner flip on the primary measure ({len(flips)} on the other "
                      "measures; every row, undecided gaps too, in winner_flips.csv)",
                      highlight=False)
        return
    t = RichTable(title=f"winner flips on the primary measure ({len(rows)})",
                  title_justify="left")
    for c in ("dataset", "measure", "A vs B", "targets", "n", "gap 1 (CI)", "gap 2 (CI)",
              "significant"):
        t.add_column(c)
    for r in rows:
        t.add_row(r["dataset"], r["measure"], f"{r['system_a']} vs {r['system_b']}",
                  f"{r['target_1']} -> {r['target_2']}", f"{r['n_shared']:,}",
                  f"{gap_text(r, 1)} ({ci_text(r['ci_1_low'], r['ci_1_high'])})",
                  f"{gap_text(r, 2)} ({ci_text(r['ci_2_low'], r['ci_2_high'])})",
                  "yes" if r["significant_flip"] else "no")
    console.print(t)
