"""Tables for the report: one value, rendered as Markdown, LaTeX and HTML.

Every cell is plain text. Each renderer escapes for its own format: HTML with
:func:`html.escape` (dialogue text, system names and target specs are untrusted input),
Markdown with HTML entities for ``<``, ``>`` and ``&`` (Markdown renderers pass raw HTML
through) and a backslash before ``|``, LaTeX with the usual backslash escapes.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tiap.report.load import num

__all__ = ["ReportTable", "ci", "esc", "f4", "md_escape", "pct", "pct_ci", "pval", "signed",
           "signed_pct", "tex_escape"]


def esc(text: object) -> str:
    """HTML-escape any value (quotes too, so it is safe in attributes)."""
    return html.escape(str(text), quote=True)


def md_escape(text: object) -> str:
    s = str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    s = s.replace("\\", "\\\\").replace("|", "\\|").replace("`", "\\`")
    return " ".join(s.split())


_TEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
        "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
        "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}",
        # the report's own symbols, so that pdflatex needs no Unicode setup
        "→": r"$\rightarrow$", "−": r"$-$", "–": "--", "Δ": r"$\Delta$", "≥": r"$\geq$",
        "²": r"$^2$", "…": r"\ldots{}", "×": r"$\times$", "∞": r"$\infty$", "≤": r"$\leq$",
        "·": r"$\cdot$", "τ": r"$\tau$", "≠": r"$\neq$"}


#: Defines ``\\tiapfit{...}`` once (a table file may be input alone or after others): its
#: content at its natural size, or scaled to ``\\linewidth`` when wider.
LATEX_PREAMBLE = (
    "% needs \\usepackage{booktabs} and \\usepackage{graphicx}\n"
    "\\makeatletter\\@ifundefined{tiapfit}{\\newsavebox\\tiap@box"
    "\\newcommand\\tiapfit[1]{\\sbox\\tiap@box{#1}\\ifdim\\wd\\tiap@box>\\linewidth"
    "\\resizebox{\\linewidth}{!}{\\usebox\\tiap@box}\\else\\usebox\\tiap@box\\fi}}{}"
    "\\makeatother")


def tex_escape(text: object) -> str:
    return "".join(_TEX.get(c, c) for c in " ".join(str(text).split()))


def f4(x: object, digits: int = 4) -> str:
    v = num(x)
    return "–" if v is None else f"{v:.{digits}f}"


def mean_text(row: dict[str, object], digits: int = 4) -> str:
    """A means row's ``mean``, or ``[lower, upper]`` where partial lineage only bounds it."""
    v = num(row.get("mean"))
    if v is not None:
        return f"{v:.{digits}f}"
    lo, hi = num(row.get("lower")), num(row.get("upper"))
    return "–" if lo is None or hi is None else f"[{lo:.{digits}f}, {hi:.{digits}f}]"


def signed(x: object, digits: int = 4) -> str:
    v = num(x)
    return "–" if v is None else f"{v:+.{digits}f}"


def pct(x: object, digits: int = 1) -> str:
    v = num(x)
    return "–" if v is None else f"{100 * v:.{digits}f}%"


def signed_pct(x: object) -> str:
    v = num(x)
    return "–" if v is None else f"{100 * v:+.0f}%"


def pval(x: object) -> str:
    v = num(x)
    if v is None:
        return "–"
    return f"{v:.4f}" if v >= 1e-4 else f"{v:.1e}"


#: What a ``≤`` before a p-value means (said once under each table that can show one).
FLOOR_NOTE = ("≤: the sign-flip p-value is at its resolution floor, 1/(resamples + 1) (no "
              "resampled sign vector gave a gap as large), so the value is an upper bound; "
              "more resamples could show a smaller one")


def p_cell(r: Mapping[str, Any], key: str, resamples: object) -> str:
    """A sign-flip p-value of a row (``p_1``, ``p_1_adjusted``, ``p``, ``p_adjusted``):
    ``≤ x`` where the raw p-value is the Monte-Carlo floor ``1 / (resamples + 1)``, which
    bounds the p-value rather than estimating it (an adjusted value is then bounded too)."""
    text = pval(r.get(key))
    raw, b = num(r.get(key.removesuffix("_adjusted"))), num(resamples)
    if text != "–" and raw is not None and b and raw <= (1 + 1e-9) / (b + 1):
        return "≤\u00a0" + text  # kept on one line with its value
    return text


def pct_ci(x: object, lo: object, hi: object, digits: int = 1) -> str:
    """A share with its interval, ``12.3% [10.1, 14.8]`` (the share alone when the interval
    is missing, e.g. in folders written before it existed)."""
    a, b = num(lo), num(hi)
    if a is None or b is None:
        return pct(x, digits)
    return f"{pct(x, digits)} [{100 * a:.{digits}f}, {100 * b:.{digits}f}]"


def ci(lo: object, hi: object, digits: int = 3, *, open_ends: bool = False) -> str:
    """``[lo, hi]`` with signs; more digits (up to 6) where a bound other than 0 would
    print as 0, so an interval that excludes 0 never reads as touching it.

    A missing end is ``–`` (no interval), unless ``open_ends``: then it is unbounded
    (``(-∞, hi]``, ``[lo, +∞)``), as a test inversion writes it when the queries are too
    few to reject any shift on that side."""
    a, b = num(lo), num(hi)
    if (a is None or b is None) and not open_ends:
        return "–"
    while digits < 6 and any(v is not None and v != 0 and round(v, digits) == 0
                             for v in (a, b)):
        digits += 1

    def end(v: float) -> str:  # still 0 at 6 digits: scientific, never a false 0
        return f"{v:+.1e}" if v != 0 and round(v, digits) == 0 else f"{v:+.{digits}f}"

    left = "(-∞" if a is None else f"[{end(a)}"
    right = "+∞)" if b is None else f"{end(b)}]"
    return f"{left}, {right}"


@dataclass
class ReportTable:
    """A titled table of text cells; ``marked`` rows are highlighted (e.g. winner flips)."""

    name: str
    title: str
    columns: Sequence[str]
    rows: list[list[str]] = field(default_factory=list)
    marked: list[bool] = field(default_factory=list)
    caption: str = ""

    def add(self, row: Sequence[object], mark: bool = False) -> None:
        self.rows.append([str(c) for c in row])
        self.marked.append(mark)

    def to_markdown(self) -> str:
        out = [f"### {md_escape(self.title)}", ""]
        if self.caption:
            out += [md_escape(self.caption), ""]
        out.append("| " + " | ".join(md_escape(c) for c in self.columns) + " |")
        out.append("|" + "|".join("---" for _ in self.columns) + "|")
        for row, mark in zip(self.rows, self.marked, strict=True):
            cells = [md_escape(c) for c in row]
            if mark:
                cells = [f"**{c}**" if c else c for c in cells]
            out.append("| " + " | ".join(cells) + " |")
        if not self.rows:
            out.append("| " + " | ".join("" for _ in self.columns) + " |")
        return "\n".join(out) + "\n"

    def to_latex(self) -> str:
        """A booktabs table in ``\\small``, scaled down to the line width only when it is
        wider (``\\tiapfit``, defined by :data:`LATEX_PREAMBLE` at the top of every table
        file), so it never overflows a column; needs ``booktabs`` and ``graphicx``."""
        spec = "l" * len(self.columns)
        out = [LATEX_PREAMBLE, r"\begin{table}[t]", r"\centering", r"\small",
               r"\tiapfit{%", rf"\begin{{tabular}}{{{spec}}}",
               r"\toprule", " & ".join(tex_escape(c) for c in self.columns) + r" \\", r"\midrule"]
        for row, mark in zip(self.rows, self.marked, strict=True):
            cells = [tex_escape(c) for c in row]
            if mark:
                cells = [rf"\textbf{{{c}}}" if c else c for c in cells]
            out.append(" & ".join(cells) + r" \\")
        out += [r"\bottomrule", r"\end{tabular}}"]
        cap = self.title + (f". {self.caption}" if self.caption else "")
        label = re.sub(r"[^A-Za-z0-9:.-]+", "-", self.name)
        out += [rf"\caption{{{tex_escape(cap)}}}", rf"\label{{tab:{label}}}",
                r"\end{table}"]
        return "\n".join(out) + "\n"

    def to_html(self, *, limit: int | None = None) -> str:
        out = [f'<table class="t" id="{esc(self.name)}">']
        out.append(f"<caption><b>{esc(self.title)}</b>"
                   + (f" {esc(self.caption)}" if self.caption else "") + "</caption>")
        out.append("<thead><tr>" + "".join(f"<th>{esc(c)}</th>" for c in self.columns)
                   + "</tr></thead><tbody>")
        rows = list(zip(self.rows, self.marked, strict=True))
        shown = rows if limit is None else rows[:limit]
        for row, mark in shown:
            cls = ' class="mark"' if mark else ""
            out.append(f"<tr{cls}>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>")
        if not rows:
            out.append(f'<tr><td colspan="{len(self.columns)}"><i>no rows</i></td></tr>')
        out.append("</tbody></table>")
        if limit is not None and len(rows) > limit:
            out.append(f'<p class="note">{len(rows) - limit:,} more rows in '
                       f"tables/{esc(self.name)}.md</p>")
        return "\n".join(out)
