"""``tiap sensitivity``: how much the conclusions of rescored runs depend on the target."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table as RichTable

from tiap.cli.common import (
    K_HELP,
    ForceOption,
    bounded,
    console,
    err_console,
    headline_option,
    one_of,
    progress_bar,
    split_names,
)


def sensitivity_cmd(
    dirs: Annotated[list[str], typer.Argument(
        help="Output folders of 'tiap rescore' ([NAME=]PATH). Folders with the same queries "
        "file are pooled into one dataset; systems are compared within a dataset.")],
    out: Annotated[Path, typer.Option("--out", help="Output folder.")],
    seed: Annotated[int, bounded("seed", "--seed", help="Seed of the randomization tests (the "
                                 "sign vectors of each shared subset of queries).")] = 0,
    resamples: Annotated[int, bounded(
        "resamples", "--resamples", help="Random sign vectors per shared subset (all of them "
        "when 2^n is fewer: exact); more needs more memory, checked against this machine's "
        "once the queries are known.")] = 10_000,
    alpha: Annotated[float, bounded(
        "alpha", "--alpha", help="Family-wise level of the tests (and 1 - the intervals' "
        "level).")] = 0.05,
    correction: Annotated[str, typer.Option(
        "--correction", help="Multiple-testing correction within each family (every gap of "
        "one table, dataset and measure): holm (family-wise error), bh (false discovery "
        "rate, Benjamini-Hochberg) or none.", callback=one_of("holm", "bh", "none"))
    ] = "holm",
    min_effect: Annotated[float, bounded(
        "min_effect", "--min-effect", help="Smallest gap, in the measure's units, that counts "
        "as a practical difference: a flip smaller than it is reported, never headlined.")
    ] = 0.0,
    min_dz: Annotated[float, bounded(
        "min_dz", "--min-dz", help="Smallest paired effect size |d_z| (mean / sd of the "
        "per-query differences) that counts as a practical difference: a headline flip needs "
        "both gaps significant and at least this (0.2: Cohen's 'small'; 0: none).")] = 0.2,
    engine: Annotated[str, typer.Option(
        "--engine", help="Where the randomization tests run: local (this process), ray (a "
        "local Ray instance on this machine's cores), ray://HOST:PORT or ray:auto (an "
        "existing Ray cluster; pip install -e '.[ray]'). The outputs are the same.")
        ] = "local",
    pairs: Annotated[str | None, typer.Option(
        "--pairs", help="The pairs of targets to compare, comma-separated (default: every "
        "pair): A:B, or ~NAME for every target T against T~NAME, the same target under the "
        "evidence overlay NAME (tiap rescore --overlay).", show_default=False)] = None,
    configs: Annotated[list[str] | None, typer.Option(
        "--configs", help="A configuration group NAME=SYSTEM,SYSTEM,... (e.g. "
        "density=lexical_f1,lexical_f5,lexical_f8) for design recommendations. "
        "Repeatable.")] = None,
    measure: Annotated[str | None, typer.Option(
        "--measure", help="Headline measure (default: nDCG at the rescoring's largest "
        "cutoff).", show_default=False)] = None,
    k: Annotated[int | None, bounded("cutoff", "--k", help=K_HELP, show_default=False)
                 ] = None,
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
    answer_depth: Annotated[int, bounded(
        "cutoff", "--answer-depth", help="Top items the extractive answerer reads.")] = 5,
    no_category_tests: Annotated[bool, typer.Option(
        "--no-category-tests", help="Skip the tests of winner flips within categories.")
    ] = False,
    force: ForceOption = False,
) -> None:
    """Per-query change, winner flips (paired sign-flip tests, Holm-corrected, with inverted
    intervals and effect sizes), design recommendations, ranking stability, categories,
    cardinality, depth, aggregation and answer alignment: CSVs and a manifest in --out
    (docs/sensitivity.md)."""
    from tiap.config import command_options
    from tiap.sensitivity import sensitivity_files

    primary = headline_option(measure, k)
    pair_list = (split_names(pairs, "--pairs", what="target pairs A:B or ~OVERLAY")
                 if pairs is not None else ())
    with progress_bar() as bar, command_options({"items": "--items", "runs": "--run"}):
        task = bar.add_task("sensitivity", total=None)

        def progress(description: str, done: int, total: int) -> None:
            bar.update(task, description=description, completed=done, total=total)

        res = sensitivity_files(dirs, out, primary=primary, queries=queries, items=items or [],
                                runs=run or [], configs=configs or [], pairs=pair_list,
                                engine=engine, progress=progress, force=force, seed=seed,
                                resamples=resamples, alpha=alpha, answers=answers,
                                answer_depth=answer_depth,
                                by_category_tests=not no_category_tests,
                                correction=correction.lower(), min_effect=min_effect,
                                min_dz=min_dz)
    for n in res.notes:
        err_console.print(f"[yellow]note[/]: {n}", highlight=False, soft_wrap=True)
    _print_flips(res)
    err_console.print(f"wrote {out}")


def _print_flips(res) -> None:  # type: ignore[no-untyped-def]
    from tiap.report import flip_cells, procedure_text
    from tiap.sensitivity import flip_undetermined

    flips = [r for r in res.table("winner_flips") if r["flip"]]
    primary = res.options["primary"]
    on_primary = [r for r in flips if r["measure"] == primary.get(r["dataset"])]
    rows = [r for r in on_primary if r["headline"]]
    o = res.options
    how = (f"sign-flip tests, {o['correction']} over each family at {o['alpha']:g}; "
           f"practical threshold: {procedure_text(o)['threshold']}")
    # partial lineage: pairs whose flip the lineage leaves open, never counted as flips
    n_open = sum(1 for r in res.table("winner_flips")
                 if not r["flip"] and flip_undetermined(r))
    if n_open:
        how += f"; {n_open} flips not determined by partial lineage"
    if not rows:
        console.print(f"no headline winner flip on the primary measure ({how}; "
                      f"{len(on_primary)} flips there not significant or below the practical "
                      f"threshold, {len(flips)} over all measures: winner_flips.csv)",
                      highlight=False)
        return
    t = RichTable(title=f"headline winner flips on the primary measure ({len(rows)} of "
                  f"{len(on_primary)} flips; {how})", title_justify="left")
    for c in ("dataset", "measure", "A vs B", "targets", "n", "gap 1 (CI)", "p adj",
              "gap 2 (CI)", "p adj "):
        t.add_column(c)
    floor = False
    for r in rows:
        c = flip_cells(r, o["resamples"])
        floor |= "≤" in c["p_1"] + c["p_2"]
        t.add_row(r["dataset"], r["measure"], f"{r['system_a']} vs {r['system_b']}",
                  f"{r['target_1']} -> {r['target_2']}", f"{r['n_shared']:,}",
                  f"{c['gap_1']} ({c['ci_1']})", c["p_1"], f"{c['gap_2']} ({c['ci_2']})",
                  c["p_2"])
    console.print(t)
    if floor:
        console.print(f"≤: the raw p-value is the floor of {o['resamples']:,} resamples, "
                      f"1/{o['resamples'] + 1:,}: an upper bound", highlight=False)
