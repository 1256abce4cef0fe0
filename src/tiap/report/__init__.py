"""The report a benchmark paper can publish: one self-contained HTML page, Markdown and
LaTeX tables, and a target card (which stored forms were credited, coverage, shared
subsets, every winner flip), from the output of ``tiap sensitivity``.

Figures need the ``report`` extra (matplotlib).

>>> from tiap.report import build_report                          # doctest: +SKIP
>>> build_report(["/tmp/s/sensitivity"], "/tmp/s/report")          # doctest: +SKIP
"""

from tiap.report.build import build_report
from tiap.report.card import card_json, card_markdown
from tiap.report.load import SensitivityDir, load_sensitivity_dirs
from tiap.report.procedure import flip_cells, procedure_text
from tiap.report.render import ReportTable

__all__ = ["ReportTable", "SensitivityDir", "build_report", "card_json", "card_markdown",  # noqa: RUF022
           "load_sensitivity_dirs",
           "flip_cells", "procedure_text"]
