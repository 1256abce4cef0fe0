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
  ``event_summary`` events (the file names no turn: lineage to every turn of the session);
- every field is type-checked (:mod:`tiap.datasets.reading`): a wrong type, a ``null`` text,
  a string where a list of strings belongs, a category other than 1-5, a ``sample_id`` or a
  ``dia_id`` given twice, or holding whitespace or a control character (they become unit,
  query and collection ids: :func:`tiap.ids.id_problem`), are located errors, all of a file
  reported in one pass.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from tiap.datasets.base import Bundle, Dataset
from tiap.datasets.reading import At, Checker
from tiap.datasets.records import (
    Collection,
    DerivedMemory,
    EvidenceProblem,
    Query,
    Session,
    Turn,
)
from tiap.io import type_name

CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop",
                  5: "adversarial"}
_DIA = re.compile(r"D([1-9][0-9]*):([1-9][0-9]*)")
_SPLIT = re.compile(r"[;,\s]+")
_SESSION_KEY = re.compile(r"session_([0-9]+)")


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
        yield from read_locomo(self.path(self.FILE))


def read_locomo(path: Any) -> list[Bundle]:
    """Every conversation of a ``locomo10.json`` file, or one error listing every problem."""
    ck = Checker(path)
    data = ck.load()
    top = ck.list(data, At(), expected="a list of conversations")
    bundles: list[Bundle] = []
    first: dict[str, At] = {}
    for i, conv in enumerate(top):
        at = At().index(i, label=f"conversation {i}")
        c = ck.obj(conv, at)
        cid = ck.str(c, "sample_id", at) if c is not None else None
        if cid == "":
            ck.add("field 'sample_id' is empty; expected the conversation id",
                   at.key("sample_id"), code="invalid-value")
        elif cid is not None:
            cid = ck.ident(cid, at.key("sample_id"), "sample_id")
        if cid:
            at = At(at.path, cid)
            if cid in first:
                also = first[cid].key("sample_id").path
                ck.add(f"sample_id {cid!r} is given twice: also at {also}; expected each "
                       "conversation once", at.key("sample_id"), code="duplicate")
            else:
                first[cid] = at
        if c is not None:
            bundles.append(_bundle(ck, c, cid or f"#{i}", at))
    ck.raise_if_any()
    return bundles


def _session_number(ck: Checker, key: str, at: At) -> int | None:
    """The number of a ``session_<n>`` key, or None for other keys; a leading zero is an error."""
    m = _SESSION_KEY.fullmatch(key)
    if m is None:
        return None
    if m.group(1) != str(int(m.group(1))) or int(m.group(1)) == 0:
        ck.add(f"session key {key!r} is not session_<n> with n = 1, 2, ... (no leading zero)",
               at.key(key))
        return None
    return int(m.group(1))


def _bundle(ck: Checker, conv: dict[str, Any], cid: str, at: At) -> Bundle:
    body = ck.field_obj(conv, "conversation", at) or {}
    bat = at.key("conversation")
    speakers = tuple(s for k in ("speaker_a", "speaker_b")
                     if (s := ck.str(body, k, bat, required=False)) is not None)

    sessions: list[Session] = []
    turns: list[Turn] = []
    by_session: dict[str, list[str]] = {}
    known: dict[str, At] = {}
    problems: list[EvidenceProblem] = []
    numbers = sorted(n for k in body if (n := _session_number(ck, k, bat)) is not None)
    for pos, n in enumerate(numbers, start=1):
        sid = f"session_{n}"
        sat = bat.key(sid, label=f"{cid} {sid}")
        lst = ck.list(body[sid], sat, expected="a list of turns")
        date = ck.str(body, f"{sid}_date_time", bat, required=False, null=True)
        sessions.append(Session(cid, sid, pos, date))
        ids: list[str] = []
        for tpos, t in enumerate(lst, start=1):
            tat = sat.index(tpos - 1, label=f"{cid} {sid} turn {tpos}")
            t = ck.obj(t, tat)
            if t is None:
                continue
            dia = ck.ident(ck.str(t, "dia_id", tat), tat.key("dia_id"), "dia_id")
            speaker = ck.str(t, "speaker", tat)
            text = ck.str(t, "text", tat)
            extra = []
            caption = ck.str(t, "blip_caption", tat, required=False, null=True)
            if caption:
                extra.append(("image_caption", caption))
            image_query = ck.str(t, "query", tat, required=False, null=True)
            if image_query:
                extra.append(("image_query", image_query))
            if dia is None or speaker is None or text is None:
                continue
            if dia in known:
                ck.add(f"dia_id {dia!r} is given twice: also at {known[dia].path}; expected "
                       "each turn id once", tat.key("dia_id"), code="duplicate")
                continue
            if dia != f"D{n}:{tpos}":
                problems.append(EvidenceProblem(
                    f"{cid}:{dia}", dia, "turn_id",
                    f"turn {tpos} of {sid} is labelled {dia}"))
            uid = f"{cid}:{dia}"
            turns.append(Turn(uid, cid, sid, tpos, speaker, text, tuple(extra)))
            known[dia] = tat.key("dia_id")
            ids.append(uid)
        by_session[sid] = ids

    known_ids = set(known)
    queries: list[Query] = []
    qa = ck.field_list(conv, "qa", at, required=False) or []
    for qi, q in enumerate(qa):
        qid = f"{cid}:q{qi}"
        qat = at.key("qa").index(qi, label="", query_id=qid)
        q = ck.obj(q, qat)
        if q is None:
            continue
        question = ck.str(q, "question", qat)
        answer = ck.str(q, "answer", qat, required=False, null=True, numbers=True)
        cat = ck.int(q, "category", qat)
        if cat is not None and cat not in CATEGORY_NAMES:
            ck.add(f"field 'category' is {cat}; expected 1-5 "
                   f"({', '.join(f'{k} {v}' for k, v in CATEGORY_NAMES.items())})",
                   qat.key("category"), code="invalid-value")
        given = ck.list_of_str(q, "evidence", qat, required=False)
        given = [] if given is None else given
        evidence: list[str] = []
        for g in given:
            ok, probs = parse_dia_ids(g, known_ids)
            evidence.extend(f"{cid}:{d}" for d in ok)
            problems.extend(EvidenceProblem(qid, part, kind, detail)
                            for part, kind, detail in probs)
        evidence = list(dict.fromkeys(evidence))
        if not evidence:
            problems.append(EvidenceProblem(
                qid, json.dumps(given, allow_nan=False), "no_evidence",
                "no usable evidence id: the query has no target"))
        extra: list[tuple[str, Any]] = [("category_id", cat)]
        if "adversarial_answer" in q:
            extra.append(("adversarial_answer",
                          ck.str(q, "adversarial_answer", qat, null=True, numbers=True)))
        queries.append(Query(
            query_id=qid,
            collection_id=cid,
            question=question or "",
            answer=answer,
            category=CATEGORY_NAMES.get(cat, str(cat)),  # type: ignore[arg-type]
            evidence=tuple(evidence),
            evidence_given=list(given),
            extra=tuple(extra),
        ))

    memories = _memories(ck, conv, cid, at, by_session, known_ids, problems)
    return Bundle(
        collection=Collection(cid, len(sessions), len(turns), speakers),
        sessions=tuple(sessions),
        turns=tuple(turns),
        queries=tuple(queries),
        memories=tuple(memories),
        problems=tuple(problems),
    )


def _keyed(ck: Checker, conv: dict[str, Any], key: str, at: At, pattern: str,
           form: str) -> Iterator[tuple[str, str, Any, At]]:
    """``(session id, key, value, location)`` for each ``<pattern>`` key of the optional object
    ``conv[key]`` (absent or null: none); any other key is an error."""
    if conv.get(key) is None:
        return
    obj = ck.field_obj(conv, key, at) or {}
    oat = at.key(key)
    for k, v in obj.items():
        m = re.fullmatch(pattern, k)
        if m is None or m.group(1) != str(int(m.group(1))):
            ck.add(f"unexpected key {k!r} in {key!r}; expected {form}", oat.key(k))
            continue
        yield f"session_{m.group(1)}", k, v, oat.key(k)


def _memories(
    ck: Checker,
    conv: dict[str, Any],
    cid: str,
    at: At,
    by_session: dict[str, list[str]],
    known: set[str],
    problems: list[EvidenceProblem],
) -> list[DerivedMemory]:
    out: list[DerivedMemory] = []
    for sid, _, per_speaker, kat in _keyed(ck, conv, "observation", at,
                                           r"session_([0-9]+)_observation",
                                           "session_<n>_observation"):
        j = 0
        for speaker, facts in (ck.obj(per_speaker, kat) or {}).items():
            fat = kat.key(speaker)
            facts = ck.list(facts, fat, expected="a list of [text, dia_id] facts")
            for fi, fact in enumerate(facts):
                j += 1
                iid = f"{cid}:{sid}:observation:{j}"
                xat = fat.index(fi)
                if not (isinstance(fact, list) and len(fact) == 2):
                    ck.add(f"the fact is {_shape(fact)}; expected [text, dia_id] (dia_id a "
                           "string or a list of strings)", xat)
                    continue
                text = ck.text(fact[0], xat.index(0))
                dia_given = fact[1]
                if isinstance(dia_given, list):
                    raw_ids = [ck.text(g, xat.index(1).index(k)) for k, g in enumerate(dia_given)]
                else:
                    raw_ids = [ck.text(dia_given, xat.index(1), "dia_id")]
                sources: list[str] = []
                for g in raw_ids:
                    ok, probs = parse_dia_ids(g, known)
                    sources.extend(f"{cid}:{d}" for d in ok)
                    problems.extend(
                        EvidenceProblem(iid, part, f"observation_{kind}", detail)
                        for part, kind, detail in probs if kind != "split"
                    )
                out.append(DerivedMemory(iid, cid, "observation", text,
                                         tuple(dict.fromkeys(sources)), sid, speaker,
                                         dia_given))
    for sid, key, text, kat in _keyed(ck, conv, "session_summary", at, r"session_([0-9]+)_summary",
                                 "session_<n>_summary"):
        text = ck.text(text, kat)
        iid = f"{cid}:{sid}:session_summary"
        if not by_session.get(sid):
            problems.append(EvidenceProblem(iid, key, "summary_unresolvable",
                                            f"{sid} has no turns"))
        out.append(DerivedMemory(iid, cid, "session_summary", text,
                                 tuple(by_session.get(sid, ())), sid, None, key))
    for sid, key, ev, kat in _keyed(ck, conv, "event_summary", at, r"events_session_([0-9]+)",
                               "events_session_<n>"):
        j = 0
        for speaker, events in (ck.obj(ev, kat) or {}).items():
            if speaker == "date":
                ck.str(ev, "date", kat, null=True)
                continue
            eat = kat.key(speaker)
            texts = [ck.text(x, eat.index(k))
                     for k, x in enumerate(ck.list(events, eat, speaker,
                                                   expected="a list of event strings"))]
            for text in texts:
                j += 1
                iid = f"{cid}:{sid}:event_summary:{j}"
                if not by_session.get(sid) and j == 1:
                    problems.append(EvidenceProblem(iid, key, "summary_unresolvable",
                                                    f"{sid} has no turns"))
                out.append(DerivedMemory(iid, cid, "event_summary", text,
                                         tuple(by_session.get(sid, ())), sid, speaker, key))
    return out


def _shape(value: Any) -> str:
    if isinstance(value, list):
        return f"a list of {len(value)}"
    return type_name(value)
