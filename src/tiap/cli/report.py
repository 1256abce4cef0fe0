"""``tiap report``: the HTML report, tables and target card from sensitivity folders."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from tiap.cli.common import ForceOption, bounded, err_console
from tiap.errors import TiapError


def report_cmd(
    out: Annotated[Path, typer.Option("--out", help="Report folder.")],
    dirs: Annotated[list[Path] | None, typer.Argument(
        help="Output folders of 'tiap sensitivity' (none: a report of --answers alone).",
        show_default=False)] = None,
    latex_width: Annotated[float, bounded(
        "latex_width", "--latex-width", help="Text width in points the LaTeX tables must fit: "
         "wider ones "
        "are split into parts that repeat the row's key (a one-column article: 345; a "
        "two-column paper's column: about 240).")] = 345.0,
    audit: Annotated[list[Path] | None, typer.Option(
        "--audit", help="An output folder of `tiap audit graded`: a section on what survives "
        "the judges (graded nDCG, Coverage@k). Repeatable.", show_default=False)] = None,
    answers: Annotated[list[Path] | None, typer.Option(
        "--answers", help="An output folder of `tiap answers analyze`: an 'Answers and "
        "judges' section and the judge configurations in the card. Repeatable.",
        show_default=False)] = None,
    query_view: Annotated[bool, typer.Option(
        "--query-view/--no-query-view", help="The per-query view (reads each rescoring's "
        "store, queries and runs: slower and more memory on a large store).")] = True,
    force: ForceOption = False,
) -> None:
    """Write index.html (self-contained, figures embedded, sections to open, tables to sort
    and filter, a per-query view), tables/*.md and *.tex, tables.md, tables.tex,
    target_card.md (one screen), target_card_appendix.md (every table in full) and
    target_card.json."""
    from tiap.report import build_report

    if not dirs and not answers:
        raise TiapError("give the output folder of tiap sensitivity, or --answers",
                        code="usage")
    man = build_report(dirs or [], out, force=force, latex_width=latex_width,
                       audits=audit or (), answers=answers or (), query_view=query_view)
    for n in man.get("notes", []):
        err_console.print(f"[yellow]note[/]: {n}", highlight=False, soft_wrap=True)
    err_console.print(f"wrote {out / 'index.html'}")
