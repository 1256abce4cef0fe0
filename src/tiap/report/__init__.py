"""The report a benchmark paper can publish: one self-contained HTML page, Markdown and
LaTeX tables, and a target card (which stored forms were credited, coverage, shared
subsets, every winner flip), from the output of ``tiap sensitivity``.

Figures need the ``report`` extra (matplotlib). The public API is
:func:`build_report` (also ``tiap.build_report``); its docstring has a worked example.
:func:`comparison_table` is the compact table a paper prints (systems x measures and
targets, best in bold, superscripts for significant wins), in Markdown, LaTeX and HTML.
"""

from tiap.report.build import build_report
from tiap.report.compare import ComparisonTable, comparison_table
from tiap.report.procedure import (
    FlipSummary,
    flip_cells,
    flip_headline,
    flip_summary,
    procedure_text,
)

__all__ = ["ComparisonTable", "FlipSummary", "build_report", "comparison_table", "flip_cells",
           "flip_headline", "flip_summary", "procedure_text"]
