"""Stage III end to end: every sensitivity table from rescore folders.

:func:`analyze` reads the folders (:func:`tiap.sensitivity.load.load_datasets`) and computes,
per dataset: per-query change between targets (with Figure 3's Δ data), system means,
winner flips with bootstrap intervals and sign-flip p-values, the same by category,
design recommendations for configuration groups, cardinality, depth, aggregation and
agreement filtering, and (when the items, runs and queries can be read) answer-level
alignment. :func:`write_sensitivity` writes the tables as CSV and a manifest.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from tiap.errors import Problem, TiapError
from tiap.io import output_folder, sha256_file
from tiap.limits import check
from tiap.provenance import Manifest, input_entry
from tiap.scoring.cost import COST_COLUMNS
from tiap.scoring.measures import Measure, parse_measure
from tiap.scoring.scores import Scores
from tiap.sensitivity import (
    aggregation,
    cardinality,
    change,
    depth,
    design,
    flips,
    stability,
)
from tiap.sensitivity import answers as ans
from tiap.sensitivity.load import Dataset, load_datasets
from tiap.sensitivity.stats import (
    CORRECTIONS,
    DEFAULT_ALPHA,
    DEFAULT_CORRECTION,
    DEFAULT_RESAMPLES,
)

__all__ = ["SensitivityResult", "Table", "analyze", "write_sensitivity"]



@dataclass(frozen=True)
class Table:
    """One output table: its file name, columns and rows (dicts keyed by column).

    System A ranks the turn ``t1`` first, B the fact ``m1`` derived from it; under Raw only
    the turn is credited, under Canonical only the fact:

    >>> import tiap
    >>> scores = tiap.rescore({"A": {"q1": ["t1", "m1"]}, "B": {"q1": ["m1", "t1"]}},
    ...                       [{"query_id": "q1", "evidence": ["d1:1"]}],
    ...                       [{"item_id": "t1", "kind": "raw", "sources": ["d1:1"]},
    ...                        {"item_id": "m1", "kind": "fact", "sources": ["d1:1"]}],
    ...                       measures="RR@5")
    >>> result = tiap.analyze(scores, resamples=100)
    >>> means = result.tables["system_means"]
    >>> means.name, means.columns[:7]
    ('system_means', ('dataset', 'system', 'target', 'measure', 'n', 'n_exact', 'mean'))
    >>> [(r["system"], r["target"], r["mean"]) for r in means.rows if r["target"] != "source"]
    [('A', 'raw', 1.0), ('A', 'canonical', 0.5), ('B', 'raw', 0.5), ('B', 'canonical', 1.0)]
    """

    name: str
    columns: tuple[str, ...]
    rows: list[dict[str, Any]]


@dataclass(frozen=True, eq=False)
class SensitivityResult:
    """What :func:`analyze` computed: every table by name, the options it ran with, and
    notes (a family too large for the resamples to resolve, a step skipped and why).

    Attributes:
        datasets: the datasets analysed (rescore folders of one queries file pooled).
        tables: table name -> :class:`Table` (``winner_flips``, ``system_means``, ...).
        options: seed, resamples, alpha, correction, thresholds and the other options.
        notes: one sentence per thing the reader should know.
        info: per-dataset details written to the manifest.

    System A ranks the turn ``t1`` first, B the fact ``m1`` derived from it, so A wins
    under Raw (RR 1 against 0.5) and B under Canonical:

    >>> import tiap
    >>> scores = tiap.rescore({"A": {"q1": ["t1", "m1"]}, "B": {"q1": ["m1", "t1"]}},
    ...                       [{"query_id": "q1", "evidence": ["d1:1"]}],
    ...                       [{"item_id": "t1", "kind": "raw", "sources": ["d1:1"]},
    ...                        {"item_id": "m1", "kind": "fact", "sources": ["d1:1"]}],
    ...                       measures="RR@5")
    >>> result = tiap.analyze(scores, resamples=100)
    >>> for r in result.table("winner_flips"):
    ...     print(r["target_1"], r["target_2"], r["winner_1"], r["winner_2"], r["flip"])
    raw source A tie False
    raw canonical A B True
    source canonical tie B False
    >>> result.options["seed"], result.options["resamples"], result.options["correction"]
    (0, 100, 'holm')
    >>> print(result.notes[-1])
    scores: answer alignment skipped (<scores 1> is held in memory and records no input files)
    """

    datasets: tuple[Dataset, ...]
    tables: Mapping[str, Table]
    options: Mapping[str, Any]
    notes: tuple[str, ...] = ()
    info: Mapping[str, Any] = field(default_factory=dict)

    def table(self, name: str) -> list[dict[str, Any]]:
        return self.tables[name].rows


#: The change table's columns with the Wilson interval of ``changed_fraction``.
_CHANGE_COLUMNS = stability.wilson_columns(change.CHANGE_COLUMNS, "changed")


def _wilson(rows: list[dict[str, Any]], alpha: float) -> list[dict[str, Any]]:
    return stability.rate_rows_with_wilson(rows, "changed", "n_shared", alpha)


def _with(cols: tuple[str, ...], extra: str, after: str = "dataset") -> tuple[str, ...]:
    i = cols.index(after) + 1
    return (*cols[:i], extra, *cols[i:])


def analyze(
    dirs: Any,
    *,
    seed: int = 0,
    resamples: int = DEFAULT_RESAMPLES,
    alpha: float = DEFAULT_ALPHA,
    configs: Mapping[str, Sequence[str]] | None = None,
    primary: str | Measure | None = None,
    answers: bool | None = None,
    answer_inputs: Mapping[str, Any] | None = None,
    answer_depth: int = 5,
    by_category_tests: bool = True,
    correction: str = DEFAULT_CORRECTION,
    min_effect: float = 0.0,
    min_dz: float = flips.DEFAULT_MIN_DZ,
    progress: Callable[[str, int, int], None] | None = None,
    preloaded: Mapping[Path, Any] | None = None,
    pairs: Sequence[str] = (),
) -> SensitivityResult:
    """Every Stage III analysis of rescorings: ``dirs`` is a rescore folder (``PATH`` or
    ``NAME=PATH``), a :class:`~tiap.scoring.scores.Scores` held in memory (or ``(NAME,
    scores)``), or a list of these (:func:`tiap.sensitivity.load.load_datasets`: folders of
    one queries file are pooled; a ``Scores`` is a dataset of its own).

    A ``Scores`` gives the folder's tables but ``cost.csv`` (written with the folder) and
    the answer alignment (it reads the files the folder's manifest names).

    >>> import tiap
    >>> scores = tiap.rescore({"A": {"q1": ["t1"]}, "B": {"q1": ["m1"]}},
    ...                       [{"query_id": "q1", "evidence": ["d1:1"]}],
    ...                       [{"item_id": "t1", "kind": "raw", "sources": ["d1:1"]},
    ...                        {"item_id": "m1", "kind": "fact", "sources": ["d1:1"]}],
    ...                       measures="Success@1")
    >>> tiap.analyze(scores, resamples=100).table("system_means")[0]["mean"]
    1.0

    Args:
        seed: seeds every bootstrap and randomization test (with the comparison's name).
        resamples: bootstrap resamples and random sign vectors per comparison.
        alpha: 1 - the confidence level of the intervals.
        configs: configuration groups ``{name: (system, ...)}`` for design recommendations.
        primary: the headline measure (default: nDCG at its largest cutoff).
        answers: run the answer-level alignment (``None``: when its inputs can be found).
        answer_inputs: overrides of the inputs the rescore manifests name: ``queries``
            (a path), ``items`` and ``runs`` (``{system: path}`` or a path for every system).
        answer_depth: how many top items the extractive answerer reads.
        by_category_tests: test the winner flips within each category too.
        correction: family-wise correction of the p-values (``holm``, ``bh`` or ``none``;
            a family is every gap of one table in one dataset and measure [and category]).
        min_effect: the smallest gap (in the measure's units) that counts as a practical
            difference: a flip smaller than it is reported, never headlined (0: no floor).
        min_dz: the smallest paired effect size ``|d_z|`` that counts as a practical
            difference (default 0.2, Cohen's "small"; 0: none): a headline flip needs both
            gaps significant after correction and at both thresholds.
        progress: called as ``progress(description, done, total)`` before each step.
        pairs: the pairs of targets to compare (default: every pair): ``A:B`` compares
            target A with target B; ``~NAME`` compares every target T with ``T~NAME``, the
            same target under the evidence overlay NAME (:mod:`tiap.datasets.overlays`).
        preloaded: what the caller already holds, by resolved file path: a rescore folder's
            ``per_query.csv`` (:func:`tiap.scoring.folder.per_query_of`), and the queries,
            stores and runs of the answer alignment
            (:func:`tiap.sensitivity.answers.answer_tables`).
    """
    if correction not in CORRECTIONS:
        raise TiapError(f"--correction must be one of {', '.join(CORRECTIONS)}, got "
                        f"{correction!r}")

    # the declared ranges of the options (tiap.limits), checked before anything is read
    check("min_effect", min_effect, "min_effect (--min-effect)")
    check("min_dz", min_dz, "min_dz (--min-dz)")
    check("seed", seed, "seed (--seed)")
    check("cutoff", answer_depth, "answer_depth (--answer-depth)")
    specs = [dirs] if isinstance(dirs, str | Path | Scores) else list(dirs)
    datasets = [select_pairs(ds, pairs) for ds in load_datasets(specs, preloaded=preloaded)]
    notes: list[str] = [n for ds in datasets for n in ds.notes]
    total = (2 * len(datasets) + sum(by_category_tests and len(ds.systems) > 1
                                     for ds in datasets)
             + bool(configs) + 1 + (answers is not False))
    done = 0

    def step(description: str) -> None:
        nonlocal done
        if progress is not None:
            progress(description, done, total)
        done += 1
    tables: dict[str, Table] = {}

    def add(name: str, cols: tuple[str, ...], rows: list[dict[str, Any]]) -> None:
        if name in tables:
            tables[name].rows.extend(rows)
        else:
            tables[name] = Table(name, cols, list(rows))

    # every count's bounds, whatever the lineage: one schema for every dataset (equal to the
    # plain column where the lineage decides it)
    change_cols = _CHANGE_COLUMNS + change.CHANGE_BOUND_COLUMNS
    primaries: dict[str, Measure] = {}
    for ds in datasets:
        pm = parse_measure(primary) if primary is not None else change.primary_measure(
            ds.measures)
        if pm not in ds.measures:
            raise TiapError(f"measure {pm} is not in the rescore output of {ds.name} "
                            f"(it has {', '.join(map(str, ds.measures))})")
        primaries[ds.name] = pm
        step(f"{ds.name}: per-query change")
        add("change", change_cols, _wilson(change.change_rows(ds), alpha))
        add("deltas", change.DELTA_COLUMNS, change.delta_rows(ds, pm))
        add("change_hist", ("dataset", "system", "measure", "target_1", "target_2", "bin_low",
                            "bin_high", "count"), change.hist_rows(ds, pm, notes))
        add("system_means", flips.MEANS_COLUMNS, flips.system_means_rows(ds))
        cost = _cost_rows(ds)
        if cost:
            add("cost", ("dataset", *COST_COLUMNS), cost)
        step(f"{ds.name}: winner flips")
        add("winner_flips", flips.FLIP_COLUMNS,
            flips.winner_flips(ds, seed=seed, resamples=resamples, alpha=alpha,
                               correction=correction, min_effect=min_effect, min_dz=min_dz,
                               notes=notes))
        add("system_tests", flips.SYSTEM_TEST_COLUMNS,
            flips.system_tests(ds, seed=seed, resamples=resamples, alpha=alpha,
                               correction=correction, notes=notes))
        add("ranking_stability", stability.RANKING_COLUMNS,
            stability.ranking_rows(ds, notes=notes))
        # by category
        cats = np.asarray(ds.categories, dtype=object)
        groups = [({"category": cat}, cats == cat) for cat in dict.fromkeys(ds.categories)]
        for label, mask in groups:
            add("category_change", _with(change_cols, "category"),
                _wilson(change.change_rows(ds, mask=mask, extra=label), alpha))
            add("category_means", _with(flips.MEANS_COLUMNS, "category"),
                flips.system_means_rows(ds, mask=mask, extra=label))
        if by_category_tests and len(ds.systems) > 1:
            step(f"{ds.name}: winner flips in {len(groups)} categories")
            add("category_flips", _with(flips.FLIP_COLUMNS, "category"),
                flips.winner_flips(ds, seed=seed, resamples=resamples, alpha=alpha,
                                   correction=correction, min_effect=min_effect,
                                   min_dz=min_dz, groups=groups, family="category_flips",
                                   notes=notes))

    if configs:
        step("design recommendations")
        dtabs, dnotes = design.design_recommendations(datasets, configs, seed=seed,
                                                      resamples=resamples, alpha=alpha,
                                                      correction=correction)
        notes.extend(dnotes)
        add("design_means", design.DESIGN_MEANS_COLUMNS, dtabs["means"])
        add("design_preferred", design.DESIGN_PREFERRED_COLUMNS, dtabs["preferred"])
        add("design_pairwise", design.DESIGN_PAIR_COLUMNS, dtabs["pairwise"])
        add("design_changes", design.DESIGN_CHANGE_COLUMNS, dtabs["changes"])

    step("cardinality, depth, aggregation")
    card_measures = sorted({m for ds in datasets for m in ds.measures if m.family == "nDCG"},
                           key=lambda m: (m.cutoff or 0))
    corr, bins, cnotes = cardinality.cardinality_rows(
        datasets, card_measures or [primaries[datasets[0].name]])
    notes.extend(cnotes)
    add("cardinality", cardinality.CARD_COLUMNS, corr)
    add("cardinality_bins", cardinality.CARD_BIN_COLUMNS, bins)
    add("depth", depth.DEPTH_COLUMNS, depth.depth_rows(datasets))
    agg, agree, anotes = aggregation.aggregation_rows(datasets)
    notes.extend(anotes)
    add("aggregation", aggregation.AGG_COLUMNS, agg)
    add("agreement", aggregation.AGREE_COLUMNS, agree)

    answer_info: dict[str, Any] = {}
    if answers is not False:
        step("answer alignment")
        per_q, align, a_notes, answer_info = ans.answer_tables(
            datasets, overrides=answer_inputs or {}, depth=answer_depth, preloaded=preloaded,
            required=answers is True)
        notes.extend(a_notes)
        if per_q:
            add("answers", ans.ANSWER_COLUMNS, per_q)
            add("answer_alignment", ans.ALIGN_COLUMNS, align)

    if progress is not None:
        progress("done", total, total)
    options = {"seed": seed, "resamples": resamples, "alpha": alpha,
               "test": "paired sign-flip randomization, two-sided; interval: its inversion "
                       "at each gap's effective level",
               "correction": correction, "min_effect": min_effect, "min_dz": min_dz,
               "configs": {k: list(v) for k, v in (configs or {}).items()},
               "primary": {k: str(v) for k, v in primaries.items()},
               "answer_depth": answer_depth if answer_info else None,
               "pairs": list(pairs),
               "by_category_tests": by_category_tests}
    info = {"datasets": [_dataset_info(ds, primaries[ds.name]) for ds in datasets],
            "answers": answer_info}
    return SensitivityResult(tuple(datasets), tables, options, tuple(dict.fromkeys(notes)), info)


def _cost_rows(ds: Dataset) -> list[dict[str, Any]]:
    """The ``cost.csv`` rows of the dataset's rescorings (context tokens of the top k,
    latency; :mod:`tiap.scoring.cost`), for its systems."""
    return [{"dataset": ds.name, **r} for r in ds.cost if r["system"] in ds.systems]


def select_pairs(ds: Dataset, pairs: Sequence[str]) -> Dataset:
    """``ds`` comparing only the target pairs ``pairs`` (see :func:`analyze`); a target
    the dataset does not hold, or a ``~NAME`` no target is under, is an error."""
    if not pairs:
        return ds
    chosen: list[tuple[str, str]] = []
    problems: list[Problem] = []
    for spec in pairs:
        if spec.startswith("~"):
            got = [(t, f"{t}~{spec[1:]}") for t in ds.targets if f"{t}~{spec[1:]}" in ds.targets]
            if not got:
                problems.append(Problem(f"--pairs {spec}: no target of dataset {ds.name} has "
                                        f"a version under overlay {spec[1:]!r}", code="usage"))
            chosen += got
            continue
        a, sep, b = spec.partition(":")
        bad = [t for t in (a, b) if t not in ds.targets] if sep else []
        if not sep or not a or not b or a == b or bad:
            why = (f"dataset {ds.name} has no target {bad[0]!r} (it has "
                   f"{', '.join(ds.targets)})" if bad else "give TARGET:TARGET or ~OVERLAY")
            problems.append(Problem(f"--pairs {spec}: {why}", code="usage"))
            continue
        chosen.append((a, b))
    if problems:
        raise TiapError(problems=problems, code="usage")
    return replace(ds, pairs=tuple(dict.fromkeys(chosen)))


def _mean_or_none(x: np.ndarray) -> float | None:  # type: ignore[type-arg]
    """The mean of ``x``; ``None`` (written as null) where it is not determined: no value,
    or a value not known (NaN: a target size the lineage does not fix)."""
    return float(x.mean()) if x.size and not np.isnan(x).any() else None


def _dataset_info(ds: Dataset, primary: Measure) -> dict[str, Any]:
    """What the target card states about one dataset: targets, coverage, shared subsets."""
    systems = {}
    for s, sc in ds.systems.items():
        scored = np.zeros(ds.n, bool)
        for t in ds.targets:
            for m in ds.measures:
                scored |= ~np.isnan(sc.get(t, m))
        cov = {}
        for t in ds.targets:
            ok = sc.determined(t, ds.measures)
            entry: dict[str, Any] = {"defined": int(ok.sum())}
            universe = sc.in_universe(t, ds.measures)
            inf = sc.inferred_mask(t)
            if inf is not None or (universe & ~ok).any():
                # partial or inferred lineage: how many values are exact, inferred, bounded
                inferred = universe & inf if inf is not None else np.zeros(ds.n, bool)
                entry.update({"in_universe": int(universe.sum()),
                              "exact": int((ok & ~inferred).sum()),
                              "inferred": int(inferred.sum()),
                              "bounded": int((universe & ~ok & ~inferred).sum())})
            if t in sc.sizes:
                g, mem = sc.sizes[t]
                entry["mean_groups"] = _mean_or_none(g[ok])
                entry["mean_members"] = _mean_or_none(mem[ok])
            cov[t] = entry
        report = sc.report or {}
        systems[s] = {
            "rescore_dir": str(sc.source),
            "store": report.get("store"),
            "queries_in_run": report.get("queries_in_run"),
            "scored": int(scored.sum()) if report.get("scored_queries") is None
            else report.get("scored_queries"),
            "zero_target_queries": report.get("zero_target_queries", {}),
            "possibly_empty_queries": report.get("possibly_empty_queries", {}),
            "unknown_ranked_items": (report.get("unknown_ranked_items") or {}).get("count"),
            "coverage": cov,
            "shared_all_targets": int(ds.shared((s,), ds.targets).sum()),
        }
        if any("in_universe" in e for e in cov.values()):  # partial or inferred lineage
            systems[s]["shared_all_targets_in_universe"] = int(
                ds.shared((s,), ds.targets, bounded=True).sum())
    partial = any("shared_all_targets_in_universe" in v for v in systems.values())
    return {
        "name": ds.name,
        "rescore_dirs": [str(d) for d in ds.dirs],
        "queries": ds.queries_input,
        "n_queries": ds.n,
        "credit": ds.credit,
        "targets": [dict(ds.target_specs[t]) for t in ds.targets],
        "measures": [str(m) for m in ds.measures],
        "primary_measure": str(primary),
        "category_source": ds.category_source,
        "categories": {c: int(sum(1 for x in ds.categories if x == c))
                       for c in dict.fromkeys(ds.categories)},
        "systems": systems,
        "shared_all_systems_all_targets": int(ds.shared(ds.systems, ds.targets).sum()),
        # partial or inferred lineage: the queries in every universe, values exact or bounded
        **({"shared_all_systems_all_targets_in_universe": int(
            ds.shared(ds.systems, ds.targets, bounded=True).sum())} if partial else {}),
        "rescore_options": dict(ds.options),
    }


# ------------------------------------------------------------------------------------------
# writing


def fmt(v: Any) -> str:
    """A CSV cell: floats by repr, None and NaN empty, booleans ``true``/``false``."""
    kind = type(v)  # the common cells first: a table of 10^5 rows is written cell by cell
    if kind is float:
        return repr(v) if v == v else ""
    if kind is str:
        return v  # type: ignore[no-any-return]
    if kind is int:
        return str(v)
    if v is None:
        return ""
    if isinstance(v, bool | np.bool_):
        return "true" if v else "false"
    if isinstance(v, float | np.floating):
        f = float(v)
        return "" if math.isnan(f) else repr(f)
    return str(v)


def write_table(path: Path, table: Table) -> None:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(table.columns)
        for r in table.rows:
            w.writerow([fmt(r.get(c)) for c in table.columns])


def write_sensitivity(result: SensitivityResult, out: str | Path, *,
                      force: bool = False) -> dict[str, Any]:
    """Write every table as ``<name>.csv`` and ``manifest.json`` into ``out``. The manifest
    has no timestamp, so that reruns with the same seed write byte-identical folders.

    ``out`` is replaced whole (:func:`tiap.io.output_folder`): no table of an earlier run
    (an old ``design_*.csv``) survives; a folder that is not a ``tiap sensitivity`` output
    is refused unless ``force``.

    >>> import tiap
    >>> scores = tiap.rescore({"A": {"q1": ["t1", "m1"]}, "B": {"q1": ["m1", "t1"]}},
    ...                       [{"query_id": "q1", "evidence": ["d1:1"]}],
    ...                       [{"item_id": "t1", "kind": "raw", "sources": ["d1:1"]},
    ...                        {"item_id": "m1", "kind": "fact", "sources": ["d1:1"]}],
    ...                       measures="RR@5")
    >>> result = tiap.analyze(scores, resamples=100)
    >>> manifest = write_sensitivity(result, "sensitivity")
    >>> manifest["outputs"]["winner_flips.csv"]["rows"]
    3
    >>> for line in Path("sensitivity/system_means.csv").read_text().splitlines()[:3]:
    ...     print(line[:46])
    dataset,system,target,measure,n,n_exact,mean,l
    scores,A,raw,RR@5,1,1,1.0,1.0,1.0,1,1.0,0,1,1.
    scores,A,source,RR@5,1,1,1.0,1.0,1.0,1,1.0,0,1
    """
    with output_folder(out, "sensitivity", force=force, known=("*.csv",)) as tmp:
        outputs: dict[str, dict[str, Any]] = {}
        for t in result.tables.values():
            write_table(tmp / f"{t.name}.csv", t)
            # rows and sha256: a reader can tell a table cut at a line end, or edited
            outputs[f"{t.name}.csv"] = {"rows": len(t.rows),
                                        "sha256": sha256_file(tmp / f"{t.name}.csv")}
        inputs: dict[str, Any] = {}
        for ds in result.datasets:
            for d in ds.dirs:
                for f in ("manifest.json", "per_query.csv", "target_sizes.csv", "queries.csv"):
                    if (d / f).exists():
                        inputs[f"{ds.name}:{d.name}/{f}"] = input_entry(d / f)
        man = Manifest.new("sensitivity", inputs=inputs, options=dict(result.options),
                           extra={"datasets": result.info.get("datasets", []),
                                  "answers": result.info.get("answers", {}),
                                  "notes": list(result.notes)},
                           outputs=outputs)
        man.write(tmp / "manifest.json")
    return man.to_json()
