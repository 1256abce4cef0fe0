"""The importers of published answer formats, on fixtures this test builds from the fields
each format documents (no real memory-benchmarks or MemOS results file was available):
answers, verdicts and contexts as given, every unmappable id counted and named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tiap.answers.importers import (
    import_longmemeval,
    import_memory_benchmarks,
    import_memos,
)
from tiap.answers.records import read_answers, write_answers
from tiap.datasets import Bundle, Collection, Query

# a LoCoMo-like conversation: q1 is adversarial, so the 2nd non-adversarial question
# (conv0_q1) is qa position 2 (conv-26:q2)
QS = (Query("conv-26:q0", "conv-26", "When did Ana move?", "2020", "temporal", ()),
      Query("conv-26:q1", "conv-26", "Is Ana a pilot?", None, "adversarial", ()),
      Query("conv-26:q2", "conv-26", "Who is Ana's cat?", "Miso", "single-hop", ()),
      Query("conv-26:q3", "conv-26", "Where does Ana live?", "Oslo", "single-hop", ()))
LOCOMO = [Bundle(Collection("conv-26", 1, 0), (), (), QS)]


def _ev(qid: str, question: str, answer: str, judgment: object, ids: list[str]) -> dict:
    return {"question_id": qid, "question": question, "category": "single-hop",
            "evidence": ["D1:1"], "answer": "gold",
            "cutoff_results": {"top_2": {"generated_answer": answer, "judgment": judgment}},
            "retrieval": {"search_results": [{"id": i, "memory": "m", "score": 0.5}
                                             for i in ids]}}


def test_memory_benchmarks_answers_verdicts_and_context(tmp_path: Path) -> None:
    doc = {"metadata": {"judge_model": "gpt-5"}, "evaluations": [
        _ev("conv0_q0", "When did Ana move?", "2020", "CORRECT", ["m3", "m1"]),
        _ev("conv0_q1", "Who is Ana's cat?", "Tom", {"label": "WRONG", "reasoning": "no"},
            ["m2"]),
        # position 5 does not exist; its text names conv-26:q3 (kept, counted)
        _ev("conv0_q5", "Where does Ana live?", "Oslo", True, []),
        # no question has this text: left out with its verdict, counted and named
        _ev("conv0_q9", "What is Ana's job?", "pilot", "WRONG", ["m9"]),
    ]}
    p = tmp_path / "results.json"
    p.write_text(json.dumps(doc))
    s = import_memory_benchmarks(p, dataset="locomo", locomo=LOCOMO)
    got = {a.source_id: (a.query_id, a.answer, a.context.items, a.verdicts[0].label)
           for a in s}
    assert got == {"conv0_q0": ("conv-26:q0", "2020", ("m3", "m1"), "correct"),
                   "conv0_q1": ("conv-26:q2", "Tom", ("m2",), "wrong"),
                   "conv0_q5": ("conv-26:q3", "Oslo", (), "correct")}
    assert {a.context.store for a in s} == {"mem0"}
    assert s.configs["gpt-5|memory_benchmarks|r0"].model == "gpt-5"
    w = s.warnings
    assert w["unmapped_answer"]["count"] == 1 and w["unmapped_answer"]["verdicts"] == 1
    assert "conv0_q9" in w["unmapped_answer"]["examples"][0]
    assert w["remapped_by_text"]["count"] == 1
    assert "conv-26:q3" in w["remapped_by_text"]["examples"][0]
    # the set round-trips through answers.jsonl
    write_answers(s, tmp_path / "answers.jsonl")
    back = read_answers(tmp_path / "answers.jsonl")
    assert back.answers == s.answers and back.configs == s.configs


def test_memory_benchmarks_cutoff_choice(tmp_path: Path) -> None:
    ev = _ev("q1", "Who?", "Ana", "CORRECT", ["m1"])
    ev["cutoff_results"]["top_10"] = {"generated_answer": "Ben", "judgment": "WRONG"}
    p = tmp_path / "results.json"
    p.write_text(json.dumps({"evaluations": [ev]}))
    assert import_memory_benchmarks(p, dataset="x", k=10).answers[0].answer == "Ben"
    with pytest.raises(Exception, match="pass k to pick one"):
        import_memory_benchmarks(p, dataset="x")


def test_memos_runs_and_unmapped_questions(tmp_path: Path) -> None:
    doc = {"locomo_exp_user_0": [
        {"question": "When did Ana move?", "answer": "2020", "golden_answer": "2020",
         "category": 2, "llm_judgments": {"judgment_1": True, "judgment_2": True,
                                          "judgment_3": False}},
        {"question": "Who is Ana's cat?", "answer": "Miso", "golden_answer": "Miso",
         "category": 4, "llm_judgments": {"judgment_1": True, "judgment_2": True,
                                          "judgment_3": True}},
        {"question": "Is Ana a pilot?", "answer": "no", "golden_answer": None,
         "category": 5, "llm_judgments": {"judgment_1": False}}]}
    p = tmp_path / "memos.json"
    p.write_text(json.dumps(doc))
    s = import_memos(p, locomo=LOCOMO, judge_model="gpt-4o-mini")
    assert [a.query_id for a in s] == ["conv-26:q0", "conv-26:q2"]
    assert s.judges == ("gpt-4o-mini|memos|r0", "gpt-4o-mini|memos|r1",
                        "gpt-4o-mini|memos|r2")
    assert [s.configs[j].run for j in s.judges] == [0, 1, 2]
    assert [v.label for v in s.answers[0].verdicts] == ["correct", "correct", "wrong"]
    # the adversarial question is no query of the (non-adversarial) index: counted, named
    w = s.warnings["unmapped_answer"]
    assert (w["count"], w["verdicts"]) == (1, 1) and "Is Ana a pilot?" in w["examples"][0]


def test_memos_ambiguous_question(tmp_path: Path) -> None:
    qs = [Query("a:q0", "a", "Why?", "x", "single-hop", ()),
          Query("b:q0", "b", "Why?", "y", "single-hop", ()),
          Query("b:q1", "b", "How?", "z", "single-hop", ())]
    p = tmp_path / "memos.json"
    p.write_text(json.dumps([{"question": "Why?", "answer": "x", "golden_answer": "x",
                              "category": 4, "llm_judgments": {"judgment_1": True}},
                             {"question": "How?", "answer": "z", "golden_answer": "z",
                              "category": 4, "llm_judgments": {"judgment_1": True}}]))
    s = import_memos(p, queries=qs)
    assert [a.query_id for a in s] == ["b:q1"]
    assert "2 questions have this text (a:q0, b:q0)" in s.warnings["unmapped_answer"][
        "examples"][0]


def test_longmemeval_hypotheses_and_judged_log(tmp_path: Path) -> None:
    qs = [Query("q1", "q1", "Where?", "Oslo", "single-session-user", ()),
          Query("q2_abs", "q2_abs", "When?", None, "temporal-reasoning", (),
                abstention=True)]
    hyp = tmp_path / "hyp.jsonl"
    hyp.write_text("".join(json.dumps(r) + "\n" for r in (
        {"question_id": "q1", "hypothesis": "Oslo"},
        {"question_id": "q2_abs", "hypothesis": "I do not know"},
        {"question_id": "q7", "hypothesis": "x"})))
    # the real log: each hypothesis line with autoeval_label {"model", "label"}
    log = tmp_path / "hyp.jsonl.eval-results-gpt-4o"
    log.write_text("".join(json.dumps(r) + "\n" for r in (
        {"question_id": "q1", "hypothesis": "Oslo",
         "autoeval_label": {"model": "gpt-4o-2024-08-06", "label": True}},
        {"question_id": "q2_abs", "hypothesis": "I do not know",
         "autoeval_label": {"model": "gpt-4o-2024-08-06", "label": False}},
        {"question_id": "q7", "hypothesis": "x",
         "autoeval_label": {"model": "gpt-4o-2024-08-06", "label": True}})))
    s = import_longmemeval(hyp, judged=log, longmemeval=qs)
    assert [(a.query_id, a.verdicts[0].label, a.category) for a in s] == [
        ("q1", "correct", "single-session-user"), ("q2_abs", "wrong", "temporal-reasoning")]
    cfg = s.configs["gpt-4o-2024-08-06|longmemeval|r0"]
    assert (cfg.temperature, cfg.settings["max_tokens"]) == (0.0, 10)
    w = s.warnings["unmapped_answer"]
    assert (w["count"], w["verdicts"]) == (1, 1) and "'q7'" in w["examples"][0]
    # without a judged log: answers only; without a dataset: no id check
    s2 = import_longmemeval(hyp)
    assert len(s2) == 3 and s2.judges == () and not s2.warnings
