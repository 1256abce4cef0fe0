"""``tiap audit-run``: the whole audit from a pipeline config (the README's main job)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tiap.cli.common import DataOption, bounded, err_console, print_flips, track


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
