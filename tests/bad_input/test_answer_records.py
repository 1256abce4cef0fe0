"""answers.jsonl: every problem of the file located and reported together, none dropped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tiap.answers import (
    Answer,
    AnswerSet,
    AnswerVerdict,
    Context,
    JudgeConfig,
    read_answers,
    write_answers,
)
from tiap.errors import TiapError


def _write(path: Path, rows: list[object]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def _ans(**kw: object) -> dict[str, object]:
    row: dict[str, object] = {"dataset": "locomo", "system": "A", "query_id": "conv-26:q0",
                              "answer": "Paris"}
    row.update(kw)
    return row


V = {"judge": "g", "model": "gpt-5", "prompt": "strict", "run": 0, "label": "correct"}


def test_round_trip_keeps_everything(tmp_path: Path) -> None:
    cfg = JudgeConfig("g", model="gpt-5", prompt="strict", prompt_sha256="ab" * 32,
                      temperature=0.0, run=1, settings={"max_tokens": 10})
    s = AnswerSet((Answer("locomo", "A", "q1", "Paris", question="Where?", reference="Paris",
                          category="single-hop", source_id="conv0_q1",
                          context=Context("mem0", ("m1", "m2")),
                          verdicts=(AnswerVerdict("g", None, reason="unparseable"),)),
                   Answer("locomo", "B", "q1", None)), {"g": cfg})
    write_answers(s, tmp_path / "a.jsonl")
    back = read_answers(tmp_path / "a.jsonl")
    assert back == s
    assert back.answers[0].verdict("g").score is None  # type: ignore[union-attr]


def test_every_problem_is_reported_together(tmp_path: Path) -> None:
    p = _write(tmp_path / "a.jsonl", [
        _ans(),
        _ans(),                                        # line 2: the same answer twice
        _ans(system="B", verdicts=[dict(V, label="right")]),          # 3: label outside
        _ans(system="C", verdicts=[dict(V, label="wrong", score=1)]),  # 4: score vs label
        _ans(system="D", verdicts=[V, V]),             # 5: one judge twice
        _ans(system="E", verdicts=[dict(V, model="gpt-4o")]),  # 6: judge described otherwise
        _ans(system="F", context={"store": "", "items": ["m1"]}),  # 7: unnamed store
        "[1, 2]",                                      # 8: not an object
        {"dataset": "locomo", "system": "G", "query_id": "q"},  # 9: no answer field
    ])
    with pytest.raises(TiapError) as exc:
        read_answers(p)
    text = str(exc.value)
    for line, what in [(2, "a second answer of system 'A'"), (3, "label 'right'"),
                       (4, "does not match its label"), (5, "two verdicts of judge 'g'"),
                       (6, "described otherwise here than on line 4"),
                       (7, "field 'context'"), (8, "must be a JSON object"),
                       (9, "field 'answer' is required")]:
        assert f"a.jsonl:{line}: " in text and what in text, (line, what)


def test_an_empty_file_is_an_error(tmp_path: Path) -> None:
    p = tmp_path / "a.jsonl"
    p.write_text("\n")
    with pytest.raises(TiapError, match="no answers"):
        read_answers(p)


def test_a_verdict_of_an_undescribed_judge_is_refused() -> None:
    with pytest.raises(TiapError, match="does not describe"):
        AnswerSet((Answer("locomo", "A", "q1", "x", verdicts=(AnswerVerdict("g", "wrong"),)),))


def test_select_names_what_it_does_not_know() -> None:
    s = AnswerSet((Answer("locomo", "A", "q1", "x"),))
    with pytest.raises(TiapError, match="no system 'B' in the answer set; it has A"):
        s.select(systems=["B"])
