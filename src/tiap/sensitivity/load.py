"""Rescore folders pooled into :class:`Dataset` values (the folders' files are read by
:mod:`tiap.scoring.folder`, their only reader: :func:`read_folder`).

Folders whose queries file has the same sha256 (the same benchmark queries) are pooled into
one :class:`Dataset`, so systems rescored separately can still be compared; systems are
only ever compared within a dataset. Every (system, target, measure) becomes one array over
the dataset's *query universe* (the union of the scored queries, in order of first
appearance), with NaN where the value is undefined (a zero-target case) or the system did
not score the query.

Each system of a dataset is the view of its :class:`~tiap.scoring.scores.Scores` over the
universe (:meth:`Scores.system <tiap.scoring.scores.Scores.system>`, a
:class:`~tiap.scoring.scores.SystemScores`), whether the scores were read from a folder or
held in memory. Partial lineage: a value the lineage only bounds is NaN in ``values`` (it
is not known) and its ``[lower, upper]`` (``intervals.csv``) is kept in the view's
``lower`` / ``upper``, so that the analyses that need a point value use the queries whose
values are determined, and the winner flips decide on the bounds. The hit flips the items'
shared lineage decides (``flip_pairs.csv``) are in its ``flip_pairs``, the values that rest
on inferred lineage (``inferred.csv``) in its ``inferred``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from tiap.errors import Problem, TiapError
from tiap.io import split_named
from tiap.scoring.cost import COST_COLUMNS
from tiap.scoring.folder import PerQuery, as_written, folder_dataset, folder_targets, read_parts
from tiap.scoring.measures import Measure, parse_measure
from tiap.scoring.scores import Scores, SystemScores

__all__ = ["Dataset", "load_datasets"]


@dataclass(frozen=True, eq=False)
class Dataset:
    """Systems scored on one set of queries, under the same targets and credit mode."""

    name: str
    dirs: tuple[Path, ...]
    query_ids: tuple[str, ...]
    systems: Mapping[str, SystemScores]
    targets: tuple[str, ...]
    target_specs: Mapping[str, Mapping[str, Any]]
    measures: tuple[Measure, ...]
    credit: str
    categories: tuple[str, ...]  # per query of the universe ("" when unknown)
    category_source: str
    queries_input: Mapping[str, Any] | None
    #: per system: the rescore inputs (``items`` and ``run`` entries with path and sha256)
    inputs: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    options: Mapping[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    #: the pairs of targets compared (empty: every pair, in target order)
    pairs: tuple[tuple[str, str], ...] = ()
    #: the rescorings' ``cost.csv`` rows, as written
    cost: tuple[dict[str, str], ...] = ()

    @property
    def n(self) -> int:
        return len(self.query_ids)

    @property
    def target_pairs(self) -> tuple[tuple[str, str], ...]:
        """The pairs of targets Stage III compares: ``pairs``, else every pair."""
        return self.pairs or tuple(combinations(self.targets, 2))

    def shared(self, systems: Iterable[str], targets: Iterable[str],
               measures: Sequence[Measure] | None = None, *,
               bounded: bool = False) -> NDArray[np.bool_]:
        """Queries whose values are determined under every given target for every given
        system (with ``bounded``: in every universe, also those whose values partial lineage
        only bounds)."""
        ms = tuple(measures or self.measures)
        mask = np.ones(self.n, dtype=bool)
        for s in systems:
            for t in targets:
                sc = self.systems[s]
                mask &= sc.in_universe(t, ms) if bounded else sc.determined(t, ms)
        return mask


@dataclass(frozen=True, eq=False)
class RescoreFolder:
    """One rescore folder read back (:func:`read_folder`), or a :class:`Scores` held in
    memory taken as one (:func:`folder_of`): its :class:`Scores` with what Stage III reads
    besides them (the manifest, the queries' categories, ``cost.csv``'s rows as written)."""

    path: Path
    name: str
    manifest: Mapping[str, Any]
    scores: Scores
    categories: dict[str, str]
    category_source: str
    #: ``cost.csv``'s rows as written (:data:`tiap.scoring.cost.COST_COLUMNS`; none: no cost)
    cost: tuple[dict[str, str], ...] = ()

    @property
    def query_ids(self) -> tuple[str, ...]:
        """The union of the systems' scored queries, in order of first appearance."""
        universe: dict[str, None] = {}
        for s in self.scores.systems:
            universe.update(dict.fromkeys(self.scores.query_ids[s]))
        return tuple(universe)


def read_folder(path: str | Path, name: str | None = None, *,
                per_query: PerQuery | None = None) -> RescoreFolder:
    """Read one rescore folder: its :class:`Scores` (:meth:`Scores.from_parts` of
    :func:`~tiap.scoring.folder.read_parts`) with its manifest, categories and cost rows,
    every file checked. It is named ``name``, else by its dataset
    (:func:`~tiap.scoring.folder.folder_dataset`), else by the folder.

    ``per_query``: the folder's ``per_query.csv`` as the caller that wrote it holds it
    (:func:`~tiap.scoring.folder.per_query_of`), instead of reading the file again."""
    parts = read_parts(path, per_query=per_query)
    return RescoreFolder(parts.path, name or folder_dataset(parts.manifest) or parts.path.name,
                         parts.manifest, Scores.from_parts(parts), parts.categories,
                         parts.category_source, parts.cost)


def folder_of(scores: Scores, name: str | None = None, *,
              path: str | Path = "<scores>") -> RescoreFolder:
    """A :class:`Scores` held in memory as a :class:`RescoreFolder`: the manifest, categories
    and cost rows :func:`read_folder` reads from the folder
    :func:`~tiap.scoring.folder.write_rescore` writes for it, so Stage III takes either.
    ``path`` names it in notes and errors; nothing is read from it. The categories are the
    rescored queries' (none for a rescoring of qrels files)."""
    man: dict[str, Any] = {
        "command": "rescore",
        "options": {"credit": scores.credit,
                    "targets": [t.to_json() for t in scores.targets],
                    "measures": [str(m) for m in scores.measures]},
        "systems": {s: scores.reports[s].to_json() for s in scores.systems},
        "inputs": {},
    }
    cats = {q.query_id: getattr(q, "category", "") or "" for q in scores.queries}
    source = ("the queries rescored" if cats else
              "none (no categories: the rescoring holds no queries)")

    return RescoreFolder(Path(path), name or "scores", man, scores, cats, source,
                         as_written(scores.cost, COST_COLUMNS))


def _group_key(folder: RescoreFolder) -> str:
    entry = (folder.manifest.get("inputs") or {}).get("queries")
    if entry and entry.get("sha256"):
        return "queries:" + entry["sha256"]
    return "folder:" + str(folder.path.resolve())


Spec = str | Path | Scores | tuple[str | None, str | Path | Scores]


def load_datasets(specs: Sequence[Spec], *,
                  preloaded: Mapping[Path, Any] | None = None) -> list[Dataset]:
    """Read rescore folders (``PATH`` or ``NAME=PATH``) and pool those sharing a queries file.

    A spec may also be a :class:`~tiap.scoring.scores.Scores` held in memory, or
    ``(NAME, scores)``: it is one dataset of its own (named ``scores`` unless named), taken
    as the folder :func:`~tiap.scoring.folder.write_rescore` would write for it.

    Pooled folders must agree on the credit mode and on the spec of every target they share;
    only the targets and measures every pooled folder has are kept. A system name may occur
    once per dataset. ``preloaded`` maps the resolved path of a folder's ``per_query.csv`` to
    its :class:`PerQuery` where the caller holds it (:func:`per_query_of`).
    """
    folders: list[RescoreFolder] = []
    problems: list[Problem] = []
    for i, spec in enumerate(specs):
        held = spec[1] if isinstance(spec, tuple) else spec
        if isinstance(held, Scores):
            name = spec[0] if isinstance(spec, tuple) else None
            folders.append(folder_of(held, name, path=f"<scores {i + 1}>"))
            continue
        name, path = _split(spec)  # type: ignore[arg-type]
        got = (preloaded or {}).get((path / "per_query.csv").resolve())
        try:
            folders.append(read_folder(
                path, name, per_query=got if isinstance(got, PerQuery) else None))
        except TiapError as exc:
            problems.extend(exc.problems)
    if problems:
        raise TiapError(problems=problems)
    if not folders:
        raise TiapError("no rescore folder given")
    groups: dict[str, list[RescoreFolder]] = {}
    for f in folders:
        groups.setdefault(_group_key(f), []).append(f)
    datasets = [_pool(fs) for fs in groups.values()]
    names = [d.name for d in datasets]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise TiapError(problems=[_same_name(n, [(k, fs) for (k, fs), d
                                                 in zip(groups.items(), datasets, strict=True)
                                                 if d.name == n]) for n in dupes])
    return datasets


def _same_name(name: str, groups: list[tuple[str, list[RescoreFolder]]]) -> Problem:
    """Why folders that make two datasets of one name were not pooled, and what to do.

    Folders are pooled only when the queries files they were scored against are the same
    file (the same sha256); folders of one benchmark scored against two queries files (two
    slices, or one file changed between the runs) share a name but not their queries."""
    def where(fs: list[RescoreFolder]) -> str:
        return " and ".join(str(f.path) for f in fs)

    scored = [(key.removeprefix("queries:"), fs) for key, fs in groups
              if key.startswith("queries:")]
    if len(scored) >= 2:
        told = "; ".join(
            f"{where(fs)} against "
            f"{((fs[0].manifest.get('inputs') or {}).get('queries') or {}).get('path', '?')} "
            f"(sha256 {sha})" for sha, fs in scored)
        return Problem(
            f"the rescore folders of dataset {name!r} were scored against different queries "
            f"files, so they are not pooled into one dataset (only folders scored against the "
            f"same queries file, the same sha256, are): {told}. To compare their systems, "
            "rescore them against one queries file (tiap rescore --queries FILE); to keep "
            "them apart, name them differently (NAME=PATH)", code="invalid-value")
    unscored = [where(fs) for key, fs in groups if not key.startswith("queries:")]
    return Problem(
        f"two datasets are named {name!r}: {', '.join(unscored)} record no queries file "
        "(no sha256 in the manifest), so no other folder is pooled with "
        f"{'it' if len(unscored) == 1 else 'them'}; name the folders with NAME=PATH",
        code="invalid-value")


def _split(spec: str | Path | tuple[str | None, str | Path]) -> tuple[str | None, Path]:
    if isinstance(spec, tuple):
        return spec[0], Path(spec[1])
    return split_named(spec, "rescore folder")


def _pool(folders: list[RescoreFolder]) -> Dataset:
    first = folders[0]
    credit = (first.manifest.get("options") or {}).get("credit", "group")
    specs: dict[str, dict[str, Any]] = {}
    target_order: list[str] | None = None
    measure_order: list[str] | None = None
    problems: list[Problem] = []
    for f in folders:
        c = (f.manifest.get("options") or {}).get("credit", "group")
        if c != credit:
            problems.append(Problem(f"credit mode {c!r} differs from {credit!r} of {first.path}; "
                                    "systems scored under different credit modes are not "
                                    "comparable", file=str(f.path)))
        ts = folder_targets(f.manifest)
        names = [t["name"] for t in ts]
        for t in ts:
            prev = specs.get(t["name"])
            if prev is not None and _spec_text(prev) != _spec_text(t):
                problems.append(Problem(
                    f"target {t['name']!r} is {_spec_text(t)!r} here but {_spec_text(prev)!r} "
                    "in an earlier folder", file=str(f.path)))
            specs.setdefault(t["name"], dict(t))
        target_order = names if target_order is None else [t for t in target_order if t in names]
        ms = list((f.manifest.get("options") or {}).get("measures") or [])
        if not ms:
            ms = [str(m) for m in f.scores.measures]
        measure_order = ms if measure_order is None else [m for m in measure_order if m in ms]
    if problems:
        raise TiapError(problems=problems)
    assert target_order is not None and measure_order is not None
    if not target_order:
        raise TiapError("the pooled rescore folders share no target", file=str(first.path))
    if not measure_order:
        raise TiapError("the pooled rescore folders share no measure", file=str(first.path))
    measures = tuple(parse_measure(m) for m in measure_order)

    universe: dict[str, int] = {}
    for f in folders:
        for q in f.query_ids:
            universe.setdefault(q, len(universe))
    query_ids = tuple(universe)
    systems: dict[str, SystemScores] = {}
    inputs: dict[str, dict[str, Any]] = {}
    notes: list[str] = []
    noted: set[tuple[str, str]] = set()
    for f in folders:
        man_inputs = f.manifest.get("inputs") or {}
        for s in f.scores.systems:
            if s in systems:
                raise TiapError(f"system {s!r} occurs in two pooled rescore folders "
                                f"({systems[s].source} and {f.path}); rescore it once",
                                file=str(f.path))
            view = f.scores.system(s, query_ids, targets=target_order, measures=measures,
                                   source=f.path)
            for t in target_order:
                for m, mt in zip(measure_order, measures, strict=True):
                    if (s, t, mt) not in f.scores.values:
                        notes.append(f"{f.path}: no values for {s}/{t}/{m}")
                    if (t, mt) in view.lower and (s, t) not in noted:
                        noted.add((s, t))
                        n_b = int((np.isnan(view.values[(t, mt)])
                                   & ~np.isnan(view.lower[(t, mt)])).sum())
                        notes.append(
                            f"{f.path}: {s}/{t}: {n_b:,} queries' {m} only bounded by "
                            "partial lineage; the winner flips, system means and change "
                            "tables use the bounds, every other table leaves those "
                            "queries out")
            systems[s] = view
            report = view.report
            store = report.get("store", s)
            entry: dict[str, Any] = {}
            for key in (f"items:{store}", f"items:{s}", "items"):
                if key in man_inputs:
                    entry["items"], entry["items_key"] = man_inputs[key], key
                    break
            if f"run:{s}" in man_inputs:
                entry["run"], entry["run_key"] = man_inputs[f"run:{s}"], f"run:{s}"
            entry["run_name"] = s
            inputs[s] = entry
    cats: dict[str, str] = {}
    sources: list[str] = []
    for f in folders:
        for q, c in f.categories.items():
            cats.setdefault(q, c)
        if f.category_source not in sources:
            sources.append(f.category_source)
    name = "+".join(dict.fromkeys(f.name for f in folders))
    return Dataset(
        name=name,
        dirs=tuple(f.path for f in folders),
        query_ids=query_ids,
        systems=systems,
        targets=tuple(target_order),
        target_specs={t: specs[t] for t in target_order},
        measures=measures,
        credit=str(credit),
        categories=tuple(cats.get(q, "") for q in query_ids),
        category_source="; ".join(sources),
        queries_input=(first.manifest.get("inputs") or {}).get("queries"),
        inputs=inputs,
        options={k: v for k, v in (first.manifest.get("options") or {}).items()
                 if k in ("missing", "dedup", "order", "depth")},
        notes=tuple(notes),
        cost=tuple(r for f in folders for r in f.cost),
    )


def _spec_text(t: Mapping[str, Any]) -> str:
    return str(t.get("spec") if t.get("spec") is not None else t.get("qrels", ""))
