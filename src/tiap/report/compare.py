"""The compact comparison table a paper prints: systems x (measure, target) means, the best
in each column in bold, and superscript letters for the systems a system beats
significantly after correction (as ranx's ``Report`` marks them), in Markdown, LaTeX and HTML.

The numbers come from one home, the sensitivity stage: the means from ``system_means``
and the pairwise tests from ``system_tests`` (:func:`tiap.sensitivity.flips.system_tests`:
the winner flips' paired sign-flip test on the queries both systems define under the
target, Holm-corrected within each column by default). This module computes no statistic.

**Bold.** A system is bold in a column when its mean is at least every other system's
under every lineage (its lower bound at least each other upper bound, within 1e-12); equal
means are all bold. Where partial lineage leaves the best open (two intervals overlap at
the top), no cell of the column is bold and the caption says so.

**Superscripts.** Each system has a letter (a, b, c, ... in order); a cell carries the
letters of the systems it beats: ``significant`` after correction and ``winner`` this
system. Under partial lineage a pair is decided only when every lineage agrees.
"""

from __future__ import annotations

import html
import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tiap import numfmt
from tiap.errors import Problem, TiapError
from tiap.report.load import SensitivityDir, load_sensitivity_dirs, num, truth
from tiap.report.render import LATEX_PREAMBLE, md_escape, tex_escape, text_width_pt
from tiap.scoring.measures import parse_measure

__all__ = ["COLUMN_WIDTH_PT", "ComparisonTable", "comparison_table"]

#: The width :meth:`ComparisonTable.to_latex` fits by default: one column of a two-column
#: ``article`` (229.5pt; ACL's is 219pt, ACM's 241pt: pass ``width``).
COLUMN_WIDTH_PT = 229.5
#: Gaps and bounds within this of each other are equal (float noise in a mean).
TIE_EPS = 1e-12
#: ``\tabcolsep`` of the LaTeX table, in points (LaTeX's default is 6pt).
_SEP_PT = 3.0
#: LaTeX font sizes tried in order, with the width of a text in each relative to
#: ``\small`` (Computer Modern's smaller design sizes are wider for their size): measured
#: with pdflatex on the table's characters (0.919 and 0.862), rounded up.
_SIZES = (("small", 1.0), ("footnotesize", 0.925), ("scriptsize", 0.87))
#: A ``\textsuperscript`` relative to its text in ``\small`` (measured 0.83, rounded up).
_SUP = 0.85
#: Points kept free of the width (the estimate is an upper bound; this is a safety margin).
_MARGIN_PT = 2.0
#: Short names of the built-in targets for narrow LaTeX columns (others: 4 letters and a dot).
_ABBREV = {"source": "src.", "canonical": "can."}


@dataclass(frozen=True)
class Cell:
    """One system's mean under one (measure, target): ``mean`` (``None`` when partial
    lineage only bounds it by ``[lower, upper]``), ``n`` queries, whether it is ``bold``
    and the letters of the systems it ``beats``."""

    mean: float | None
    lower: float | None
    upper: float | None
    n: int
    bold: bool = False
    beats: str = ""


@dataclass
class ComparisonTable:
    """The comparison table of one dataset (:func:`comparison_table` builds it).

    ``columns`` are the (measure, target) pairs, ``cells`` maps (system, measure, target) to
    a :class:`Cell` (a pair absent: no value). ``open_best`` lists the columns whose best
    system partial lineage leaves open; ``tested`` is ``False`` when the folder has no
    ``system_tests`` (then no superscripts, and the caption says so).

    >>> t = ComparisonTable("demo", "demo", ("A", "B"), (("nDCG@10", "raw"),),
    ...                     {("A", "nDCG@10", "raw"): Cell(0.5, 0.5, 0.5, 8, True, "b"),
    ...                      ("B", "nDCG@10", "raw"): Cell(0.25, 0.25, 0.25, 8)},
    ...                     {"resamples": 10000, "seed": 0, "alpha": 0.05,
    ...                      "correction": "holm"})
    >>> print(t.to_markdown(), end="")  # doctest: +ELLIPSIS
    ### demo: mean nDCG@10 per system and target
    <BLANKLINE>
    Means over ... (n = 8). Bold: the best system in each column ... α = 0.05.
    <BLANKLINE>
    | | system | nDCG@10 raw |
    |---|---|---|
    | a | A | **0.500**<sup>b</sup> |
    | b | B | 0.250 |
    """

    name: str
    dataset: str
    systems: tuple[str, ...]
    columns: tuple[tuple[str, str], ...]
    cells: Mapping[tuple[str, str, str], Cell]
    options: Mapping[str, Any]
    open_best: tuple[tuple[str, str], ...] = ()
    tested: bool = True
    title: str = ""
    digits: int = 3
    #: systems whose pairs each column's correction covers (all the folder tested)
    tested_systems: int = 0

    def __post_init__(self) -> None:
        if not self.title:
            ms = ", ".join(dict.fromkeys(m for m, _ in self.columns))
            self.title = f"{self.dataset}: mean {ms} per system and target"

    @property
    def rows(self) -> list[list[str]]:
        """One row per system: its letter, its name and each column's value as text (no
        bold, no superscripts), as a report counts and lists rows."""
        letters = self.letters
        return [[letters[s], s, *(self.value_text(self.cells.get((s, m, t)))
                                  for m, t in self.columns)] for s in self.systems]

    @property
    def letters(self) -> dict[str, str]:
        """Each system's letter: a, b, ..., z, then aa, ab, ..."""
        return {s: _letter(i) for i, s in enumerate(self.systems)}

    # -- text -----------------------------------------------------------------------------

    def value_text(self, cell: Cell | None, *, latex: bool = False) -> str:
        """The mean (``digits`` decimals) or ``[lower, upper]``; in LaTeX without the
        leading 0 (``.361``), as papers print values in [0, 1]."""
        if cell is None:
            return "–"
        if cell.mean is not None:
            text = f"{cell.mean:.{self.digits}f}"
        else:
            text = numfmt.interval(cell.lower, cell.upper, self.digits, sign=False)
        return re.sub(r"(?<!\d)0\.", ".", text) if latex else text

    def caption(self, *, abbreviations: Mapping[str, str] | None = None,
                legend: Mapping[str, str] | None = None) -> str:
        """What the table shows: n, the test, resamples, seed, correction, alpha, what bold
        and the superscripts mean, intervals, columns whose best is open."""
        o = self.options
        ns = {}
        for m, t in self.columns:
            vals = [c.n for s in self.systems if (c := self.cells.get((s, m, t)))]
            if vals:
                ns.setdefault(t, set()).update(vals)
        every = {n for v in ns.values() for n in v}
        if not every:
            n_text = "no system has a value"
        elif len(every) == 1:
            n_text = f"n = {min(every):,}"
        else:
            n_text = "n = " + ", ".join(
                (f"{min(v):,}" if min(v) == max(v) else f"{min(v):,} to {max(v):,}")
                + f" under {t}" for t, v in ns.items())
        out = [f"Means over the queries each system defines under the target ({n_text})."]
        if legend:
            out.append("Systems: " + ", ".join(f"{k} = {v}" for k, v in legend.items()) + ".")
        out.append("Bold: the best system in each column (ties: each of them).")
        if self.tested:
            corr = {"holm": "Holm-corrected within each column",
                    "bh": "Benjamini-Hochberg-corrected within each column",
                    "none": "with no correction for multiple comparisons"}.get(
                str(o.get("correction")), f"corrected by {o.get('correction')} within each "
                "column")
            resamples = o.get("resamples")
            res = f"{int(resamples):,}" if isinstance(resamples, int | float) else "?"
            out.append(
                "Superscripts: the systems (by letter) a system beats in a "
                f"two-sided paired sign-flip randomization test ({res} resamples, seed "
                f"{o.get('seed')}) on the queries both define under the target, "
                f"{corr}{self._family()}, α = {o.get('alpha')}.")
        else:
            out.append("No superscripts: the sensitivity folder has no system_tests.csv "
                       "(rerun tiap sensitivity to test the pairs).")
        if any(c.mean is None for c in self.cells.values()):
            out.append("[lo, hi]: partial lineage bounds the mean; a pair is decided only "
                       "when every lineage agrees.")
        if self.open_best:
            cols = ", ".join(f"{m} {t}" for m, t in self.open_best)
            out.append(f"No bold in {cols}: intervals leave the best system open.")
        if abbreviations:
            out.append("Targets: " + ", ".join(f"{a} = {t}" for t, a in
                                                abbreviations.items()) + ".")
        return " ".join(out)

    def _family(self) -> str:
        k = self.tested_systems
        if k <= len(self.systems) or self.options.get("correction") == "none":
            return ""
        return f" (over the {k * (k - 1) // 2} pairs of all {k} systems tested)"

    # -- Markdown -------------------------------------------------------------------------

    def to_markdown(self) -> str:
        """A Markdown table under a ``###`` title and the caption; bold as ``**``,
        superscripts as ``<sup>`` (GitHub and pandoc render both)."""
        out = [f"### {md_escape(self.title)}", "", md_escape(self.caption()), ""]
        out.append("| | system | " + " | ".join(md_escape(f"{m} {t}")
                                               for m, t in self.columns) + " |")
        out.append("|" + "|".join("---" for _ in range(len(self.columns) + 2)) + "|")
        letters = self.letters
        for s in self.systems:
            cells = []
            for m, t in self.columns:
                c = self.cells.get((s, m, t))
                text = md_escape(self.value_text(c))
                if c is not None and c.bold:
                    text = f"**{text}**"
                if c is not None and c.beats:
                    text += f"<sup>{c.beats}</sup>"
                cells.append(text)
            out.append(f"| {letters[s]} | {md_escape(s)} | " + " | ".join(cells) + " |")
        return "\n".join(out) + "\n"

    # -- HTML -----------------------------------------------------------------------------

    def to_html(self, *, limit: int | None = None) -> str:
        """A ``<table class="t">`` under its caption, measures over targets in two header
        rows, bold as ``<b>`` and superscripts as ``<sup>``; every text escaped. ``limit``
        is accepted for the report's tables and ignored (a system per row)."""
        e = html.escape
        measures = list(dict.fromkeys(m for m, _ in self.columns))
        # the caption as a paragraph above the table: a <caption> would wrap to the narrow
        # table's width
        out = [f'<div class="cmp"><p class="cap"><b>{e(self.title)}</b> {e(self.caption())}</p>',
               f'<table class="t" id="{e(self.name)}">', "<thead>",
               '<tr><th rowspan="2"></th><th rowspan="2">system</th>'
               + "".join(f'<th colspan="{sum(1 for x, _ in self.columns if x == m)}">'
                         f"{e(m)}</th>" for m in measures) + "</tr>",
               "<tr>" + "".join(f"<th>{e(t)}</th>" for _, t in self.columns) + "</tr>",
               "</thead><tbody>"]
        letters = self.letters
        for s in self.systems:
            cells = []
            for m, t in self.columns:
                c = self.cells.get((s, m, t))
                text = e(self.value_text(c))
                if c is not None and c.bold:
                    text = f"<b>{text}</b>"
                if c is not None and c.beats:
                    text += f"<sup>{e(c.beats)}</sup>"
                cells.append(f"<td>{text}</td>")
            out.append(f"<tr><td>{e(letters[s])}</td><td>{e(s)}</td>" + "".join(cells)
                       + "</tr>")
        out.append("</tbody></table></div>")
        return "\n".join(out)

    # -- LaTeX ----------------------------------------------------------------------------

    def to_latex(self, width: float = COLUMN_WIDTH_PT) -> str:
        """One booktabs ``table`` float, in one piece, that fits ``width`` points (default:
        one column of a two-column paper). The first layout whose measured width fits, in
        this order: a letter column and the system names in ``\\small``, then in
        ``\\footnotesize``; rows named by their letter alone (the names in the caption's
        legend) in ``\\small``, ``\\footnotesize``, ``\\scriptsize``; else that last one
        scaled to the width by ``\\tiapfit`` (needs ``graphicx``; it says so in the LaTeX
        log). Widths come from Computer Modern's metrics as for the report's tables
        (:func:`tiap.report.render.latex_table`), with each size's optical scaling
        measured by pdflatex. ``\\tabcolsep`` is 3pt, with no outer padding (``@{}``);
        measures span their targets (``\\cmidrule``); long target names are abbreviated
        (said in the caption) and an interval may be set on two lines (``[.312,`` over
        ``.458]``) before a smaller size is tried; values print without the leading 0
        (``.361``). Needs ``booktabs``."""
        letters = self.letters
        measures = list(dict.fromkeys(m for m, _ in self.columns))
        values = {(s, m, t): self.value_text(self.cells.get((s, m, t)), latex=True)
                  for s in self.systems for m, t in self.columns}

        def cell_lines(text: str, stack: bool) -> list[str]:  # an interval: on two lines
            if stack and text.startswith("[") and ", " in text:
                lo, hi = text.split(", ", 1)
                return [f"{lo},", hi]
            return [text]

        def content_w(m: str, t: str, stack: bool) -> float:  # the widest cell, \small pt
            ws = [10.0]
            for s in self.systems:
                c = self.cells.get((s, m, t))
                w = max(text_width_pt(x, bool(c and c.bold))
                        for x in cell_lines(values[(s, m, t)], stack))
                if c is not None and c.beats:
                    w += _SUP * text_width_pt(c.beats)
                ws.append(w)
            return max(ws)

        body_w = {(col, stack): content_w(*col, stack) for col in self.columns
                  for stack in (False, True)}
        # long target names may be shortened (every one, when any is)
        shorts = {t: _ABBREV.get(t, f"{t[:4]}." if len(t) > 5 else t) for _, t in self.columns}
        can_short = len(set(shorts.values())) == len(shorts) and shorts != {
            t: t for t in shorts}
        letter_w = max(text_width_pt(x) for x in letters.values())
        name_w = max([text_width_pt(s) for s in self.systems] + [text_width_pt("System")])

        def value_w(short: bool, stack: bool) -> list[float]:
            out = [max(body_w[(c, stack)], text_width_pt(shorts[c[1]] if short else c[1]))
                   for c in self.columns]
            for m in measures:  # a measure wider than its targets widens its last column
                span = [i for i, (x, _) in enumerate(self.columns) if x == m]
                have = sum(out[i] for i in span) + 2 * _SEP_PT * (len(span) - 1)
                out[span[-1]] += max(0.0, text_width_pt(m) - have)
            return out

        def total(named: bool, short: bool, stack: bool, scale: float) -> float:
            cols = [letter_w, *([name_w] if named else []), *value_w(short, stack)]
            return scale * sum(cols) + 2 * _SEP_PT * (len(cols) - 1) + _MARGIN_PT

        bounded = any(c.mean is None for c in self.cells.values())
        layouts = [(named, short, stack, size, scale)
                   for named, sizes in ((True, _SIZES[:2]), (False, _SIZES))
                   for size, scale in sizes for short in (False, True)
                   for stack in (False, True)
                   if (can_short or not short) and (bounded or not stack)]
        named, short, stack, size, scale = next(
            (x for x in layouts if total(x[0], x[1], x[2], x[4]) <= width), layouts[-1])
        abbrev = {t: a for t, a in shorts.items() if a != t} if short else {}
        heads = {col: abbrev.get(col[1], col[1]) for col in self.columns}
        fits = total(named, short, stack, scale) <= width
        spans = []
        first = 3 if named else 2
        for m in measures:
            k = sum(1 for x, _ in self.columns if x == m)
            spans.append((m, first, first + k - 1))
            first += k
        lead = ["", "System"] if named else [""]
        lines = [r"\begin{table}[tp]", r"\centering", f"\\{size}",
                 rf"\setlength{{\tabcolsep}}{{{_SEP_PT:g}pt}}"]
        if not fits:
            lines = [LATEX_PREAMBLE, *lines, rf"\tiapfit{{{_label(self.name)}}}{{%"]
        lines += [r"\begin{tabular}{@{}" + "l" * (len(lead) + len(self.columns)) + "@{}}",
                  r"\toprule",
                  " & ".join([*lead[:-1], "", *(
                      rf"\multicolumn{{{b - a + 1}}}{{c}}{{{tex_escape(m)}}}"
                      for m, a, b in spans)]) + r" \\",
                  "".join(rf"\cmidrule(l{{2pt}}r{{2pt}}){{{a}-{b}}}" for _, a, b in spans),
                  " & ".join([*lead, *(tex_escape(heads[c]) for c in self.columns)])
                  + r" \\", r"\midrule"]
        for s in self.systems:
            cells = [letters[s], tex_escape(s)] if named else [letters[s]]
            for m, t in self.columns:
                c = self.cells.get((s, m, t))
                parts = [tex_escape(x) for x in cell_lines(values[(s, m, t)], stack)]
                if c is not None and c.bold:
                    parts = [rf"\textbf{{{x}}}" for x in parts]
                text = parts[0] if len(parts) == 1 else (
                    r"\begin{tabular}[t]{@{}l@{}}" + r" \\ ".join(parts) + r"\end{tabular}")
                if c is not None and c.beats:
                    text += rf"\textsuperscript{{{c.beats}}}"
                cells.append(text)
            lines.append(" & ".join(cells) + r" \\")
        lines += [r"\bottomrule", r"\end{tabular}" + ("}" if not fits else "")]
        legend = None if named else {letters[s]: s for s in self.systems}
        cap = tex_escape(f"{self.title}. "
                         f"{self.caption(abbreviations=abbrev, legend=legend)}").replace(
            "α", r"$\alpha$")
        lines += [rf"\caption{{{cap}}}",
                  rf"\label{{tab:{_label(self.name)}}}", r"\end{table}"]
        return "\n".join(lines) + "\n"


def _label(name: str) -> str:
    return "".join(c if c.isalnum() or c in ":.-" else "-" for c in name)


def _letter(i: int) -> str:
    """a..z, then aa, ab, ... (bijective base 26)."""
    out = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        out = string.ascii_lowercase[r] + out
    return out


def _source(source: Any) -> tuple[Mapping[str, Any], Mapping[str, Any],
                                  Mapping[str, list[Mapping[str, Any]]], str]:
    """(options, datasets by name, tables by name, where) of a sensitivity folder, a
    loaded :class:`~tiap.report.load.SensitivityDir` or a ``SensitivityResult``."""
    if isinstance(source, str | Path):
        source = load_sensitivity_dirs([source])[0]
    if isinstance(source, SensitivityDir):
        man = source.manifest
        datasets = {d["name"]: d for d in source.datasets}
        return man.get("options") or {}, datasets, source.tables, str(source.path)
    tables = getattr(source, "tables", None)
    info = getattr(source, "info", None)
    if tables is None or info is None:
        raise TiapError(f"comparison_table needs a sensitivity folder or what "
                        f"tiap.analyze returns, got {type(source).__name__}", code="usage")
    datasets = {d["name"]: d for d in info.get("datasets") or []}
    return (source.options, datasets, {k: t.rows for k, t in tables.items()},
            "the analysis in memory")


def _pick(given: Sequence[str] | None, have: Sequence[str], what: str, option: str,
          problems: list[Problem], canon: Any = None) -> list[str]:
    if not given:
        return list(have)
    out = []
    for g in given:
        name = canon(g) if canon is not None else g
        if name not in have:
            problems.append(Problem(f"{option} {g}: no {what} {name!r} (there are: "
                                    f"{', '.join(have)})", code="usage"))
        elif name not in out:
            out.append(name)
    return out


def _canon_measure(text: str) -> str:
    try:
        return str(parse_measure(text))
    except TiapError:
        return text


def comparison_table(
    source: Any,
    *,
    dataset: str | None = None,
    measures: Sequence[str] | None = None,
    targets: Sequence[str] | None = None,
    systems: Sequence[str] | None = None,
    digits: int = 3,
    name: str | None = None,
    title: str | None = None,
) -> ComparisonTable:
    """The comparison table of one dataset of a sensitivity folder (a path, or what
    :func:`tiap.analyze` returns): systems x (measure, target) means, the best per column in
    bold, superscripts for significant wins (module docstring). ``measures`` default to the
    dataset's headline measure, ``targets`` and ``systems`` to all, in the folder's order;
    ``dataset`` may be left out when there is one. A name that is not there is a usage
    error naming what is (every one at once).

    Two systems on 8 queries: A ranks the evidence turn first on each, B second, so under
    Raw A's RR@5 is 1 and B's 0.5 everywhere; the exact sign-flip test gives ``p = 2 / 2^8
    = 0.0078``, one pair per column (Holm leaves it), so A beats B (``b``) under every
    target where they differ:

    >>> import tiap
    >>> qs = [{"query_id": f"q{i}", "evidence": [f"d1:{i}"]} for i in range(8)]
    >>> items = [{"item_id": f"t{i}", "kind": "raw", "sources": [f"d1:{i}"]} for i in range(8)]
    >>> items += [{"item_id": "x", "kind": "raw", "sources": ["d2:1"]}]
    >>> runs = {"A": {f"q{i}": [f"t{i}", "x"] for i in range(8)},
    ...         "B": {f"q{i}": ["x", f"t{i}"] for i in range(8)}}
    >>> scores = tiap.rescore(runs, qs, items, measures="RR@5")
    >>> t = comparison_table(tiap.analyze(scores, resamples=1000), targets=["raw"])
    >>> print(t.to_markdown().splitlines()[-2:])
    ['| a | A | **1.000**<sup>b</sup> |', '| b | B | 0.500 |']
    >>> print(t.to_latex().splitlines()[10])
    a & A & \\textbf{1.000}\\textsuperscript{b} \\\\
    """
    options, datasets, tables, where = _source(source)
    problems: list[Problem] = []
    if dataset is None:
        if len(datasets) != 1:
            raise TiapError(f"{where} holds {len(datasets)} datasets "
                            f"({', '.join(datasets) or 'none'}): name one (--dataset)",
                            code="usage")
        dataset = next(iter(datasets))
    if dataset not in datasets:
        raise TiapError(f"--dataset {dataset}: {where} has no such dataset (there are: "
                        f"{', '.join(datasets)})", code="usage")
    info = datasets[dataset]
    all_measures = [str(m) for m in info.get("measures") or []]
    primary = info.get("primary_measure") or (all_measures[0] if all_measures else "")
    ms = _pick(measures, all_measures, "measure", "--measure", problems, _canon_measure)
    if not measures:
        ms = [primary]
    ts = _pick(targets, [t["name"] for t in info.get("targets") or []], "target",
               "--target", problems)
    ss = _pick(systems, list((info.get("systems") or {}).keys()), "system", "--system",
               problems)
    if problems:
        raise TiapError(problems=problems, code="usage")
    if not 0 <= digits <= 9:
        raise TiapError(f"digits must be from 0 to 9, got {digits}", code="usage")
    means = {(r["system"], r["measure"], r["target"]): r
             for r in tables.get("system_means", []) if r.get("dataset") == dataset}
    tested = "system_tests" in tables
    wins: dict[tuple[str, str, str], list[str]] = {}
    for r in tables.get("system_tests", []):
        if r.get("dataset") != dataset or not truth(r.get("significant")):
            continue
        a, b, w = r["system_a"], r["system_b"], r.get("winner")
        if w in (a, b) and a in ss and b in ss:
            wins.setdefault((w, r["measure"], r["target"]),
                            []).append(b if w == a else a)
    columns = tuple((m, t) for m in ms for t in ts)
    cells: dict[tuple[str, str, str], Cell] = {}
    open_best = []
    for m, t in columns:
        col: dict[str, Cell] = {}
        for s in ss:
            r = means.get((s, m, t))
            lo, hi = (num(r.get("lower")), num(r.get("upper"))) if r else (None, None)
            if r is None or lo is None or hi is None or not num(r.get("n")):
                continue
            col[s] = Cell(num(r.get("mean")), lo, hi, int(num(r.get("n")) or 0))
        best = [s for s, c in col.items()
                if all(c.lower >= o.upper - TIE_EPS  # type: ignore[operator]
                       for x, o in col.items() if x != s)]
        if col and not best:
            open_best.append((m, t))
        order = {s: i for i, s in enumerate(ss)}
        for s, c in col.items():
            beats = "".join(_letter(order[x]) for x in sorted(wins.get((s, m, t), []),
                                                                key=order.__getitem__))
            cells[(s, m, t)] = Cell(c.mean, c.lower, c.upper, c.n, s in best, beats)
    label = str(title) if title else ""
    return ComparisonTable(name or f"{dataset}_comparison", dataset, tuple(ss), columns,
                           cells, dict(options), tuple(open_best), tested, label, digits,
                           len(info.get("systems") or {}))
