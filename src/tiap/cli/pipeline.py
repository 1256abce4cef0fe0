"""``tiap audit-run``: the whole audit from a pipeline config (the README's main job)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tiap.cli.common import DataOption, bounded, err_console, track


def audit_run_cmd(
    config: Annotated[Path, typer.Argument(help="Pipeline TOML, e.g. configs/locomo.toml.")],
    out: Annotated[Path, typer.Option(
        "--out", help="Output root; the run goes to OUT/<name>.")] = Path("out"),
    retriever: Annotated[list[str] | None, typer.Option(
        "--retriever", help="Override the config's retrievers (bm25, dense, hybrid). Repeatable.",
        show_default=False)] = None,
    collections: Annotated[str | None, typer.Option(
        "--collections", help="Comma-separated collection ids (default: all).",
        show_default=False)] = None,
    force: Annotated[bool, typer.Option("--force", help="Redo steps that are up to date.")] = False,
    resamples: Annotated[int | None, bounded(
        "resamples", "--resamples", help="Random sign vectors per shared subset for Stage "
        "III's tests (default: the config's, 10,000).", schema=True,
        show_default=False)] = None,
    engine: Annotated[str | None, typer.Option(
        "--engine", help="Where the work runs (default: the config's, local): local, ray (a "
        "local Ray instance), ray://HOST:PORT or ray:auto (a cluster); docs/scale.md says "
        "what is split how. The outputs are the same.", show_default=False)] = None,
    query_shard: Annotated[int | None, bounded(
        "count", "--query-shard", help="Queries per rescoring task (default: the config's, a "
        "task per run). The outputs are the same.", schema=True, show_default=False)] = None,
    data: DataOption = None,
) -> None:
    """Build the stores, retrieve, and rescore every run under every target; finished steps
    are skipped on a rerun, so an interrupted run resumes. A step runs again when its
    settings, TIAP's code, a file it reads or a file it wrote (deleted or edited since:
    checked by sha256) changed; the run says which file."""
    from tiap.cli.rescore import print_summary
    from tiap.pipeline import load_config, run_pipeline

    # the options override the config's keys and are checked by the same schema
    cfg = load_config(config, retrievers=retriever, resamples=resamples,
                      collections=[c.strip() for c in collections.split(",")]
                      if collections is not None else None, engine=engine,
                      query_shard=query_shard)
    err_console.print(f"[bold]{cfg.name}[/]: {cfg.dataset}, stores "
                      f"{', '.join(s.name for s in cfg.stores)}, "
                      f"retrievers {', '.join(cfg.retrievers)}")
    res = run_pipeline(cfg, out, data=data, progress=track, force=force,
                       log=lambda s: err_console.print(f"  {s}", highlight=False))
    print_summary(res.result, shared=False)
    if res.sensitivity_dir is not None:
        print_flips(res.sensitivity_dir)
    if res.timings:
        err_console.print(f"wrote {res.out}")
    else:
        err_console.print(f"{res.out}: every step was up to date, nothing was recomputed "
                          "(--force runs them all again)")
    if res.report_dir is not None:
        err_console.print(f"report: {res.report_dir / 'index.html'} "
                          f"(target card: {res.report_dir / 'target_card.md'})")


def print_flips(sdir: Path) -> None:
    """Winner flips on the headline measure, with the practical threshold a headline needs."""
    import csv

    from rich.table import Table

    from tiap.cli.common import console
    from tiap.report import flip_cells, procedure_text

    path = sdir / "winner_flips.csv"
    if not path.exists():
        return
    with open(path, newline="", encoding="utf-8") as fh:
        flips = [r for r in csv.DictReader(fh) if r["flip"] == "true"]
    if not flips:
        console.print("no winner flip between targets")
        return
    from tiap.provenance import read_manifest

    opts = read_manifest(sdir, step="sensitivity")["options"]
    res = opts.get("resamples")
    headline = flip_headline([r["measure"] for r in flips])
    rows = [r for r in flips if r["measure"] == headline]
    n_sig = sum(r.get("significant_flip") == "true" for r in rows)
    n_head = sum(r.get("headline") == "true" for r in rows)
    how = procedure_text(opts)
    t = Table(title=f"winner flips on {headline} ({len(rows)}; {n_sig} significant "
              f"{how['after_correction']}, {n_head} of them headline: practical threshold "
              f"{how['threshold']}; {len(flips)} over all measures; gap = system_a - "
              "system_b)", title_justify="left")
    for col in ("system_a", "system_b", "target_1", "gap_1", "p adj", "target_2", "gap_2",
                "p adj ", "d_z 1 / 2", "headline"):
        t.add_column(col, justify="right" if col.startswith(("gap", "p ", "d_z")) else "left")
    floor = False
    for r in rows[:20]:
        c = flip_cells(r, res)
        floor |= "≤" in c["p_1"] + c["p_2"]
        t.add_row(r["system_a"], r["system_b"], r["target_1"], c["gap_1"], c["p_1"],
                  r["target_2"], c["gap_2"], c["p_2"], c["effect"], _verdict(r))
    console.print(t)
    if len(rows) > 20:
        console.print(f"... and {len(rows) - 20} more")
    if floor:
        console.print(f"≤: the raw p-value is the floor of {res:,} resamples, 1/{res + 1:,}: "
                      "an upper bound")
    console.print(f"all winner flips, with intervals and p-values: {path}")


def flip_headline(measures: list[str]) -> str:
    """The measure whose flips are printed: the headline measure (nDCG at its largest
    rank cutoff, :func:`tiap.scoring.primary_measure`) among the flipped ones, as
    written in winner_flips.csv. A token budget (``nDCG@tok500``) is a measure like any
    other, never read as a rank cutoff."""
    from tiap.scoring import parse_measure, primary_measure

    written = {str(parse_measure(m)): m for m in reversed(measures)}  # first spelling wins
    return written[str(primary_measure(list(dict.fromkeys(measures))))]


def _verdict(r: dict[str, str]) -> str:
    if r.get("headline") == "true":
        return "yes"
    if r.get("significant_flip") == "true":
        return "below threshold"
    return "not significant"
