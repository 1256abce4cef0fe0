"""Property tests of every dataset reader: any input loads the records an independent,
strict reference reader (written here, with asserts) gives, or raises TiapError; never any
other exception. Inputs: arbitrary bytes, byte-level damage of a valid file, and structured
mutations (replace / delete / duplicate / rename) of a small valid record with hypothesis'
recursive JSON values.
"""

from __future__ import annotations

import copy
import difflib
import gzip
import io
import json
import re
import unicodedata
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tiap.datasets.beam import read_chat
from tiap.datasets.locomo import read_locomo
from tiap.datasets.longmemeval import read_question
from tiap.datasets.queryfile import read_queries
from tiap.errors import TiapError

BUDGET = settings(max_examples=200, deadline=None, derandomize=True, database=None,
                  suppress_health_check=[HealthCheck.too_slow,
                                         HealthCheck.function_scoped_fixture])

REJECT = "rejected"


class Reject(Exception):
    pass


def need(cond: Any) -> None:
    if not cond:
        raise Reject


def id_text(v: Any) -> bool:
    """Text a loader may make ids of: a non-empty string with no whitespace and no control
    character (docs/datasets.md, "Ids")."""
    return isinstance(v, str) and v != "" and not any(
        c.isspace() or unicodedata.category(c) == "Cc" for c in v)


def near_miss(key: str, known: set[str]) -> bool:
    """An extra key the format refuses as a misspelling of a known one (docs/datasets.md)."""
    def norm(k: str) -> str:
        return k.casefold().replace("-", "_")
    return any(norm(key) == norm(k) or (abs(len(k) - len(key)) <= 2 and
                                        difflib.SequenceMatcher(None, key, k).ratio() >= 0.8)
               for k in known)


def is_str(v: Any) -> bool:
    return type(v) is str


def is_int(v: Any) -> bool:
    return type(v) is int


def is_num(v: Any) -> bool:
    return type(v) in (int, float)


def num_text(v: Any) -> str:
    """A string, or a number as its text (the documented rule for answers)."""
    need(is_str(v) or is_num(v))
    return v if is_str(v) else str(v)


def opt(d: dict, key: str, ok, default: Any = None) -> Any:  # type: ignore[no-untyped-def]
    """An optional field: absent gives ``default``; present must satisfy ``ok``."""
    if key not in d:
        return default
    need(ok(d[key]))
    return d[key]


# -- the reference: bytes to JSON -----------------------------------------------------------------
def ref_json(raw: bytes) -> Any:
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except Exception as exc:
            raise Reject from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Reject from exc
    if text.startswith("\ufeff"):
        text = text[1:]
    return ref_json_text(text)


def _pairs(pairs: list) -> dict:  # type: ignore[type-arg]
    need(len({k for k, _ in pairs}) == len(pairs))  # a key twice is refused
    return dict(pairs)


def _refuse_constant(token: str) -> Any:
    raise Reject


def _no_surrogates(v: Any) -> None:
    if isinstance(v, str):
        need(not any(0xD800 <= ord(c) <= 0xDFFF for c in v))
    elif isinstance(v, list):
        for x in v:
            _no_surrogates(x)
    elif isinstance(v, dict):
        for k, x in v.items():
            _no_surrogates(k)
            _no_surrogates(x)


def ref_json_text(text: str) -> Any:
    try:
        v = json.loads(text, object_pairs_hook=_pairs, parse_constant=_refuse_constant)
    except (ValueError, RecursionError) as exc:
        raise Reject from exc
    _no_surrogates(v)
    return v


def outcome(fn, *args):  # type: ignore[no-untyped-def]
    try:
        return fn(*args)
    except Reject:
        return REJECT


def real(fn, *args):  # type: ignore[no-untyped-def]
    try:
        return fn(*args)
    except TiapError as exc:
        assert exc.problems and all(p.file for p in exc.problems), exc
        return REJECT


# -- LoCoMo reference -----------------------------------------------------------------------------
DIA = re.compile(r"D[1-9][0-9]*:[1-9][0-9]*")


def ref_resolve(given: str, known: set[str]) -> list[str]:
    parts = [p for p in re.split(r"[;,\s]+", given.strip()) if p]
    return [p for p in parts if DIA.fullmatch(p) and p in known]


def canonical_number(digits: str) -> bool:
    return digits == str(int(digits))


def ref_locomo(doc: Any) -> Any:
    need(isinstance(doc, list))
    out = []
    ids = set()
    for conv in doc:
        need(isinstance(conv, dict))
        cid = conv.get("sample_id")
        need(is_str(cid) and cid and cid not in ids and id_text(cid))
        ids.add(cid)
        body = conv.get("conversation")
        need(isinstance(body, dict))
        speakers = tuple(opt(body, k, is_str) for k in ("speaker_a", "speaker_b") if k in body)
        nums = []
        for k in body:
            m = re.fullmatch(r"session_([0-9]+)", k)
            if m:
                need(canonical_number(m.group(1)) and int(m.group(1)) > 0)
                nums.append(int(m.group(1)))
        sessions, turns, by_session, known = [], [], {}, set()
        for pos, n in enumerate(sorted(nums), 1):
            sid = f"session_{n}"
            need(isinstance(body[sid], list))
            date = opt(body, f"{sid}_date_time", lambda v: v is None or is_str(v))
            sessions.append((sid, pos, date))
            by_session[sid] = []
            for tpos, t in enumerate(body[sid], 1):
                need(isinstance(t, dict))
                dia, speaker, text = t.get("dia_id"), t.get("speaker"), t.get("text")
                need(is_str(dia) and is_str(speaker) and is_str(text) and dia not in known)
                need(id_text(dia))
                extra = []
                for src, dst in (("blip_caption", "image_caption"), ("query", "image_query")):
                    v = opt(t, src, lambda v: v is None or is_str(v))
                    if v:
                        extra.append((dst, v))
                known.add(dia)
                turns.append((f"{cid}:{dia}", sid, tpos, speaker, text, tuple(extra)))
                by_session[sid].append(f"{cid}:{dia}")
        queries = []
        qa = opt(conv, "qa", lambda v: isinstance(v, list), [])
        for i, q in enumerate(qa):
            need(isinstance(q, dict) and is_str(q.get("question")))
            answer = q.get("answer")
            answer = None if answer is None else num_text(answer)
            cat = q.get("category")
            need(is_int(cat) and 1 <= cat <= 5)
            ev = opt(q, "evidence", lambda v: isinstance(v, list) and all(map(is_str, v)), [])
            if "adversarial_answer" in q and q["adversarial_answer"] is not None:
                num_text(q["adversarial_answer"])
            evidence = [f"{cid}:{d}" for g in ev for d in ref_resolve(g, known)]
            name = ["multi-hop", "temporal", "open-domain", "single-hop", "adversarial"][cat - 1]
            queries.append((f"{cid}:q{i}", q["question"], answer, name,
                            tuple(dict.fromkeys(evidence))))
        memories = []
        obs = conv.get("observation")
        if obs is not None:
            need(isinstance(obs, dict))
            for k, per in obs.items():
                m = re.fullmatch(r"session_([0-9]+)_observation", k)
                need(m and canonical_number(m.group(1)) and isinstance(per, dict))
                sid, j = f"session_{m.group(1)}", 0
                for speaker, facts in per.items():
                    need(isinstance(facts, list))
                    for fact in facts:
                        j += 1
                        need(isinstance(fact, list) and len(fact) == 2 and is_str(fact[0]))
                        dia = fact[1] if isinstance(fact[1], list) else [fact[1]]
                        need(all(map(is_str, dia)))
                        src = [f"{cid}:{d}" for g in dia for d in ref_resolve(g, known)]
                        memories.append((f"{cid}:{sid}:observation:{j}", "observation", fact[0],
                                         tuple(dict.fromkeys(src)), sid, speaker))
        summ = conv.get("session_summary")
        if summ is not None:
            need(isinstance(summ, dict))
            for k, text in summ.items():
                m = re.fullmatch(r"session_([0-9]+)_summary", k)
                need(m and canonical_number(m.group(1)) and is_str(text))
                sid = f"session_{m.group(1)}"
                memories.append((f"{cid}:{sid}:session_summary", "session_summary", text,
                                 tuple(by_session.get(sid, ())), sid, None))
        events = conv.get("event_summary")
        if events is not None:
            need(isinstance(events, dict))
            for k, ev in events.items():
                m = re.fullmatch(r"events_session_([0-9]+)", k)
                need(m and canonical_number(m.group(1)) and isinstance(ev, dict))
                sid, j = f"session_{m.group(1)}", 0
                for speaker, texts in ev.items():
                    if speaker == "date":
                        need(texts is None or is_str(texts))
                        continue
                    need(isinstance(texts, list) and all(map(is_str, texts)))
                    for text in texts:
                        j += 1
                        memories.append((f"{cid}:{sid}:event_summary:{j}", "event_summary",
                                         text, tuple(by_session.get(sid, ())), sid, speaker))
        out.append(((cid, len(sessions), len(turns), speakers), sessions, turns, queries,
                    memories))
    return out


def got_locomo(path: Path) -> Any:
    return [
        ((b.collection.collection_id, b.collection.n_sessions, b.collection.n_turns,
          b.collection.speakers),
         [(s.session_id, s.position, s.date) for s in b.sessions],
         [(t.unit_id, t.session_id, t.position, t.speaker, t.text, t.extra) for t in b.turns],
         [(q.query_id, q.question, q.answer, q.category, q.evidence) for q in b.queries],
         [(m.item_id, m.kind, m.text, m.sources, m.session_id, m.speaker) for m in b.memories])
        for b in read_locomo(path)
    ]


LOCOMO_SEED = [
    {
        "sample_id": "c-1",
        "conversation": {
            "speaker_a": "Ann", "speaker_b": "Bob",
            "session_1_date_time": "1 May", "session_2_date_time": "2 May",
            "session_1": [
                {"speaker": "Ann", "dia_id": "D1:1", "text": "hi"},
                {"speaker": "Bob", "dia_id": "D1:2", "text": "look", "blip_caption": "a cat",
                 "query": "cat"},
            ],
            "session_2": [{"speaker": "Ann", "dia_id": "D2:1", "text": "bye"}],
        },
        "qa": [
            {"question": "who?", "answer": "Ann", "evidence": ["D1:2"], "category": 4},
            {"question": "when?", "answer": 3, "evidence": ["D1:1; D2:1", "D9:9"], "category": 2},
            {"question": "adv", "adversarial_answer": "x", "evidence": ["D2:1"], "category": 5},
        ],
        "observation": {"session_1_observation": {"Ann": [["Ann greets", "D1:1"]],
                                                  "Bob": [["Bob shows", ["D1:2", "D1:1"]]]}},
        "session_summary": {"session_1_summary": "they greet", "session_2_summary": "bye"},
        "event_summary": {"events_session_1": {"Ann": ["greets"], "Bob": [], "date": "1 May"}},
    },
    {"sample_id": "c-2",
     "conversation": {"session_1": [{"speaker": "X", "dia_id": "D1:1", "text": "t"}]}},
]

KEYS = ["sample_id", "conversation", "session_1", "session_01", "session_3", "dia_id", "text",
        "speaker", "qa", "question", "answer", "category", "evidence", "observation",
        "session_1_observation", "event_summary", "events_session_1", "date", "role",
        "content", "has_answer", "question_id", "id", "turns", "batch_number",
        "source_chat_ids", "query_id", "abstention", "evidence_sessions"]
LEAVES = (st.none() | st.booleans() | st.integers(-2, 12)
          | st.floats(allow_nan=False, allow_infinity=False)
          | st.sampled_from(["", "D1:1", "D2:1", "D1:1, D1:2", "D9:9", "x", "c-1", "s1", "1",
                             "session_1", "user"])
          | st.text(max_size=4))
JSON_VALUES = st.recursive(
    LEAVES,
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=3),
                                                        c, max_size=3),
    max_leaves=6,
)


def _paths(v: Any, p: tuple = ()) -> list[tuple]:  # type: ignore[type-arg]
    out = [p]
    if isinstance(v, list):
        for i, x in enumerate(v):
            out += _paths(x, p + (i,))
    elif isinstance(v, dict):
        for k, x in v.items():
            out += _paths(x, p + (k,))
    return out


@st.composite
def mutated(draw, seed: Any) -> Any:  # type: ignore[no-untyped-def]
    doc = copy.deepcopy(seed)
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(doc)[1:]
        if not paths:
            return draw(JSON_VALUES)
        p = draw(st.sampled_from(paths))
        parent = doc
        for step in p[:-1]:
            parent = parent[step]
        last = p[-1]
        op = draw(st.sampled_from(["replace", "replace", "delete", "duplicate", "rename"]))
        if op == "replace":
            parent[last] = draw(JSON_VALUES)
        elif op == "delete":
            del parent[last]
        elif op == "duplicate" and isinstance(parent, list):
            parent.insert(last, copy.deepcopy(parent[last]))
        elif op == "rename" and isinstance(parent, dict):
            new = draw(st.sampled_from(KEYS) | st.text(max_size=3))
            value = parent.pop(last)
            parent[new] = value
        else:
            parent[last] = copy.deepcopy(parent[last])
    return doc


def damaged(raw: bytes) -> st.SearchStrategy[bytes]:
    """A valid file cut short, with a byte replaced, inserted or removed."""
    n = len(raw)
    return st.one_of(
        st.integers(0, n - 1).map(lambda i: raw[:i]),
        st.tuples(st.integers(0, n - 1), st.integers(0, 255)).map(
            lambda t: raw[:t[0]] + bytes([t[1]]) + raw[t[0] + 1:]),
        st.tuples(st.integers(0, n), st.binary(min_size=1, max_size=3)).map(
            lambda t: raw[:t[0]] + t[1] + raw[t[0]:]),
        st.integers(0, n - 1).map(lambda i: raw[:i] + raw[i + 1:]),
    )


def _locomo_same(path: Path, raw: bytes) -> None:
    path.write_bytes(raw)
    expected = outcome(lambda: ref_locomo(ref_json(raw)))
    assert real(got_locomo, path) == expected


def test_locomo_seed_is_valid_and_reference_agrees(tmp_path: Path) -> None:
    f = tmp_path / "locomo10.json"
    raw = json.dumps(LOCOMO_SEED).encode()
    f.write_bytes(raw)
    got = got_locomo(f)
    assert got == ref_locomo(LOCOMO_SEED) and len(got) == 2
    assert got[0][3][1][4] == ("c-1:D1:1", "c-1:D2:1")  # split, D9:9 unresolvable
    assert [m[0] for m in got[0][4]][-1] == "c-1:session_1:event_summary:1"


@BUDGET
@given(doc=mutated(LOCOMO_SEED))
def test_locomo_structured(tmp_path: Path, doc: Any) -> None:
    _locomo_same(tmp_path / "locomo10.json", json.dumps(doc).encode())


@BUDGET
@given(raw=st.binary(max_size=64) | damaged(json.dumps(LOCOMO_SEED).encode()))
def test_locomo_bytes(tmp_path: Path, raw: bytes) -> None:
    _locomo_same(tmp_path / "locomo10.json", raw)


# -- LongMemEval reference ------------------------------------------------------------------------
def ref_longmemeval(d: Any) -> Any:
    need(isinstance(d, dict))
    qid = d.get("question_id")
    need(is_str(qid) and qid and id_text(qid))
    sids, dates, sess = (d.get(k) for k in
                         ("haystack_session_ids", "haystack_dates", "haystack_sessions"))
    need(isinstance(sids, list) and all(map(is_str, sids)) and all(map(id_text, sids)))
    need(isinstance(dates, list) and all(x is None or is_str(x) for x in dates))
    need(isinstance(sess, list) and len(sids) == len(dates) == len(sess))
    count: dict[str, int] = {}
    sessions, turns, flagged, by_sid = [], [], [], {}
    for pos, (sid0, date, turns_given) in enumerate(zip(sids, dates, sess), 1):
        count[sid0] = count.get(sid0, 0) + 1
        sid = sid0 if count[sid0] == 1 else f"{sid0}~{count[sid0]}"
        sessions.append((sid, pos, date))
        need(isinstance(turns_given, list))
        for tpos, t in enumerate(turns_given, 1):
            need(isinstance(t, dict) and is_str(t.get("role")) and is_str(t.get("content")))
            need(t.get("has_answer") in (None, True, False) and not is_num(t.get("has_answer")))
            uid = f"{qid}:{sid}:{tpos}"
            turns.append((uid, t["role"], t["content"]))
            by_sid.setdefault(sid0, []).append(uid)
            if t.get("has_answer") is True:
                flagged.append(uid)
    answer_sessions = opt(d, "answer_session_ids",
                          lambda v: isinstance(v, list) and all(map(is_str, v)), [])
    need(is_str(d.get("question")) and is_str(d.get("question_type")) and "answer" in d)
    answer = None if d["answer"] is None else num_text(d["answer"])
    qdate = opt(d, "question_date", lambda v: v is None or is_str(v))
    abstention = qid.endswith("_abs")
    if abstention:
        evidence = []
    else:
        evidence = flagged or [u for s in answer_sessions for u in by_sid.get(s, [])]
    return (sessions, turns, (qid, d["question"], answer, d["question_type"], tuple(evidence),
                              tuple(answer_sessions), abstention, qdate))


def got_longmemeval(path: Path) -> Any:
    b = read_question(path)
    (q,) = b.queries
    return ([(s.session_id, s.position, s.date) for s in b.sessions],
            [(t.unit_id, t.speaker, t.text) for t in b.turns],
            (q.query_id, q.question, q.answer, q.category, q.evidence, q.evidence_sessions,
             q.abstention, dict(q.extra)["question_date"]))


LME_SEED = {
    "question_id": "q1", "question_type": "single-session-user", "question": "what?",
    "answer": "blue", "question_date": "2023/05/30",
    "haystack_session_ids": ["s1", "s2", "s1"], "haystack_dates": ["d1", "d2", None],
    "haystack_sessions": [
        [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "blue",
                                             "has_answer": True}],
        [{"role": "user", "content": "x", "has_answer": False}],
        [],
    ],
    "answer_session_ids": ["s1"],
}


def _lme_same(path: Path, raw: bytes) -> None:
    path.write_bytes(raw)
    expected = outcome(lambda: ref_longmemeval(ref_json(raw)))
    assert real(got_longmemeval, path) == expected


def test_longmemeval_seed_is_valid(tmp_path: Path) -> None:
    f = tmp_path / "1_q1.json"
    f.write_text(json.dumps(LME_SEED))
    got = got_longmemeval(f)
    assert got == ref_longmemeval(LME_SEED)
    assert [s[0] for s in got[0]] == ["s1", "s2", "s1~2"] and got[2][4] == ("q1:s1:2",)


@BUDGET
@given(doc=mutated(LME_SEED))
def test_longmemeval_structured(tmp_path: Path, doc: Any) -> None:
    _lme_same(tmp_path / "1_q1.json", json.dumps(doc).encode())


@BUDGET
@given(raw=st.binary(max_size=64) | damaged(json.dumps(LME_SEED).encode())
       | damaged(gzip.compress(json.dumps(LME_SEED).encode(), mtime=0)))
def test_longmemeval_bytes(tmp_path: Path, raw: bytes) -> None:
    _lme_same(tmp_path / "1_q1.json.gz", raw)


# -- BEAM reference ------------------------------------------------------------------------
def is_id(v: Any) -> bool:
    return is_str(v) or is_int(v)


def ref_ids(v: Any) -> list[str]:
    if isinstance(v, dict):
        return [x for y in v.values() for x in ref_ids(y)]
    if isinstance(v, list):
        return [x for y in v for x in ref_ids(y)]
    need(is_id(v))
    return [str(v)]


def ref_beam(cid: str, chat: Any, questions: Any) -> Any:
    need(isinstance(chat, list))
    sessions, turns, known, sids = [], [], set(), set()
    for bpos, batch in enumerate(chat, 1):
        need(isinstance(batch, dict))
        number = opt(batch, "batch_number", is_int, bpos)
        sid = f"batch-{number}"
        need(sid not in sids)
        sids.add(sid)
        need(isinstance(batch.get("turns"), list))
        msgs = [m for g in batch["turns"] for m in (g if isinstance(g, list) else [g])]
        need(all(isinstance(m, dict) for m in msgs))
        anchor = opt(batch, "time_anchor", lambda v: v is None or is_str(v))
        if not anchor:
            anchor = next((m["time_anchor"] for m in msgs
                           if is_str(m.get("time_anchor")) and m["time_anchor"]), None)
        sessions.append((sid, bpos, anchor))
        for mpos, m in enumerate(msgs, 1):
            need(is_id(m.get("id")) and is_str(m.get("role")) and is_str(m.get("content")))
            extra = []
            for k in ("index", "question_type", "time_anchor"):
                if m.get(k) is not None:
                    text = num_text(m[k])
                    if text:
                        extra.append((k, text))
            mid = str(m["id"])
            need(mid not in known and id_text(mid))
            known.add(mid)
            turns.append((f"{cid}:{mid}", sid, mpos, m["role"], m["content"], tuple(extra)))
    need(isinstance(questions, dict))
    queries = []
    for ability, items in questions.items():
        need(isinstance(items, list) and id_text(ability))
        for i, q in enumerate(items):
            need(isinstance(q, dict) and is_str(q.get("question")))
            ids = [] if q.get("source_chat_ids") is None else ref_ids(q["source_chat_ids"])
            answer = None
            for k in ("answer", "ideal_answer", "ideal_response", "ideal_summary",
                      "expected_compliance"):
                if q.get(k) is not None:
                    answer = num_text(q[k])
                    break
            ev = tuple(dict.fromkeys(f"{cid}:{x}" for x in ids if x in known))
            queries.append((f"{cid}:{ability}:{i}", q["question"], answer, ability, ev,
                            ability == "abstention"))
    return sessions, turns, queries


def got_beam(cpath: Path, qpath: Path) -> Any:
    b = read_chat("chat-1", cpath, qpath)
    return ([(s.session_id, s.position, s.date) for s in b.sessions],
            [(t.unit_id, t.session_id, t.position, t.speaker, t.text, t.extra) for t in b.turns],
            [(q.query_id, q.question, q.answer, q.category, q.evidence, q.abstention)
             for q in b.queries])


BEAM_CHAT = [
    {"batch_number": 1, "time_anchor": None, "turns": [
        [{"id": 0, "role": "user", "content": "hi", "index": "1,1", "time_anchor": "May 1"},
         {"id": 1, "role": "assistant", "content": "hello"}],
        [{"id": 2, "role": "user", "content": "plan", "question_type": "main_question"}],
    ]},
    {"batch_number": 2, "turns": [{"id": "7", "role": "user", "content": "later"}]},
]
BEAM_QUESTIONS = {
    "information_extraction": [{"question": "what?", "answer": "hi", "source_chat_ids": [0, [2]],
                                "difficulty": "easy"}],
    "knowledge_update": [{"question": "now?", "ideal_answer": 5,
                          "source_chat_ids": {"original_info": [1], "updated_info": ["7", 99]}}],
    "abstention": [{"question": "never said", "answer": "unknown"}],
}
BEAM_SEED = {"chat": BEAM_CHAT, "questions": BEAM_QUESTIONS}


def _beam_same(tmp: Path, chat_raw: bytes, q_raw: bytes) -> None:
    cpath, qpath = tmp / "chat.json", tmp / "probing_questions.json"
    cpath.write_bytes(chat_raw)
    qpath.write_bytes(q_raw)
    expected = outcome(lambda: ref_beam("chat-1", ref_json(chat_raw), ref_json(q_raw)))
    assert real(got_beam, cpath, qpath) == expected


def test_beam_seed_is_valid(tmp_path: Path) -> None:
    _beam_same(tmp_path, json.dumps(BEAM_CHAT).encode(), json.dumps(BEAM_QUESTIONS).encode())
    got = got_beam(tmp_path / "chat.json", tmp_path / "probing_questions.json")
    assert got[0][0] == ("batch-1", 1, "May 1")
    assert got[2][1][4] == ("chat-1:1", "chat-1:7") and got[2][1][2] == "5"


@BUDGET
@given(doc=mutated(BEAM_SEED))
def test_beam_structured(tmp_path: Path, doc: Any) -> None:
    if not (isinstance(doc, dict) and "chat" in doc and "questions" in doc):
        doc = {"chat": doc, "questions": {}}
    _beam_same(tmp_path, json.dumps(doc["chat"]).encode(), json.dumps(doc["questions"]).encode())


@BUDGET
@given(raw=st.binary(max_size=64) | damaged(json.dumps(BEAM_CHAT).encode()),
       qraw=st.just(json.dumps(BEAM_QUESTIONS).encode())
       | damaged(json.dumps(BEAM_QUESTIONS).encode()))
def test_beam_bytes(tmp_path: Path, raw: bytes, qraw: bytes) -> None:
    _beam_same(tmp_path, raw, qraw)


# -- queries.jsonl reference ---------------------------------------------------------------
def ref_queries(raw: bytes) -> Any:
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except Exception as exc:
            raise Reject from exc
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Reject from exc
    text = text.removeprefix("\ufeff")
    out, seen = [], set()
    for line in io.StringIO(text, newline=None):  # universal newlines, as a text file reads
        if not line.strip():
            continue
        o = ref_json_text(line)
        need(isinstance(o, dict))
        need(not any(near_miss(k, QUERY_KEYS) for k in o if k not in QUERY_KEYS))
        qid = o.get("query_id")
        need(is_id(qid) and qid != "" and str(qid) not in seen)
        seen.add(str(qid))
        question = opt(o, "question", is_str, "")
        answer = o.get("answer")
        answer = None if answer is None else num_text(answer)
        category = num_text(o.get("category", ""))
        collection = opt(o, "collection", is_str, "")
        ev = opt(o, "evidence", lambda v: isinstance(v, list) and all(map(is_id, v)), [])
        sess = o.get("evidence_sessions")
        need(sess is None or (isinstance(sess, list) and all(map(is_id, sess))))
        abstention = opt(o, "abstention", lambda v: type(v) is bool, False)
        note = opt(o, "evidence_note", lambda v: v is None or is_str(v))
        out.append((str(qid), question, answer, category, tuple(map(str, ev)), collection,
                    abstention, tuple(map(str, sess or ())), note))
    need(bool(out))  # a file of no query is refused
    return out


QUERY_KEYS = {"query_id", "question", "answer", "category", "evidence", "collection",
              "abstention", "evidence_given", "evidence_sessions", "evidence_note"}


def got_queries(path: Path) -> Any:
    return [(q.query_id, q.question, q.answer, q.category, q.evidence, q.collection_id,
             q.abstention, q.evidence_sessions, q.evidence_note) for q in read_queries(path)]


QUERY_ROWS = [
    {"query_id": "c:q0", "question": "who?", "answer": "Ann", "category": "single-hop",
     "evidence": ["c:D1:1"], "collection": "c", "abstention": False,
     "evidence_sessions": ["s1"], "evidence_note": None, "extra_field": [1]},
    {"query_id": 7, "question": "n?", "answer": 3, "category": 2, "evidence": [5, "u"]},
]


def _jsonl(rows: Any) -> bytes:
    if not isinstance(rows, list):
        rows = [rows]
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def _queries_same(path: Path, raw: bytes) -> None:
    path.write_bytes(raw)
    expected = outcome(ref_queries, raw)
    assert real(got_queries, path) == expected


def test_queries_seed_is_valid(tmp_path: Path) -> None:
    f = tmp_path / "queries.jsonl"
    raw = _jsonl(QUERY_ROWS)
    f.write_bytes(raw)
    got = got_queries(f)
    assert got == ref_queries(raw)
    assert got[1] == ("7", "n?", "3", "2", ("5", "u"), "", False, (), None)


@BUDGET
@given(doc=mutated(QUERY_ROWS))
def test_queries_structured(tmp_path: Path, doc: Any) -> None:
    _queries_same(tmp_path / "queries.jsonl", _jsonl(doc))


@BUDGET
@given(raw=st.binary(max_size=64) | damaged(_jsonl(QUERY_ROWS)))
def test_queries_bytes(tmp_path: Path, raw: bytes) -> None:
    _queries_same(tmp_path / "queries.jsonl", raw)
