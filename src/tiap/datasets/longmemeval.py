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
  ``evidence_given``); categories are the ``question_type`` values;
- every field is type-checked (:mod:`tiap.datasets.reading`), a question id read from two
  files is a ``duplicate`` error naming both, a question or session id holding whitespace
  or a control character is an error (:func:`tiap.ids.id_problem`), and every bad file is
  reported in one pass.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

from tiap.datasets.base import Bundle, Dataset, stream_checked
from tiap.datasets.files import manifest
from tiap.datasets.reading import At, Checker
from tiap.datasets.records import Collection, EvidenceProblem, Query, Session, Turn


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
        def reader(stored: str) -> Callable[[], tuple[Path, Bundle]]:
            def read() -> tuple[Path, Bundle]:
                path = self.path(stored)
                return path, read_question(path)
            return read

        yield from stream_checked((reader(s) for s in self.file_paths()), "question_id")


def read_question(path: Path) -> Bundle:
    """One LongMemEval question file, or one error listing every problem of the file."""
    ck = Checker(path)
    d = ck.obj(ck.load(), At())
    if d is None:
        ck.stop()
    top = At()
    qid = ck.str(d, "question_id", top) or ""
    if qid:
        qid = ck.ident(qid, top.key("question_id"), "question_id") or ""
        if qid:
            top = At(query_id=qid)
    elif "question_id" in d and isinstance(d["question_id"], str):
        ck.add("field 'question_id' is empty; expected the question id", top.key("question_id"),
               code="invalid-value")
    sids_given = ck.list_of_str(d, "haystack_session_ids", top) or []
    for k, sid in enumerate(sids_given):
        ck.ident(sid, top.key("haystack_session_ids").index(k), "session id")
    dates_given = ck.field_list(d, "haystack_dates", top) or []
    dates = [None if x is None else ck.text(x, top.key("haystack_dates").index(k))
             for k, x in enumerate(dates_given)]
    sess_given = ck.field_list(d, "haystack_sessions", top) or []
    if not len(sids_given) == len(sess_given) == len(dates):
        ck.add(f"haystack_session_ids, haystack_sessions and haystack_dates differ in length "
               f"({len(sids_given)}, {len(sess_given)}, {len(dates)}); expected one id and one "
               "date per session", top)
    seen: dict[str, int] = {}
    sessions: list[Session] = []
    turns: list[Turn] = []
    flagged: list[str] = []
    by_given: dict[str, list[str]] = {}
    notes: list[str] = []
    for spos, (sid0, date, sess) in enumerate(zip(sids_given, dates, sess_given), start=1):
        seen[sid0] = seen.get(sid0, 0) + 1
        sid = sid0 if seen[sid0] == 1 else f"{sid0}~{seen[sid0]}"
        if seen[sid0] == 2:
            notes.append(f"{qid}: session id {sid0} occurs more than once in the haystack; "
                         f"later copies are {sid0}~2, ...")
        sessions.append(Session(qid, sid, spos, date))
        sat = top.key("haystack_sessions").index(spos - 1, label=f"session {sid0}")
        for tpos, t in enumerate(ck.list(sess, sat, expected="a list of turns"), start=1):
            tat = sat.index(tpos - 1, label=f"session {sid0} turn {tpos}")
            t = ck.obj(t, tat)
            if t is None:
                continue
            role = ck.str(t, "role", tat)
            content = ck.str(t, "content", tat)
            has_answer = ck.bool(t, "has_answer", tat)
            if role is None or content is None:
                continue
            uid = f"{qid}:{sid}:{tpos}"
            turns.append(Turn(uid, qid, sid, tpos, role, content))
            by_given.setdefault(sid0, []).append(uid)
            if has_answer:
                flagged.append(uid)

    abstention = qid.endswith("_abs")
    answer_sessions = ck.list_of_str(d, "answer_session_ids", top, required=False) or []
    question = ck.str(d, "question", top) or ""
    answer = ck.str(d, "answer", top, null=True, numbers=True)
    category = ck.str(d, "question_type", top) or ""
    question_date = ck.str(d, "question_date", top, required=False, null=True)
    ck.raise_if_any()

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
        question=question,
        answer=answer,
        category=category,
        evidence=tuple(evidence),
        evidence_given={"answer_session_ids": answer_sessions, "has_answer_turns": flagged},
        abstention=abstention,
        evidence_sessions=tuple(answer_sessions),
        evidence_note=note,
        extra=(("question_date", question_date),),
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
