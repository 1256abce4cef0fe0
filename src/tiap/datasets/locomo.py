"""LoCoMo (Maharana et al., ACL 2024): ``locomo10.json``.

- collections: the 10 conversations (``sample_id``, e.g. ``conv-26``);
- turns: ``session_<n>`` lists; unit id ``<sample_id>:<dia_id>`` (``conv-26:D1:3``);
- queries: ``qa`` items, query id ``<sample_id>:q<i>`` (0-based position in ``qa``); category
  numbers named as in the paper (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop,
  5 adversarial); adversarial items keep their ``adversarial_answer``;
- evidence: ``D<session>:<turn>`` ids. Joined strings (``"D8:6; D9:17"``, ``"D9:1 D4:4"``)
  are split and each part resolved (reported as ``split``); malformed parts (``"D"``,
  ``"D:11:26"``, zero-padded ``"D30:05"``) are reported as ``malformed`` and ids of turns that
  do not exist as ``unresolvable``; neither is silently dropped;
- derived memories the dataset ships: ``observation`` facts (lineage through their
  ``dia_id``, one or several), ``session_summary`` (lineage to every turn of the session) and
  ``event_summary`` events (the file names no turn: lineage to every turn of the session).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from tiap.datasets.base import Bundle, Dataset, as_text, expect
from tiap.datasets.records import (
    Collection,
    DerivedMemory,
    EvidenceProblem,
    Query,
    Session,
    Turn,
)
from tiap.io import read_json

CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
_DIA = re.compile(r"D([1-9]\d*):([1-9]\d*)")
_SPLIT = re.compile(r"[;,\s]+")
_SESSION_KEY = re.compile(r"session_(\d+)")


def parse_dia_ids(given: str, known: set[str]) -> tuple[list[str], list[tuple[str, str, str]]]:
    """Split one evidence string into dia ids.

    Returns the resolved dia ids and a list of ``(part, problem, detail)`` for every part
    that could not be used, plus a ``split`` note when one string held several ids.
    """
    parts = [p for p in _SPLIT.split(given.strip()) if p]
    ok: list[str] = []
    problems: list[tuple[str, str, str]] = []
    if len(parts) > 1:
        problems.append((given, "split", f"one string holds {len(parts)} ids: {', '.join(parts)}"))
    if not parts:
        problems.append((given, "malformed", "empty evidence string"))
    for part in parts:
        if not _DIA.fullmatch(part):
            detail = "expected D<session>:<turn>"
            nums = [n.lstrip("0") or "0" for n in re.findall(r"\d+", part)]
            if len(nums) == 2 and f"D{nums[0]}:{nums[1]}" in known:
                detail += f" (did the file mean D{nums[0]}:{nums[1]}? it exists; not used)"
            problems.append((part, "malformed", detail))
        elif part not in known:
            problems.append((part, "unresolvable", "no such turn in this conversation"))
        else:
            ok.append(part)
    return ok, problems


class LoCoMo(Dataset):
    dataset_id = "locomo"
    description = "LoCoMo: 10 long conversations, 1,986 QA items, with observations and summaries"
    folder = "locomo"
    FILE = "locomo10.json"

    def file_paths(self) -> list[str]:
        return [self.FILE]

    def expected_collections(self) -> int:
        return 10

    def bundles(self) -> Iterator[Bundle]:
        path = self.path(self.FILE)
        data = read_json(path)
        expect(isinstance(data, list), "top level must be a list of conversations", file=path)
        for i, conv in enumerate(data):
            yield self._bundle(conv, i, path)

    def _bundle(self, conv: Any, index: int, path: Any) -> Bundle:
        rec = f"conversation {index}"
        expect(isinstance(conv, dict) and "sample_id" in conv, "no sample_id", file=path, record=rec)
        cid = str(conv["sample_id"])
        body = conv.get("conversation")
        expect(isinstance(body, dict), "no 'conversation' object", file=path, record=cid)
        speakers = tuple(str(body[k]) for k in ("speaker_a", "speaker_b") if k in body)

        sessions: list[Session] = []
        turns: list[Turn] = []
        by_session: dict[str, list[str]] = {}
        known: set[str] = set()
        problems: list[EvidenceProblem] = []
        numbers = sorted(int(m.group(1)) for k in body if (m := _SESSION_KEY.fullmatch(k)))
        for pos, n in enumerate(numbers, start=1):
            sid = f"session_{n}"
            lst = body[sid]
            expect(isinstance(lst, list), f"{sid} must be a list", file=path, record=cid)
            sessions.append(Session(cid, sid, pos, as_text(body.get(f"{sid}_date_time"))))
            ids: list[str] = []
            for tpos, t in enumerate(lst, start=1):
                expect(
                    isinstance(t, dict) and {"dia_id", "speaker", "text"} <= t.keys(),
                    f"{sid} turn {tpos} needs dia_id, speaker and text", file=path, record=cid,
                )
                dia = str(t["dia_id"])
                if dia != f"D{n}:{tpos}":
                    problems.append(EvidenceProblem(
                        f"{cid}:{dia}", dia, "turn_id",
                        f"turn {tpos} of {sid} is labelled {dia}"))
                extra = []
                if t.get("blip_caption"):
                    extra.append(("image_caption", str(t["blip_caption"])))
                if t.get("query"):
                    extra.append(("image_query", str(t["query"])))
                uid = f"{cid}:{dia}"
                turns.append(Turn(uid, cid, sid, tpos, str(t["speaker"]), str(t["text"]), tuple(extra)))
                known.add(dia)
                ids.append(uid)
            by_session[sid] = ids

        queries: list[Query] = []
        qa = conv.get("qa", [])
        expect(isinstance(qa, list), "'qa' must be a list", file=path, record=cid)
        for qi, q in enumerate(qa):
            qid = f"{cid}:q{qi}"
            expect(isinstance(q, dict) and "question" in q, f"qa[{qi}] has no question",
                   file=path, record=cid)
            given = q.get("evidence", [])
            expect(isinstance(given, list), f"qa[{qi}] evidence must be a list", file=path, record=qid)
            evidence: list[str] = []
            for g in given:
                ok, probs = parse_dia_ids(str(g), known)
                evidence.extend(f"{cid}:{d}" for d in ok)
                problems.extend(EvidenceProblem(qid, part, kind, detail) for part, kind, detail in probs)
            evidence = list(dict.fromkeys(evidence))
            if not evidence:
                problems.append(EvidenceProblem(
                    qid, json.dumps(given), "no_evidence",
                    "no usable evidence id: the query has no target"))
            cat = q.get("category")
            extra: list[tuple[str, Any]] = [("category_id", cat)]
            if "adversarial_answer" in q:
                extra.append(("adversarial_answer", as_text(q["adversarial_answer"])))
            queries.append(Query(
                query_id=qid,
                collection_id=cid,
                question=str(q["question"]),
                answer=as_text(q.get("answer")),
                category=CATEGORY_NAMES.get(cat, str(cat)),
                evidence=tuple(evidence),
                evidence_given=list(given),
                extra=tuple(extra),
            ))

        memories = self._memories(conv, cid, by_session, known, problems, path)
        return Bundle(
            collection=Collection(cid, len(sessions), len(turns), speakers),
            sessions=tuple(sessions),
            turns=tuple(turns),
            queries=tuple(queries),
            memories=tuple(memories),
            problems=tuple(problems),
        )

    @staticmethod
    def _memories(
        conv: dict[str, Any],
        cid: str,
        by_session: dict[str, list[str]],
        known: set[str],
        problems: list[EvidenceProblem],
        path: Any,
    ) -> list[DerivedMemory]:
        out: list[DerivedMemory] = []
        for key, per_speaker in (conv.get("observation") or {}).items():
            m = re.fullmatch(r"session_(\d+)_observation", key)
            expect(m is not None and isinstance(per_speaker, dict),
                   f"unexpected observation key {key!r}", file=path, record=cid)
            sid = f"session_{m.group(1)}"  # type: ignore[union-attr]
            j = 0
            for speaker, facts in per_speaker.items():
                for fact in facts:
                    j += 1
                    iid = f"{cid}:{sid}:observation:{j}"
                    expect(isinstance(fact, list) and len(fact) == 2,
                           f"{key} fact {j} must be [text, dia_id]", file=path, record=cid)
                    text, dia_given = fact
                    raw_ids = dia_given if isinstance(dia_given, list) else [dia_given]
                    sources: list[str] = []
                    for g in raw_ids:
                        ok, probs = parse_dia_ids(str(g), known)
                        sources.extend(f"{cid}:{d}" for d in ok)
                        problems.extend(
                            EvidenceProblem(iid, part, f"observation_{kind}", detail)
                            for part, kind, detail in probs if kind != "split"
                        )
                    out.append(DerivedMemory(iid, cid, "observation", str(text),
                                             tuple(dict.fromkeys(sources)), sid, str(speaker),
                                             dia_given))
        for key, text in (conv.get("session_summary") or {}).items():
            m = re.fullmatch(r"session_(\d+)_summary", key)
            expect(m is not None, f"unexpected session_summary key {key!r}", file=path, record=cid)
            sid = f"session_{m.group(1)}"  # type: ignore[union-attr]
            iid = f"{cid}:{sid}:session_summary"
            if not by_session.get(sid):
                problems.append(EvidenceProblem(iid, key, "summary_unresolvable",
                                                f"{sid} has no turns"))
            out.append(DerivedMemory(iid, cid, "session_summary", str(text),
                                     tuple(by_session.get(sid, ())), sid, None, key))
        for key, ev in (conv.get("event_summary") or {}).items():
            m = re.fullmatch(r"events_session_(\d+)", key)
            expect(m is not None and isinstance(ev, dict),
                   f"unexpected event_summary key {key!r}", file=path, record=cid)
            sid = f"session_{m.group(1)}"  # type: ignore[union-attr]
            j = 0
            for speaker, events in ev.items():
                if speaker == "date":
                    continue
                for text in events:
                    j += 1
                    iid = f"{cid}:{sid}:event_summary:{j}"
                    out.append(DerivedMemory(iid, cid, "event_summary", str(text),
                                             tuple(by_session.get(sid, ())), sid, str(speaker), key))
        return out
