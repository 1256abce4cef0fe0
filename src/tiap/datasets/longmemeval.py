"""LongMemEval (Wu et al., ICLR 2025): the oracle split and LongMemEval-S (cleaned).

Both are read as one JSON object per question (``oracle/*.json``, ``s_cleaned/*.json.gz``),
streamed one question at a time, so the 245k turns of LongMemEval-S are never all in memory.

- collection: the question's haystack (collection id = question id);
- sessions: ``haystack_session_ids`` with ``haystack_dates``. A session id that occurs twice
  in one haystack (13 questions of S) gets ``~2`` on its second occurrence, and a note;
- turns: unit id ``<question_id>:<session_id>:<position>`` (1-based position in the session);
- evidence: the turns flagged ``has_answer``; where none is flagged, all turns of
  ``answer_session_ids`` (the query's ``evidence_note`` says so, and a ``fallback`` problem is
  listed); the session-level evidence is kept as ``evidence_sessions``;
- ``_abs`` questions are abstention questions: no evidence (flags given are kept in
  ``evidence_given``); categories are the ``question_type`` values.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from tiap.datasets.base import Bundle, Dataset, as_text, expect
from tiap.datasets.files import manifest
from tiap.datasets.records import Collection, EvidenceProblem, Query, Session, Turn
from tiap.io import read_json


class LongMemEval(Dataset):
    folder = "longmemeval"
    subdir = ""

    def file_paths(self) -> list[str]:
        prefix = self.subdir + "/"
        # Pinned file order is by file name; sort by the question-file number, then name.
        names = [p for p in manifest(self.folder) if p.startswith(prefix)]
        return sorted(names, key=_file_key)

    def expected_collections(self) -> int:
        return len(self.file_paths())

    def bundles(self) -> Iterator[Bundle]:
        for stored in self.file_paths():
            path = self.path(stored)
            yield self._bundle(read_json(path), path)

    def _bundle(self, d: Any, path: Any) -> Bundle:
        expect(isinstance(d, dict) and "question_id" in d, "no question_id", file=path)
        qid = str(d["question_id"])
        for key in ("haystack_session_ids", "haystack_sessions", "haystack_dates"):
            expect(isinstance(d.get(key), list), f"{key} must be a list", file=path, record=qid)
        sids_given: list[str] = [str(s) for s in d["haystack_session_ids"]]
        expect(len(sids_given) == len(d["haystack_sessions"]) == len(d["haystack_dates"]),
               "haystack ids, sessions and dates differ in length", file=path, record=qid)
        seen: dict[str, int] = {}
        sessions: list[Session] = []
        turns: list[Turn] = []
        flagged: list[str] = []
        by_given: dict[str, list[str]] = {}
        notes: list[str] = []
        for spos, (sid0, date, sess) in enumerate(
            zip(sids_given, d["haystack_dates"], d["haystack_sessions"], strict=True), start=1
        ):
            seen[sid0] = seen.get(sid0, 0) + 1
            sid = sid0 if seen[sid0] == 1 else f"{sid0}~{seen[sid0]}"
            if seen[sid0] == 2:
                notes.append(f"{qid}: session id {sid0} occurs more than once in the haystack; "
                             f"later copies are {sid0}~2, ...")
            sessions.append(Session(qid, sid, spos, as_text(date)))
            expect(isinstance(sess, list), f"session {sid0} must be a list of turns",
                   file=path, record=qid)
            for tpos, t in enumerate(sess, start=1):
                expect(isinstance(t, dict) and "role" in t and "content" in t,
                       f"session {sid0} turn {tpos} needs role and content", file=path, record=qid)
                uid = f"{qid}:{sid}:{tpos}"
                turns.append(Turn(uid, qid, sid, tpos, str(t["role"]), str(t["content"])))
                by_given.setdefault(sid0, []).append(uid)
                if t.get("has_answer") is True:
                    flagged.append(uid)

        abstention = qid.endswith("_abs")
        answer_sessions = [str(s) for s in d.get("answer_session_ids") or []]
        problems: list[EvidenceProblem] = []
        for s in answer_sessions:
            if s not in by_given:
                problems.append(EvidenceProblem(qid, s, "unresolvable",
                                                "answer session not in the haystack"))
        note = None
        if abstention:
            evidence: list[str] = []
        elif flagged:
            evidence = flagged
        else:
            evidence = [u for s in answer_sessions for u in by_given.get(s, [])]
            note = "fallback: no turn is flagged has_answer; all turns of answer_session_ids"
            problems.append(EvidenceProblem(qid, ", ".join(answer_sessions), "fallback", note))
        if not evidence and not abstention:
            problems.append(EvidenceProblem(qid, ", ".join(answer_sessions), "no_evidence",
                                            "no usable evidence: the query has no target"))
        query = Query(
            query_id=qid,
            collection_id=qid,
            question=str(d.get("question", "")),
            answer=as_text(d.get("answer")),
            category=str(d.get("question_type", "")),
            evidence=tuple(evidence),
            evidence_given={"answer_session_ids": answer_sessions, "has_answer_turns": flagged},
            abstention=abstention,
            evidence_sessions=tuple(answer_sessions),
            evidence_note=note,
            extra=(("question_date", as_text(d.get("question_date"))),),
        )
        return Bundle(
            collection=Collection(qid, len(sessions), len(turns), ("user", "assistant")),
            sessions=tuple(sessions),
            turns=tuple(turns),
            queries=(query,),
            problems=tuple(problems),
            notes=tuple(notes),
        )


def _file_key(stored: str) -> tuple[int, str]:
    name = stored.rsplit("/", 1)[-1]
    m = re.match(r"(\d+)_", name)
    return (int(m.group(1)) if m else 0, name)


class LongMemEvalS(LongMemEval):
    dataset_id = "longmemeval/s"
    description = "LongMemEval-S (cleaned): 498 questions here, ~48 sessions of haystack each"
    subdir = "s_cleaned"


class LongMemEvalOracle(LongMemEval):
    dataset_id = "longmemeval/oracle"
    description = "LongMemEval oracle: 500 questions, evidence sessions only"
    subdir = "oracle"
