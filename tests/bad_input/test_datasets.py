"""Kind 8 of the bad-input campaign: dataset files read with ``--no-verify`` (and every dataset
reader in general).

Each test writes its own small bad file (never the shared data in place) and runs the CLI:
the outcome is exit 2, one ``error[code]:`` line per problem naming the file, the record (a jq
path), the query and what was expected, and no output folder. The mechanism is
``tiap.datasets.reading`` (bytes to JSON with located errors, and typed access collecting
every problem of a file), used by every reader in ``tiap.datasets``.
"""

from __future__ import annotations

import copy
import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from tiap.cli.main import main
from tiap.datasets import DataSource, load
from tiap.datasets.files import manifest
from tiap.datasets.longmemeval import LongMemEvalOracle
from tiap.datasets.queryfile import read_queries
from tiap.errors import TiapError

CONV: dict[str, Any] = {
    "sample_id": "conv-1",
    "conversation": {
        "speaker_a": "Ann", "speaker_b": "Bob", "session_1_date_time": "1 May 2023",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "hi"},
            {"speaker": "Bob", "dia_id": "D1:2", "text": "hello"},
        ],
    },
    "qa": [{"question": "who?", "answer": "Ann", "evidence": ["D1:1"], "category": 4}],
    "observation": {"session_1_observation": {"Ann": [["Ann says hi", "D1:1"]]}},
    "session_summary": {"session_1_summary": "they greet"},
    "event_summary": {"events_session_1": {"Ann": ["greets Bob"], "date": "1 May 2023"}},
}


def conv(sample_id: str = "conv-1") -> dict[str, Any]:
    c = copy.deepcopy(CONV)
    c["sample_id"] = sample_id
    return c


def locomo_root(tmp_path: Path, content: Any) -> tuple[Path, Path]:
    root = tmp_path / "data"
    (root / "locomo").mkdir(parents=True)
    f = root / "locomo" / "locomo10.json"
    f.write_bytes(content if isinstance(content, bytes) else json.dumps(content).encode())
    return root, f


def run(args: list[str], capsys) -> tuple[int, list[str]]:  # type: ignore[no-untyped-def]
    rc = main(args)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return rc, [ln for ln in err.splitlines() if ln.startswith("error")]


def export(root: Path, tmp_path: Path, capsys, dataset: str = "locomo"):  # type: ignore[no-untyped-def]
    out = tmp_path / "out"
    rc, lines = run(["datasets", "export", dataset, "--out", str(out), "--data", str(root),
                     "--no-verify"], capsys)
    assert not out.exists()  # nothing written
    return rc, lines


def test_valid_small_file_exports(tmp_path: Path, capsys) -> None:
    root, _ = locomo_root(tmp_path, [conv("conv-1"), conv("conv-2")])
    out = tmp_path / "out"
    rc, lines = run(["datasets", "export", "locomo", "--out", str(out), "--data", str(root),
                     "--no-verify"], capsys)
    assert rc == 0 and lines == []
    mem = [json.loads(x) for x in (out / "memories.jsonl").read_text().splitlines()]
    assert [m["text"] for m in mem if m["kind"] == "event_summary"] == ["greets Bob"] * 2
    man = json.loads((out / "manifest.json").read_text())
    # --no-verify: the manifest records the bytes actually read, and that they are not the pin
    assert man["verified"] is False and man["inputs"][0]["matches_pin"] is False
    assert man["inputs"][0]["pinned_sha256"] == manifest("locomo")["locomo10.json"].stored_sha256


def test_invalid_utf8_is_an_encoding_error_with_byte_offset(tmp_path: Path, capsys) -> None:
    good = json.dumps([conv()], indent=1).encode()
    at = good.index(b'"hello"') + 3  # inside the text of D1:2
    bad = good[:at] + b"\xff" + good[at:]
    root, f = locomo_root(tmp_path, bad)
    line = good[:at].count(b"\n") + 1
    rc, lines = export(root, tmp_path, capsys)
    assert rc == 2 and len(lines) == 1
    assert lines[0].startswith(f"error[encoding]: {f}:{line}: not valid UTF-8: byte(s) ff at "
                               f"byte offset {at} ")


def test_json_syntax_error_names_line_and_column(tmp_path: Path, capsys) -> None:
    root, f = locomo_root(tmp_path, b'[\n  {"sample_id": "conv-1",\n   "qa": [1,,2]}\n]')
    rc, lines = export(root, tmp_path, capsys)
    assert rc == 2
    assert lines == [f"error[input]: {f}:3: invalid JSON (Expecting value at column 13)"]


def test_null_turn_text_is_an_error_never_the_text_none(tmp_path: Path, capsys) -> None:
    c = conv()
    c["conversation"]["session_1"][1]["text"] = None
    root, f = locomo_root(tmp_path, [c])
    rc, lines = export(root, tmp_path, capsys)
    assert rc == 2
    assert lines == [f"error[input]: {f}, record .[0].conversation.session_1[1].text: conv-1 "
                     "session_1 turn 2: field 'text' is null; expected a string"]


def test_event_summary_string_is_an_error_never_split_into_characters(tmp_path: Path,
                                                                       capsys) -> None:
    c = conv()
    c["event_summary"]["events_session_1"]["Ann"] = "greets Bob"
    root, f = locomo_root(tmp_path, [c])
    rc, lines = export(root, tmp_path, capsys)
    assert rc == 2
    assert lines == [f"error[input]: {f}, record .[0].event_summary.events_session_1.Ann: "
                     "conv-1: field 'Ann' is a string; expected a list of event strings"]


@pytest.mark.parametrize("observation, record, message", [
    ([["fact", "D1:1"]], ".[0].observation", "field 'observation' is a list; expected an object"),
    ({"session_1_observation": {"Ann": "Ann says hi"}},
     ".[0].observation.session_1_observation.Ann",
     "the value is a string; expected a list of [text, dia_id] facts"),
    ({"session_1_observation": {"Ann": [["Ann says hi"]]}},
     ".[0].observation.session_1_observation.Ann[0]",
     "the fact is a list of 1; expected [text, dia_id] (dia_id a string or a list of strings)"),
    ({"session_1_observation": {"Ann": [["Ann says hi", 3]]}},
     ".[0].observation.session_1_observation.Ann[0][1]",
     "field 'dia_id' is an integer; expected a string"),
    ({"session_1_observation": {"Ann": [[None, "D1:1"]]}},
     ".[0].observation.session_1_observation.Ann[0][0]", "the value is null; expected a string"),
    ({"obs_1": {}}, ".[0].observation.obs_1",
     "unexpected key 'obs_1' in 'observation'; expected session_<n>_observation"),
])
def test_malformed_observations_are_located_errors(tmp_path: Path, capsys, observation: Any,
                                                   record: str, message: str) -> None:
    c = conv()
    c["observation"] = observation
    root, f = locomo_root(tmp_path, [c])
    rc, lines = export(root, tmp_path, capsys)
    assert rc == 2
    assert lines == [f"error[input]: {f}, record {record}: conv-1: {message}"]


def test_duplicate_conversation_ids_name_both(tmp_path: Path, capsys) -> None:
    root, f = locomo_root(tmp_path, [conv("conv-1"), conv("conv-2"), conv("conv-1")])
    rc, lines = export(root, tmp_path, capsys)
    assert rc == 2
    assert lines == [f"error[duplicate]: {f}, record .[2].sample_id: conv-1: sample_id 'conv-1' "
                     "is given twice: also at .[0].sample_id; expected each conversation once"]


def test_duplicate_turn_ids_name_both(tmp_path: Path, capsys) -> None:
    c = conv()
    c["conversation"]["session_1"][1]["dia_id"] = "D1:1"
    root, f = locomo_root(tmp_path, [c])
    rc, lines = export(root, tmp_path, capsys)
    assert rc == 2
    assert lines == [f"error[duplicate]: {f}, record .[0].conversation.session_1[1].dia_id: "
                     "conv-1 session_1 turn 2: dia_id 'D1:1' is given twice: also at "
                     ".[0].conversation.session_1[0].dia_id; expected each turn id once"]


def test_key_given_twice_in_an_object_is_a_duplicate(tmp_path: Path, capsys) -> None:
    text = json.dumps([conv()]).replace('"text": "hi"', '"text": "hi", "text": "bye"')
    root, f = locomo_root(tmp_path, text.encode())
    rc, lines = export(root, tmp_path, capsys)
    assert rc == 2
    assert lines == [f"error[duplicate]: {f}, record .[0].conversation.session_1[0]: key 'text' "
                     "occurs more than once in this object (JSON would keep only the last); "
                     "expected each key once"]


def test_every_problem_of_a_file_in_one_pass(tmp_path: Path, capsys) -> None:
    a, b = conv("conv-1"), conv("conv-2")
    a["qa"][0]["category"] = 7
    a["qa"][0]["evidence"] = "D1:1"
    b["conversation"]["session_1"][0]["speaker"] = ["Ann"]
    root, f = locomo_root(tmp_path, [a, b, conv("conv-2")])
    rc, lines = export(root, tmp_path, capsys)
    assert rc == 2
    assert lines == [
        f"error[invalid-value]: {f}, record .[0].qa[0].category, query conv-1:q0: field "
        "'category' is 7; expected 1-5 (1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, "
        "5 adversarial)",
        f"error[input]: {f}, record .[0].qa[0].evidence, query conv-1:q0: field 'evidence' is a "
        "string; expected a list",
        f"error[input]: {f}, record .[1].conversation.session_1[0].speaker: conv-2 session_1 "
        "turn 1: field 'speaker' is a list; expected a string",
        f"error[duplicate]: {f}, record .[2].sample_id: conv-2: sample_id 'conv-2' is given "
        "twice: also at .[1].sample_id; expected each conversation once",
    ]


def test_stats_reports_the_same_errors(tmp_path: Path, capsys) -> None:
    c = conv()
    c["conversation"]["session_1"][0]["text"] = None
    root, f = locomo_root(tmp_path, [c])
    rc, lines = run(["datasets", "stats", "locomo", "--data", str(root), "--no-verify"], capsys)
    assert rc == 2 and len(lines) == 1 and "record .[0].conversation.session_1[0].text" in lines[0]


def test_without_no_verify_an_edited_file_is_a_checksum_error(tmp_path: Path, capsys) -> None:
    root, f = locomo_root(tmp_path, [conv()])
    rc, lines = run(["datasets", "stats", "locomo", "--data", str(root)], capsys)
    assert rc == 2 and len(lines) == 1 and lines[0].startswith(f"error[checksum]: {f}: file is ")


# -- LongMemEval: one question per file -------------------------------------------------------
QUESTION: dict[str, Any] = {
    "question_id": "q1", "question_type": "single-session-user", "question": "colour?",
    "answer": "blue", "question_date": "2023/05/30",
    "haystack_session_ids": ["s1"], "haystack_dates": ["2023/05/01"],
    "haystack_sessions": [[{"role": "user", "content": "blue", "has_answer": True}]],
    "answer_session_ids": ["s1"],
}


def oracle_root(tmp_path: Path, monkeypatch, questions: list[Any]) -> tuple[Path, list[Path]]:  # type: ignore[no-untyped-def]
    names = sorted(manifest("longmemeval"))[: len(questions)]
    names = [n for n in sorted(manifest("longmemeval")) if n.startswith("oracle/")][
        : len(questions)]
    monkeypatch.setattr(LongMemEvalOracle, "file_paths", lambda self: names)
    root = tmp_path / "data"
    (root / "longmemeval" / "oracle").mkdir(parents=True)
    files = []
    for n, q in zip(names, questions, strict=True):
        f = root / "longmemeval" / n
        f.write_text(json.dumps(q))
        files.append(f)
    return root, files


def test_duplicate_question_ids_across_files_name_both(tmp_path: Path, capsys,
                                                       monkeypatch) -> None:
    root, files = oracle_root(tmp_path, monkeypatch, [QUESTION, QUESTION])
    rc, lines = export(root, tmp_path, capsys, "longmemeval/oracle")
    assert rc == 2
    assert lines == [f"error[duplicate]: {files[1]}, record .question_id: question_id 'q1' is "
                     f"also the question_id of {files[0]}; expected each once"]


def test_every_bad_question_file_in_one_pass(tmp_path: Path, capsys, monkeypatch) -> None:
    a = copy.deepcopy(QUESTION)
    a["answer_session_ids"] = "s1"  # a string, not split into "s" and "1"
    b = copy.deepcopy(QUESTION)
    b["question_id"] = "q2"
    b["haystack_sessions"][0][0]["has_answer"] = "true"
    b["haystack_sessions"][0][0]["content"] = None
    root, files = oracle_root(tmp_path, monkeypatch, [a, b])
    rc, lines = export(root, tmp_path, capsys, "longmemeval/oracle")
    assert rc == 2
    assert lines == [
        f"error[input]: {files[0]}, record .answer_session_ids, query q1: field "
        "'answer_session_ids' is a string; expected a list",
        f"error[input]: {files[1]}, record .haystack_sessions[0][0].content, query q2: session "
        "s1 turn 1: field 'content' is null; expected a string",
        f"error[input]: {files[1]}, record .haystack_sessions[0][0].has_answer, query q2: "
        "session s1 turn 1: field 'has_answer' is a string; expected true or false",
    ]


def test_truncated_gzip_question_is_truncated(tmp_path: Path, capsys, monkeypatch) -> None:
    names = [n for n in sorted(manifest("longmemeval")) if n.startswith("s_cleaned/")][:1]
    from tiap.datasets.longmemeval import LongMemEvalS
    monkeypatch.setattr(LongMemEvalS, "file_paths", lambda self: names)
    root = tmp_path / "data"
    f = root / "longmemeval" / names[0]
    f.parent.mkdir(parents=True)
    raw = gzip.compress(json.dumps(QUESTION).encode(), mtime=0)
    f.write_bytes(raw[: len(raw) - 10])
    rc, lines = export(root, tmp_path, capsys, "longmemeval/s")
    assert rc == 2 and len(lines) == 1
    assert lines[0].startswith(f"error[truncated]: {f}: corrupt or truncated gzip file (")


# -- BEAM: chat.json + probing_questions.json ---------------------------------------------------
CHAT = [{"batch_number": 1, "turns": [[
    {"id": 0, "role": "user", "content": "hi", "time_anchor": "May 1"},
    {"id": 1, "role": "assistant", "content": "hello"}]]}]
PROBES = {"information_extraction": [{"question": "what?", "answer": "hi",
                                      "source_chat_ids": [0]}]}


def beam_root(tmp_path: Path, chat: Any, probes: Any) -> tuple[Path, Path, Path]:
    """BEAM-100K with ``chat`` and ``probes`` as chat 1 and good copies of CHAT and PROBES as
    chats 2-20: every pinned chat must be present (a missing one is an error)."""
    for n in range(20, 0, -1):
        d = tmp_path / "data" / "beam" / "100K" / str(n)
        d.mkdir(parents=True)
        (d / "chat.json").write_text(json.dumps(chat if n == 1 else CHAT))
        (d / "probing_questions.json").write_text(json.dumps(probes if n == 1 else PROBES))
    return tmp_path / "data", d / "chat.json", d / "probing_questions.json"


def test_beam_duplicate_message_ids_and_bad_evidence_ids(tmp_path: Path, capsys) -> None:
    chat = copy.deepcopy(CHAT)
    chat[0]["turns"][0][1]["id"] = 0
    probes = copy.deepcopy(PROBES)
    probes["information_extraction"][0]["source_chat_ids"] = {"a": [0, None], "b": [True]}
    root, c, q = beam_root(tmp_path, chat, probes)
    rc, lines = export(root, tmp_path, capsys, "beam/100k")
    assert rc == 2
    assert lines == [
        f"error[duplicate]: {c}, record .[0].turns[0][1].id: chat-1 batch-1 message 2: message "
        "id 0 is given twice: also at .[0].turns[0][0].id; expected each message id once",
        f"error[input]: {q}, record .information_extraction[0].source_chat_ids.a[1], query "
        "chat-1:information_extraction:0: the id is null; expected a message id (an integer or "
        "a string)",
        f"error[input]: {q}, record .information_extraction[0].source_chat_ids.b[0], query "
        "chat-1:information_extraction:0: the id is a boolean; expected a message id (an "
        "integer or a string)",
    ]


def test_beam_valid_loads(tmp_path: Path) -> None:
    root, _, _ = beam_root(tmp_path, CHAT, PROBES)
    ds = load("beam/100k", source=DataSource(root, verify=False, allow_download=False))
    b, *others = list(ds.bundles())
    assert len(others) == 19
    assert [t.unit_id for t in b.turns] == ["chat-1:0", "chat-1:1"]
    assert b.queries[0].evidence == ("chat-1:0",) and b.sessions[0].date == "May 1"


# -- queries.jsonl --------------------------------------------------------------------------------
def test_queries_file_every_problem_in_one_pass(tmp_path: Path) -> None:
    f = tmp_path / "queries.jsonl"
    f.write_bytes(b"\n".join([
        b'{"query_id": "a", "question": "q", "evidence": ["u1"]}',
        b'{"query_id": "b", "question": null, "abstention": "false"}',
        b'{"query_id": "a", "question": "again"}',
        b'{"query_id": "c", "evidence_sessions": "s1"}',
        b'{"query_id": "d", "question": "cut',
    ]))
    with pytest.raises(TiapError) as exc:
        read_queries(f)
    got = [(p.code, p.line, p.query_id, p.message) for p in exc.value.problems]
    assert got == [
        ("input", 2, "b", "field 'question' is null; expected a string"),
        ("input", 2, "b", "field 'abstention' is a string; expected true or false"),
        ("duplicate", 3, "a", "query id given twice (first on line 1); expected each query once"),
        ("input", 4, "c", "field 'evidence_sessions' is a string; expected a list of source "
                          "unit ids"),
        ("truncated", 5, None, "the last line ends in the middle of a record (invalid JSON: "
                               "Unterminated string starting at column 31)"),
    ]
    assert all(p.file == str(f) for p in exc.value.problems)


def test_queries_file_invalid_utf8(tmp_path: Path) -> None:
    f = tmp_path / "queries.jsonl"
    f.write_bytes(b'{"query_id": "a"}\n{"query_id": "\xe9"}\n')
    with pytest.raises(TiapError) as exc:
        read_queries(f)
    (p,) = exc.value.problems
    assert (p.code, p.line) == ("encoding", 2)
    assert p.message.startswith("not valid UTF-8: byte(s) e9 at byte offset 32 ")


def test_an_empty_queries_file_is_an_error_never_zero_queries(tmp_path: Path, capsys) -> None:
    """rescore on an empty queries file used to exit 0 with every ranked query left out."""
    from tiap.cli.main import main

    q = tmp_path / "queries.jsonl"
    q.write_text("\n\n")
    items = tmp_path / "items.jsonl"
    items.write_text('{"item_id": "t1", "kind": "raw", "sources": ["u1"]}\n')
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 t1 1 1.0 s\n")
    assert main(["rescore", "--run", str(run), "--queries", str(q), "--items", str(items),
                 "--out", str(tmp_path / "rs")]) == 2
    assert capsys.readouterr().err.startswith(
        f"error[input]: {q}: empty queries file: it holds no queries")
    assert not (tmp_path / "rs").exists()
