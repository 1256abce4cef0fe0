"""Reading the output folders of ``tiap sensitivity`` for the report."""

from __future__ import annotations

import csv
import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tiap.errors import TiapError
from tiap.io import MANIFEST_FILE, iter_csv, sha256_file
from tiap.provenance import Manifest, read_manifest

__all__ = ["SensitivityDir", "load_sensitivity_dirs", "num", "truth"]

csv.field_size_limit(1 << 30)


def num(x: Any) -> float | None:
    """A CSV cell as a float (None when empty or not a number)."""
    if x is None or x == "":
        return None
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(v) else v


def truth(x: Any) -> bool:
    return str(x).lower() == "true"


@dataclass(frozen=True, eq=False)
class SensitivityDir:
    """One ``tiap sensitivity`` folder: its manifest and its tables (rows of strings)."""

    path: Path
    manifest: Mapping[str, Any]
    tables: Mapping[str, list[dict[str, str]]]
    #: dataset name in the folder -> the label used in the report (unique over all folders)
    labels: Mapping[str, str]

    def rows(self, table: str, dataset: str | None = None, **where: str) -> list[dict[str, str]]:
        out = []
        for r in self.tables.get(table, []):
            if dataset is not None and r.get("dataset") != dataset:
                continue
            if all(r.get(k) == v for k, v in where.items()):
                out.append(r)
        return out

    @property
    def datasets(self) -> list[Mapping[str, Any]]:
        return list(self.manifest.get("datasets") or [])


@dataclass(frozen=True)
class _Rule:
    """What a table the report reads must hold: its key columns (each key once), and the
    columns whose values are probabilities, bounded numbers or booleans."""

    key: tuple[str, ...]
    required: tuple[str, ...] = ()
    #: column -> (lowest, highest) of a non-empty value, which must also be finite
    ranges: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    booleans: tuple[str, ...] = ()


_P = (0.0, 1.0)
_UNIT = (0.0, 1.0)
_GAP = (-1.0, 1.0)  # a difference of two means of a measure in [0, 1]
_FLIP = _Rule(
    key=("dataset", "measure", "system_a", "system_b", "target_1", "target_2"),
    required=("flip",),
    ranges={"p_1": _P, "p_2": _P, "p_1_adjusted": _P, "p_2_adjusted": _P, "gap_1": _GAP,
            "gap_2": _GAP, "n_shared": (0.0, math.inf)},
    booleans=("flip", "significant_flip", "practical", "headline"))
_MEANS = {"mean": _UNIT, "lower": _UNIT, "upper": _UNIT, "n": (0.0, math.inf)}
#: The tables whose rows the report checks beyond their form (the others: form only).
TABLE_RULES: Mapping[str, _Rule] = {
    "winner_flips": _FLIP,
    "category_flips": dataclasses.replace(_FLIP, key=("dataset", "category", *_FLIP.key[1:])),
    "system_means": _Rule(key=("dataset", "system", "target", "measure"), ranges=_MEANS),
    "system_tests": _Rule(key=("dataset", "measure", "target", "system_a", "system_b"),
                          required=("winner", "significant"),
                          ranges={"p": _P, "p_adjusted": _P, "gap": _GAP, "gap_lower": _GAP,
                                  "gap_upper": _GAP, "n": (0.0, math.inf)},
                          booleans=("significant",)),
    "category_means": _Rule(key=("dataset", "category", "system", "target", "measure"),
                            ranges=_MEANS),
    "change": _Rule(key=("dataset", "system", "measure", "target_1", "target_2"),
                    ranges={"changed_fraction": _UNIT, "changed_fraction_lower": _UNIT,
                            "changed_fraction_upper": _UNIT}),
    "ranking_stability": _Rule(key=("dataset", "measure", "target_1", "target_2"),
                               ranges={"kendall_tau": _GAP, "tau_ap": _GAP}),
}


def _read_csv(path: Path, rule: _Rule | None = None,
              announced: Mapping[str, Any] | None = None) -> list[dict[str, str]]:
    """A table of a sensitivity folder, checked: the form of the file
    (:func:`tiap.io.iter_csv`: cut last line, field counts, header), the rows
    the manifest announces (when it records them), and the table's :data:`TABLE_RULES`."""

    rule = rule or _Rule(key=())
    rows = iter_csv(path, required=(*rule.key, *rule.required))
    _, head = next(rows)
    out: list[dict[str, str]] = []
    seen: dict[tuple[str, ...], int] = {}
    checks = [(head.index(c), c, lo, hi) for c, (lo, hi) in rule.ranges.items() if c in head]
    flags = [(head.index(c), c) for c in rule.booleans if c in head]
    kidx = [head.index(c) for c in rule.key]
    for line, row in rows:
        for i, col, lo, hi in checks:
            cell = row[i]
            if cell == "":
                continue
            try:
                v = float(cell)
            except ValueError:
                raise TiapError(f"{col}: not a number: {cell!r}", file=path, line=line,
                                code="invalid-value") from None
            if not (math.isfinite(v) and lo <= v <= hi):
                raise TiapError(f"{col}: {cell} cannot be right (expected a finite number "
                                f"in [{lo:g}, {hi:g}], or an empty field)", file=path,
                                line=line, code="invalid-value")
        for i, col in flags:
            if row[i] not in ("true", "false", ""):
                raise TiapError(f"{col}: expected true or false, found {row[i]!r}", file=path,
                                line=line, code="invalid-value")
        if kidx:
            key = tuple(row[i] for i in kidx)
            if key in seen:
                raise TiapError(f"the row of ({', '.join(key)}) occurs twice (first on line "
                                f"{seen[key]}; key columns {', '.join(rule.key)})",
                                file=path, line=line, code="duplicate")
            seen[key] = line
        out.append(dict(zip(head, row, strict=True)))
    if announced:
        n = announced.get("rows")
        if isinstance(n, int) and not isinstance(n, bool) and n != len(out):
            raise TiapError(f"{len(out):,} rows, the manifest announces {n:,}: the file "
                            + ("misses rows" if len(out) < n else "has rows it did not write"),
                            file=path, code="truncated")
        digest = announced.get("sha256")
        if isinstance(digest, str) and sha256_file(path) != digest:
            raise TiapError("changed since `tiap sensitivity` wrote it (its sha256 differs "
                            f"from the manifest's {digest[:12]}…); rerun `tiap sensitivity`",
                            file=path, code="input-changed")
    return out


def _outputs(man: Mapping[str, Any], mf: Path) -> dict[str, Mapping[str, Any]]:
    """The manifest's outputs: a list of names, or name -> entry (``rows``, ``sha256``)."""
    outputs = man.get("outputs") or []
    if isinstance(outputs, Mapping):
        return {str(k): (v if isinstance(v, Mapping) else {}) for k, v in outputs.items()}
    if isinstance(outputs, list) and all(isinstance(o, str) for o in outputs):
        return {o: {} for o in outputs}
    raise TiapError("'outputs' must list the files the step wrote", file=mf, code="input")


def load_sensitivity_dirs(paths: Sequence[str | Path]) -> list[SensitivityDir]:
    """Read sensitivity folders; dataset names repeated across folders get the folder name
    as a prefix in the report. Every table the manifest lists must be there and whole."""
    if not paths:
        raise TiapError("no sensitivity folder given")
    loaded: list[tuple[Path, Manifest, dict[str, list[dict[str, str]]]]] = []
    for p in map(Path, paths):
        mf = p / MANIFEST_FILE
        man = read_manifest(p, step="sensitivity")
        datasets = man.get("datasets") or []
        if not isinstance(datasets, list) or not all(
                isinstance(d, Mapping) and isinstance(d.get("name"), str) for d in datasets):
            raise TiapError("'datasets' must list objects with a 'name'", file=mf)
        tables = {}
        for name, entry in _outputs(man, mf).items():
            f = p / name
            if f.suffix != ".csv":
                continue
            if not f.is_file():
                raise TiapError(f"the manifest lists {name}, but the folder has no such "
                                "file: rerun `tiap sensitivity`", file=f, code="io")
            tables[f.stem] = _read_csv(f, TABLE_RULES.get(f.stem), entry)
        loaded.append((p, man, tables))
    counts: dict[str, int] = {}
    for _, man, _ in loaded:
        for ds in man.get("datasets") or []:
            counts[ds["name"]] = counts.get(ds["name"], 0) + 1
    out = []
    for p, man, tables in loaded:
        labels = {ds["name"]: (f"{p.name}/{ds['name']}" if counts[ds["name"]] > 1 else ds["name"])
                  for ds in man.get("datasets") or []}
        out.append(SensitivityDir(p, man, tables, labels))
    return out


def unique(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(values))
