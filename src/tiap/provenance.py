"""Provenance carried by every file TIAP writes (schema version, inputs, versions), and the
check every step makes on the inputs of an earlier step it reads again: each file must
still have the sha256 that step's manifest records (:func:`verify_input`)."""

from __future__ import annotations

import functools
import json
import platform
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from tiap.errors import Problems, TiapError
from tiap.io import MANIFEST_FILE, atomic_write, read_json, sha256_file

__all__ = ["command_line", "manifest_warnings", "peek_manifest", "read_manifest"]

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


# ------------------------------------------------------------------------------------------
# the manifest every step writes


@dataclass(frozen=True)
class StepSchema:
    """How one step's ``manifest.json`` is written: its schema ``version`` (raised when the
    step's output files change form), the ``layout`` (the keys after the header, in the
    order written), whether it records when it was made (``timestamp``) and whether non-ASCII
    text is escaped (``ascii``)."""

    version: int
    layout: tuple[str, ...]
    timestamp: bool = True
    ascii: bool = True


_IMPORT = StepSchema(1, ("system", "store", "format", "inputs", "counts", "warnings",
                         "outputs"))
_MEM0 = StepSchema(1, ("system", "store", "inputs", "counts", "warnings", "outputs"),
                   ascii=False)

#: step (the manifest's ``command``) -> how its manifest is written: the one home of every
#: step's schema version. An ``import FORMAT`` step not named here is ``"import"``.
STEPS: dict[str, StepSchema] = {
    "datasets export": StepSchema(1, ("dataset", "inputs", "pinned_not_read", "verified",
                                      "counts", "outputs")),
    "datasets-overlay": StepSchema(1, ("overlay", "inputs", "counts", "outputs")),
    "build-store": StepSchema(1, ("dataset", "parser", "seed", "item_ids", "counts",
                                  "parser_stats", "warnings", "outputs", "store",
                                  "local_model", "elapsed_seconds"), ascii=False),
    "import": _IMPORT,
    "import mem0": _MEM0,
    "mem0-run": _MEM0,
    # 2: per-store qrels names, rows and coverage name their store
    "targets": StepSchema(2, ("stores", "targets", "mapping_targets", "inputs", "outputs"),
                          ascii=False),
    "rescore": StepSchema(1, ("inputs", "dataset", "options", "integrity", "systems",
                              "outputs")),
    # no timestamp: reruns with the same seed write byte-identical folders
    "sensitivity": StepSchema(1, ("inputs", "options", "datasets", "answers", "notes",
                                  "outputs"), timestamp=False, ascii=False),
    "report": StepSchema(1, ("inputs", "outputs", "notes", "latex_width_pt")),
    # 2: every case names its store
    "audit cases": StepSchema(2, ("inputs", "options", "stores", "counts")),
    # 2: label rows name the item's store and the verdict's request_key
    "audit judge": StepSchema(2, ("inputs", "options", "judges", "counts", "outputs")),
    "audit agreement": StepSchema(1, ("inputs", "options", "warnings", "outputs")),
    # 2: qrels per store, manifest stores/systems, outputs with sha256; 3: composed support
    "audit graded": StepSchema(3, ("inputs", "options", "stores", "systems", "warnings",
                                   "outputs")),
    "audit import-paper": StepSchema(1, ("inputs",)),
    "answers import": StepSchema(1, ("inputs", "options", "counts", "warnings", "judges",
                                     "outputs"), ascii=False),
    "answers judge": StepSchema(1, ("inputs", "options", "counts", "warnings", "judges",
                                    "outputs"), ascii=False),
    "answers generate": StepSchema(1, ("inputs", "options", "counts", "warnings", "judges",
                                       "outputs"), ascii=False),
    # no timestamp: reruns with the same seed write byte-identical folders
    "answers analysis": StepSchema(1, ("inputs", "options", "notes", "judges", "outputs"),
                                   timestamp=False, ascii=False),
}


def step_schema(step: str) -> StepSchema:
    """The :class:`StepSchema` of ``step`` (:data:`STEPS`; ``import FORMAT`` falls back to
    ``import``); a step not declared there is a ``KeyError`` (a programming error)."""
    if step in STEPS:
        return STEPS[step]
    if step.startswith("import "):
        return STEPS["import"]
    raise KeyError(f"no manifest schema declared for step {step!r} (tiap.provenance.STEPS)")


#: The keys every manifest starts with, in this order (``created`` and ``command_line``
#: only when recorded).
HEADER = ("schema_version", "command", "created", "versions", "command_line")


@dataclass(frozen=True, eq=False)
class Manifest(Mapping[str, Any]):
    """The ``manifest.json`` of one step: the header every step writes (schema version,
    ``command``, ``created``, ``versions``, ``command_line``), the fields most steps have
    (``inputs``, ``options``, ``warnings``, ``outputs``; ``None``: not written) and the
    step's own keys (``extra``). :meth:`new` makes one for a step running now,
    :meth:`write` writes it, :func:`read_manifest` reads one back.

    It reads as the mapping of its JSON (``man["options"]``, ``man.get("warnings")``), the
    keys in the order written: the step's layout in :data:`STEPS`, then keys it does not
    name in the order given.
    """

    command: str | None
    schema_version: int | None
    created: str | None = None
    versions: Mapping[str, str] | None = None
    command_line: Sequence[str] | None = None
    inputs: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None
    options: Mapping[str, Any] | None = None
    warnings: Mapping[str, Any] | None = None
    outputs: Sequence[str] | Mapping[str, Any] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def new(cls, step: str, *, inputs: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None
            = None, options: Mapping[str, Any] | None = None,
            warnings: Mapping[str, Any] | None = None,
            outputs: Sequence[str] | Mapping[str, Any] | None = None,
            extra: Mapping[str, Any] | None = None,
            more_versions: Mapping[str, str] | None = None) -> Manifest:
        """The manifest of ``step`` running now: its schema version from :data:`STEPS`, the
        time (unless the step records none), :func:`versions` (and ``more_versions``: a
        parser's) and the command line."""
        schema = step_schema(step)
        return cls(step, schema.version,
                   created=(datetime.now(UTC).isoformat(timespec="seconds")
                            if schema.timestamp else None),
                   versions={**versions(), **(more_versions or {})},
                   command_line=list(command_line) if command_line is not None else None,
                   inputs=inputs, options=options, warnings=warnings, outputs=outputs,
                   extra=dict(extra or {}))

    def to_json(self) -> dict[str, Any]:
        """The manifest as the JSON object written, keys in order."""
        out: dict[str, Any] = {}
        for key, value in (("schema_version", self.schema_version), ("command", self.command),
                           ("created", self.created), ("versions", self.versions),
                           ("command_line", self.command_line)):
            if value is not None:
                out[key] = (dict(value) if isinstance(value, Mapping)
                            else list(value) if isinstance(value, list | tuple) else value)
        body = {k: v for k, v in (("inputs", self.inputs), ("options", self.options),
                                  ("warnings", self.warnings), ("outputs", self.outputs))
                if v is not None}
        clash = sorted({*HEADER, "inputs", "options", "warnings", "outputs"} & set(self.extra))
        if clash:
            raise ValueError(f"extra keys {clash} are fields of the manifest")
        body.update(self.extra)
        for key in self._layout():
            if key in body:
                out[key] = body.pop(key)
        out.update(body)
        return out

    def _schema(self) -> StepSchema | None:
        try:
            return step_schema(self.command) if self.command is not None else None
        except KeyError:  # read back from a step this version does not know
            return None

    def _layout(self) -> tuple[str, ...]:
        schema = self._schema()
        return schema.layout if schema is not None else ()

    def text(self) -> str:
        """The bytes :meth:`write` writes, as text: indented JSON and a newline."""
        schema = self._schema()
        return json.dumps(self.to_json(), indent=2,
                          ensure_ascii=schema.ascii if schema is not None else True,
                          allow_nan=False) + "\n"

    def write(self, path: str | Path) -> Path:
        """Write the manifest to the file ``path`` (a step's ``OUT/manifest.json``, or a
        sidecar ``FILE.manifest.json``), replaced in one step; returns ``path``."""
        with atomic_write(path) as fh:
            fh.write(self.text())
        return Path(path)

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> Manifest:
        """A manifest read back from its JSON object, every key as written (no value is
        checked here: a reader checks what it uses); its mapping is that object."""
        body = {k: v for k, v in obj.items() if k not in HEADER}
        return cls(obj.get("command"), obj.get("schema_version"), created=obj.get("created"),
                   versions=obj.get("versions"), command_line=obj.get("command_line"),
                   inputs=body.pop("inputs", None), options=body.pop("options", None),
                   warnings=body.pop("warnings", None), outputs=body.pop("outputs", None),
                   extra=body)

    # the mapping of the JSON written
    @functools.cached_property
    def _view(self) -> dict[str, Any]:
        return self.to_json()

    def __getitem__(self, key: str) -> Any:
        return self._view[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._view)

    def __len__(self) -> int:
        return len(self._view)


#: What to run on a folder another step wrote than the one expected: (expected, found) ->
#: hint.
_WRONG_STEP_HINTS = {
    ("rescore", "sensitivity"): " (run 'tiap report' on the output of 'tiap sensitivity')",
    ("sensitivity", "rescore"): " (run 'tiap sensitivity' on it first)",
}


def read_manifest(path: str | Path, *, step: str | None = None) -> Manifest:
    """The manifest of the output folder ``path`` (its ``manifest.json``; a path ending in
    ``.json`` is the manifest file itself), read with :func:`tiap.io.read_json`, the one
    strict JSON reader (``NaN``, a key twice are located errors), which TIAP's own writers
    satisfy; JSON that is not an object is an error (code ``input``).

    With ``step``, the manifest must be that step's: a folder without a manifest or one
    another step wrote is an error naming the step expected and the one found.

    >>> from pathlib import Path
    >>> Path("out").mkdir()
    >>> _ = Path("out/manifest.json").write_text(
    ...     '{"command": "rescore", "schema_version": 1, "options": {"k": 5}}')
    >>> man = read_manifest("out")
    >>> man["command"], man["options"]
    ('rescore', {'k': 5})
    >>> read_manifest("out", step="sensitivity")
    Traceback (most recent call last):
    tiap.errors.TiapError: out/manifest.json: expected the output of 'tiap sensitivity', found 'rescore' (run 'tiap sensitivity' on it first)
    """
    p = Path(path)
    mf = p if p.suffix == ".json" and not p.is_dir() else p / MANIFEST_FILE
    if step is not None and not mf.exists():
        raise TiapError(f"not an output folder of 'tiap {step}' (no {MANIFEST_FILE})", file=p)
    obj = read_json(mf)
    if not isinstance(obj, dict):
        raise TiapError("a manifest must be a JSON object", file=mf, code="input")
    found = obj.get("command")
    if step is not None and found != step:
        raise TiapError(f"expected the output of 'tiap {step}', found {found!r}"
                        f"{_WRONG_STEP_HINTS.get((step, found), '')}", file=mf)
    return Manifest.from_json(obj)


def peek_manifest(path: str | Path) -> Manifest | None:
    """:func:`read_manifest` of ``path``, or ``None`` where there is no readable manifest
    (missing, not UTF-8, not JSON, not an object).

    >>> from pathlib import Path
    >>> Path("half").mkdir()
    >>> _ = Path("half/manifest.json").write_text('{"command": "resc')  # cut short
    >>> peek_manifest("half") is None, peek_manifest("nowhere") is None
    (True, True)
    """
    try:
        return read_manifest(path)
    except TiapError:
        return None


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
