"""BEAM (Tavakoli et al., ICLR 2026): ``<tier>/<chat>/chat.json`` + ``probing_questions.json``.

- collection: one chat (``chat-<n>``); sessions are the chat's batches (``batch-<n>``, dated
  by the first ``time_anchor`` in the batch);
- turns: every message, unit id ``chat-<n>:<id>`` from the message's global ``id``; the
  position is the message's 1-based position within its batch;
- queries: ``probing_questions.json`` maps an ability to its questions; the ability is the
  category; query id ``chat-<n>:<ability>:<i>``; the reference answer is the first of
  ``answer``, ``ideal_answer``, ``ideal_response``, ``ideal_summary``,
  ``expected_compliance``;
- evidence: ``source_chat_ids`` flattened from a flat list, nested lists or a dict of lists
  (the dict's keys, such as ``original_info`` / ``updated_info``, are kept in
  ``evidence_given``); ``abstention`` questions have none;
- a chat is loaded when its ``chat.json`` is pinned (the release ships it): all 20 of
  ``beam/100k``; a pinned file that is absent is an error (or a download), never a chat left
  out. ``beam/1m`` ships 9 chats' ``chat.json`` for 35 chats' questions: the 26 others are
  not loaded, and are named in the notes and in an export's manifest (``pinned_not_read``);
- every field is type-checked (:mod:`tiap.datasets.reading`); a message id or batch number
  given twice in a chat is a ``duplicate`` error naming both places, an id in
  ``source_chat_ids`` that is neither an integer nor a string is an error.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from tiap.datasets.base import Bundle, Dataset, stream_checked
from tiap.datasets.files import manifest
from tiap.datasets.reading import At, Checker
from tiap.datasets.records import Collection, EvidenceProblem, Query, Session, Turn
from tiap.io import type_name

ANSWER_KEYS = ("answer", "ideal_answer", "ideal_response", "ideal_summary", "expected_compliance")


def flatten_ids(value: Any) -> list[Any]:
    """Flatten ``source_chat_ids``: a scalar, a (nested) list, or a dict of lists."""
    if value is None:
        return []
    if isinstance(value, dict):
        return [x for v in value.values() for x in flatten_ids(v)]
    if isinstance(value, list):
        return [x for v in value for x in flatten_ids(v)]
    return [value]


class Beam(Dataset):
    folder = "beam"
    tier = ""

    def chats(self) -> list[str]:
        """Chat numbers of this tier, in numeric order."""
        nums = {p.split("/")[1] for p in manifest(self.folder) if p.startswith(self.tier + "/")}
        return sorted(nums, key=int)

    def available_chats(self) -> list[str]:
        """Chats whose ``chat.json`` is pinned: the release ships them, so each is read (from
        the data folder, the cache or a download) and one that cannot be had is an error,
        as for every pinned file; it is never skipped."""
        pinned = manifest(self.folder)
        return [c for c in self.chats() if f"{self.tier}/{c}/chat.json" in pinned]

    def missing_chats(self) -> list[str]:
        """Chats with pinned questions but no ``chat.json`` in the release (BEAM-1M ships 9
        of its 35 chats): not loaded, and named in :meth:`dataset_notes` and
        :meth:`unread_files`."""
        available = set(self.available_chats())
        return [c for c in self.chats() if c not in available]

    def file_paths(self) -> list[str]:
        return [f"{self.tier}/{c}/{n}" for c in self.available_chats()
                for n in ("chat.json", "probing_questions.json")]

    def unread_files(self) -> dict[str, str]:
        pinned = manifest(self.folder)
        return {path: f"chat {c} has no chat.json in the BEAM release (not pinned)"
                for c in self.missing_chats()
                if (path := f"{self.tier}/{c}/probing_questions.json") in pinned}

    def dataset_notes(self) -> tuple[str, ...]:
        missing = self.missing_chats()
        if not missing:
            return ()
        return (f"{len(missing)} of {len(self.chats())} chats have no chat.json in the release "
                f"and are not loaded: {_ranges(missing)}",)

    def expected_collections(self) -> int:
        return len(self.available_chats())

    def bundles(self) -> Iterator[Bundle]:
        def reader(chat: str) -> Callable[[], tuple[Path, Bundle]]:
            def read() -> tuple[Path, Bundle]:
                cpath = self.path(f"{self.tier}/{chat}/chat.json")
                qpath = self.path(f"{self.tier}/{chat}/probing_questions.json")
                return cpath, read_chat(f"chat-{chat}", cpath, qpath)
            return read

        yield from stream_checked((reader(c) for c in self.available_chats()), "chat")


def _id(ck: Checker, value: Any, at: At, name: str | None = None) -> str | None:
    """A message id: an integer or a string (a boolean, number or null is not an id)."""
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return str(value)
    ck.add(f"{'field ' + repr(name) if name else 'the id'} is {type_name(value)}; expected a "
           "message id (an integer or a string)", at)
    return None


def _ids(ck: Checker, value: Any, at: At) -> list[str]:
    """``source_chat_ids`` flattened: an id, a (nested) list or a dict of lists of ids."""
    if isinstance(value, dict):
        return [x for k, v in value.items() for x in _ids(ck, v, at.key(k))]
    if isinstance(value, list):
        return [x for i, v in enumerate(value) for x in _ids(ck, v, at.index(i))]
    got = _id(ck, value, at)
    return [] if got is None else [got]


def read_chat(cid: str, cpath: Path, qpath: Path) -> Bundle:
    """One BEAM chat (``chat.json`` and ``probing_questions.json``), or one error listing every
    problem of both files."""
    ck = Checker(cpath)
    data = ck.load()
    sessions: list[Session] = []
    turns: list[Turn] = []
    known: dict[str, At] = {}
    batch_at: dict[str, At] = {}
    for bpos, batch in enumerate(ck.list(data, At(), expected="a list of batches"), start=1):
        bat = At().index(bpos - 1, label=f"{cid} batch {bpos}")
        batch = ck.obj(batch, bat)
        if batch is None:
            continue
        number = ck.int(batch, "batch_number", bat, required=False, default=bpos)
        sid = f"batch-{number}"
        if sid in batch_at:
            ck.add(f"batch_number {number} is given twice: also at {batch_at[sid].path}; "
                   "expected each batch once", bat.key("batch_number"), code="duplicate")
        batch_at[sid] = bat.key("batch_number")
        groups = ck.field_list(batch, "turns", bat) or []
        msgs: list[tuple[At, Any]] = []
        for g, group in enumerate(groups):
            gat = bat.key("turns").index(g)
            if isinstance(group, list):
                msgs.extend((gat.index(k), m) for k, m in enumerate(group))
            else:
                msgs.append((gat, group))
        anchor = ck.str(batch, "time_anchor", bat, required=False, null=True)
        ordered: list[tuple[At, dict[str, Any]]] = []
        for mpos, (mat, m) in enumerate(msgs, start=1):
            mat = At(mat.path, f"{cid} {sid} message {mpos}")
            m = ck.obj(m, mat)
            if m is not None:
                ordered.append((mat, m))
        if not anchor:
            anchor = next((m["time_anchor"] for _, m in ordered
                           if isinstance(m.get("time_anchor"), str) and m["time_anchor"]), None)
        sessions.append(Session(cid, sid, bpos, anchor))
        for mpos, (mat, m) in enumerate(ordered, start=1):
            mid = _id(ck, m["id"], mat.key("id"), "id") if "id" in m else None
            mid = ck.ident(mid, mat.key("id"), "message id")
            if "id" not in m:
                ck.add("missing field 'id'; expected a message id (an integer or a string)",
                       mat.key("id"))
            role = ck.str(m, "role", mat)
            content = ck.str(m, "content", mat)
            extra = []
            for k in ("index", "question_type", "time_anchor"):
                v = ck.str(m, k, mat, required=False, null=True, numbers=True)
                if v:
                    extra.append((k, v))
            if mid is None or role is None or content is None:
                continue
            if mid in known:
                ck.add(f"message id {mid} is given twice: also at {known[mid].path}; expected "
                       "each message id once", mat.key("id"), code="duplicate")
                continue
            known[mid] = mat.key("id")
            turns.append(Turn(f"{cid}:{mid}", cid, sid, mpos, role, content, tuple(extra)))

    qk = ck.other(qpath)
    qdata = qk.obj(qk.load(), At(), "the top level (abilities to lists of questions)") or {}
    queries: list[Query] = []
    problems: list[EvidenceProblem] = []
    for ability, items in qdata.items():
        aat = At().key(ability)
        if qk.ident(ability, aat, "ability") is None:
            continue
        for i, q in enumerate(qk.list(items, aat, expected="a list of questions")):
            qid = f"{cid}:{ability}:{i}"
            qat = aat.index(i, query_id=qid)
            q = qk.obj(q, qat)
            if q is None:
                continue
            question = qk.str(q, "question", qat) or ""
            given = q.get("source_chat_ids")
            ids = [] if given is None else _ids(qk, given, qat.key("source_chat_ids"))
            evidence: list[str] = []
            for key in ids:
                if key in known:
                    evidence.append(f"{cid}:{key}")
                else:
                    problems.append(EvidenceProblem(qid, key, "unresolvable",
                                                    f"no message with id {key} in {cid}"))
            abstention = ability == "abstention"
            if not evidence and not abstention:
                problems.append(EvidenceProblem(qid, repr(given), "no_evidence",
                                                "no usable evidence: the query has no target"))
            akey = next((k for k in ANSWER_KEYS if q.get(k) is not None), None)
            answer = None if akey is None else qk.str(q, akey, qat, numbers=True)
            queries.append(Query(
                query_id=qid,
                collection_id=cid,
                question=question,
                answer=answer,
                category=ability,
                evidence=tuple(dict.fromkeys(evidence)),
                evidence_given=given,
                abstention=abstention,
                extra=(("difficulty", q.get("difficulty")),),
            ))
    ck.raise_if_any()
    return Bundle(
        collection=Collection(cid, len(sessions), len(turns), ("user", "assistant")),
        sessions=tuple(sessions),
        turns=tuple(turns),
        queries=tuple(queries),
        problems=tuple(problems),
    )


def _ranges(nums: list[str]) -> str:
    """``['1','2','3','5']`` -> ``'1-3, 5'``."""
    ints = sorted(int(n) for n in nums)
    out: list[str] = []
    start = prev = ints[0]
    for n in ints[1:] + [None]:  # type: ignore[list-item]
        if n is not None and n == prev + 1:
            prev = n
            continue
        out.append(f"{start}-{prev}" if prev > start else str(start))
        if n is not None:
            start = prev = n
    return ", ".join(out)


class Beam100K(Beam):
    dataset_id = "beam/100k"
    description = "BEAM 128K tier (folder 100K): 20 chats, 400 probing questions"
    tier = "100K"


class Beam1M(Beam):
    dataset_id = "beam/1m"
    description = "BEAM 1M tier: 35 chats' questions; the chats whose chat.json is present"
    tier = "1M"


