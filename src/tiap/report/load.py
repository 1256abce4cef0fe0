"""Reading the output folders of ``tiap sensitivity`` for the report."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tiap.errors import TiapError

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


def _read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def load_sensitivity_dirs(paths: Sequence[str | Path]) -> list[SensitivityDir]:
    """Read sensitivity folders; dataset names repeated across folders get the folder name
    as a prefix in the report."""
    if not paths:
        raise TiapError("no sensitivity folder given")
    loaded: list[tuple[Path, dict[str, Any], dict[str, list[dict[str, str]]]]] = []
    for p in map(Path, paths):
        mf = p / "manifest.json"
        if not mf.exists():
            raise TiapError("not an output folder of 'tiap sensitivity' (no manifest.json)",
                            file=p)
        man = json.loads(mf.read_text(encoding="utf-8"))
        if man.get("command") != "sensitivity":
            hint = (" (run 'tiap sensitivity' on it first)" if man.get("command") == "rescore"
                    else "")
            raise TiapError(f"expected the output of 'tiap sensitivity', found "
                            f"{man.get('command')!r}{hint}", file=mf)
        tables = {}
        for name in man.get("outputs") or []:
            f = p / name
            if f.suffix == ".csv" and f.exists():
                tables[f.stem] = _read_csv(f)
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
