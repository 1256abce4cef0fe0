"""Tables for the report: one value, rendered as Markdown, LaTeX and HTML.

Every cell is plain text. Each renderer escapes for its own format: HTML with
:func:`html.escape` (dialogue text, system names and target specs are untrusted input),
Markdown with HTML entities for ``<``, ``>`` and ``&`` (Markdown renderers pass raw HTML
through) and a backslash before ``|``, LaTeX with the usual backslash escapes.
"""

from __future__ import annotations

import html
import json
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tiap import numfmt
from tiap.report.load import num

__all__ = [
    "LATEX_WIDTH_PT",
    "ReportTable",
    "ci",
    "esc",
    "f4",
    "latex_table",
    "latex_tables",
    "md_escape",
    "pct",
    "pct_ci",
    "pval",
    "signed",
    "signed_pct",
    "tex_escape",
    "text_width_pt",
]


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
#: content at its natural size, or, should the width estimate of :func:`latex_table` have
#: been short, scaled to ``\\linewidth`` with a message in the log (``tiap: table ...
#: scaled``) so that nothing overflows silently.
LATEX_PREAMBLE = (
    "% needs \\usepackage{booktabs} and \\usepackage{graphicx}\n"
    "\\makeatletter\\@ifundefined{tiapfit}{\\newsavebox\\tiap@box"
    "\\newcommand\\tiapfit[2]{\\sbox\\tiap@box{#2}\\ifdim\\wd\\tiap@box>\\linewidth"
    "\\typeout{tiap: table #1 is \\the\\wd\\tiap@box\\space wide, scaled to "
    "\\the\\linewidth}"
    "\\resizebox{\\linewidth}{!}{\\usebox\\tiap@box}\\else\\usebox\\tiap@box\\fi}}{}"
    "\\makeatother")

#: The text width the LaTeX tables are laid out for: a one-column ``article`` at 10pt
#: (345pt); ``tiap report --latex-width`` sets another (a two-column paper's column is
#: about 240pt).
LATEX_WIDTH_PT = 345.0
#: Lines of ``\\small`` type a table float may hold (caption, headers, rules and rows): an
#: ``article``'s text is about 48 such lines high, and a float taller than the page is lost
#: off its bottom. More rows continue in another float with the headers repeated.
LATEX_FLOAT_LINES = 42
#: Floats LaTeX may be left to place before a ``\clearpage`` (a table of more floats, or
#: tables.tex, whose tables have no text between them): it holds at most 18 unplaced.
LATEX_PENDING_FLOATS = 12
_TABCOLSEP_PT = 12.0  # 2 x \tabcolsep (6pt) around every column
#: Advance widths in points of each character as TIAP writes it in LaTeX (``tex_escape``), in
#: ``\small`` (9pt) Computer Modern with T1 encoding, upright and bold: measured with
#: pdflatex (each character set in a box and ``\wd`` printed), rounded up to 0.01pt.
#: Kerning and ligatures only narrow a string, so a width summed from these is an upper
#: bound of the set width.
_CM9: dict[str, tuple[float, float]] = {
    ' ': (3.09, 3.55), '!': (2.57, 3.25), '"': (4.63, 5.33), '#': (7.71, 8.88),
    '$': (4.63, 5.33), '%': (7.71, 8.88), '&': (7.2, 8.29), "'": (2.57, 2.96),
    '(': (3.6, 4.15), ')': (3.6, 4.15), '*': (4.63, 5.33), '+': (7.2, 8.29), ',': (2.57, 2.96),
    '-': (3.09, 3.55), '.': (2.57, 2.96), '/': (4.63, 5.33), '0': (4.63, 5.33),
    '1': (4.63, 5.33), '2': (4.63, 5.33), '3': (4.63, 5.33), '4': (4.63, 5.33),
    '5': (4.63, 5.33), '6': (4.63, 5.33), '7': (4.63, 5.33), '8': (4.63, 5.33),
    '9': (4.63, 5.33), ':': (2.57, 2.96), ';': (2.57, 2.96), '<': (7.2, 8.29),
    '=': (7.2, 8.29), '>': (7.2, 8.29), '?': (4.37, 5.03), '@': (7.2, 8.29), 'A': (6.94, 8.04),
    'B': (6.55, 7.57), 'C': (6.68, 7.69), 'D': (7.07, 8.16), 'E': (6.3, 6.99),
    'F': (6.04, 6.7), 'G': (7.26, 8.37), 'H': (6.94, 8.32), 'I': (3.34, 4.02),
    'J': (4.76, 5.5), 'K': (7.2, 8.33), 'L': (5.78, 6.4), 'M': (8.48, 10.1), 'N': (6.94, 8.32),
    'O': (7.2, 8.0), 'P': (6.3, 7.28), 'Q': (7.2, 8.0), 'R': (6.81, 7.98), 'S': (5.14, 5.92),
    'T': (6.68, 7.41), 'U': (6.94, 8.18), 'V': (6.94, 8.19), 'W': (9.51, 11.14),
    'X': (6.94, 8.04), 'Y': (6.94, 8.31), 'Z': (5.66, 6.51), '[': (2.57, 2.96),
    '\\': (4.63, 5.33), ']': (2.57, 2.96), '^': (5.66, 6.51), '_': (7.2, 8.29),
    '`': (2.57, 2.96), 'a': (4.63, 5.18), 'b': (5.14, 5.92), 'c': (4.12, 4.74),
    'd': (5.14, 5.92), 'e': (4.12, 4.89), 'f': (2.83, 4.28), 'g': (4.63, 5.48),
    'h': (5.14, 5.92), 'i': (2.57, 2.96), 'j': (2.83, 3.26), 'k': (4.89, 5.62),
    'l': (2.57, 2.96), 'm': (7.71, 8.88), 'n': (5.14, 5.92), 'o': (4.63, 5.33),
    'p': (5.14, 5.92), 'q': (4.89, 5.62), 'r': (3.62, 4.4), 's': (3.65, 4.2), 't': (3.6, 4.15),
    'u': (5.14, 5.92), 'v': (4.89, 5.77), 'w': (6.68, 7.84), 'x': (4.89, 5.62),
    'y': (4.89, 5.77), 'z': (4.12, 4.74), '{': (4.63, 5.33), '|': (2.57, 2.96),
    '}': (4.63, 5.33), '~': (5.66, 6.51), '→': (9.25, 9.25), '−': (7.2, 7.2),
    '–': (4.63, 5.62), 'Δ': (7.71, 7.71), '≥': (7.2, 7.2), '²': (4.17, 4.17),
    '…': (12.34, 14.2), '×': (7.2, 7.2), '∞': (9.25, 9.25), '≤': (7.2, 7.2), '·': (2.57, 2.57),
    'τ': (5.11, 5.11), '≠': (7.2, 7.2),
}


def _width_pt(text: str, bold: bool = False) -> float:
    """Width of ``text`` as a table cell sets it (see :data:`_CM9`); a character outside the
    table counts as its base letter and 0.5pt (``é`` as ``e``) or, failing that, as the
    widest letter, ``W``, so that the estimate stays an upper bound."""
    i = int(bold)
    w = 0.0
    for c in " ".join(text.split()):
        m = _CM9.get(c)
        if m is None:
            base = _CM9.get(unicodedata.normalize("NFKD", c)[:1])
            w += base[i] + 0.5 if base else _CM9["W"][i]
        else:
            w += m[i]
    return w


def text_width_pt(text: str, bold: bool = False) -> float:
    """The width in points of ``text`` set in a ``\\small`` table cell, an upper bound
    (:data:`_CM9`, measured with pdflatex):

    >>> round(text_width_pt("0.361"), 2), round(text_width_pt("0.361", bold=True), 2)
    (21.09, 24.28)
    """
    return _width_pt(text, bold)


def _wrap(text: str, width: float, bold: bool = False) -> list[str]:
    """Greedy line breaks at spaces for a ragged box ``width`` points wide."""
    lines: list[str] = []
    cur = ""
    for word in text.split():
        cand = f"{cur} {word}" if cur else word
        if cur and _width_pt(cand, bold) > width:
            lines.append(cur)
            cur = word
        else:
            cur = cand
    if cur:
        lines.append(cur)
    return lines or [""]


def _partition(widths: Sequence[float], limit: float) -> list[list[int]]:
    """Consecutive column groups, each of total width at most ``limit`` where it can be
    (a column wider than that alone is a group of its own)."""
    parts: list[list[int]] = [[]]
    used = 0.0
    for j, w in enumerate(widths):
        if parts[-1] and used + w > limit:
            parts.append([])
            used = 0.0
        parts[-1].append(j)
        used += w
    return parts


def _balanced_parts(widths: Sequence[float], limit: float) -> list[list[int]]:
    """As few consecutive groups as fit ``limit``, with the widest group as narrow as that
    number of groups allows (bisection on the limit), so no part is a stub."""
    parts = _partition(widths, limit)
    lo, hi = max(widths, default=0.0), limit
    while len(parts) > 1 and hi - lo > 0.5:
        mid = (lo + hi) / 2
        trial = _partition(widths, mid)
        if len(trial) == len(parts):
            hi = mid
        else:
            lo = mid
    return _partition(widths, hi) if len(parts) > 1 else parts


def latex_table(t: ReportTable, width: float = LATEX_WIDTH_PT) -> str:
    """``t`` as booktabs tables in ``\\small`` that fit ``width`` points.

    Laid out from the measured widths of Computer Modern (:data:`_CM9`): a column is as
    wide as its widest cell (bold in highlighted rows) or its longest header word; a column
    of prose (a cell of four words or more) is at most a third of ``width`` and wraps; a
    header wider than its column is stacked over lines. A table still wider than ``width``
    stacks its ``t.key`` leading columns (those that identify a row) in one column and is
    split into parts of about equal width, each repeating that key column: set one under
    the other in one float when they fit in :data:`LATEX_FLOAT_LINES`, else each part in
    floats of its own ("part 2 of 3"). Rows that would make a float taller continue in
    another float, headers repeated, under the same table number. Line breaks are TIAP's own (a cell of several lines is a nested
    ``tabular``), so the widths are known before LaTeX sets them; ``\\tiapfit`` would
    scale a part that is still too wide (a key column wider than ``width``) and say so in
    the LaTeX log.
    """
    heads = [str(c) for c in t.columns]
    rows = list(zip(t.rows, t.marked, strict=True))
    ncol = len(heads)
    col_w: list[float] = []
    for j in range(ncol):
        w = max([_width_pt(r[j], m) for r, m in rows] or [0.0])
        if any(len(r[j].split()) >= 4 for r, _ in rows):
            w = min(w, width / 3)
        col_w.append(max(w, *(_width_pt(x) for x in heads[j].split()), 10.0))
    key = min(max(t.key, 0), ncol - 1) if ncol else 0
    # the columns set: the original ones it stacks (top to bottom) and its width
    cols = [([j], col_w[j]) for j in range(ncol)]
    if key > 1 and sum(w + _TABCOLSEP_PT for _, w in cols) > width:
        cols = [(list(range(key)), max(col_w[:key])), *cols[key:]]
        key = 1
    key_w = sum(w + _TABCOLSEP_PT for _, w in cols[:key])
    room = width - key_w - _TABCOLSEP_PT  # a column wider than this beside the key wraps
    for c in range(key, len(cols)):
        idx, w = cols[c]
        if w > room:
            words = [x for r, _ in rows for x in r[idx[0]].split()]
            longest = max([_width_pt(x, True) for x in words] + [_width_pt(x) for x in
                          heads[idx[0]].split()] + [10.0])
            cols[c] = (idx, max(room, longest))

    def lines(texts: Sequence[str], w: float, bold: bool = False) -> list[str]:
        return [x for text in texts
                for x in (_wrap(text, w, bold) if _width_pt(text, bold) > w else [text])]

    head_lines = [lines([heads[j] for j in idx], w) for idx, w in cols]
    cell_lines = [[lines([r[j] for j in idx], w, m) for idx, w in cols] for r, m in rows]

    def cell(ls: list[str], bold: bool, head: bool = False) -> str:
        xs = [rf"\textbf{{{tex_escape(x)}}}" if bold and x else tex_escape(x) for x in ls]
        if len(xs) == 1:
            return xs[0]
        return rf"\begin{{tabular}}[{'b' if head else 't'}]{{@{{}}l@{{}}}}" + r" \\ ".join(xs) \
            + r"\end{tabular}"

    parts = [[key + c for c in p] for p in
             _balanced_parts([w + _TABCOLSEP_PT for _, w in cols[key:]], width - key_w)]
    label = re.sub(r"[^A-Za-z0-9:.-]+", "-", t.name)
    cap_text = t.title + (f". {t.caption}" if t.caption else "")
    if len(parts) > 1:
        keys = ", ".join(heads[: min(max(t.key, 0), ncol)])
        cap_text = cap_text.rstrip(".") + "."
        cap_text += (f" In {len(parts)} parts" + (f", each repeating {keys}" if keys else "")
                     + ".")
    # a float's height in lines: its caption; per part the header and the three rules
    # (about a line) and the rows, each as high as its tallest cell (and the 2pt between
    # rows of several lines: counted as a fifth of a line on every line)
    shown = [[*range(key), *p] for p in parts]
    cap_h = int(_width_pt(cap_text) // width) + 2
    head_h = [max(len(head_lines[c]) for c in cs) + 1 for cs in shown]
    row_h = [[max(len(ls[c]) for c in cs) * 1.2 for ls in cell_lines] for cs in shown]
    if cap_h + sum(head_h) + len(parts) - 1 + sum(map(sum, row_h)) <= LATEX_FLOAT_LINES:
        floats = [(list(range(len(parts))), list(range(len(rows))))]  # parts stacked
    else:  # each part in floats of its own, as many rows in each as fit
        floats = []
        for p in range(len(parts)):
            room = float(LATEX_FLOAT_LINES - head_h[p] - (cap_h if p == 0 else 2))
            floats.append(([p], []))
            for i, h in enumerate(row_h[p]):
                if floats[-1][1] and h > room:
                    floats.append(([p], []))
                    room = LATEX_FLOAT_LINES - head_h[p] - 2
                floats[-1][1].append(i)
                room -= h
    out = [LATEX_PREAMBLE]
    for n, (ps, chunk) in enumerate(floats):
        if n and n % LATEX_PENDING_FLOATS == 0:  # LaTeX holds at most 18 unplaced floats
            out.append(r"\clearpage")
        out += [r"\begin{table}[tp]", r"\centering", r"\small"]
        for p in ps:
            cs = shown[p]
            if p != ps[0]:
                out.append(r"\par\medskip")
            out += [rf"\tiapfit{{{label}}}{{%", rf"\begin{{tabular}}{{{'l' * len(cs)}}}",
                    r"\toprule", " & ".join(cell(head_lines[c], False, True) for c in cs)
                    + r" \\", r"\midrule"]
            out += [" & ".join(cell(cell_lines[i][c], rows[i][1]) for c in cs)
                    + (r" \\[2pt]" if max(len(cell_lines[i][c]) for c in cs) > 1 else r" \\")
                    for i in chunk]
            out += [r"\bottomrule", r"\end{tabular}}"]
        if n == 0:
            out += [rf"\caption{{{tex_escape(cap_text)}}}", rf"\label{{tab:{label}}}"]
        else:  # the same number as the first float
            part = f"part {ps[0] + 1} of {len(parts)}" if len(ps) == 1 < len(parts) else ""
            more = "" if floats[n - 1][0] != ps else "continued"
            note = ", ".join(x for x in (part, more) if x)
            out += [r"\addtocounter{table}{-1}",
                    rf"\caption{{{tex_escape(t.title)} ({note})}}"]
        out.append(r"\end{table}")
    return "\n".join(out) + "\n"


def latex_tables(tables: Sequence[ReportTable], width: float = LATEX_WIDTH_PT) -> str:
    """Every table of ``tables`` for one file to ``\\input``, a ``\\clearpage`` between
    two tables wherever more than :data:`LATEX_PENDING_FLOATS` floats would wait to be
    placed (LaTeX stops with "Too many unprocessed floats" at 18)."""
    out: list[str] = []
    pending = 0
    for t in tables:
        tex = t.to_latex(width)
        n = tex.count(r"\begin{table}")
        if out and pending + n > LATEX_PENDING_FLOATS:
            out.append("\\clearpage\n")
            pending = 0
        out.append(tex)
        pending = n % LATEX_PENDING_FLOATS if n > LATEX_PENDING_FLOATS else pending + n
    return "\n".join(out)


def tex_escape(text: object) -> str:
    return "".join(_TEX.get(c, c) for c in " ".join(str(text).split()))


def f4(x: object, digits: int = 4) -> str:
    v = num(x)
    return "–" if v is None else f"{v:.{digits}f}"


def mean_text(row: dict[str, object], digits: int = 4) -> str:
    """A means row's ``mean``, or ``[lower, upper]`` where partial lineage only bounds it
    (both ends with one number of decimals, :mod:`tiap.numfmt`)."""
    v = num(row.get("mean"))
    if v is not None:
        return f"{v:.{digits}f}"
    return numfmt.interval(row.get("lower"), row.get("upper"), digits, sign=False)


def signed(x: object, digits: int = 4) -> str:
    """A signed value by the printing rule of :mod:`tiap.numfmt` (``+0.0123``; more
    decimals where a value other than 0 would print as 0; float noise prints as 0)."""
    return numfmt.signed(x, digits)


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


def bounded(row: dict[str, str], name: str, show: Callable[[object], str] = str) -> str:
    """A count's, rate's or mean's cell: its value where the lineage decides it, else
    ``[lower, upper]`` from ``<name>_lower`` / ``<name>_upper`` (partial lineage), else
    ``–``."""
    v = row.get(name)
    if v not in (None, ""):
        return show(v)
    lo, hi = row.get(f"{name}_lower"), row.get(f"{name}_upper")
    if lo in (None, "") or hi in (None, ""):
        return "–"
    return f"[{show(lo)}, {show(hi)}]"


def pct_range_ci(row: dict[str, str], name: str, digits: int = 1) -> str:
    """:func:`pct_ci` of ``row[name]`` with its ``_low`` / ``_high`` interval; where partial
    lineage only bounds the share, ``lower–upper%`` with the interval."""
    if row.get(name) not in (None, "") or row.get(f"{name}_lower") in (None, ""):
        return pct_ci(row.get(name), row.get(f"{name}_low"), row.get(f"{name}_high"), digits)
    lo, hi = num(row.get(f"{name}_lower")), num(row.get(f"{name}_upper"))
    a, b = num(row.get(f"{name}_low")), num(row.get(f"{name}_high"))
    text = f"{100 * (lo or 0):.{digits}f}–{100 * (hi or 0):.{digits}f}%"
    return text if a is None or b is None else (
        f"{text} [{100 * a:.{digits}f}, {100 * b:.{digits}f}]")


def ci(lo: object, hi: object, digits: int = 3, *, open_ends: bool = False) -> str:
    """``[lo, hi]`` with signs, by the printing rule of :mod:`tiap.numfmt`: both ends with
    one number of decimals, more than ``digits`` where a bound other than 0 would print as
    0 (so an interval that excludes 0 never reads as touching it), float noise as 0.

    A missing end is ``–`` (no interval), unless ``open_ends``: then it is unbounded
    (``(-∞, hi]``, ``[lo, +∞)``), as a test inversion writes it when the queries are too
    few to reject any shift on that side."""
    return numfmt.interval(lo, hi, digits, open_ends=open_ends)


@dataclass
class ReportTable:
    """A titled table of text cells; ``marked`` rows are highlighted (e.g. winner flips)."""

    name: str
    title: str
    columns: Sequence[str]
    rows: list[list[str]] = field(default_factory=list)
    marked: list[bool] = field(default_factory=list)
    caption: str = ""
    #: the leading columns that identify a row, repeated in each part of a split LaTeX table
    key: int = 1

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

    def to_latex(self, width: float = LATEX_WIDTH_PT) -> str:
        """Booktabs tables that fit ``width`` points (see :func:`latex_table`); each file
        starts with :data:`LATEX_PREAMBLE`, so it needs only ``booktabs`` and ``graphicx``."""
        return latex_table(self, width)

    def to_html(self, *, limit: int | None = None) -> str:
        """The table in a ``<div class="tw">`` the page's script makes sortable and
        filterable: the first ``limit`` rows as HTML (what a reader without script sees);
        past ``limit``, every row also as one JSON block the script renders on demand
        (never thousands of rows in the page's DOM).

        >>> t = ReportTable("t", "T", ["a"])
        >>> for i in range(3):
        ...     t.add([i])
        >>> html = t.to_html(limit=2)
        >>> html.count("<tr>"), '"rows":[["0"],["1"],["2"]]' in html
        (3, True)
        """
        out = ['<div class="tw">', f'<table class="t" id="{esc(self.name)}">']
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
            out.append(f'<p class="note more">{len(rows) - limit:,} more rows in '
                       f"tables/{esc(self.name)}.md</p>")
            data = json.dumps({"rows": self.rows, "marked": [i for i, m in
                                                             enumerate(self.marked) if m]},
                              ensure_ascii=False, separators=(",", ":"), allow_nan=False)
            out.append('<script type="application/json" class="tiap-rows">'
                       + data.replace("<", "\\u003c") + "</script>")
        out.append("</div>")
        return "\n".join(out)
