"""``tiap table``: the compact comparison table of a sensitivity folder."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from tiap.cli.common import bounded, err_console, one_of


def table_cmd(
    sens_dir: Annotated[Path, typer.Argument(
        help="An output folder of `tiap sensitivity`.", show_default=False)],
    measure: Annotated[list[str] | None, typer.Option(
        "--measure", help="A measure to show (repeatable; default: the headline).",
        show_default=False)] = None,
    target: Annotated[list[str] | None, typer.Option(
        "--target", help="A target to show (repeatable; default: all).",
        show_default=False)] = None,
    system: Annotated[list[str] | None, typer.Option(
        "--system", help="A system to show (repeatable; default: all).",
        show_default=False)] = None,
    dataset: Annotated[str | None, typer.Option(
        "--dataset", help="The dataset, when the folder holds several.",
        show_default=False)] = None,
    fmt: Annotated[str, typer.Option(
        "--format", help="md, tex or html.", callback=one_of("md", "tex", "html"))] = "md",
    latex_width: Annotated[float, bounded(
        "latex_width", "--latex-width", help="Width in points the LaTeX table must fit "
        "(default: a two-column paper's column).")] = 229.5,
    out: Annotated[Path | None, typer.Option(
        "--out", help="Write to this file (default: print).", show_default=False)] = None,
) -> None:
    """Systems x (measure, target) means: best per column in bold, superscript letters for
    the systems a system beats significantly after correction."""
    from tiap.report import comparison_table

    t = comparison_table(sens_dir, dataset=dataset, measures=measure, targets=target,
                         systems=system)
    text = (t.to_markdown() if fmt == "md" else t.to_latex(latex_width) if fmt == "tex"
            else t.to_html() + "\n")
    if out is None:
        sys.stdout.write(text)
        return
    out.write_text(text, encoding="utf-8")
    err_console.print(f"wrote {out}", highlight=False)
