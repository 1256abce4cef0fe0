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
- ``beam/1m`` loads the chats whose ``chat.json`` is present and names the missing ones.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tiap.datasets.base import Bundle, Dataset, as_text, expect
from tiap.datasets.files import manifest
from tiap.datasets.records import Collection, EvidenceProblem, Query, Session, Turn
from tiap.io import read_json

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
        """Chats whose ``chat.json`` and questions are pinned and present locally."""
        pinned = manifest(self.folder)
        out = []
        for c in self.chats():
            chat = f"{self.tier}/{c}/chat.json"
            if chat in pinned and self.source.has(self.folder, chat):
                out.append(c)
        return out

    def missing_chats(self) -> list[str]:
        return [c for c in self.chats() if c not in self.available_chats()]

    def file_paths(self) -> list[str]:
        return [f"{self.tier}/{c}/{n}" for c in self.available_chats()
                for n in ("chat.json", "probing_questions.json")]

    def dataset_notes(self) -> tuple[str, ...]:
        missing = self.missing_chats()
        if not missing:
            return ()
        return (f"{len(missing)} of {len(self.chats())} chats have no chat.json here and are not "
                f"loaded: {_ranges(missing)}",)

    def expected_collections(self) -> int:
        return len(self.available_chats())

    def bundles(self) -> Iterator[Bundle]:
        for c in self.available_chats():
            yield self._bundle(c)

    def _bundle(self, chat: str) -> Bundle:
        cid = f"chat-{chat}"
        cpath = self.path(f"{self.tier}/{chat}/chat.json")
        qpath = self.path(f"{self.tier}/{chat}/probing_questions.json")
        data = read_json(cpath)
        expect(isinstance(data, list), "top level must be a list of batches", file=cpath)
        sessions: list[Session] = []
        turns: list[Turn] = []
        known: set[str] = set()
        problems: list[EvidenceProblem] = []
        for bpos, batch in enumerate(data, start=1):
            expect(isinstance(batch, dict) and isinstance(batch.get("turns"), list),
                   f"batch {bpos} has no list of turns", file=cpath, record=cid)
            sid = f"batch-{batch.get('batch_number', bpos)}"
            msgs = [m for group in batch["turns"] for m in (group if isinstance(group, list) else [group])]
            anchor = batch.get("time_anchor") or next(
                (m.get("time_anchor") for m in msgs if isinstance(m, dict) and m.get("time_anchor")), None)
            sessions.append(Session(cid, sid, bpos, as_text(anchor)))
            for mpos, m in enumerate(msgs, start=1):
                expect(isinstance(m, dict) and {"id", "role", "content"} <= m.keys(),
                       f"{sid} message {mpos} needs id, role and content", file=cpath, record=cid)
                mid = str(m["id"])
                uid = f"{cid}:{mid}"
                if mid in known:
                    problems.append(EvidenceProblem(uid, mid, "duplicate_turn_id",
                                                    f"message id {mid} occurs twice in {cid}"))
                known.add(mid)
                extra = tuple((k, str(m[k])) for k in ("index", "question_type", "time_anchor") if m.get(k))
                turns.append(Turn(uid, cid, sid, mpos, str(m["role"]), str(m["content"]), extra))

        qdata = read_json(qpath)
        expect(isinstance(qdata, dict), "top level must map abilities to questions", file=qpath)
        queries: list[Query] = []
        for ability, items in qdata.items():
            expect(isinstance(items, list), f"{ability} must be a list", file=qpath, record=cid)
            for i, q in enumerate(items):
                qid = f"{cid}:{ability}:{i}"
                expect(isinstance(q, dict) and "question" in q, f"{ability}[{i}] has no question",
                       file=qpath, record=qid)
                given = q.get("source_chat_ids")
                evidence: list[str] = []
                for x in flatten_ids(given):
                    key = str(x)
                    if key in known:
                        evidence.append(f"{cid}:{key}")
                    else:
                        problems.append(EvidenceProblem(qid, key, "unresolvable",
                                                        f"no message with id {key} in {cid}"))
                abstention = ability == "abstention"
                if not evidence and not abstention:
                    problems.append(EvidenceProblem(qid, repr(given), "no_evidence",
                                                    "no usable evidence: the query has no target"))
                answer = next((q[k] for k in ANSWER_KEYS if q.get(k) is not None), None)
                queries.append(Query(
                    query_id=qid,
                    collection_id=cid,
                    question=str(q["question"]),
                    answer=as_text(answer),
                    category=ability,
                    evidence=tuple(dict.fromkeys(evidence)),
                    evidence_given=given,
                    abstention=abstention,
                    extra=(("difficulty", q.get("difficulty")),),
                ))
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


