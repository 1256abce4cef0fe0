"""``tiap audit-run``: the whole audit from a pipeline config (the README's main job)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from tiap.cli.common import DataOption, bounded, console, err_console, track

if TYPE_CHECKING:
    from tiap.report import FlipSummary


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
    print_flips(res.flips)
    if res.timings:
        err_console.print(f"wrote {res.out}")
    else:
        err_console.print(f"{res.out}: every step was up to date, nothing was recomputed "
                          "(--force runs them all again)")
    if res.report_dir is not None:
        err_console.print(f"report: {res.report_dir / 'index.html'} "
                          f"(target card: {res.report_dir / 'target_card.md'})")


def print_flips(s: FlipSummary | None) -> None:
    """Winner flips on the headline measure, with the practical threshold a headline needs."""
    from rich.table import Table

    if s is None:
        return
    open_ = (f"; {s.undetermined} not determined by partial lineage (winner_flips.csv)"
             if s.undetermined else "")
    if not s.total:
        console.print(f"no winner flip between targets{open_}")
        return
    t = Table(title=f"winner flips on {s.headline} ({len(s.rows)}; {s.significant} significant "
              f"{s.after_correction}, {s.headlines} of them headline: practical threshold "
              f"{s.threshold}; {s.total} over all measures{open_}; gap = system_a - "
              "system_b)", title_justify="left")
    for col in ("system_a", "system_b", "target_1", "gap_1", "p adj", "target_2", "gap_2",
                "p adj ", "d_z 1 / 2", "headline"):
        t.add_column(col, justify="right" if col.startswith(("gap", "p ", "d_z")) else "left")
    floor = False
    for r, c, verdict in list(zip(s.rows, s.cells, s.verdicts, strict=True))[:20]:
        floor |= "≤" in c["p_1"] + c["p_2"]
        t.add_row(r["system_a"], r["system_b"], r["target_1"], c["gap_1"], c["p_1"],
                  r["target_2"], c["gap_2"], c["p_2"], c["effect"], verdict)
    console.print(t)
    if len(s.rows) > 20:
        console.print(f"... and {len(s.rows) - 20} more")
    if floor:
        console.print(f"≤: the raw p-value is the floor of {s.resamples:,} resamples, "
                      f"1/{s.resamples + 1:,}: an upper bound")
    console.print(f"all winner flips, with intervals and p-values: {s.path}")
