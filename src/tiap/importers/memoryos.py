"""``tiap import memoryos``: a MemoryOS store and its retrieval results, with lineage.

MemoryOS (BAI-LAB/MemoryOS, the ``memoryos-pypi`` package) keeps, per user, three JSON files:

``short_term.json``
    a list of QA pairs ``{"user_input", "agent_response", "timestamp"}`` (the newest ones);
``mid_term.json``
    ``{"sessions": {session_id: {"id", "summary", "summary_keywords", "details": [page, ...],
    ...}}, "access_frequency": {...}}``; a *page* is an evicted QA pair ``{"page_id",
    "user_input", "agent_response", "timestamp", "pre_page", "next_page", "meta_info",
    ...}``, and a session's ``summary`` is written by an LLM over its pages (one batch of
    pages may be inserted into several sessions, one per topic);
``long_term_user.json`` / ``long_term_assistant.json``
    ``{"user_profiles": {...}, "knowledge_base": [{"knowledge", "timestamp"}, ...],
    "assistant_knowledge": [...]}``: LLM-extracted knowledge with no link to its pages.

``Memoryos.retriever.retrieve_context(query)`` returns ``{"retrieved_pages": [page, ...],
"retrieved_user_knowledge": [...], "retrieved_assistant_knowledge": [...]}``.

Input folder (``docs/import.md``): ``results.jsonl``, one line per query: the
``retrieve_context`` output plus ``"query_id"`` (optionally ``"ranking"``: item ids in rank
order, when the harness ranked pages and sessions itself), and the store of each user, named
by the dataset collection it holds (``user_id = "conv-26"``) in either layout:
``users/<user_id>/{short_term,mid_term,long_term_user}.json`` plus
``assistants/<id>/long_term_assistant.json`` (memoryos-pypi), or
``<user_id>_{short_term,mid_term,long_term}.json`` (the LoCoMo evaluation script).

Lineage
-------
A page holds one QA pair: one user turn and one agent turn (one turn when a side is empty).
What the store proves about its turns is written as it is, exact where it decides them and
partial (``uncertain``, :mod:`tiap.memory.store`) where it does not; rescoring then gives
exact values where that suffices and ``[lower, upper]`` intervals elsewhere.

- page / short-term QA pair (kind ``raw``: verbatim dialogue) -> the turns it holds. MemoryOS
  keeps only ``user_input``, ``agent_response`` and ``timestamp`` on a page, so no id we put
  in survives; the turns are found by **matching the text against the dataset**: each side,
  whitespace-collapsed and without the `` (image description: ...)`` suffix the LoCoMo feeder
  appends, must equal a turn's text in the user's collection, preferring the session whose
  date equals the page's ``timestamp`` (the feeder passes the session date); when a side
  still has several candidates, the pair whose agent turn follows the user turn most closely
  decides. Per side: one candidate -> a certain source; several -> the side's turn is one of
  them (``requires`` that list, ``possible_sources`` its units); none (the text matches no
  turn) -> the side's turn is unknown (``possible_sources: "any"`` unit of the user's
  collection). ``max_sources`` is the number of sides with text (a page holds one turn a
  side). A page that carries ``source_ids`` (a harness that keeps extra fields) is taken as
  given. Labels in ``memoryos_lineage``: ``source_ids``, ``matched``, ``partial`` (one side
  found), ``ambiguous`` (no side found, some side has candidates, listed in
  ``memoryos_candidates``), ``unmatched``.
- session summary (kind ``summary``, id = the session id) -> its pages (``parents``): exact,
  or partial through its pages.
- user and assistant knowledge (kind ``knowledge``; ids ``knowledge:<user>:<sha1>`` and
  ``assistant-knowledge:<sha1>`` of the text): MemoryOS's LLM extracts it from the dialogue
  but records no source, so it **may derive from any turn** of its user's collection
  (``possible_sources: "any"``; assistant knowledge names no user, so any turn of any
  collection), and nothing more is claimed: not that it derives from some turn at all.

``lineage_coverage.json`` counts, under ``importer``, the pages per label and the items with
partial lineage (their own or through their pages).

Ranking: ``ranking`` when given, else the retrieved pages in order, then user knowledge, then
assistant knowledge (the order of MemoryOS's prompt). MemoryOS returns no page scores.

The paper's published MemoryOS trace is a different format: import it with ``tiap import
mtel-trace`` (this importer says so when given one).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tiap.datasets import load
from tiap.datasets.records import Query, Turn
from tiap.errors import Problems, TiapError
from tiap.importers import (
    ImportResult,
    external_queries,
    require_queries,
    write_import,
)
from tiap.importers.generic import partial_lineage_findings
from tiap.io import iter_jsonl, open_text, read_json
from tiap.memory.store import RAW_KIND, Item, Uncertainty
from tiap.runs import Ranking, Run
from tiap.runs.formats import RunWarnings, dedup_ranking

__all__ = ["PageMatch", "TurnIndex", "import_memoryos", "read_memoryos"]

RESULTS_FILE = "results.jsonl"
_RESULT_LISTS = ("retrieved_pages", "retrieved_user_knowledge", "retrieved_assistant_knowledge")
_CAPTION = re.compile(r"\s*\(image description: .*\)\s*\Z", re.DOTALL)
_WS = re.compile(r"\s+")


def _norm(text: str) -> str:
    return _WS.sub(" ", _CAPTION.sub("", text)).strip()


@dataclass(frozen=True)
class PageMatch:
    """The turns a page holds, as far as its text decides them.

    ``sources``: the turns found (one per side with a single candidate); ``label`` (module
    docstring); ``candidates``: the candidate turns of the sides left ambiguous (all of them,
    for ``memoryos_candidates``); ``open_sides``: per ambiguous side, its candidates (the
    side's turn is one of them); ``unknown_sides``: sides whose text matches no turn;
    ``sides``: sides with text (the page holds one turn a side).
    """

    sources: tuple[str, ...]
    label: str
    candidates: tuple[str, ...] = ()
    open_sides: tuple[tuple[str, ...], ...] = ()
    unknown_sides: int = 0
    sides: int = 0

    def uncertainty(self) -> Uncertainty | None:
        """What the page's lineage may be beyond ``sources`` (``None``: it is exact)."""
        if not self.open_sides and not self.unknown_sides:
            return None
        possible = None if self.unknown_sides else tuple(
            dict.fromkeys(u for side in self.open_sides for u in side))
        return Uncertainty(possible=possible, requires=self.open_sides,
                           max_sources=self.sides or None)


class TurnIndex:
    """One collection's turns by normalised text, with session dates and file order."""

    def __init__(self, turns: Iterable[Turn], session_dates: dict[str, str | None]) -> None:
        self.by_text: dict[str, list[int]] = {}
        self.turns: list[Turn] = []
        self.date_sessions: dict[str, set[str]] = {}
        for sid, date in session_dates.items():
            if date:
                self.date_sessions.setdefault(date.strip(), set()).add(sid)
        for t in turns:
            self.by_text.setdefault(_norm(t.text), []).append(len(self.turns))
            self.turns.append(t)

    def _candidates(self, text: str, timestamp: str | None) -> list[int]:
        cands = self.by_text.get(_norm(text), [])
        sessions = self.date_sessions.get((timestamp or "").strip())
        if sessions and len(cands) > 1:
            inside = [i for i in cands if self.turns[i].session_id in sessions]
            if inside:
                return inside
        return cands

    def match(self, user_input: str, agent_response: str, timestamp: str | None) -> PageMatch:
        sides = [s for s in (user_input or "", agent_response or "") if s.strip()]
        if not sides:  # a page with no text: nothing says which turns it holds
            return PageMatch((), "unmatched", unknown_sides=1)
        cands = [self._candidates(s, timestamp) for s in sides]
        if len(cands) == 2 and len(cands[0]) >= 1 and len(cands[1]) >= 1 and (
                len(cands[0]) > 1 or len(cands[1]) > 1):
            gaps = sorted((b - a, a, b) for a in cands[0] for b in cands[1] if b > a)
            if gaps and (len(gaps) == 1 or gaps[0][0] < gaps[1][0]):
                cands = [[gaps[0][1]], [gaps[0][2]]]
        turns = self.turns
        found = tuple(dict.fromkeys(turns[c[0]].unit_id for c in cands if len(c) == 1))
        open_sides = tuple(tuple(turns[i].unit_id for i in c) for c in cands if len(c) > 1)
        unknown = sum(1 for c in cands if not c)
        if not open_sides and not unknown:
            return PageMatch(found, "matched", sides=len(sides))
        label = "partial" if found else ("ambiguous" if open_sides else "unmatched")
        return PageMatch(found, label, tuple(u for side in open_sides for u in side),
                         open_sides, unknown, len(sides))


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _list(value: Any) -> list[Any] | None:
    """A list field of MemoryOS's JSON (absent or null: empty); ``None`` if not a list."""
    if value is None:
        return []
    return value if isinstance(value, list) else None


def _sha(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()[:12]


def _load_json(path: Path, probs: Problems) -> Any:
    try:
        return read_json(path)
    except TiapError as exc:
        probs.extend(exc)
        return None


def _store_files(root: Path) -> dict[str, dict[str, Path]]:
    """user id -> {"short", "mid", "long"} files; "" -> assistant long-term files."""
    users: dict[str, dict[str, Path]] = {}
    for d in sorted((root / "users").glob("*")) if (root / "users").is_dir() else []:
        for key, name in (("short", "short_term.json"), ("mid", "mid_term.json"),
                          ("long", "long_term_user.json")):
            if (d / name).is_file():
                users.setdefault(d.name, {})[key] = d / name
    for f in sorted(root.glob("*_*_term.json")):
        m = re.fullmatch(r"(.+)_(short|mid|long)_term\.json", f.name)
        if m:
            users.setdefault(m.group(1), {})[m.group(2)] = f
    for i, f in enumerate(sorted(root.glob("assistants/*/long_term_assistant.json"))):
        users.setdefault("", {})[f"assistant{i}"] = f
    return users


def _content(page: dict[str, Any], user: str) -> tuple[Any, ...]:
    """What decides a page's lineage: its user, its two sides, its timestamp and the
    ``source_ids`` it carries (``None``: not given)."""
    ts = page.get("timestamp")
    given = page.get("source_ids")
    return (user, str(page.get("user_input") or ""), str(page.get("agent_response") or ""),
            None if ts is None else str(ts),
            [str(x) for x in given] if isinstance(given, list) and given else None)


def _same_page(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """Two records of one page: the same user and sides; timestamps and ``source_ids``
    equal where both give them (a page inserted into several sessions, or retrieved again,
    is the same page)."""
    return a[:3] == b[:3] and all(x is None or y is None or x == y for x, y in zip(a[3:], b[3:],
                                                                                  strict=True))


def _place(file: Path, line: int | None, where: str) -> str:
    return f"{file}" + (f":{line}" if line is not None else "") + (f" ({where})" if where else "")


class _Builder:
    def __init__(self, indexes: dict[str, TurnIndex]) -> None:
        self.indexes = indexes
        self.items: dict[str, Item] = {}
        self.labels: dict[str, int] = {}
        self.files: list[Path] = []
        self.units: set[str] | None = None  # the dataset's units, when one is given
        #: item id -> (content, where it was first read) of every page and session
        self.seen: dict[str, tuple[tuple[Any, ...] | None, str]] = {}

    def page(self, page: dict[str, Any], item_id: str, user: str, where: str,
             probs: Problems, file: Path, line: int | None = None,
             place: str = "") -> str | None:
        bad = [k for k in ("user_input", "agent_response")
               if page.get(k) is not None and not isinstance(page[k], str)]
        if bad:
            probs.add(f"page {item_id!r}: {' and '.join(repr(k) for k in bad)} must be text",
                      line, record=item_id, file=file)
            return None
        content = _content(page, user)
        first = self.seen.get(item_id)
        if first is not None:
            if first[0] is not None and _same_page(first[0], content):
                return item_id if item_id in self.items else None
            what = ("a session id" if first[0] is None else
                    "another page (other text, user, timestamp or source_ids)")
            probs.add(f"page id {item_id!r} is also {what} at {first[1]}; each page id must "
                      "name one page, so neither can be imported as it is", line,
                      record=item_id, file=file, code="duplicate")
            return None
        self.seen[item_id] = (content, _place(file, line, place))
        given = page.get("source_ids")
        meta: list[tuple[str, Any]] = [("memoryos_type", where)]
        if isinstance(given, list) and given:
            m = PageMatch(tuple(dict.fromkeys(str(s) for s in given)), "source_ids")
            unknown = [u for u in m.sources if self.units is not None and u not in self.units]
            if unknown:  # such a page would count as sourced, yet no target could credit it
                probs.add(f"source_ids {unknown} name no unit of the dataset; give the "
                          "dataset's unit ids (e.g. conv-26:D1:3), or leave 'source_ids' out "
                          "to match the page's text", line, record=item_id, file=file,
                          code="invalid-value")
                return None
        elif given not in (None, []):
            probs.add(f"'source_ids' must be a list of unit ids, got {given!r}", line,
                      record=item_id, file=file)
            return None
        else:
            idx = self.indexes.get(user)
            if idx is None:
                probs.add(f"user {user!r} is not a collection of the dataset, so the turns of "
                          "its pages cannot be found; name each user's store by its collection "
                          "(e.g. conv-26)",
                          line, record=item_id, file=file)
                return None
            m = idx.match(str(page.get("user_input") or ""), str(page.get("agent_response") or ""),
                          None if page.get("timestamp") is None else str(page["timestamp"]))
        meta.append(("memoryos_lineage", m.label))
        if m.candidates:
            meta.append(("memoryos_candidates", list(m.candidates)))
        if page.get("timestamp") is not None:
            meta.append(("timestamp", str(page["timestamp"])))
        self.labels[m.label] = self.labels.get(m.label, 0) + 1
        text = "\n".join(x for x in (page.get("user_input"), page.get("agent_response")) if x)
        self.items[item_id] = Item(item_id, RAW_KIND, sources=m.sources, text=text or None,
                                   collection=user or None, meta=tuple(sorted(meta)),
                                   uncertain=m.uncertainty())
        return item_id

    def knowledge(self, entry: Any, user: str | None, probs: Problems, file: Path,
                  line: int | None, where: str, query_id: str | None = None) -> str | None:
        text = entry.get("knowledge") if isinstance(entry, dict) else None
        if not isinstance(text, str) or not text.strip():
            probs.add(f"{where} is not a knowledge entry with a 'knowledge' text, got "
                      f"{_short(entry)}", line, query_id, file=file)
            return None
        iid = f"knowledge:{user}:{_sha(text)}" if user else f"assistant-knowledge:{_sha(text)}"
        if iid not in self.items:
            kind = "user_knowledge" if user else "assistant_knowledge"
            # extracted by MemoryOS's LLM from the dialogue, with no source recorded: it may
            # derive from any turn of the user's collection (any collection, for assistant
            # knowledge, which names no user); nothing says it derives from one at all
            self.items[iid] = Item(iid, "knowledge", text=text, collection=user or None,
                                   meta=(("memoryos_type", kind),), uncertain=Uncertainty())
        return iid


def _read_store(root: Path, b: _Builder, probs: Problems) -> dict[str, int]:
    counts = {"short_term": 0, "pages": 0, "sessions": 0, "knowledge": 0}
    for user, files in _store_files(root).items():
        for key, f in files.items():
            b.files.append(f)
            data = _load_json(f, probs)
            if data is None:
                continue
            if key == "short":
                if not isinstance(data, list):
                    probs.add("short-term memory must be a list of QA pairs", file=f)
                    continue
                for i, qa in enumerate(data):
                    if not isinstance(qa, dict):
                        probs.add(f"short-term entry {i} is not a QA pair object, got "
                                  f"{_short(qa)}", file=f)
                        continue
                    if b.page(qa, f"short:{user}:{i}", user, "short_term", probs, f,
                              place=f"short-term entry {i}"):
                        counts["short_term"] += 1
            elif key == "mid":
                sessions = data.get("sessions") if isinstance(data, dict) else None
                if not isinstance(sessions, dict):
                    probs.add("mid-term memory must hold {\"sessions\": {id: session}}", file=f)
                    continue
                for sid, s in sessions.items():
                    details = s.get("details") if isinstance(s, dict) else None
                    if not isinstance(details, list):
                        probs.add("session has no 'details' list of pages", record=sid, file=f)
                        continue
                    pages = []
                    for n, p in enumerate(details):
                        pid = p.get("page_id") if isinstance(p, dict) else None
                        if not isinstance(pid, str) or not pid:
                            probs.add(f"page {n} of the session has no 'page_id'", record=sid,
                                      file=f)
                            continue
                        if pid not in b.seen:
                            counts["pages"] += 1
                        if b.page(p, pid, user, "page", probs, f,
                                  place=f"session {sid}, page {n}"):
                            pages.append(pid)
                    first = b.seen.get(sid)
                    if first is not None:
                        what = "a page id" if first[0] is not None else "another session's id"
                        probs.add(f"session id is also {what} at {first[1]}; each id must name "
                                  "one item", record=sid, file=f, code="duplicate")
                        continue
                    b.seen[sid] = (None, _place(f, None, f"session {sid} of user {user}"))
                    b.items[sid] = Item(sid, "summary", parents=tuple(dict.fromkeys(pages)),
                                        text=str(s.get("summary") or "") or None,
                                        collection=user or None,
                                        meta=(("memoryos_type", "session_summary"),))
                    counts["sessions"] += 1
            else:
                if not isinstance(data, dict):
                    probs.add("long-term memory must be a JSON object", file=f)
                    continue
                for field, owner in (("knowledge_base", user or None),
                                     ("assistant_knowledge", None)):
                    entries = _list(data.get(field))
                    if entries is None:
                        probs.add(f"'{field}' must be a list of knowledge entries", file=f)
                        continue
                    for i, entry in enumerate(entries):
                        counts["knowledge"] += b.knowledge(
                            entry, owner, probs, f, None, f"{field}[{i}]") is not None
    return counts


def _looks_like_mtel(path: Path) -> bool:
    try:
        with open_text(path) as fh:
            first = json.loads(next(iter(fh), "{}") or "{}")
    except (ValueError, TiapError):
        return False
    return isinstance(first, dict) and "tenant_id" in first and "returned_ids_full" in first


def read_memoryos(
    path: str | Path,
    *,
    system: str | None = None,
    dataset: str | None = "locomo",
    queries_path: str | Path | None = None,
    data_dir: str | Path | None = None,
) -> ImportResult:
    """Read a MemoryOS run folder (module docstring); nothing is written."""
    path = Path(path)
    if path.is_file():
        if _looks_like_mtel(path):
            raise TiapError("this is a trace of the paper's MTEL-Mem release: import it with "
                            "'tiap import mtel-trace'", file=path)
        raise TiapError(f"expected a MemoryOS run folder ({RESULTS_FILE} and the store's JSON "
                        "files)", file=path)
    results = path / RESULTS_FILE
    if not results.is_file():
        raise TiapError(f"no {RESULTS_FILE} in the MemoryOS run folder", file=path)
    if dataset is None and queries_path is None:
        raise TiapError("MemoryOS pages are matched to the dataset's turns: give --dataset")
    by_id, qfile = external_queries(dataset if queries_path is None else None, queries_path,
                                    data_dir)
    indexes: dict[str, TurnIndex] = {}
    if dataset is not None:
        for bundle in load(dataset, data_dir).bundles():
            indexes[bundle.collection.collection_id] = TurnIndex(
                bundle.turns, {s.session_id: s.date for s in bundle.sessions})
    probs = Problems()
    b = _Builder(indexes)
    units = None if dataset is None else {u for idx in indexes.values()
                                          for u in (t.unit_id for t in idx.turns)}
    b.units = units
    warns = RunWarnings()
    counts = _read_store(path, b, probs)
    system = system or path.name or "memoryos"

    rankings: list[Ranking] = []
    seen: dict[str, int] = {}
    for line, rec in iter_jsonl(results):
        qid = rec.get("query_id") if isinstance(rec, dict) else None
        if not isinstance(qid, (str, int)) or qid == "":
            probs.add("result has no 'query_id'", line, file=results)
            continue
        qid = str(qid)
        if qid in seen:
            probs.add(f"query has two results (first on line {seen[qid]})", line, qid, file=results)
            continue
        seen[qid] = line
        q = by_id.get(qid)
        if q is None:
            probs.add("query is not in the dataset's queries", line, qid, file=results)
            continue
        user = q.collection_id
        ranked: list[str | None]
        if rec.get("ranking") is not None:
            given = rec["ranking"]
            if not isinstance(given, list) or not all(isinstance(x, str) for x in given):
                probs.add("'ranking' must be a list of item ids", line, qid, file=results)
                continue
            for pos, x in enumerate(given, start=1):
                if x not in b.items and x not in b.seen:  # (a page read with problems: told)
                    probs.add(f"rank {pos}: {x!r} is not a page or session of the store",
                              line, qid, file=results)
            ranked = list(given)
        else:
            ranked = []
            lists = {k: _list(rec.get(k)) for k in _RESULT_LISTS}
            bad = [k for k, v in lists.items() if v is None]
            if bad:
                probs.add(f"{', '.join(repr(k) for k in bad)} must be lists", line, qid,
                          file=results)
                continue
            for n, page in enumerate(lists["retrieved_pages"] or []):
                pid = page.get("page_id") if isinstance(page, dict) else None
                if not isinstance(pid, str) or not pid:
                    probs.add(f"retrieved page {n} has no 'page_id'", line, qid, file=results)
                    ranked.append(None)
                    continue
                if pid not in b.seen:
                    counts["pages_only_in_results"] = counts.get("pages_only_in_results", 0) + 1
                ranked.append(b.page(page, pid, user, "page", probs, results, line,
                                     place=f"query {qid}, retrieved page {n}"))
            for k, owner in (("retrieved_user_knowledge", user),
                             ("retrieved_assistant_knowledge", None)):
                ranked += [b.knowledge(e, owner, probs, results, line, f"{k}[{i}]", qid)
                           for i, e in enumerate(lists[k] or [])]
        if any(x is None for x in ranked):
            continue  # its problems are reported; dropping them would move items up
        ids = [x for x in ranked if x is not None]
        keep = dedup_ranking(ids, query_id=qid, system=system, dedup="first", probs=probs,
                             warns=warns, file=results, lines=[line] * len(ids))
        rankings.append(Ranking(qid, system, tuple(ids[i] for i in keep or ())))
    probs.raise_if_any()
    require_queries(len(rankings), results, "query results")

    queries: list[Query] = [by_id[r.query_id] for r in rankings]
    items = tuple(b.items.values())
    findings: dict[str, Any] = {
        **counts,
        "page_lineage": dict(sorted(b.labels.items())),
        "queries_not_ranked": len(by_id) - len(queries),
        **partial_lineage_findings(items),
        "listed_unmatched_pages": [i.item_id for i in items
                                   if dict(i.meta).get("memoryos_lineage") in
                                   ("unmatched", "ambiguous")][:1000],
    }
    run = Run(system=system, rankings=tuple(rankings), source=results, format="memoryos",
              warnings=warns.freeze())
    inputs: Sequence[Path] = [results, *b.files] + ([qfile] if qfile else [])
    return ImportResult(system=system, format="memoryos", items=items,
                        queries=tuple(queries), run=run, inputs=tuple(inputs), findings=findings)


def import_memoryos(
    path: str | Path,
    out_dir: str | Path,
    *,
    system: str | None = None,
    dataset: str | None = "locomo",
    queries: str | Path | None = None,
    data_dir: str | Path | None = None,
) -> ImportResult:
    """Read a MemoryOS run folder and write the import folder."""
    result = read_memoryos(path, system=system, dataset=dataset, queries_path=queries,
                           data_dir=data_dir)
    write_import(result, out_dir)
    return result
