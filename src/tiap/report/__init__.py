"""The report a benchmark paper can publish: one self-contained HTML page, Markdown and
LaTeX tables, and a target card (which stored forms were credited, coverage, shared
subsets, every winner flip), from the output of ``tiap sensitivity``.

Figures need the ``report`` extra (matplotlib). The public API is
:func:`build_report` (also ``tiap.build_report``); its docstring has a worked example.
"""

from tiap.report.build import build_report
from tiap.report.procedure import (
    FlipSummary,
    flip_cells,
    flip_headline,
    flip_summary,
    procedure_text,
)

__all__ = ["FlipSummary", "build_report", "flip_cells", "flip_headline", "flip_summary",
           "procedure_text"]
