"""The report's LaTeX tables laid out by TIAP, checked against what pdflatex really sets: the
width estimates against the widths TeX measures, and wide and long tables compiled in a
one-column and a two-column article with nothing overfull, scaled or taller than a page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tiap.report.render import (
    LATEX_PENDING_FLOATS,
    ReportTable,
    _width_pt,
    latex_table,
    latex_tables,
    tex_escape,
)

#: cells of the kinds the report writes, and some it may meet in dialogue text
SAMPLES = [
    "f1-bm25 vs native-bm25", "raw → canonical", "+0.0484 [+0.031, +0.066]", "≤ 0.0036",
    "nDCG@60", "82.6% [81.1, 84.0]", "What did Caroline research?", "Δ ≥ 0.1, R² = 0.93",
    "MDE 1 / 2", "yes (not significant)", "conv-26:D1:3", "Zoë's café, naïve résumé",
    "WWW MMM", "a_b & c % d # e $ f", "{x} ~ ^ | < >", "-0.0104 / +4.0e-07", "τ = 0.71 · 3 × 2",
]


def test_widths_bound_what_pdflatex_sets(compile_tex, tmp_path: Path) -> None:
    """The width TIAP computes for a cell is at least the width pdflatex gives it in
    ``\\small`` Computer Modern (upright and bold), and within 3% + 0.5pt of it (kerning
    and ligatures only narrow a string)."""
    body = ["\\small"]
    for i, s in enumerate(SAMPLES):
        for bold in (False, True):
            cell = tex_escape(s)
            if bold:
                cell = f"\\textbf{{{cell}}}"
            body.append(f"\\sbox\\testbox{{{cell}}}\\typeout{{W {i} {int(bold)} "
                        "\\the\\wd\\testbox}")
    log = compile_tex("\n".join([*body, "x"]), tmp_path)
    seen = {(int(m[1]), int(m[2])): float(m[3])
            for m in re.finditer(r"^W (\d+) (\d) ([\d.]+)pt", log, re.MULTILINE)}
    assert len(seen) == 2 * len(SAMPLES)
    for (i, bold), tex_w in seen.items():
        est = _width_pt(SAMPLES[i], bool(bold))
        assert tex_w - 0.01 <= est <= tex_w * 1.03 + 0.5, (SAMPLES[i], bold, est, tex_w)


def _wide_long_table() -> ReportTable:
    """13 columns (a key of two), 70 rows, a column of prose, some rows highlighted."""
    cols = ["A vs B", "targets", "n shared", "gap 1", "CI 1", "p adj 1", "gap 2", "CI 2",
            "p adj 2", "d_z 1 / 2", "MDE 1 / 2", "winner 1 → 2", "question"]
    t = ReportTable("wide_long", "A wide, long table", cols, caption="Caption text.", key=2)
    for i in range(70):
        t.add([f"system-{i % 7}-bm25 vs native-{i}", "source → canonical", 1876 + i,
               f"{-0.01 * i:+.4f}", "[-0.161, -0.114]", "≤ 0.0036", "+0.0006",
               "[+0.000003, +0.001147]", "1.0000", "+0.15 / -0.44", "0.0125 / 0.0165",
               f"f1-bm25 → native-{i}",
               "When did Melanie paint a sunrise over the lake near her home town, and why?"
               * (1 + i % 2)], mark=i % 5 == 0)
    return t


@pytest.mark.parametrize(("options", "width"), [("", 345.0), ("twocolumn", 229.5)])
def test_wide_long_table_fits_the_column(compile_tex, tmp_path: Path, options: str,
                                         width: float) -> None:
    """Split into parts that repeat the key, rows continued over floats: it compiles at the
    text width of a one-column article (345pt) and of a two-column one's column (229.5pt)
    with nothing overfull, scaled or lost off the page, and no cell is dropped."""
    t = _wide_long_table()
    tex = latex_table(t, width)
    parts = int(re.search(r"In (\d+) parts, each repeating A vs B, targets\.", tex)[1])
    assert parts >= 3
    flat = re.sub(r"\\textbf\{|\\begin\{tabular\}\[[tb]\]\{@\{\}l@\{\}\}|\\end\{tabular\}|"
                  r" \\\\ ", " ", tex)
    for row in t.rows:  # every cell is there, its words in order (wrapped lines rejoined)
        for c in row:
            assert re.search(r"\W+".join(map(re.escape, tex_escape(c).split())), flat), c
    assert tex.count(r"\begin{table}") > parts  # 70 rows do not fit one float per part
    compile_tex(tex, tmp_path, options=options)


def test_all_tables_in_one_file_flush_floats(compile_tex, tmp_path: Path) -> None:
    """tables.tex holds every table with no text between them: LaTeX would stop at 18
    unplaced floats, so a \\clearpage comes before any table that would pass
    LATEX_PENDING_FLOATS of them."""
    tables = []
    for k in range(30):
        t = ReportTable(f"t{k}", f"Table {k}", ["system", "nDCG@60"])
        t.add([f"f{k}-bm25", "0.5140"])
        tables.append(t)
    tex = latex_tables(tables)
    assert tex.count("\\clearpage") == 30 // LATEX_PENDING_FLOATS
    compile_tex(tex, tmp_path)


def test_latex_width_out_of_range_is_a_usage_error(tmp_path: Path) -> None:
    from tiap.cli.main import main

    assert main(["report", str(tmp_path), "--out", str(tmp_path / "r"),
                 "--latex-width", "20"]) == 2
