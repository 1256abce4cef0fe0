"""Provenance carried by every file TIAP writes (schema version, inputs, versions), and the
check every step makes on the inputs of an earlier step it reads again: each file must
still have the sha256 that step's manifest records (:func:`verify_input`)."""

from __future__ import annotations

import functools
import platform
import sys
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from tiap.errors import Problems, TiapError
from tiap.io import sha256_file

__all__ = ["command_line", "manifest_warnings"]

_PACKAGES = ("numpy", "scipy", "statsmodels", "pandas", "pyarrow", "bm25s", "sentence-transformers")


#: The command line of the running ``tiap`` command (set by the CLI), recorded in manifests.
command_line: list[str] | None = None


@functools.lru_cache(maxsize=1)
def source_commit() -> str:
    """The git commit of TIAP's source tree (``<sha>`` or ``<sha>+dirty`` when tracked files
    differ from it), or ``not a git checkout`` (an installed wheel)."""
    import subprocess

    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return "not a git checkout"
    try:
        sha = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain",
                                "--untracked-files=no"], capture_output=True, text=True,
                               timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown (git failed)"
    return sha + ("+dirty" if dirty else "")


def versions() -> dict[str, str]:
    out = {"tiap": _version("tiap"), "tiap_commit": source_commit(),
           "python": sys.version.split()[0], "platform": platform.platform()}
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
    out = {
        "schema_version": schema_version,
        "command": command,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "versions": versions(),
    }
    if command_line is not None:
        out["command_line"] = list(command_line)
    return out


def manifest_warnings(warnings: Any, manifest: str | Path, *, who: str = ""
                      ) -> list[tuple[str, str]]:
    """``(code, text)`` per warning counted in a manifest (``warnings``: the manifest's
    ``{code: entry}``, entries with ``message``, ``count`` and optionally ``queries`` and
    located ``examples``), the text as a command prints it after ``warning[code]: ``::

        [who: ]message (N in Q queries, counted in MANIFEST); first: EXAMPLE

    Anything else than a mapping gives no line.

        >>> counted = {"duplicate_dropped": {"message": "a ranking repeated an item",
        ...                                  "count": 3, "queries": 2, "examples": ["q7"]}}
        >>> manifest_warnings(counted, "out/manifest.json", who="bm25")
        [('duplicate_dropped', 'bm25: a ranking repeated an item (3 in 2 queries, counted in out/manifest.json); first: q7')]
    """
    if not isinstance(warnings, Mapping):
        return []
    out = []
    for code, w in warnings.items():
        if not isinstance(w, Mapping):
            continue
        count, queries = w.get("count"), w.get("queries")
        counted = (f"{count:,}" if isinstance(count, int) else "?") + (
            f" in {queries:,} queries" if isinstance(queries, int) else "")
        examples = w.get("examples")
        first = (f"; first: {examples[0]}" if isinstance(examples, list) and examples else "")
        out.append((str(code), (f"{who}: " if who else "") + (
            f"{w.get('message', 'warning')} ({counted}, counted in {manifest}){first}")))
    return out


# ------------------------------------------------------------------------------------------
# verifying an earlier step's inputs

#: Hex digits of a sha256 shown in messages.
SHA_PREFIX = 12


def _short(digest: str) -> str:
    return digest[:SHA_PREFIX] + "…"


def _step(manifest: Mapping[str, Any]) -> str:
    command = manifest.get("command")
    return f"`tiap {command}`" if isinstance(command, str) and command else "the earlier step"


def recorded_inputs(manifest: Mapping[str, Any], manifest_path: str | Path,
                    ) -> dict[str, Mapping[str, Any]]:
    """The ``inputs`` of a step's manifest (key -> entry with ``path`` and ``sha256``), each
    entry checked for its form; a malformed entry is an error naming the manifest and key."""
    inputs = manifest.get("inputs")
    if inputs is None:
        return {}
    if not isinstance(inputs, Mapping):
        raise TiapError("'inputs' must be an object of input entries", file=manifest_path,
                        code="input")
    out: dict[str, Mapping[str, Any]] = {}
    for key, entry in inputs.items():
        if not (isinstance(entry, Mapping) and isinstance(entry.get("path"), str)
                and entry["path"] and isinstance(entry.get("sha256"), str)
                and len(entry["sha256"]) == 64):
            raise TiapError("an input entry must hold its 'path' and the 64-hex 'sha256' of "
                            "the file read", file=manifest_path, record=f"inputs.{key}",
                            code="input")
        out[str(key)] = entry
    return out


def verify_input(manifest: Mapping[str, Any], manifest_path: str | Path, key: str,
                 path: str | Path | None = None, *, option: str | None = None,
                 digests: dict[Path, str] | None = None) -> Path:
    """The file of input ``key`` of a step's manifest, verified against the sha256 recorded.

    The recorded file must still have the sha256 the step read. ``path`` is a file given in
    its place (``--run X``, ``--queries X``: a copy or a moved file); it must have that
    sha256 too. Otherwise :class:`TiapError` code ``input-changed`` names the file, the
    manifest and both sha256 prefixes; a recorded file that is gone is code ``io`` and a key
    the manifest does not record is ``invalid-value``. ``option`` names the command-line
    option that gives the file in the messages; ``digests`` caches sha256 by resolved path
    (a file recorded under several keys is read once).
    """
    entries = recorded_inputs(manifest, manifest_path)
    step = _step(manifest)
    entry = entries.get(key)
    if entry is None:
        known = ", ".join(sorted(entries)) or "none"
        raise TiapError(f"{step} recorded no input {key!r} in {manifest_path} (its inputs: "
                        f"{known}): the file cannot be verified against what that step read",
                        file=path if path is not None else manifest_path,
                        code="invalid-value")
    recorded = Path(entry["path"])
    given = Path(path) if path is not None else recorded
    how = f" with {option}" if option else ""
    if not given.is_file():
        if path is None:
            raise TiapError(f"input {key!r} that {step} read is gone (recorded in "
                            f"{manifest_path}); restore it, or pass a copy{how}",
                            file=given, code="io")
        raise TiapError("no such file", file=given, code="io")
    cache = digests if digests is not None else {}
    real = given.resolve()
    if real not in cache:
        cache[real] = sha256_file(given)
    now, then = cache[real], entry["sha256"]
    if now == then:
        return given
    if path is None or real == recorded.resolve():
        raise TiapError(f"changed since {step} read it as input {key!r}: {manifest_path} "
                        f"records sha256 {_short(then)}, the file now has {_short(now)}; "
                        f"rerun {step} on the current file, or restore it",
                        file=given, code="input-changed")
    raise TiapError(f"is not the input {key!r} that {step} read: {manifest_path} records "
                    f"{recorded} (sha256 {_short(then)}), this file has {_short(now)}; pass "
                    f"that file{how}, or rerun {step} with this one",
                    file=given, code="input-changed")


def verify_inputs(manifest: Mapping[str, Any], manifest_path: str | Path,
                  keys: Iterable[str] | None = None, *,
                  given: Mapping[str, str | Path] | None = None) -> dict[str, Path]:
    """Verify inputs of a step's manifest (``keys``, default all of them) with
    :func:`verify_input`; ``given`` maps keys to files passed in place of the recorded
    ones. Every mismatch is reported together; returns key -> verified path."""
    entries = recorded_inputs(manifest, manifest_path)
    given = dict(given or {})
    todo = list(entries) if keys is None else list(keys)
    digests: dict[Path, str] = {}
    out: dict[str, Path] = {}
    problems = Problems()
    for key in todo:
        try:
            out[key] = verify_input(manifest, manifest_path, key, given.get(key),
                                    digests=digests)
        except TiapError as exc:
            problems.extend(exc)
    problems.raise_if_any()
    return out
