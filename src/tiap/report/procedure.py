"""How the report states Stage III's statistical procedure, from the sensitivity manifest.

One source for the report's introduction, its table notes and the target card's statistics
block, so that they say the same thing: every gap is decided by the paired sign-flip test,
its p-value adjusted within a family (``options.correction``), its interval the test's
inversion at the gap's effective level, and a flip is a *headline* only when it is
significant and both gaps clear the practical threshold, ``|d_z| >= options.min_dz`` and
``|gap| >= options.min_effect`` (:mod:`tiap.sensitivity.stats`,
:mod:`tiap.sensitivity.flips`); :func:`threshold_text` states it, and says so when none was
set.

Folders written before that procedure (no ``correction`` in the manifest's options) used
paired bootstrap percentile intervals and uncorrected sign-flip p-values; they are described
as such (:func:`is_legacy`), never as the new procedure.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tiap.numfmt import interval, signed
from tiap.provenance import read_manifest
from tiap.report.load import num, truth
from tiap.report.render import p_cell
from tiap.scoring import parse_measure, primary_measure
from tiap.sensitivity.flips import UNDETERMINED, flip_undetermined, gap_text

__all__ = ["CORRECTION_NAMES", "DZ_REASON", "after_correction", "correction_name", "effect_pair",
           "flip_status", "intro_text", "is_legacy", "level_text", "number", "statistics",
           "threshold_text"]

#: ``--correction`` value -> (short name, what it controls)
CORRECTION_NAMES = {
    "holm": ("Holm", "Holm (1979) step-down adjustment, controlling the family-wise error rate"),
    "bh": ("Benjamini-Hochberg", "Benjamini-Hochberg (1995) adjustment, controlling the false "
           "discovery rate"),
    "none": ("no correction", "each gap is tested at alpha alone"),
}
FAMILY = ("every gap of one table in one dataset and measure (winner flips: every pair of "
          "systems and pair of targets; per category: every category's gaps under one measure "
          "together; design: every pair of configurations and target of one group)")
INTERVAL = ("the inversion of the same sign-flip test (every shift of the gap the test does "
            "not reject) at the gap's effective level alpha · p / p_adjusted, so that it "
            "excludes 0 exactly when the adjusted p-value is at most alpha; an empty end is "
            "unbounded (too few queries to reject any shift on that side)")
EFFECT = ("effect: paired Cohen's d_z = mean / sd of the per-query differences; moved: share of "
          "the shared queries whose difference is not 0; mde: the gap the shared subset detects "
          "with 80% power in one test at alpha (a correction only raises it)")


def is_legacy(opts: Mapping[str, Any]) -> bool:
    """A folder of the older procedure (bootstrap intervals, no correction, no min effect)."""
    return "correction" not in opts


def number(x: Any) -> str:
    """An option value as short text: ``0.05``, ``0``, ``10000`` (``–`` when missing)."""
    v = num(x)
    return "–" if v is None else f"{v:g}"


def threshold_text(opts: Mapping[str, Any]) -> str:
    """The practical threshold a headline flip needs, from a folder's options: ``|d_z| ≥ 0.2
    on both gaps``, with ``and |gap| ≥ 0.01 in the measure's units`` when ``min_effect`` is
    set, or ``none (every significant flip is a headline)`` when neither is (a folder
    written before ``min_dz`` existed has none)."""
    dz, me = num(opts.get("min_dz")) or 0.0, num(opts.get("min_effect")) or 0.0
    parts = ([f"|d_z| ≥ {dz:g}"] if dz > 0 else []) + (
        [f"|gap| ≥ {me:g} in the measure's units"] if me > 0 else [])
    if not parts:
        return "none (every significant flip is a headline)"
    return " and ".join(parts) + " on both gaps"


#: What a d_z threshold means (said wherever the threshold is stated in full; the default,
#: 0.2, is Cohen's "small": docs/sensitivity.md says why).
DZ_REASON = ("d_z = mean / sd of the per-query differences; Cohen (1988) calls 0.2 a small "
             "effect and 0.5 a medium one")


def level_text(opts: Mapping[str, Any]) -> str:
    """The confidence level of a single interval at the nominal alpha, ``95%``."""
    a = num(opts.get("alpha"))
    return "95%" if a is None else f"{100 * (1 - a):g}%"


def correction_name(opts: Mapping[str, Any]) -> str:
    """``Holm`` / ``Benjamini-Hochberg`` / ``no correction`` (the option itself if unknown)."""
    c = str(opts.get("correction"))
    return CORRECTION_NAMES.get(c, (c,))[0]


def after_correction(opts: Mapping[str, Any]) -> str:
    """``after Holm`` / ``after Benjamini-Hochberg`` / ``with no correction``."""
    if opts.get("correction") == "none":
        return "with no correction"
    return f"after {correction_name(opts)}"


def statistics(opts: Mapping[str, Any]) -> dict[str, Any]:
    """The target card's statistics block (JSON)."""
    base = {"seed": opts.get("seed"), "resamples": opts.get("resamples"),
            "alpha": opts.get("alpha")}
    flip = "sign change of the mean gap (A - B) on the shared subset"
    if is_legacy(opts):
        return {**base, "procedure": "legacy",
                "test": "paired sign-flip randomization, two-sided (p-values only)",
                "correction": None, "correction_method": "no multiplicity correction",
                "min_effect": None,
                "min_dz": None,
                "threshold": None,
                "interval": "paired bootstrap, percentile (written by an older tiap "
                            "sensitivity)",
                "winner_flip": flip,
                "significant_flip": "both bootstrap intervals exclude 0 with opposite signs "
                                    "(no multiplicity correction)",
                "headline": None}
    corr = str(opts.get("correction"))
    return {**base, "procedure": "sign-flip test, family-wise adjusted, inverted interval",
            "test": opts.get("test") or "paired sign-flip randomization, two-sided",
            "correction": corr,
            "correction_method": CORRECTION_NAMES.get(corr, (corr, corr))[1],
            "family": FAMILY,
            "min_effect": opts.get("min_effect"),
            "min_dz": opts.get("min_dz"),
            "threshold": threshold_text(opts),
            "interval": INTERVAL,
            "winner_flip": flip,
            "significant_flip": "both gaps are significant after correction (adjusted p-value "
                                "at most alpha, so both intervals exclude 0), with opposite "
                                "signs",
            "practical": "both gaps clear the practical threshold in the direction of the "
                         "flip: |d_z| at least min_dz and |gap| at least min_effect (in the "
                         "measure's units); under partial lineage, for every lineage",
            "headline": "the flip is significant and practical; a flip below the practical "
                        "threshold is reported, never headlined",
            "effect_size": EFFECT}


def intro_text(opts: Mapping[str, Any]) -> str:
    """The report's sentences on the procedure (plain text, to be escaped)."""
    res, seed, alpha = opts.get("resamples"), opts.get("seed"), number(opts.get("alpha"))
    if is_legacy(opts):
        return (f"Statistics (a folder written by an older tiap sensitivity): paired bootstrap "
                f"percentile intervals, {res} resamples, seed {seed}; p-values: paired "
                "sign-flip randomization test, with no multiplicity correction. A winner flip "
                "is a sign change of the mean gap; it is significant when both intervals "
                "exclude 0 on opposite sides.")
    corr = str(opts.get("correction"))
    if corr == "none":
        adj = (f"Correction: none (each gap is tested at alpha {alpha} alone; 'p adj' is the "
               "raw p-value)")
    else:
        name, what = CORRECTION_NAMES.get(corr, (corr, corr))
        adj = (f"Correction: {name} over each family at alpha {alpha} ({what}; a family is "
               "every gap of one table in one dataset and measure; the per-category table's "
               "families span all categories)")
    threshold = threshold_text(opts)
    minimum = (f"and a headline when both gaps also clear the practical threshold, "
               f"{threshold}; flips below it are reported, never headlined")
    if (num(opts.get("min_dz")) or 0.0) > 0:
        minimum += f" ({DZ_REASON})"
    level = (f"at alpha {alpha} (a {level_text(opts)} interval, nothing being adjusted)"
             if corr == "none" else f"at the gap's effective level alpha · p / p adj (so not "
             f"necessarily {level_text(opts)})")
    return (f"Statistics: every gap (A minus B on a shared subset) is decided by one paired "
            f"sign-flip (randomization) test, two-sided, with {res} resamples and seed {seed}. "
            f"{adj}. Each interval is the same test inverted {level}: it excludes 0 exactly "
            f"when the adjusted p-value is at most {alpha}; an open end (∞) means too few "
            "queries to reject any shift on that side. A winner flip is a sign change of the "
            "mean gap; it is significant when both gaps are significant "
            f"{after_correction(opts)}, {minimum}. Effect sizes: d_z = mean / sd of the "
            "per-query differences; MDE = the gap detectable with 80% power in one test at "
            f"alpha {alpha}.")


def flip_status(r: Mapping[str, Any]) -> str:
    """``no`` / ``not determined`` / ``yes (not significant)`` / ``significant, below
    threshold`` / ``headline`` for a flip row (as read from CSV or as in the card);
    ``significant`` for older folders that have no headline column. ``not determined``: a
    flip under some lineage partial lineage allows, not under every one."""
    if not truth(r.get("flip")):
        # partial lineage: a flip under some lineage, not under every one
        return UNDETERMINED if flip_undetermined(r) else "no"
    sig = truth(r.get("significant_flip"))
    if r.get("headline") in (None, ""):
        return "significant" if sig else "yes (not significant)"
    if truth(r.get("headline")):
        return "headline"
    return "significant, below threshold" if sig else "yes (not significant)"


def _dz(x: Any) -> str:
    return signed(x, 2)


def effect_pair(r: Mapping[str, Any]) -> str:
    """``+0.53 / -0.10``: the two gaps' d_z (``–`` where missing)."""
    return f"{_dz(r.get('effect_1'))} / {_dz(r.get('effect_2'))}"


def procedure_text(opts: Mapping[str, Any]) -> dict[str, str]:
    """How a sensitivity folder's winner flips were tested, in words, from its options (as
    ``analyze`` returns them or its manifest holds them): ``threshold``, the practical
    threshold a headline flip needs (:func:`threshold_text`), and ``after_correction``.

        >>> procedure_text({"correction": "holm", "min_dz": 0.2, "min_effect": 0})
        {'threshold': '|d_z| ≥ 0.2 on both gaps', 'after_correction': 'after Holm'}
    """
    return {"threshold": threshold_text(opts), "after_correction": after_correction(opts)}


def flip_cells(row: Mapping[str, Any], resamples: object) -> dict[str, str]:
    """The text of one winner flip (a row of ``winner_flips``, as ``analyze`` returns it or
    as read back from ``winner_flips.csv``), as a table prints it: ``gap_1``, ``gap_2`` (a
    value, or ``[lower, upper]`` where partial lineage only bounds it), ``ci_1``, ``ci_2``
    (each gap's interval, without its brackets: open where too few queries bound a side),
    ``p_1``, ``p_2`` (the adjusted p-values, ``≤ x`` where the raw one is the floor
    ``1 / (resamples + 1)``) and ``effect`` (the two gaps' d_z).

    A gap of +0.05 that turns into -0.02, each with its interval; the first p-value is the
    floor of 999 resamples (raw 0.001)::

        >>> row = {"gap_1": 0.05, "gap_2": -0.02, "ci_1_low": 0.031, "ci_1_high": 0.069,
        ...        "ci_2_low": -0.04, "ci_2_high": None, "p_1": 0.001, "p_1_adjusted": 0.002,
        ...        "p_2": 0.02, "p_2_adjusted": 0.02, "effect_1": 0.53, "effect_2": -0.1}
        >>> cells = flip_cells(row, 999)
        >>> cells["gap_1"], cells["gap_2"], cells["ci_1"], cells["ci_2"]
        ('+0.0500', '-0.0200', '+0.031, +0.069', '-0.040, +∞')
        >>> cells["p_1"], cells["p_2"], cells["effect"]
        ('≤ 0.0020', '0.0200', '+0.53 / -0.10')
    """

    cells = {}
    for i in (1, 2):
        cells[f"gap_{i}"] = gap_text(row, i)
        cells[f"ci_{i}"] = interval(row.get(f"ci_{i}_low"), row.get(f"ci_{i}_high"),
                                    open_ends=True, missing="-")[1:-1]
        cells[f"p_{i}"] = p_cell(row, f"p_{i}_adjusted", resamples).replace("\u00a0", " ")
    cells["effect"] = effect_pair(row)
    return cells


@dataclass(frozen=True)
class FlipSummary:
    """The winner flips of a sensitivity folder on its headline measure, as ``tiap
    audit-run`` prints them (:func:`flip_summary`).

    ``total``: flips over all measures; ``headline``: the measure shown
    (:func:`flip_headline`; ``None`` without flips); ``rows``: its flips as read from
    ``winner_flips.csv``, each with its ``cells`` (:func:`flip_cells`) and ``verdicts``
    (``yes``, ``below threshold``, ``not significant``); ``significant`` and
    ``headlines``: how many are significant, and headline flips; ``threshold`` and
    ``after_correction``: :func:`procedure_text`; ``resamples``: of the tests;
    ``undetermined``: the pairs over all measures whose flip partial lineage leaves open
    (:func:`tiap.sensitivity.flips.flip_undetermined`), never counted as flips;
    ``primary``: the primary measure(s) of the folder's datasets, and ``primary_flips``
    the flips on them (the measure shown is another one when that is 0).

    Example:
        >>> FlipSummary(Path("winner_flips.csv"), 0, None, (), (), (), 0, 0, "", "", None).total
        0
    """

    path: Path
    total: int
    headline: str | None
    rows: tuple[dict[str, str], ...]
    cells: tuple[dict[str, str], ...]
    verdicts: tuple[str, ...]
    significant: int
    headlines: int
    threshold: str
    after_correction: str
    resamples: Any
    undetermined: int = 0
    primary: tuple[str, ...] = ()
    primary_flips: int = 0


def flip_summary(sensitivity_dir: str | Path) -> FlipSummary | None:
    """The winner flips of ``sensitivity_dir`` on the headline measure, with how they were
    tested (its manifest's options, read by :func:`tiap.provenance.read_manifest`); ``None``
    when the folder has no ``winner_flips.csv``.

    Example:
        >>> import csv, json, tempfile
        >>> from pathlib import Path
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     with open(Path(tmp) / "winner_flips.csv", "w", newline="") as fh:
        ...         w = csv.DictWriter(fh, ["measure", "flip"])
        ...         _ = w.writeheader(), w.writerow({"measure": "nDCG@10", "flip": "false"})
        ...     s = flip_summary(tmp)
        >>> s.total, s.headline, s.rows
        (0, None, ())
    """

    sdir = Path(sensitivity_dir)
    path = sdir / "winner_flips.csv"
    if not path.exists():
        return None
    with open(path, newline="", encoding="utf-8") as fh:
        every = list(csv.DictReader(fh))
    flips = [r for r in every if r["flip"] == "true"]
    # partial lineage: a flip under some lineage, not under every one
    open_ = sum(1 for r in every if r["flip"] != "true" and flip_undetermined(r))
    if not flips:
        return FlipSummary(path, 0, None, (), (), (), 0, 0, "", "", None, open_)
    opts = read_manifest(sdir, step="sensitivity")["options"]
    resamples = opts.get("resamples")
    given = opts.get("primary") or {}
    primary = tuple(sorted(set(given.values() if isinstance(given, dict) else [given])))
    norm = {str(parse_measure(m)) for m in primary}
    on_primary = sum(1 for r in flips if str(parse_measure(r["measure"])) in norm)
    headline = flip_headline([r["measure"] for r in flips])
    rows = tuple(r for r in flips if r["measure"] == headline)
    how = procedure_text(opts)
    return FlipSummary(
        path, len(flips), headline, rows, tuple(flip_cells(r, resamples) for r in rows),
        tuple(_verdict(r) for r in rows),
        sum(r.get("significant_flip") == "true" for r in rows),
        sum(r.get("headline") == "true" for r in rows),
        how["threshold"], how["after_correction"], resamples, open_, primary, on_primary)


def flip_headline(measures: Sequence[str]) -> str:
    """The measure whose flips are printed: the headline measure (nDCG at its largest
    rank cutoff, :func:`tiap.scoring.primary_measure`) among the flipped ones, as
    written in winner_flips.csv. A token budget (``nDCG@tok500``) is a measure like any
    other, never read as a rank cutoff.

        >>> flip_headline(["nDCG@tok500", "nDCG@5", "ndcg@10"])
        'ndcg@10'
    """

    written = {str(parse_measure(m)): m for m in reversed(measures)}  # first spelling wins
    return written[str(primary_measure(list(dict.fromkeys(measures))))]


def _verdict(r: Mapping[str, str]) -> str:
    if r.get("headline") == "true":
        return "yes"
    if r.get("significant_flip") == "true":
        return "below threshold"
    return "not significant"
