"""Import the paper's published ranked traces (MTEL-Mem ``runs/**/trace*.jsonl.gz``).

The paper ("Same Ranking, Different Winner", arXiv 2605.24060) released, for some of its runs,
one JSON object per query with the ranked stored ids, but not the lineage databases that say
which stored item derives from which LoCoMo turn. :func:`import_mtel_trace` turns such a trace
into TIAP records (:class:`~tiap.memory.Item`, :class:`~tiap.datasets.Query`, a
:class:`~tiap.runs.Run`) and recovers as much lineage as the trace itself proves. What it
cannot recover is stated, per item and per (query, target), in an :class:`MtelReport`; nothing
is guessed silently. ``docs/paper-traces.md`` has the field-by-field findings and the figures
this reproduces.

What a row holds (all published traces are LoCoMo runs)
--------------------------------------------------------
``tenant_id``
    ``locomo_<sample_id>``: the conversation (TIAP collection ``<sample_id>``).
``query`` / ``query_index``
    The question, and its 1-based position among the queries *that run* kept (so the same
    LoCoMo question has different indexes in different runs). The query is matched to
    LoCoMo's ``qa`` list by its text, in order, and named ``<sample_id>:q<i>`` (``i`` the
    0-based position in that conversation's ``qa``), as :mod:`tiap.datasets.locomo` names it.
``expected_fixture_indexes``
    The gold turns as 0-based row indexes of the LoCoMo turns in file order *over the whole
    file* (conversation by conversation, sessions in order): row 419 is ``conv-30:D1:1``.
``returned_ids_full`` / ``returned_ids_topk``
    The ranking (depth 60; the two lists are equal in every published row). ``ranked_preview``
    repeats it rank by rank with extra fields.

Three layouts, recognised per row by content
--------------------------------------------
``kind-flag`` (the Mem0 transfer run)
    Each preview entry has ``kind`` (``raw_turn`` or ``observation``) and
    ``is_expected_family_match``: whether the item's lineage reaches *any* gold turn of the
    query. ``expected_memory_ids`` / ``expected_group_sizes`` are empty.
``ids-only`` (the MemoryOS transfer run)
    No preview. Raw items are named ``raw_<row>`` with ``<row>`` the global fixture row
    (checked: every rank-1 ``top1_text`` is that turn, rendered ``Speaker (date): text``);
    ``session_*`` items are MemoryOS session summaries whose lineage the trace does not give.
``native`` (the paper's own store; the ``shared_canonical`` traces)
    ``expected_memory_ids`` is the *sorted union* of the gold turns' families (every member,
    ranked or not), ``expected_group_sizes[i]`` the family size of gold turn ``i`` (in the
    order of ``expected_fixture_indexes``), ``is_expected`` = membership in that union, and
    ``normalized_content`` the stored text: raw turns read ``Speaker (session date): text``.

How lineage is recovered
------------------------
Every statement below is a constraint on an item's set of source turns ``L(x)``; ``S_q`` is the
set of gold turns of query ``q``:

- a flag or a union says ``L(x) ∩ S_q ≠ ∅`` (member) or ``L(x) ∩ S_q = ∅`` (not a member);
  in ``native`` rows the union is complete, so every item of the conversation that is missing
  from it is a non-member;
- raw items have exactly one source, and a turn has exactly one raw item (every published
  Raw group has size 1); ``raw_<row>`` and a stored text equal to a LoCoMo turn name it;
- ``native`` families are disjoint within each query (the union's size is the sum of the group
  sizes in every row), so each native item is taken to have one source; a family of size ``n``
  has exactly ``n`` members and exactly one raw member;
- Mem0 observations can derive from several turns (the flags contradict a single source for
  966 of them), so for them only proven sources are listed.

These are propagated to a fixed point. A raw item that stays ambiguous between gold turns of
the same queries (Mem0: 164 items) is given one of them by a bipartite matching and labelled
``assumed``: Raw values do not depend on that choice (each raw item fills exactly one group),
Source values may, so such queries are not ``exact`` under Source. With ``infer_from_text``,
``native`` derived items left ambiguous are given the candidate turn whose text they overlap
most, within the family sizes, and labelled ``text`` (their queries become ``inferred``);
every item whose row rests on the assignment carries ``inferred`` (the turns the trace
alone allows), so that rescoring counts the values resting on it as inferred, never exact.

Each item carries ``mtel_lineage`` in its metadata: ``id`` / ``content`` (raw item named by its
id or text), ``trace`` (proven by flags, unions and sizes), ``partial`` (multi-source item: the
listed sources are proven, others are possible), ``assumed``, ``text``, ``ambiguous`` (one of
``mtel_candidates``), ``unknown``, or ``placeholder``: an item the trace proves exists but never
shows, added for a gold turn so that its groups exist. Every gold turn gets a raw item
(``raw_<row>`` for MemoryOS, else ``mtel-unretrieved-raw:<unit id>``); in ``native`` traces a
gold turn whose family has two or more members also gets a derived one when none of its
derived members is placed (``mtel-unretrieved-derived:<unit id>``). Placeholders are never
ranked, so they change group counts, never gains; family *sizes* in the import can therefore
differ from the store's (set-mode credit on these imports is not the paper's figure).

Per (query, target), :class:`QueryRecovery` says whether the imported items give the paper's
group-credit values exactly: every ranked item that may be credited has a determined
membership in each gold group, and each group's existence is known. A Canonical group of a
Mem0 or MemoryOS turn whose derived items are never seen is unknown (the trace cannot tell
whether that turn has any).
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

from tiap.datasets.files import DataSource
from tiap.datasets.locomo import LoCoMo
from tiap.datasets.queryfile import write_queries
from tiap.datasets.records import Query
from tiap.errors import Problems, TiapError
from tiap.importers import COVERAGE_FILE, coverage_json, import_folder, lineage_coverage
from tiap.io import iter_jsonl, sha256_file
from tiap.memory.store import (
    RAW_KIND,
    Inference,
    Item,
    Placeholder,
    Uncertainty,
    stamp_store,
    write_items,
)
from tiap.provenance import Manifest, input_entry
from tiap.runs import Ranking, Run, warnings_json, write_jsonl_run
from tiap.runs.formats import RunWarnings, dedup_ranking

__all__ = [
    "FORMAT_IDS_ONLY",
    "FORMAT_KIND_FLAG",
    "FORMAT_NATIVE",
    "MTEL_FORMATS",
    "STATUS_EXACT",
    "STATUS_INFERRED",
    "STATUS_UNKNOWN",
    "TARGET_NAMES",
    "MtelImport",
    "MtelReport",
    "QueryRecovery",
    "import_mtel",
    "import_mtel_trace",
    "write_mtel_import",
]


FORMAT_KIND_FLAG = "kind-flag"
FORMAT_IDS_ONLY = "ids-only"
FORMAT_NATIVE = "native"
MTEL_FORMATS: tuple[str, ...] = (FORMAT_KIND_FLAG, FORMAT_IDS_ONLY, FORMAT_NATIVE)

TARGET_NAMES: tuple[str, ...] = ("raw", "source", "canonical")
STATUS_EXACT = "exact"  # the imported lineage gives this query's group-credit values exactly
STATUS_INFERRED = "inferred"  # exact only if the text-based assignments are right
STATUS_UNKNOWN = "unknown"  # the trace does not determine them

DERIVED_UNSPECIFIED = "derived"  # a native derived item: the trace does not say which kind
KIND_UNKNOWN = "unknown"  # a native family member never shown: raw or derived is undetermined

_TENANT_PREFIX = "locomo_"
_RAW_ID = re.compile(r"raw_(\d+)")
_RAW_TEXT = re.compile(r"^(?P<speaker>[^()\n]+?) \((?P<date>[^()\n]*)\): ")
_WORD = re.compile(r"[a-z0-9]+")

# lineage labels, in the order they are reported
_LABELS = (
    "id",
    "content",
    "trace",
    "partial",
    "text",
    "ambiguous",
    "unknown",
    "placeholder",
    "folded",
)


# --------------------------------------------------------------------------------------------
# Records
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class QueryRecovery:
    """How far the trace determines one query's groups, per target.

    ``raw``, ``source`` and ``canonical`` are :data:`STATUS_EXACT`, :data:`STATUS_INFERRED` or
    :data:`STATUS_UNKNOWN`; ``reasons`` says why a target is not exact (and notes assumptions
    that do not change the values). ``query_index`` and ``line`` locate the trace row.
    """

    query_id: str
    line: int
    query_index: int
    raw: str
    source: str
    canonical: str
    reasons: tuple[str, ...] = ()

    def status(self, target: str) -> str:
        if target not in TARGET_NAMES:
            raise ValueError(f"unknown target {target!r}; known: {', '.join(TARGET_NAMES)}")
        return str(getattr(self, target))

    def to_json(self) -> dict[str, Any]:
        return {
            "query_id": self.query_id,
            "line": self.line,
            "query_index": self.query_index,
            "raw": self.raw,
            "source": self.source,
            "canonical": self.canonical,
            "reasons": list(self.reasons),
        }


@dataclass(frozen=True)
class MtelReport:
    """What the import recovered and what it could not, with counts (:meth:`counts`).

    Item ids are listed by what is known of them; ``queries`` has one :class:`QueryRecovery`
    per trace row. ``evidence_differences`` lists queries whose gold turns in the trace differ
    from TIAP's own reading of LoCoMo's evidence; ``locomo_queries_not_in_trace`` the LoCoMo
    queries the run left out; ``inconsistencies`` any contradiction found in the trace (none in
    the published files).
    """

    trace: str
    trace_sha256: str
    locomo: str
    format: str
    system: str
    rows: int
    items: int
    kinds: tuple[tuple[str, int], ...]
    lineage: tuple[tuple[str, int], ...]
    placeholder_items: tuple[str, ...]
    folded_items: tuple[str, ...]
    ambiguous_items: tuple[str, ...]
    ambiguous_raw_items: tuple[str, ...]
    text_inferred_items: tuple[str, ...]
    partial_lineage_items: tuple[str, ...]
    unknown_lineage_items: tuple[str, ...]
    unknown_kind_items: tuple[str, ...]
    units_without_known_derived: tuple[str, ...]
    queries: tuple[QueryRecovery, ...]
    evidence_differences: tuple[tuple[str, str], ...]
    locomo_queries_not_in_trace: tuple[str, ...]
    inconsistencies: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def query_ids(self, target: str, status: str = STATUS_EXACT) -> tuple[str, ...]:
        """Ids of the queries whose ``target`` groups have this status, in trace order."""
        return tuple(q.query_id for q in self.queries if q.status(target) == status)

    def counts(self) -> dict[str, Any]:
        per_target = {t: dict(Counter(q.status(t) for q in self.queries)) for t in TARGET_NAMES}
        return {
            "rows": self.rows,
            "queries": len(self.queries),
            "items": self.items,
            "kinds": dict(self.kinds),
            "lineage": dict(self.lineage),
            "placeholder_items": len(self.placeholder_items),
            "folded_items": len(self.folded_items),
            "ambiguous_items": len(self.ambiguous_items),
            "ambiguous_raw_items": len(self.ambiguous_raw_items),
            "text_inferred_items": len(self.text_inferred_items),
            "partial_lineage_items": len(self.partial_lineage_items),
            "unknown_lineage_items": len(self.unknown_lineage_items),
            "unknown_kind_items": len(self.unknown_kind_items),
            "units_without_known_derived": len(self.units_without_known_derived),
            "query_status": per_target,
            "evidence_differences": len(self.evidence_differences),
            "locomo_queries_not_in_trace": len(self.locomo_queries_not_in_trace),
            "inconsistencies": len(self.inconsistencies),
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "trace": self.trace,
            "trace_sha256": self.trace_sha256,
            "locomo": self.locomo,
            "format": self.format,
            "system": self.system,
            "counts": self.counts(),
            "placeholder_items": list(self.placeholder_items),
            "folded_items": list(self.folded_items),
            "ambiguous_items": list(self.ambiguous_items),
            "ambiguous_raw_items": list(self.ambiguous_raw_items),
            "text_inferred_items": list(self.text_inferred_items),
            "partial_lineage_items": list(self.partial_lineage_items),
            "unknown_lineage_items": list(self.unknown_lineage_items),
            "unknown_kind_items": list(self.unknown_kind_items),
            "units_without_known_derived": list(self.units_without_known_derived),
            "evidence_differences": [
                {"query_id": q, "detail": d} for q, d in self.evidence_differences
            ],
            "locomo_queries_not_in_trace": list(self.locomo_queries_not_in_trace),
            "inconsistencies": list(self.inconsistencies),
            "notes": list(self.notes),
            "queries": [q.to_json() for q in self.queries],
        }


@dataclass(frozen=True)
class MtelImport:
    """One imported trace: items with recovered lineage, queries, the run, and the report."""

    items: tuple[Item, ...]
    queries: tuple[Query, ...]
    run: Run
    report: MtelReport

    @property
    def rankings(self) -> tuple[Ranking, ...]:
        """The run's rankings (``query_id``, ``system``, ``item_ids``, ``scores``)."""
        return self.run.rankings

    @property
    def system(self) -> str:
        return self.run.system


# --------------------------------------------------------------------------------------------
# LoCoMo: global fixture rows, unit ids, queries
# --------------------------------------------------------------------------------------------


class _LocomoFile(LoCoMo):
    """LoCoMo read from an explicit ``locomo10.json`` (no checksum pin: the caller chose it)."""

    def __init__(self, path: Path) -> None:
        super().__init__(DataSource(verify=False, allow_download=False))
        self._file = path

    def path(self, stored_path: str) -> Path:
        return self._file


@dataclass
class _Locomo:
    path: Path
    units: list[str]  # global fixture row -> unit id
    unit_collection: list[str]
    rendered: dict[str, int]  # normalised "Speaker (date): text" -> row
    unit_words: list[frozenset[str]]
    queries: dict[str, list[Query]]  # collection -> queries in qa order


def _norm_text(text: str) -> str:
    return " ".join(_WORD.findall(text.lower().replace("%", " percent ")))


def _load_locomo(locomo_path: str | Path | None) -> _Locomo:
    if locomo_path is None:
        ds: LoCoMo = LoCoMo()
        path = ds.path(LoCoMo.FILE)
    else:
        path = Path(locomo_path)
        ds = _LocomoFile(path)
    units: list[str] = []
    coll: list[str] = []
    rendered: dict[str, int] = {}
    words: list[frozenset[str]] = []
    queries: dict[str, list[Query]] = {}
    for b in ds.bundles():
        dates = {s.session_id: s.date for s in b.sessions}
        for t in b.turns:
            row = len(units)
            units.append(t.unit_id)
            coll.append(t.collection_id)
            rendered.setdefault(
                _norm_text(f"{t.speaker} ({dates.get(t.session_id)}): {t.text}"), row
            )
            words.append(frozenset(_WORD.findall(t.text.lower())))
        queries[b.collection.collection_id] = list(b.queries)
    return _Locomo(Path(path), units, coll, rendered, words, queries)


# --------------------------------------------------------------------------------------------
# Reading rows
# --------------------------------------------------------------------------------------------


@dataclass
class _Row:
    line: int
    query_index: int
    collection: str
    question: str
    gold: tuple[int, ...]  # global fixture rows
    ranking: tuple[str, ...]
    scores: tuple[float, ...] | None
    fmt: str
    category: int | None = None
    kind: dict[str, str | None] = field(default_factory=dict)  # ranked item -> kind hint
    flag: dict[str, bool] = field(default_factory=dict)  # ranked item -> member of a gold family
    text: dict[str, str] = field(default_factory=dict)
    union: tuple[str, ...] = ()
    sizes: tuple[int, ...] = ()
    full_differs: bool = False
    query: Query | None = None


def _row_format(obj: dict[str, Any]) -> str | None:
    preview = obj.get("ranked_preview")
    if preview is None:
        return FORMAT_IDS_ONLY
    if not isinstance(preview, list) or not preview or not isinstance(preview[0], dict):
        return None
    first = preview[0]
    if "is_expected_family_match" in first and "kind" in first:
        return FORMAT_KIND_FLAG
    if "is_expected" in first and "expected_memory_ids" in obj and "expected_group_sizes" in obj:
        return FORMAT_NATIVE
    return None


def _int_list(value: Any) -> list[int] | None:
    if not isinstance(value, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in value
    ):
        return None
    return list(value)


def _str_list(value: Any) -> list[str] | None:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        return None
    return list(value)


def _parse_row(obj: Any, line: int, lc: _Locomo, probs: Problems) -> _Row | None:
    def bad(msg: str) -> None:
        probs.add(msg, line)

    if not isinstance(obj, dict):
        bad("a trace row must be a JSON object")
        return None
    missing = [
        k for k in ("query_index", "tenant_id", "query", "expected_fixture_indexes") if k not in obj
    ]
    if "returned_ids_full" not in obj and "returned_ids_topk" not in obj:
        missing.append("returned_ids_full (or returned_ids_topk)")
    if missing:
        bad("trace row has no " + ", ".join(repr(m) for m in missing))
        return None
    qindex = obj["query_index"]
    tenant = obj["tenant_id"]
    if not isinstance(qindex, int) or isinstance(qindex, bool):
        bad(f"'query_index' must be an integer, got {qindex!r}")
        return None
    if not isinstance(tenant, str) or not tenant.startswith(_TENANT_PREFIX):
        bad(
            f"'tenant_id' must be 'locomo_<sample_id>' (only LoCoMo traces were published), "
            f"got {tenant!r}"
        )
        return None
    cid = tenant[len(_TENANT_PREFIX) :]
    if cid not in lc.queries:
        bad(f"tenant {tenant!r} names no LoCoMo conversation ({lc.path})")
        return None
    if not isinstance(obj["query"], str):
        bad("'query' must be a string")
        return None
    gold = _int_list(obj["expected_fixture_indexes"])
    if gold is None:
        bad("'expected_fixture_indexes' must be a list of integers")
        return None
    for g in gold:
        if not 0 <= g < len(lc.units):
            bad(f"fixture row {g} is outside LoCoMo's {len(lc.units)} turns")
            return None
        if lc.unit_collection[g] != cid:
            bad(f"fixture row {g} is {lc.units[g]}, not a turn of {cid}")
            return None
    if len(set(gold)) != len(gold):
        bad("'expected_fixture_indexes' repeats a row")
        return None
    full = obj.get("returned_ids_full")
    topk = obj.get("returned_ids_topk")
    ranking = _str_list(full if full is not None else topk)
    if ranking is None:
        bad("the ranking ('returned_ids_full' / 'returned_ids_topk') must be a list of ids")
        return None
    fmt = _row_format(obj)
    if fmt is None:
        bad(
            "unrecognised trace row: 'ranked_preview' is empty or has neither 'kind' with "
            "'is_expected_family_match' nor 'is_expected' with 'expected_memory_ids'"
        )
        return None
    category = obj.get("category")
    row = _Row(
        line,
        qindex,
        cid,
        obj["query"],
        tuple(gold),
        tuple(ranking),
        None,
        fmt,
        category=category if isinstance(category, int) else None,
        full_differs=full is not None and topk is not None and full != topk,
    )
    if fmt == FORMAT_IDS_ONLY:
        top1 = obj.get("top1_text")
        if isinstance(top1, str) and ranking:
            row.text[ranking[0]] = top1
        return row
    preview = obj["ranked_preview"]
    scores: list[float] = []
    for pos, p in enumerate(preview):
        if not isinstance(p, dict) or not isinstance(p.get("memory_id"), str):
            bad(f"ranked_preview[{pos}] has no 'memory_id'")
            return None
        mid = p["memory_id"]
        if pos >= len(ranking) or ranking[pos] != mid:
            bad(f"ranked_preview[{pos}] ({mid}) does not follow the ranking's order")
            return None
        key = "is_expected_family_match" if fmt == FORMAT_KIND_FLAG else "is_expected"
        flag = p.get(key)
        if not isinstance(flag, bool):
            bad(f"ranked_preview[{pos}] has no boolean {key!r}")
            return None
        row.flag[mid] = flag
        score = p.get("score", p.get("rrf_score"))
        if isinstance(score, (int, float)) and not isinstance(score, bool):
            scores.append(float(score))
        if fmt == FORMAT_KIND_FLAG:
            kind = p.get("kind")
            if not isinstance(kind, str) or not kind:
                bad(f"ranked_preview[{pos}] has no 'kind'")
                return None
            row.kind[mid] = RAW_KIND if kind == "raw_turn" else kind
        else:
            content = p.get("normalized_content")
            if isinstance(content, str):
                row.text[mid] = content
    if len(scores) == len(ranking):
        row.scores = tuple(scores)
    if fmt == FORMAT_NATIVE:
        union = _str_list(obj["expected_memory_ids"])
        sizes = _int_list(obj["expected_group_sizes"])
        if union is None or sizes is None:
            bad(
                "'expected_memory_ids' must be a list of ids and 'expected_group_sizes' a list "
                "of integers"
            )
            return None
        if len(sizes) != len(gold) or any(s < 1 for s in sizes):
            bad(
                f"'expected_group_sizes' {sizes} does not give one positive size per gold turn "
                f"({len(gold)})"
            )
            return None
        if sum(sizes) != len(union) or len(set(union)) != len(union):
            bad(
                f"'expected_memory_ids' has {len(set(union))} distinct ids, but the group sizes "
                f"add up to {sum(sizes)}"
            )
            return None
        row.union = tuple(union)
        row.sizes = tuple(sizes)
    return row


def _read_rows(path: Path, lc: _Locomo) -> list[_Row]:
    probs = Problems(path)
    rows: list[_Row] = []
    last = 0
    try:
        for line, obj in iter_jsonl(path):
            last = line
            row = _parse_row(obj, line, lc, probs)
            if row is not None:
                rows.append(row)
            if probs.total > probs.limit:  # enough to report: stop reading
                break
    except TiapError as exc:
        if any(p.line is not None for p in exc.problems):
            raise  # bad JSON: already located
        raise TiapError(
            f"{exc.problems[0].message}, after line {last}", file=path, line=last + 1
        ) from exc
    if not rows and not probs.total:
        probs.add("the trace has no rows")
    formats = Counter(r.fmt for r in rows)
    if len(formats) > 1:
        major = formats.most_common(1)[0][0]
        for r in rows:
            if r.fmt != major:
                probs.add(f"row layout {r.fmt!r} differs from the file's {major!r}", r.line)
    probs.raise_if_any()
    _align_queries(rows, lc, probs)
    probs.raise_if_any()
    return rows


def _same_question(r: _Row, q: Query) -> bool:
    if q.question.strip() != r.question.strip():
        return False
    return r.category is None or dict(q.extra).get("category_id") == r.category


def _align_queries(rows: list[_Row], lc: _Locomo, probs: Problems) -> None:
    """Match each row to its LoCoMo question: by text and category, in qa order.

    LoCoMo repeats 12 questions (11 in conv-48, 1 in conv-30; same evidence each time); the
    scan in qa order pairs repeats in order, and the category separates conv-30's
    single-hop question from its adversarial twin.
    """
    nxt: dict[str, int] = defaultdict(int)
    seen: set[str] = set()
    for r in rows:
        qs = lc.queries[r.collection]
        j = nxt[r.collection]
        while j < len(qs) and not _same_question(r, qs[j]):
            j += 1
        if j == len(qs):
            # not in order: look from the start, so the message can say which it is
            hits = [q.query_id for q in qs if _same_question(r, q)]
            why = (
                f"it is {', '.join(hits)}, out of the qa order"
                if hits
                else f"no such question in {r.collection}"
            )
            probs.add(f"cannot match the query {r.question!r} to LoCoMo: {why}", r.line)
            continue
        r.query = qs[j]
        nxt[r.collection] = j + 1
        if qs[j].query_id in seen:  # pragma: no cover - the in-order scan cannot repeat
            probs.add("query occurs twice", r.line, qs[j].query_id)
        seen.add(qs[j].query_id)


# --------------------------------------------------------------------------------------------
# Lineage recovery
# --------------------------------------------------------------------------------------------


class _Lineage:
    """Constraints on each item's source rows, propagated to a fixed point."""

    def __init__(self, rows: list[_Row], lc: _Locomo, fmt: str) -> None:
        self.rows = rows
        self.lc = lc
        self.fmt = fmt
        self.order: list[str] = []  # first appearance
        self.collection: dict[str, str] = {}
        self.kind: dict[str, str | None] = {}
        self.text: dict[str, str] = {}
        self.meets: dict[str, list[frozenset[int]]] = defaultdict(list)
        self.neg: dict[str, set[int]] = defaultdict(set)
        self.pos: dict[str, set[int]] = defaultdict(set)
        self.cand: dict[str, set[int]] = {}  # single-source items with any constraint
        self.single: set[str] = set()
        self.label: dict[str, str] = {}
        self.inconsistencies: list[str] = []
        self._collect()

    # -- collection --------------------------------------------------------------------
    def _see(self, x: str, coll: str) -> None:
        if x not in self.collection:
            self.collection[x] = coll
            self.order.append(x)
            self.kind[x] = None
        elif self.collection[x] != coll:
            self.inconsistencies.append(
                f"item {x} is ranked for both {self.collection[x]} and {coll}"
            )

    def _set_kind(self, x: str, kind: str) -> None:
        old = self.kind.get(x)
        if old is not None and old != kind:
            self.inconsistencies.append(f"item {x} is {old!r} in one row and {kind!r} in another")
        self.kind[x] = kind

    def _collect(self) -> None:
        by_coll: dict[str, list[_Row]] = defaultdict(list)
        for r in self.rows:
            by_coll[r.collection].append(r)
            for x in r.ranking:
                self._see(x, r.collection)
            for x in r.union:
                self._see(x, r.collection)
            for x, t in r.text.items():
                self.text.setdefault(x, t)
            s = frozenset(r.gold)
            for x, k in r.kind.items():
                if k is not None:
                    self._set_kind(x, k)
            if self.fmt == FORMAT_KIND_FLAG:
                for x, f in r.flag.items():
                    if f:
                        self.meets[x].append(s)
                    else:
                        self.neg[x] |= s
        if self.fmt == FORMAT_IDS_ONLY:
            for x in self.order:
                m = _RAW_ID.fullmatch(x)
                if m and int(m.group(1)) < len(self.lc.units):
                    row = int(m.group(1))
                    if self.lc.unit_collection[row] != self.collection[x]:
                        self.inconsistencies.append(
                            f"{x} names {self.lc.units[row]}, "
                            f"but is ranked for {self.collection[x]}"
                        )
                        continue
                    self._set_kind(x, RAW_KIND)
                    self.cand[x] = {row}
                    self.single.add(x)
                    self.label[x] = "id"
                elif x.startswith("session_"):
                    self._set_kind(x, "session_summary")
        elif self.fmt == FORMAT_KIND_FLAG:
            for x in self.order:
                if self.kind[x] == RAW_KIND:
                    self.single.add(x)
        else:  # native
            for coll, rs in by_coll.items():
                universe = [x for x in self.order if self.collection[x] == coll]
                for r in rs:
                    s = frozenset(r.gold)
                    members = set(r.union)
                    for x in r.ranking:
                        if r.flag.get(x) is not None and r.flag[x] != (x in members):
                            self.inconsistencies.append(
                                f"line {r.line}: {x} is_expected={r.flag[x]} but "
                                f"{'is' if x in members else 'is not'} in expected_memory_ids"
                            )
                    for x in universe:
                        if x in members:
                            self.meets[x].append(s)
                        else:
                            self.neg[x] |= s
            for x in self.order:
                self.single.add(x)
                stored = self.text.get(x)
                if stored is None:
                    continue
                if _RAW_TEXT.match(stored):
                    self._set_kind(x, RAW_KIND)
                    turn = self.lc.rendered.get(_norm_text(stored))
                    if turn is not None and self.lc.unit_collection[turn] == self.collection[x]:
                        self.cand[x] = {turn}
                        self.label[x] = "content"
                else:
                    self._set_kind(x, DERIVED_UNSPECIFIED)
        # single-source candidates from the member constraints
        for x in self.single:
            c: set[int] | None = set(self.cand[x]) if x in self.cand else None
            for s in self.meets.get(x, ()):
                c = set(s) if c is None else c & s
            if c is not None:
                self.cand[x] = c

    # -- propagation -------------------------------------------------------------------
    def _demote(self, x: str, why: str) -> None:
        """A single-source assumption that the constraints contradict: treat as multi-source."""
        self.single.discard(x)
        self.cand.pop(x, None)
        if self.kind.get(x) == RAW_KIND:
            self.inconsistencies.append(f"raw item {x}: {why}")

    def propagate(self) -> None:
        changed = True
        while changed:
            changed = False
            for x in list(self.single):
                c = self.cand.get(x)
                if c is None:
                    continue
                if c & self.neg[x]:
                    c -= self.neg[x]
                    changed = True
                if not c:
                    self._demote(x, "its member and non-member constraints exclude every turn")
                    changed = True
                    continue
                if len(c) == 1 and self.pos[x] != c:
                    self.pos[x] = set(c)
                    changed = True
            for x, ss in self.meets.items():
                if x in self.single:
                    continue
                for s in ss:
                    rem = s - self.neg[x]
                    if not rem:
                        self.inconsistencies.append(
                            f"item {x}: flagged as a member, but every gold turn is excluded"
                        )
                    elif len(rem) == 1 and not rem <= self.pos[x]:
                        self.pos[x] |= rem
                        changed = True
            changed |= self._raw_uniqueness()
            if self.fmt == FORMAT_NATIVE:
                changed |= self._family_sizes()
                changed |= self._kinds_from_sizes()

    def _raw_uniqueness(self) -> bool:
        owner: dict[int, str] = {}
        changed = False
        for x in self.order:
            if self.kind.get(x) == RAW_KIND and x in self.single and len(self.pos[x]) == 1:
                u = next(iter(self.pos[x]))
                if u in owner and owner[u] != x:
                    self.inconsistencies.append(
                        f"turn {self.lc.units[u]} has two raw items: {owner[u]} and {x}"
                    )
                owner[u] = x
        for x in self.order:
            if self.kind.get(x) == RAW_KIND and x in self.single:
                c = self.cand.get(x)
                if c and len(c) > 1:
                    taken = {u for u in c if owner.get(u, x) != x}
                    if taken:
                        self.neg[x] |= taken
                        changed = True
        return changed

    def _in(self, x: str, u: int) -> bool | None:
        """Whether ``u`` is in ``x``'s lineage: True, False or None (unknown)."""
        if u in self.pos[x]:
            return True
        if u in self.neg[x]:
            return False
        if x in self.single:
            c = self.cand.get(x)
            if c is not None:
                return None if u in c else False
            return None if not self.pos[x] else False
        return None

    def _family_sizes(self) -> bool:
        changed = False
        for r in self.rows:
            for u, n in zip(r.gold, r.sizes, strict=True):
                sure = [x for x in r.union if self._in(x, u) is True]
                maybe = [x for x in r.union if self._in(x, u) is None]
                if len(sure) > n or len(sure) + len(maybe) < n:
                    self.inconsistencies.append(
                        f"line {r.line}: the family of {self.lc.units[u]} has size {n}, but "
                        f"{len(sure)} items are proven and {len(maybe)} possible members"
                    )
                    continue
                sure_derived = sum(1 for x in sure if self.kind.get(x) not in (RAW_KIND, None))
                maybe_derived = [x for x in maybe if self.kind.get(x) not in (RAW_KIND, None)]
                if maybe_derived and sure_derived >= n - 1:  # one slot is the raw item's
                    for x in maybe_derived:
                        self.neg[x].add(u)
                    changed = True
                    continue
                if maybe and len(sure) == n:
                    for x in maybe:
                        self.neg[x].add(u)
                    changed = True
                elif maybe and len(sure) + len(maybe) == n:
                    for x in maybe:
                        self.pos[x].add(u)
                        if x in self.single:
                            self.cand[x] = {u}
                    changed = True
                else:
                    changed |= len(sure) == n and self._one_raw(r, u)
        return changed

    def _kinds_from_sizes(self) -> bool:
        """An item of unknown kind whose every candidate family already holds its raw item
        is derived; one whose every candidate family already holds its ``n - 1`` derived
        items is raw (a family of size ``n`` has exactly one raw item)."""
        sizes = {u: n for r in self.rows for u, n in zip(r.gold, r.sizes, strict=True)}
        changed = False
        for x in self.order:
            if self.kind.get(x) is not None or x not in self.single:
                continue
            c = set(self.pos[x]) or set(self.cand.get(x) or ())
            if not c or not c <= sizes.keys():
                continue
            raw_full = derived_full = True
            for u in c:
                members = [y for y in self.order if y != x and u in self.pos[y]]
                raw_full &= any(self.kind.get(y) == RAW_KIND for y in members)
                derived_full &= sum(1 for y in members if self.kind.get(y) not in (RAW_KIND, None)
                                    ) >= sizes[u] - 1
            if raw_full and not derived_full:
                self.kind[x] = DERIVED_UNSPECIFIED
                changed = True
            elif derived_full and not raw_full:
                self.kind[x] = RAW_KIND
                changed = True
        return changed

    def _one_raw(self, r: _Row, u: int) -> bool:
        """A complete family has exactly one raw member."""
        fam = [x for x in r.union if u in self.pos[x]]
        raws = [x for x in fam if self.kind.get(x) == RAW_KIND]
        unknown = [x for x in fam if self.kind.get(x) is None]
        if len(raws) > 1:
            self.inconsistencies.append(
                f"the family of {self.lc.units[u]} has {len(raws)} raw items: {', '.join(raws)}"
            )
            return False
        if not unknown:
            if not raws:
                self.inconsistencies.append(
                    f"the family of {self.lc.units[u]} is complete but has no raw item"
                )
            return False
        if raws:
            for x in unknown:
                self.kind[x] = DERIVED_UNSPECIFIED
            return True
        if len(unknown) == 1:
            self.kind[unknown[0]] = RAW_KIND
            return True
        return False

    # -- assumptions -------------------------------------------------------------------
    def infer_from_text(self) -> None:
        """Give ambiguous native derived items the candidate turn whose words they share most.

        Greedy in order of decreasing overlap (ties by item id, then row), never filling a
        family beyond its size. Labelled ``text``.
        """
        rows_of: dict[str, list[_Row]] = defaultdict(list)
        for r in self.rows:
            for x in r.union:
                rows_of[x].append(r)
        pairs: list[tuple[float, str, int]] = []
        for x in self.order:
            c = self.cand.get(x)
            t = self.text.get(x)
            if x not in self.single or c is None or len(c) < 2 or t is None:
                continue
            if self.kind.get(x) == RAW_KIND:
                continue
            words = set(_WORD.findall(t.lower()))
            for u in c:
                uw = self.lc.unit_words[u]
                pairs.append((-len(words & uw) / (len(uw) + 1), x, u))
        pairs.sort()
        for _, x, u in pairs:
            c = self.cand.get(x)
            if c is None or len(c) < 2 or u not in c:
                continue
            fits = True
            for r in rows_of[x]:
                n = r.sizes[r.gold.index(u)]
                if sum(1 for y in r.union if self._in(y, u) is True) + 1 > n:
                    fits = False
                    break
            if fits:
                self.cand[x] = {u}
                self.pos[x] = {u}
                self.label[x] = "text"
        self.propagate()

    # -- results -----------------------------------------------------------------------
    def final_label(self, x: str) -> str:
        if x in self.label and self.pos[x]:
            return self.label[x]
        if x in self.single:
            c = self.cand.get(x)
            if self.pos[x] and (c is None or len(c) == 1):
                return "trace"
            if c and len(c) > 1:
                return "ambiguous"
            return "unknown"
        if self.pos[x] or self.meets.get(x):
            return "partial"
        return "unknown"

    def candidates(self, x: str) -> set[int]:
        if x in self.single:
            c = self.cand.get(x)
            return set(c) if c and len(c) > 1 else set()
        out: set[int] = set()
        for s in self.meets.get(x, ()):
            out |= s - self.neg[x] - self.pos[x]
        return out


# --------------------------------------------------------------------------------------------
# Per-query status
# --------------------------------------------------------------------------------------------


def _credited_kind(kind: str | None, target: str) -> bool | None:
    if kind is None:
        return None
    if target == "raw":
        return kind == RAW_KIND
    if target == "canonical":
        return kind != RAW_KIND
    return True


def _exchangeable_raw(lin: _Lineage, x: str, r: _Row) -> bool:
    """A raw item of undetermined turn whose every candidate is a gold turn of the row."""
    c = lin.cand.get(x)
    return (lin.kind.get(x) == RAW_KIND and x in lin.single and not lin.pos[x]
            and bool(c) and c <= set(r.gold))


def _query_status(
    r: _Row, lin: _Lineage, labels: dict[str, str], has_derived: set[int]
) -> QueryRecovery:
    q = cast(Query, r.query)
    status: dict[str, str] = {}
    reasons: list[str] = []
    for target in TARGET_NAMES:
        st = STATUS_EXACT
        why: list[str] = []
        for x in r.ranking:
            credited = _credited_kind(lin.kind.get(x), target)
            if credited is False:
                continue
            if credited is None:
                st = STATUS_UNKNOWN
                why.append(f"{x} is ranked but its kind is unknown")
                continue
            member = [lin._in(x, u) for u in r.gold]
            if all(m is False for m in member):
                continue
            lab = labels[x]
            if target == "raw" and _exchangeable_raw(lin, x, r):
                continue  # it fills one gold turn's Raw group, whichever: values agree
            if any(m is None for m in member):
                st = STATUS_UNKNOWN
                why.append(f"which gold turns {x} derives from is not determined")
            elif lab == "text" and st == STATUS_EXACT:
                st = STATUS_INFERRED
                why.append(f"{x} was given its turn by its text")
        if target == "raw" and any(_exchangeable_raw(lin, x, r) for x in r.ranking):
            reasons.append(
                "raw: some raw items are one of several gold turns each (exclusive: each turn "
                "has one raw item); Raw values do not depend on which"
            )
        if target == "canonical":
            for i, u in enumerate(r.gold):
                if r.sizes and r.sizes[i] == 1:
                    continue  # a native family of one: its raw item only, no Canonical group
                if u not in has_derived:
                    st = STATUS_UNKNOWN
                    why.append(
                        f"no derived descendant of {lin.lc.units[u]} is known (the trace "
                        "cannot tell whether one exists)"
                    )
        status[target] = st
        reasons.extend(f"{target}: {w}" for w in dict.fromkeys(why))
    return QueryRecovery(
        query_id=q.query_id,
        line=r.line,
        query_index=r.query_index,
        raw=status["raw"],
        source=status["source"],
        canonical=status["canonical"],
        reasons=tuple(reasons),
    )


# --------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------


def _default_system(path: Path) -> str:
    return path.parent.name or "mtel"


def import_mtel_trace(
    path: str | Path,
    *,
    locomo_path: str | Path | None = None,
    system: str | None = None,
    infer_from_text: bool = False,
) -> MtelImport:
    """Import one of the paper's published traces with the lineage it proves.

    Args:
        path: a ``trace*.jsonl(.gz)`` file of the MTEL-Mem release.
        locomo_path: LoCoMo's ``locomo10.json``; by default TIAP's data folder (``TIAP_DATA``
            or ``../shared/data``), checked against its pinned checksum.
        system: the system name for the run; by default the trace's folder name
            (``runs/transfer/locomo_mem0/trace.jsonl.gz`` -> ``locomo_mem0``).
        infer_from_text: assign ``native`` derived items that the trace leaves ambiguous by
            their text (see the module docstring); their queries become ``inferred``.

    Returns:
        An :class:`MtelImport`. Items are in order of first appearance (placeholders last);
        queries and rankings in trace order.

    Raises:
        TiapError: a row lacks a field, names an unknown conversation or fixture row, cannot be
            matched to a LoCoMo question, or the file is not valid (truncated gzip, bad JSON);
            every problem names the file and line.
    """
    path = Path(path)
    lc = _load_locomo(locomo_path)
    rows = _read_rows(path, lc)
    fmt = rows[0].fmt
    system = system if system is not None else _default_system(path)

    lin = _Lineage(rows, lc, fmt)
    lin.propagate()
    proven: _Store | None = None
    before: dict[str, tuple[str | None, set[int]]] = {}
    if infer_from_text and fmt == FORMAT_NATIVE:
        proven = _build_items(lin, rows)  # what the trace proves, before any assumption
        before = {x: (lin.kind.get(x), set(lin.pos[x]) | set(lin.cand.get(x) or ()))
                  for x in lin.order}
        lin.infer_from_text()

    store = _build_items(lin, rows, proven.folded if proven is not None else ())
    if proven is not None:
        store = _mark_inferred(store, proven, before, lin.lc)
    queries, rankings, statuses, diffs = _build_queries(path, rows, lin, store, system)
    run = Run(
        system=system,
        rankings=tuple(rankings),
        source=path,
        format=f"mtel-{fmt}",
        benchmark="locomo",
        store=system,
    )
    report = _build_report(path, rows, lin, store, system, statuses, diffs, queries)
    items = stamp_store(store.items, system)
    return MtelImport(items=items, queries=tuple(queries), run=run, report=report)


@dataclass
class _Store:
    items: list[Item]
    labels: dict[str, str]
    placeholders: list[str]
    has_derived: set[int]  # gold rows with a known (or placeholder) derived descendant
    gold_units: list[int]
    folded: tuple[str, ...] = ()  # never-ranked members counted by placeholders


def _mark_inferred(store: _Store, proven: _Store,
                   before: Mapping[str, tuple[str | None, set[int]]], lc: _Locomo) -> _Store:
    """``store`` with every item whose row differs from the row the trace alone proves
    (``proven``) marked ``inferred`` (:class:`~tiap.memory.store.Inference`): the items the
    text assigned, and those the assignment resolved in turn (a kind, a family's last
    member, a placeholder's count). Its proven lineage (the proven row's possible units,
    else the candidates before the assignment) says which queries it may concern. Such
    items other than placeholders are labelled ``text``."""
    rows = {it.item_id: it for it in proven.items}
    items: list[Item] = []
    labels = dict(store.labels)
    for it in store.items:
        was = rows.get(it.item_id)
        if was is not None and was.to_json() == it.to_json():
            items.append(it)
            continue
        if was is not None:
            unc = was.uncertain
            possible = (None if unc is not None and unc.possible is None else
                        tuple(dict.fromkeys([*was.sources, *(unc.possible if unc else ())])))
            inference = Inference(possible=possible, kind=was.kind != it.kind)
        elif it.item_id in before:  # folded: the trace alone left its turn or kind open
            kind, units = before[it.item_id]
            inference = Inference(
                possible=tuple(lc.units[u] for u in sorted(units)) if units else None,
                kind=kind is None)
        else:
            inference = Inference(possible=it.sources)
        if it.placeholder is None and labels.get(it.item_id) != "text":
            labels[it.item_id] = "text"
            it = replace(it, meta=tuple((k, "text" if k == "mtel_lineage" else v)
                                        for k, v in it.meta))
        items.append(replace(it, inferred=inference))
    return replace(store, items=items, labels=labels)


def _placeholder(pid: str, kind: str, u: int, lc: _Locomo, *, certain: bool = True,
                 count: int | None = None) -> Item:
    return Item(
        item_id=pid,
        kind=kind,
        sources=(lc.units[u],),
        collection=lc.unit_collection[u],
        meta=(("mtel_lineage", "placeholder"),),
        placeholder=Placeholder("certain" if certain else "possible", count),
    )


def _uncertainty(lin: _Lineage, x: str) -> Uncertainty | None:
    """What the trace leaves open about ``x``'s lineage (``None``: it is determined)."""
    units = lin.lc.units
    pos, neg = lin.pos[x], lin.neg[x]
    raw = lin.kind.get(x) == RAW_KIND
    if x in lin.single:
        if pos:
            return None  # its one source is proven
        c = lin.cand.get(x)
        if c:
            cs = tuple(units[u] for u in sorted(c))
            return Uncertainty(possible=cs, requires=(cs,), max_sources=1, exclusive=raw)
        return Uncertainty(excluded=tuple(units[u] for u in sorted(neg)), max_sources=1,
                           exclusive=raw)
    requires = []
    for s in lin.meets.get(x, ()):
        if s & pos:
            continue
        left = tuple(units[u] for u in sorted(s - neg))
        if left:
            requires.append(left)
    return Uncertainty(excluded=tuple(units[u] for u in sorted(neg - pos)),
                       requires=tuple(dict.fromkeys(requires)))


def _build_items(lin: _Lineage, rows: list[_Row], fold: tuple[str, ...] = ()) -> _Store:
    """The store's items; ``fold``: never-ranked items folded anyway (those the trace alone
    leaves open, kept folded when a text assignment resolves them: they change no value)."""
    lc, fmt = lin.lc, lin.fmt
    labels = {x: lin.final_label(x) for x in lin.order}
    ranked = {x for r in rows for x in r.ranking}
    # native: a family member the trace never ranks, whose turn or kind it leaves open,
    # changes no value but the family's size, which the trace gives: it is counted by the
    # family's placeholders instead of being listed with a lineage the trace does not prove
    folded = ({x for x in lin.order if x not in ranked and (
        lin.kind.get(x) is None or (x in lin.single and not lin.pos[x]))} | set(fold)
        if fmt == FORMAT_NATIVE else set())
    items: list[Item] = []
    for x in lin.order:
        if x in folded:
            continue
        items.append(
            Item(
                item_id=x,
                kind=lin.kind.get(x) or KIND_UNKNOWN,
                sources=tuple(lc.units[u] for u in sorted(lin.pos[x])),
                text=lin.text.get(x),
                collection=lin.collection[x],
                meta=(("mtel_lineage", labels[x]),),
                uncertain=_uncertainty(lin, x),
            )
        )
    kept = [x for x in lin.order if x not in folded]
    gold_units = list(dict.fromkeys(u for r in rows for u in r.gold))

    def count(u: int, raw: bool, certain: bool) -> int:
        n = 0
        for x in kept:
            kind = lin.kind.get(x)
            if (kind == RAW_KIND) != raw or kind is None:
                continue
            if certain and u in lin.pos[x]:
                n += 1
            elif not certain and not lin.pos[x] and u in (lin.cand.get(x) or ()):
                n += 1
        return n

    placeholders: list[str] = []
    # every gold turn has one raw item: where the trace shows none for certain, a placeholder
    # says its Raw group exists (one unseen item, unless a ranked raw item may be it)
    for u in gold_units:
        if not count(u, True, True):
            pid = f"raw_{u}" if fmt == FORMAT_IDS_ONLY else f"mtel-unretrieved-raw:{lc.units[u]}"
            placeholders.append(pid)
            items.append(_placeholder(pid, RAW_KIND, u, lc,
                                      count=None if count(u, True, False) else 1))
    has_derived = {u for x in kept if lin.kind.get(x) not in (RAW_KIND, None)
                   for u in lin.pos[x]}
    if fmt == FORMAT_NATIVE:
        # a family of size n has one raw member and n - 1 derived ones: a placeholder stands
        # for those the trace does not place, counted where no ranked item may be one
        sized = {u: n for r in rows for u, n in zip(r.gold, r.sizes, strict=True)}
        for u in gold_units:
            missing = sized[u] - 1 - count(u, False, True)
            if missing <= 0:
                continue
            pid = f"mtel-unretrieved-derived:{lc.units[u]}"
            placeholders.append(pid)
            has_derived.add(u)
            items.append(_placeholder(pid, DERIVED_UNSPECIFIED, u, lc,
                                      count=None if count(u, False, False) else missing))
    else:
        # Mem0 and MemoryOS: the trace shows only ranked items, so any gold turn may have
        # derived items it never shows (or none)
        kind = "observation" if fmt == FORMAT_KIND_FLAG else "session_summary"
        for u in gold_units:
            pid = f"mtel-unseen-derived:{lc.units[u]}"
            placeholders.append(pid)
            items.append(_placeholder(pid, kind, u, lc, certain=False))
    labels.update((pid, "placeholder") for pid in placeholders)
    for x in folded:
        labels[x] = "folded"
    return _Store(items, labels, placeholders, has_derived, gold_units, tuple(sorted(folded)))


def _evidence_difference(q: Query, evidence: tuple[str, ...]) -> str | None:
    if set(evidence) == set(q.evidence):
        return None
    lost = [e for e in q.evidence if e not in evidence]
    extra = [e for e in evidence if e not in q.evidence]
    detail = []
    if lost:
        detail.append("TIAP's LoCoMo evidence also has " + ", ".join(lost))
    if extra:
        detail.append("the trace also has " + ", ".join(extra))
    return "; ".join(detail) + f" (LoCoMo gives {q.evidence_given})"


def _build_queries(
    path: Path, rows: list[_Row], lin: _Lineage, store: _Store, system: str
) -> tuple[list[Query], list[Ranking], list[QueryRecovery], list[tuple[str, str]]]:
    queries: list[Query] = []
    rankings: list[Ranking] = []
    statuses: list[QueryRecovery] = []
    diffs: list[tuple[str, str]] = []
    probs = Problems(path)
    for r in rows:
        q = cast(Query, r.query)  # every row was matched (_align_queries raised otherwise)
        evidence = tuple(lin.lc.units[u] for u in r.gold)
        diff = _evidence_difference(q, evidence)
        if diff is not None:
            diffs.append((q.query_id, diff))
        queries.append(
            replace(
                q,
                evidence=evidence,
                extra=(
                    *q.extra,
                    ("mtel_query_index", r.query_index),
                    ("mtel_line", r.line),
                    ("mtel_fixture_indexes", list(r.gold)),
                ),
            )
        )
        keep = dedup_ranking(r.ranking, query_id=q.query_id, system=system, dedup="error",
                             probs=probs, warns=RunWarnings(), lines=[r.line] * len(r.ranking),
                             hint="a published ranking lists each stored id once")
        if keep is not None:
            try:
                rankings.append(Ranking(q.query_id, system, r.ranking, r.scores))
            except ValueError as exc:
                probs.add(str(exc), r.line, q.query_id)
        statuses.append(_query_status(r, lin, store.labels, store.has_derived))
    probs.raise_if_any()
    return queries, rankings, statuses, diffs


def _build_report(
    path: Path,
    rows: list[_Row],
    lin: _Lineage,
    store: _Store,
    system: str,
    statuses: list[QueryRecovery],
    diffs: list[tuple[str, str]],
    queries: list[Query],
) -> MtelReport:
    lc, items, labels = lin.lc, store.items, store.labels
    in_trace = {q.query_id for q in queries}
    collections = {r.collection for r in rows}
    not_in = tuple(
        q.query_id
        for qs in lc.queries.values()
        for q in qs
        if q.collection_id in collections and q.query_id not in in_trace
    )

    def with_label(name: str) -> tuple[str, ...]:
        return tuple(i.item_id for i in items if labels[i.item_id] == name)

    notes: list[str] = []
    n_diff_full = sum(r.full_differs for r in rows)
    if n_diff_full:
        notes.append(
            f"{n_diff_full} rows have returned_ids_topk different from "
            "returned_ids_full; the full list was used"
        )
    no_scores = sum(r.scores is None for r in rows)
    if no_scores:
        notes.append(f"{no_scores} rows give no scores; their rankings have none")
    lineage_counts = Counter(labels[i.item_id] for i in items)
    return MtelReport(
        trace=str(path),
        trace_sha256=sha256_file(path),
        locomo=str(lc.path),
        format=lin.fmt,
        system=system,
        rows=len(rows),
        items=len(items),
        kinds=tuple(sorted(Counter(i.kind for i in items).items())),
        lineage=tuple((k, lineage_counts[k]) for k in _LABELS if lineage_counts[k]),
        placeholder_items=tuple(store.placeholders),
        folded_items=store.folded,
        ambiguous_items=with_label("ambiguous"),
        ambiguous_raw_items=tuple(i.item_id for i in items if i.kind == RAW_KIND
                                  and labels[i.item_id] == "ambiguous"),
        text_inferred_items=with_label("text"),
        partial_lineage_items=with_label("partial"),
        unknown_lineage_items=with_label("unknown"),
        unknown_kind_items=tuple(i.item_id for i in items if i.kind == KIND_UNKNOWN),
        units_without_known_derived=tuple(
            lc.units[u] for u in store.gold_units if u not in store.has_derived
        ),
        queries=tuple(statuses),
        evidence_differences=tuple(diffs),
        locomo_queries_not_in_trace=not_in,
        inconsistencies=tuple(dict.fromkeys(lin.inconsistencies)),
        notes=tuple(notes),
    )


def write_mtel_import(imp: MtelImport, out: str | Path, *,
                      extra_files: Mapping[str, str] | None = None,
                      force: bool | None = None) -> dict[str, int]:
    """Write an import as ``items.jsonl``, ``queries.jsonl`` and ``run.jsonl`` into ``out``.

    Also written: ``mtel_report.json`` (the :class:`MtelReport`) and ``manifest.json`` (schema
    version, the trace and LoCoMo files with their sha256, TIAP's version, the counts, the
    outputs). The folder is built aside and swapped in whole when complete
    (:func:`tiap.importers.import_folder`): no file of an earlier import survives,
    and a folder that is not an import's output is refused unless ``force``. ``run.jsonl``
    rows are ``{"query_id", "system", "benchmark", "ranking", "scores"}`` (``scores`` left out
    where the trace gives none, as for MemoryOS).

    ``extra_files`` (file name -> text) are written into the same folder, in the same step.

    Returns:
        The number of lines written per file.
    """
    counts: dict[str, int] = {}
    with import_folder(out, "import mtel-trace", force=force) as tmp:
        for name, text in (extra_files or {}).items():
            (tmp / name).write_text(text, encoding="utf-8")
        counts["items"] = write_items(tmp / "items.jsonl", imp.items, store=imp.report.system)
        counts["queries"] = write_queries(tmp / "queries.jsonl", imp.queries)
        counts["rankings"] = write_jsonl_run(tmp / "run.jsonl", imp.run)
        report = imp.report
        (tmp / "mtel_report.json").write_text(
            json.dumps(report.to_json(), indent=1, ensure_ascii=False, allow_nan=False) + "\n",
            encoding="utf-8")
        Manifest.new("import mtel-trace",
                     inputs=[input_entry(report.trace), input_entry(report.locomo)],
                     warnings=warnings_json(imp.run.warnings),
                     outputs=[*(extra_files or {}), "items.jsonl", "queries.jsonl", "run.jsonl",
                              "mtel_report.json"],
                     extra={"system": report.system, "store": report.system,
                            "format": report.format,
                            "counts": {**counts, "report": report.counts()}},
                     ).write(tmp / "manifest.json")
    return counts


def import_mtel(
    path: str | Path,
    out_dir: str | Path,
    *,
    locomo_path: str | Path | None = None,
    system: str | None = None,
    infer_from_text: bool = False,
) -> MtelImport:
    """``tiap import mtel-trace``: import one MTEL-Mem trace into ``out_dir`` (see
    :func:`import_mtel_trace`): ``items.jsonl``, ``queries.jsonl``, ``run.jsonl``,
    ``mtel_report.json``, ``manifest.json`` and ``lineage_coverage.json`` (whose ``importer``
    part is the report's counts), as every importer writes."""
    imp = import_mtel_trace(path, locomo_path=locomo_path, system=system,
                            infer_from_text=infer_from_text)
    cov = lineage_coverage(imp.items, imp.queries, [imp.run], imp.report.counts())
    write_mtel_import(imp, out_dir, extra_files={COVERAGE_FILE: coverage_json(cov)})
    return imp
