"""Evidence overlays: other evidence sets for the same queries (label errata, re-annotations).

An overlay replaces the evidence of some queries and leaves the others as they are. Its file
(``overlay.jsonl``) holds one JSON object per line::

    {"query_id": "conv-26:q1", "evidence": ["conv-26:D1:14"], "note": "WRONG_CITATION"}

- ``query_id``: a query of the dataset (as in ``queries.jsonl``);
- ``evidence``: its evidence under the overlay, source unit ids as in ``queries.jsonl``; an
  empty list means the query has no evidence under the overlay (a zero-target case);
- ``note`` (optional): why, e.g. the erratum's error type.

A query id may appear once. Targets read an overlay through their name:
``raw~corrected`` is Raw under the overlay named ``corrected`` (``tiap rescore --overlay
corrected=PATH``; :mod:`tiap.targets.targets`), so Stage III compares a target with itself
under other evidence exactly as it compares two targets.

The first overlay TIAP ships a loader for is the LoCoMo evidence audit of dial481/locomo-audit
(``errors.json``, CC BY-NC 4.0, pinned like the datasets in ``checksums/locomo-audit.tsv``):
156 audited QA items, each with ``cited_evidence`` (the dataset's) and ``correct_evidence``.
Its ids are ``locomo_<conversation index>_qa<question index>``, both 0-based in the file order
of ``locomo10.json``; :func:`locomo_audit_overlay` maps them to TIAP's ``conv-26:q1`` and
checks each one's question text against the dataset, and reports every id it cannot map and
every evidence id it cannot resolve.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from tiap.datasets.files import DataSource
from tiap.datasets.locomo import parse_dia_ids
from tiap.datasets.registry import load
from tiap.errors import Problems, TiapError
from tiap.io import atomic_write, check_output_folder, iter_jsonl, output_folder
from tiap.provenance import Manifest, input_entry

__all__ = ["OVERLAYS", "EvidenceOverlay", "OverlayExport", "OverlayProblem", "export_overlay",
           "locomo_audit_overlay", "read_overlay", "write_overlay"]

_AUDIT_ID = re.compile(r"locomo_([0-9]+)_qa([0-9]+)\Z")
#: The warning code of each evidence problem of :func:`tiap.datasets.locomo.parse_dia_ids`
#: (a ``split`` string is read, not a problem); written out so the codes test sees them.
_EVIDENCE_CODES = {"malformed": "malformed_evidence", "unresolvable": "unresolvable_evidence"}


@dataclass(frozen=True)
class OverlayProblem:
    """An overlay row that could not be used, or a part of it."""

    record: str  # the id as the source gives it
    kind: str  # a warning code: unmapped_id, question_mismatch, *_evidence (_EVIDENCE_CODES)
    detail: str

    def to_json(self) -> dict[str, str]:
        return {"record": self.record, "kind": self.kind, "detail": self.detail}


@dataclass(frozen=True)
class EvidenceOverlay:
    """Evidence per query id under one overlay, with what could not be used."""

    evidence: Mapping[str, tuple[str, ...]]
    notes: Mapping[str, str] = field(default_factory=dict)
    problems: tuple[OverlayProblem, ...] = ()
    source: str = ""

    def rows(self) -> Iterable[dict[str, Any]]:
        for qid, ev in self.evidence.items():
            row: dict[str, Any] = {"query_id": qid, "evidence": list(ev)}
            if qid in self.notes:
                row["note"] = self.notes[qid]
            yield row


def read_overlay(path: str | Path) -> EvidenceOverlay:
    """An ``overlay.jsonl`` file (module docstring); every bad line is a located error."""
    p = Path(path)
    if not p.is_file():
        raise TiapError("overlay file not found", file=p, code="io")
    evidence: dict[str, tuple[str, ...]] = {}
    notes: dict[str, str] = {}
    problems = Problems(p)
    for n, row in iter_jsonl(p, problems):
        qid = row.get("query_id") if isinstance(row, dict) else None
        ev = row.get("evidence") if isinstance(row, dict) else None
        if not isinstance(qid, str) or not qid.strip():
            problems.add("field 'query_id' must be a non-empty string", n)
        elif not isinstance(ev, list) or not all(isinstance(u, str) and u for u in ev):
            problems.add("field 'evidence' must be a list of unit ids (strings)", n, qid)
        elif qid in evidence:
            problems.add("query id given twice", n, qid)
        else:
            evidence[qid] = tuple(dict.fromkeys(ev))
            note = row.get("note")
            if note is not None:
                notes[qid] = str(note)
    problems.raise_if_any()
    if not evidence:
        raise TiapError("the overlay holds no row", file=p, code="input")
    return EvidenceOverlay(MappingProxyType(evidence), MappingProxyType(notes), (), str(p))


def write_overlay(path: str | Path, overlay: EvidenceOverlay) -> int:
    """Write ``overlay`` as ``overlay.jsonl`` (atomically); returns the number of rows."""
    n = 0
    with atomic_write(path) as fh:
        for row in overlay.rows():
            fh.write(json.dumps(row, ensure_ascii=False, allow_nan=False) + "\n")
            n += 1
    return n


#: Evidence overlays TIAP can build from pinned files: name -> (data folder, file, dataset).
OVERLAYS = {"locomo-audit": ("locomo-audit", "errors.json", "locomo")}

#: The step (the manifest's ``command``) of :func:`export_overlay`.
OVERLAY_STEP = "datasets-overlay"


@dataclass(frozen=True)
class OverlayExport:
    """What :func:`export_overlay` wrote: the overlay, its ``rows`` in ``overlay.jsonl`` and
    how many queries it gives other evidence than the dataset's (``changed``)."""

    out: Path
    overlay: EvidenceOverlay
    rows: int
    changed: int


def export_overlay(name: str, out: str | Path, *, source: DataSource | None = None,
                   force: bool = False) -> OverlayExport:
    """Build the overlay ``name`` (:data:`OVERLAYS`) from its pinned file and write
    ``overlay.jsonl``, ``problems.jsonl`` (every id or evidence it could not use) and
    ``manifest.json`` into ``out``, replaced whole (a folder that is not an earlier
    overlay's output is refused, ``error[stale-output]``, unless ``force``).

        >>> sorted(OVERLAYS)
        ['locomo-audit']
        >>> export_overlay("corrected", "out")
        Traceback (most recent call last):
        tiap.errors.TiapError: unknown overlay 'corrected'; known: locomo-audit
    """

    if name not in OVERLAYS:
        raise TiapError(f"unknown overlay {name!r}; known: {', '.join(OVERLAYS)}",
                        code="usage")
    check_output_folder(out, OVERLAY_STEP, force=force)  # before anything is read
    folder, file, dataset = OVERLAYS[name]
    if source is None:
        source = DataSource()
    path = source.path(folder, file)
    ds = load(dataset, source=source)
    ov = locomo_audit_overlay(path, ds.bundles())
    queries = {q.query_id: q for q in ds.queries_iter()}
    changed = sum(1 for q, ev in ov.evidence.items() if set(ev) != set(queries[q].evidence))
    with output_folder(out, OVERLAY_STEP, force=force) as tmp:
        n = write_overlay(tmp / "overlay.jsonl", ov)
        with atomic_write(tmp / "problems.jsonl") as fh:
            for p in ov.problems:
                fh.write(json.dumps(p.to_json(), ensure_ascii=False, allow_nan=False) + "\n")
        Manifest.new(OVERLAY_STEP, inputs={f"{folder}/{file}": input_entry(path)},
                     outputs=["overlay.jsonl", "problems.jsonl"],
                     extra={"overlay": name, "counts": {"rows": n, "changed_queries": changed,
                                                        "problems": len(ov.problems)}},
                     ).write(tmp / "manifest.json")
    return OverlayExport(Path(out), ov, n, changed)


def locomo_audit_overlay(errors_path: str | Path, conversations: Iterable[Any],
                         ) -> EvidenceOverlay:
    """The corrected evidence of dial481/locomo-audit's ``errors.json`` as an overlay over
    LoCoMo (``conversations``: the dataset's bundles, in file order).

    An audited item is used when its id maps to a LoCoMo question whose text equals the
    file's ``question`` (whitespace and case aside); its evidence is ``correct_evidence``
    resolved like LoCoMo's own evidence ids (unresolvable ids dropped and reported; an item
    left with none keeps an empty evidence, as the audit says). Every other item is a
    reported problem, never dropped in silence.
    """

    p = Path(errors_path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise TiapError(f"not JSON: {exc.msg}", file=p, line=exc.lineno) from None
    if not isinstance(data, list):
        raise TiapError("expected a list of audited QA items", file=p)
    convs = list(conversations)
    evidence: dict[str, tuple[str, ...]] = {}
    notes: dict[str, str] = {}
    problems: list[OverlayProblem] = []

    def norm(text: Any) -> str:
        return " ".join(str(text).split()).casefold()

    for i, item in enumerate(data):
        rid = item.get("question_id") if isinstance(item, dict) else None
        m = _AUDIT_ID.fullmatch(rid) if isinstance(rid, str) else None
        if m is None:
            problems.append(OverlayProblem(str(rid if rid is not None else f"#{i}"),
                                           "unmapped_id", "expected locomo_<n>_qa<m>"))
            continue
        ci, qi = int(m[1]), int(m[2])
        if ci >= len(convs) or qi >= len(convs[ci].queries):
            problems.append(OverlayProblem(rid, "unmapped_id",
                                           f"LoCoMo has no conversation {ci} question {qi}"))
            continue
        bundle = convs[ci]
        q = bundle.queries[qi]
        if norm(item.get("question", "")) != norm(q.question):
            problems.append(OverlayProblem(rid, "question_mismatch",
                                           f"{q.query_id} asks {q.question!r}, the audit "
                                           f"{item.get('question')!r}"))
            continue
        given = item.get("correct_evidence")
        if not isinstance(given, list):
            problems.append(OverlayProblem(rid, "malformed_evidence",
                                           "correct_evidence is not a list"))
            continue
        known = {t.unit_id.split(":", 1)[1] for t in bundle.turns}
        resolved: list[str] = []
        for g in given:
            ok, bad = parse_dia_ids(str(g), known)
            resolved += [f"{q.collection_id}:{d}" for d in ok]
            problems += [OverlayProblem(rid, _EVIDENCE_CODES[kind], f"{part}: {detail}")
                         for part, kind, detail in bad if kind != "split"]
        evidence[q.query_id] = tuple(dict.fromkeys(resolved))
        notes[q.query_id] = str(item.get("error_type", ""))
    return EvidenceOverlay(MappingProxyType(evidence), MappingProxyType(notes),
                           tuple(problems), str(p))
