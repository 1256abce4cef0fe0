"""Provenance carried by every file TIAP writes (schema version, inputs, versions)."""

from __future__ import annotations

import platform
import sys
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from tiap.io import sha256_file

_PACKAGES = ("numpy", "scipy", "statsmodels", "pandas", "pyarrow", "bm25s", "sentence-transformers")


def versions() -> dict[str, str]:
    out = {"tiap": _version("tiap"), "python": sys.version.split()[0], "platform": platform.platform()}
    for p in _PACKAGES:
        v = _version(p)
        if v != "not installed":
            out[p] = v
    return out


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def input_entry(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    return {"path": str(p), "sha256": sha256_file(p), "bytes": p.stat().st_size}


def manifest_header(command: str, schema_version: int) -> dict[str, Any]:
    return {
        "schema_version": schema_version,
        "command": command,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "versions": versions(),
    }
