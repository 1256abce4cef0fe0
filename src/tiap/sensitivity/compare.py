"""The first comparison of systems: means, differences, tests and winner flips under each
target, for one measure, as one object with a table, a DataFrame and a LaTeX rendering.

:func:`compare` is a view of the winner-flip analysis (:func:`tiap.sensitivity.flips.
winner_flips`, the ``winner_flips`` table of :func:`tiap.sensitivity.analyze`) restricted
to one measure, with each system's mean on the shared subset added. It computes no
statistic of its own: the difference, the adjusted p-value, the effect size and the flip
are the winner-flip table's, so they equal the ``winner_flips`` rows of ``analyze`` for the
measure with the same seed, resamples, alpha and correction.

One row per (dataset, pair of systems, pair of targets, target): each pair of targets is
compared on its *shared subset* (the queries both systems have under both targets), so a
target appears once in each of its pairs, with that pair's subset. Where partial lineage
only bounds some values, a mean or difference is an interval (``mean_a`` empty,
``mean_a_lower`` and ``mean_a_upper`` set) and the effect size is not determined.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tiap import numfmt
from tiap.errors import TiapError, require
from tiap.limits import check
from tiap.scoring.measures import Measure, parse_measure, primary_measure
from tiap.scoring.scores import Scores
from tiap.sensitivity import flips
from tiap.sensitivity.analyze import select_pairs
from tiap.sensitivity.load import load_datasets
from tiap.sensitivity.stats import (
    CORRECTIONS,
    DEFAULT_ALPHA,
    DEFAULT_CORRECTION,
    DEFAULT_RESAMPLES,
)

__all__ = ["COMPARE_COLUMNS", "Comparison", "compare"]

#: The columns of :meth:`Comparison.table`.
COMPARE_COLUMNS = (
    "dataset", "measure", "system_a", "system_b", "target_1", "target_2", "target",
    "n_shared", "mean_a", "mean_a_lower", "mean_a_upper", "mean_b", "mean_b_lower",
    "mean_b_upper", "difference", "difference_lower", "difference_upper", "ci_low",
    "ci_high", "p_adjusted", "effect", "winner", "flip", "significant_flip", "headline",
)

#: The columns of the text and LaTeX renderings: (column, text header, LaTeX header).
_SHOWN = (
    ("dataset", "dataset", "Dataset"),
    ("measure", "measure", "Measure"),
    ("system_a", "A", "A"),
    ("system_b", "B", "B"),
    ("pair", "targets", "Targets"),
    ("target", "target", "Target"),
    ("n_shared", "n", "$n$"),
    ("mean_a", "mean A", "Mean A"),
    ("mean_b", "mean B", "Mean B"),
    ("difference", "A - B", "$A - B$"),
    ("p_adjusted", "p adj.", "$p_{\\mathrm{adj}}$"),
    ("effect", "d_z", "$d_z$"),
    ("winner", "winner", "Winner"),
    ("flip", "flip", "Flip"),
)


@dataclass(frozen=True, eq=False)
class Comparison:
    """What :func:`compare` returns: the rows (:data:`COMPARE_COLUMNS`) and the options
    the tests ran with (seed, resamples, alpha, correction, the measure of each dataset).

    >>> import tiap
    >>> scores = tiap.rescore({"A": {"q1": ["t1"], "q2": ["t2"]}, "B": {"q1": ["m1"], "q2": ["m1"]}},
    ...                       [{"query_id": "q1", "evidence": ["d1:1"]},
    ...                        {"query_id": "q2", "evidence": ["d1:2"]}],
    ...                       [{"item_id": "t1", "kind": "raw", "sources": ["d1:1"]},
    ...                        {"item_id": "t2", "kind": "raw", "sources": ["d1:2"]},
    ...                        {"item_id": "m1", "kind": "fact", "sources": ["d1:1"]}],
    ...                       targets=["raw", "canonical"], measures="Success@1")
    >>> cmp = tiap.compare(scores, resamples=100)
    >>> [(r["target"], r["n_shared"], r["mean_a"], r["mean_b"], r["winner"]) for r in cmp.table()]
    [('raw', 1, 1.0, 0.0, 'A'), ('canonical', 1, 0.0, 1.0, 'B')]

    No memory derives from ``q2``'s evidence, so ``q2`` is undefined under Canonical and
    the pair of targets is compared on ``q1`` alone (``n_shared`` 1), where ``A`` wins
    under Raw and ``B`` under Canonical.
    """

    rows: tuple[dict[str, Any], ...]
    options: Mapping[str, Any]

    def table(self) -> list[dict[str, Any]]:
        """The rows as dicts keyed by :data:`COMPARE_COLUMNS` (copies: editing them leaves
        the comparison as it is).

        >>> import tiap
        >>> scores = tiap.rescore({"A": {"q1": ["t1"]}, "B": {"q1": ["m1"]}},
        ...                       [{"query_id": "q1", "evidence": ["d1:1"]}],
        ...                       [{"item_id": "t1", "kind": "raw", "sources": ["d1:1"]},
        ...                        {"item_id": "m1", "kind": "fact", "sources": ["d1:1"]}],
        ...                       measures="Success@1")
        >>> row = tiap.compare(scores, resamples=100).table()[0]
        >>> row["target_1"], row["target_2"], row["target"], row["difference"], row["flip"]
        ('raw', 'source', 'raw', 1.0, False)
        """
        return [dict(r) for r in self.rows]

    def to_frame(self) -> Any:
        """The rows as a pandas DataFrame (columns :data:`COMPARE_COLUMNS`). Needs pandas
        (the ``frames`` extra).

        >>> import tiap
        >>> scores = tiap.rescore({"A": {"q1": ["t1"]}, "B": {"q1": ["m1"]}},
        ...                       [{"query_id": "q1", "evidence": ["d1:1"]}],
        ...                       [{"item_id": "t1", "kind": "raw", "sources": ["d1:1"]},
        ...                        {"item_id": "m1", "kind": "fact", "sources": ["d1:1"]}],
        ...                       targets=["raw", "canonical"], measures="Success@1")
        >>> frame = tiap.compare(scores, resamples=100).to_frame()
        >>> frame[["target", "mean_a", "mean_b", "winner"]].values.tolist()
        [['raw', 1.0, 0.0, 'A'], ['canonical', 0.0, 1.0, 'B']]
        """

        pd = require("pandas", "frames")
        return pd.DataFrame(list(self.rows), columns=list(COMPARE_COLUMNS))

    def _shown(self) -> list[tuple[str, str, str]]:
        """The rendered columns: dataset and measure only when they vary."""
        skip = {c for c in ("dataset", "measure") if len({r[c] for r in self.rows}) <= 1}
        return [c for c in _SHOWN if c[0] not in skip]

    def _title(self) -> str:
        """What every row shares: the datasets and measures, the correction."""
        pairs = dict.fromkeys((r["dataset"], r["measure"]) for r in self.rows)
        what = "; ".join(f"{d}, {m}" for d, m in pairs) or "no comparison"
        return f"{what}; p adjusted by {self.options['correction']}"

    def to_latex(self) -> str:
        """A booktabs ``tabular`` of the rows (one line per row; needs ``\\usepackage
        {booktabs}``), after a comment line naming the dataset, measure and correction.
        Names are escaped; an interval is ``[lower, upper]``; ``--`` is a value that is not
        determined (or not defined: no shared query).

        >>> import tiap
        >>> scores = tiap.rescore({"A_1": {"q1": ["t1"]}, "B": {"q1": ["m1"]}},
        ...                       [{"query_id": "q1", "evidence": ["d1:1"]}],
        ...                       [{"item_id": "t1", "kind": "raw", "sources": ["d1:1"]},
        ...                        {"item_id": "m1", "kind": "fact", "sources": ["d1:1"]}],
        ...                       targets=["raw", "canonical"], measures="Success@1")
        >>> print(tiap.compare(scores, resamples=100).to_latex())
        % scores, Success@1; p adjusted by holm
        \\begin{tabular}{lllrrrrrrll}
        \\toprule
        A & B & Target & $n$ & Mean A & Mean B & $A - B$ & $p_{\\mathrm{adj}}$ & $d_z$ & Winner & Flip \\\\
        \\midrule
        A\\_1 & B & raw & 1 & 1.0000 & 0.0000 & $+1.0000$ & 1.0000 & -- & A\\_1 & yes \\\\
        A\\_1 & B & canonical & 1 & 0.0000 & 1.0000 & $-1.0000$ & 1.0000 & -- & B & yes \\\\
        \\bottomrule
        \\end{tabular}
        """
        cols = [c for c in self._shown() if c[0] != "pair" or self._pairs() > 1]
        align = "".join("r" if c[0] in _NUMERIC else "l" for c in cols)
        lines = [f"% {_latex(self._title())}", f"\\begin{{tabular}}{{{align}}}", "\\toprule",
                 " & ".join(c[2] for c in cols) + " \\\\", "\\midrule"]
        for r in self.rows:
            cells = [_cell(r, c[0], latex=True) for c in cols]
            lines.append(" & ".join(cells) + " \\\\")
        lines += ["\\bottomrule", "\\end{tabular}"]
        return "\n".join(lines)

    def _pairs(self) -> int:
        return len({(r["target_1"], r["target_2"]) for r in self.rows})

    def __str__(self) -> str:
        cols = [c for c in self._shown() if c[0] != "pair" or self._pairs() > 1]
        grid = [[c[1] for c in cols]] + [[_cell(r, c[0]) for c in cols] for r in self.rows]
        widths = [max(len(line[i]) for line in grid) for i in range(len(cols))]
        out = [self._title()]
        for line in grid:
            out.append("  ".join(cell.rjust(w) if c[0] in _NUMERIC else cell.ljust(w)
                                 for cell, w, c in zip(line, widths, cols, strict=True))
                       .rstrip())
        return "\n".join(out)


_NUMERIC = {"n_shared", "mean_a", "mean_b", "difference", "p_adjusted", "effect"}
_LATEX_SPECIAL = {"\\": "\\textbackslash{}", "&": "\\&", "%": "\\%", "$": "\\$", "#": "\\#",
                  "_": "\\_", "{": "\\{", "}": "\\}", "~": "\\textasciitilde{}",
                  "^": "\\textasciicircum{}"}


def _latex(text: str) -> str:
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text)


def _cell(row: Mapping[str, Any], col: str, *, latex: bool = False) -> str:
    """One rendered cell (:mod:`tiap.numfmt`'s rule; ``--`` where there is no value)."""
    missing = "--" if latex else "-"
    if col == "pair":
        text = f"{row['target_1']} vs {row['target_2']}"
    elif col in ("mean_a", "mean_b", "difference"):
        sign = col == "difference"
        if row[col] is not None:
            text = numfmt.signed(row[col], 4, missing) if sign else numfmt.plain(
                row[col], 4, missing)
        else:
            text = numfmt.interval(row[f"{col}_lower"], row[f"{col}_upper"], 4, sign=sign,
                                   missing=missing)
        if latex and sign and text != missing:
            return f"${text}$"
        return text
    elif col == "p_adjusted":
        text = numfmt.plain(row[col], 4, missing)
    elif col == "effect":
        text = numfmt.signed(row[col], 2, missing)
        if latex and text != missing:
            return f"${text}$"
        return text
    elif col == "flip":
        text = ("headline" if row["headline"] else "significant" if row["significant_flip"]
                else "yes" if row["flip"] else "no")
    elif col == "n_shared":
        text = str(row[col])
    else:
        text = str(row[col] if row[col] is not None else missing)
    return _latex(text) if latex else text


def _mean(x: np.ndarray) -> float | None:  # type: ignore[type-arg]
    return float(x.mean()) if x.size else None


def compare(
    scores: Any,
    *,
    measure: str | Measure | None = None,
    seed: int = 0,
    resamples: int = DEFAULT_RESAMPLES,
    alpha: float = DEFAULT_ALPHA,
    correction: str = DEFAULT_CORRECTION,
    min_effect: float = 0.0,
    min_dz: float = flips.DEFAULT_MIN_DZ,
    pairs: Sequence[str] = (),
) -> Comparison:
    """Each pair of systems under each target, for one measure: each system's mean, the
    difference, the paired sign-flip test's p-value after correction, the effect size
    (paired Cohen's ``d_z``) and whether the winner flips between the targets (the module
    docstring).

    ``scores`` is what :func:`tiap.analyze` takes: a :class:`~tiap.scoring.scores.Scores`,
    a rescore folder, or a list of these, in which ``(NAME, scores)`` names a dataset. ``measure`` defaults to the
    primary measure of :func:`tiap.analyze` (nDCG at its largest cutoff, else the first);
    the other options are :func:`tiap.analyze`'s, and give the same numbers as its
    ``winner_flips`` table (the family of a p-value is every gap of the measure in the
    dataset). Seeded: the same inputs and seed give the same result.

    >>> import tiap
    >>> scores = tiap.rescore({"turns": {"q1": ["t1", "m1"], "q2": ["t2", "m1"]},
    ...                        "memories": {"q1": ["m1", "t1"], "q2": ["m1", "t2"]}},
    ...                       [{"query_id": "q1", "evidence": ["d1:1"]},
    ...                        {"query_id": "q2", "evidence": ["d1:2"]}],
    ...                       [{"item_id": "t1", "kind": "raw", "sources": ["d1:1"]},
    ...                        {"item_id": "t2", "kind": "raw", "sources": ["d1:2"]},
    ...                        {"item_id": "m1", "kind": "fact", "sources": ["d1:1", "d1:2"]}],
    ...                       targets=["raw", "canonical"], measures="RR@10")
    >>> print(tiap.compare(scores, resamples=100))
    scores, RR@10; p adjusted by holm
    A      B         target     n  mean A  mean B    A - B  p adj.  d_z  winner    flip
    turns  memories  raw        2  1.0000  0.5000  +0.5000  1.0000    -  turns     yes
    turns  memories  canonical  2  0.5000  1.0000  -0.5000  1.0000    -  memories  yes

    (The differences are equal on both queries, so ``d_z`` is not finite and is shown as
    ``-``; two queries are too few for any test to be significant.)
    """
    if correction not in CORRECTIONS:
        raise TiapError(f"correction must be one of {', '.join(CORRECTIONS)}, got "
                        f"{correction!r}", code="invalid-value")

    check("min_effect", min_effect, "min_effect")
    check("min_dz", min_dz, "min_dz")
    check("seed", seed, "seed")
    specs = [scores] if isinstance(scores, str | Path | Scores) else list(scores)
    datasets = [select_pairs(ds, pairs) for ds in load_datasets(specs)]
    rows: list[dict[str, Any]] = []
    measures: dict[str, str] = {}
    for ds in datasets:
        pm = parse_measure(measure) if measure is not None else primary_measure(ds.measures)
        if pm not in ds.measures:
            raise TiapError(f"measure {pm} is not among the measures of {ds.name} (it has "
                            f"{', '.join(map(str, ds.measures))})", code="invalid-value")
        measures[ds.name] = str(pm)
        # the winner-flip table of every measure (the shared subsets are analyze's: queries
        # in the universe of every measure), of which this measure's rows are kept
        for f in flips.winner_flips(ds, seed=seed, resamples=resamples, alpha=alpha,
                                    correction=correction, min_effect=min_effect,
                                    min_dz=min_dz):
            if f["measure"] != str(pm):
                continue
            a, b = f["system_a"], f["system_b"]
            shared = ds.shared((a, b), (f["target_1"], f["target_2"]), bounded=True)
            for i, t in ((1, f["target_1"]), (2, f["target_2"])):
                row: dict[str, Any] = {k: f[k] for k in (
                    "dataset", "measure", "system_a", "system_b", "target_1", "target_2")}
                row["target"] = t
                row["n_shared"] = f["n_shared"]
                for side, s in (("a", a), ("b", b)):
                    lo, hi = ds.systems[s].interval(t, pm)
                    lo_m, hi_m = _mean(lo[shared]), _mean(hi[shared])
                    row[f"mean_{side}"] = lo_m if lo_m == hi_m else None
                    row[f"mean_{side}_lower"], row[f"mean_{side}_upper"] = lo_m, hi_m
                row["difference"] = f[f"gap_{i}"]
                row["difference_lower"] = f[f"gap_{i}_lower"]
                row["difference_upper"] = f[f"gap_{i}_upper"]
                row["ci_low"], row["ci_high"] = f[f"ci_{i}_low"], f[f"ci_{i}_high"]
                row["p_adjusted"] = f[f"p_{i}_adjusted"]
                row["effect"] = f[f"effect_{i}"]
                row["winner"] = f[f"winner_{i}"]
                for k in ("flip", "significant_flip", "headline"):
                    row[k] = f[k]
                rows.append(row)
    options = {"seed": seed, "resamples": resamples, "alpha": alpha, "correction": correction,
               "min_effect": min_effect, "min_dz": min_dz, "pairs": list(pairs),
               "measure": measures}
    return Comparison(tuple(rows), options)
