"""``tiap rescore`` then ``tiap sensitivity`` on a small inline store with text: the change
table agrees with rescore's pairwise.csv; answer alignment worked by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sensitivity_fixtures import read_csv

from tiap.cli.main import main
from tiap.sensitivity.answers import bleu1, extract_answer, normalize_answer, token_f1

ITEMS = [
    {"item_id": "t1", "kind": "raw", "sources": ["u1"],
     "text": "Caroline (1:56 pm on 8 May, 2023): I went to the support group yesterday."},
    {"item_id": "f1", "kind": "fact", "sources": ["u1"],
     "text": "Caroline went to a support group on 7 May 2023."},
    {"item_id": "t2", "kind": "raw", "sources": ["u2"],
     "text": "Melanie: I painted that lake sunrise last year."},
    {"item_id": "f2", "kind": "fact", "sources": ["u2"],
     "text": "Melanie painted a sunrise in 2022."},
    {"item_id": "t3", "kind": "raw", "sources": ["u3"], "text": "Caroline: pottery is my thing."},
    {"item_id": "x", "kind": "raw", "sources": ["u9"], "text": "The weather is nice."},
]
QUERIES = [
    {"query_id": "q1", "question": "When did Caroline go to the support group?",
     "answer": "7 May 2023", "category": "temporal", "evidence": ["u1"]},
    {"query_id": "q2", "question": "When did Melanie paint a sunrise?", "answer": "2022",
     "category": "temporal", "evidence": ["u2"]},
    {"query_id": "q3", "question": "What is Caroline's thing?", "answer": "pottery",
     "category": "single-hop", "evidence": ["u3"]},
]
RUNS = {
    "A": [{"query_id": "q1", "ranking": ["f1", "x", "t1"]},
          {"query_id": "q2", "ranking": ["x", "t2", "f2"]},
          {"query_id": "q3", "ranking": ["t3", "x"]}],
    "B": [{"query_id": "q1", "ranking": ["x", "t1", "f1"]},
          {"query_id": "q2", "ranking": ["f2", "x"]},
          {"query_id": "q3", "ranking": ["x", "t3"]}],
}


def _jsonl(path: Path, rows: list[dict]) -> Path:  # type: ignore[type-arg]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture()
def rescored(tmp_path: Path) -> Path:
    items = _jsonl(tmp_path / "items.jsonl", ITEMS)
    queries = _jsonl(tmp_path / "queries.jsonl", QUERIES)
    args = ["rescore", "--items", str(items), "--queries", str(queries),
            "--measures", "nDCG@3,nDCG@10,RR@10,Success@10,Success@1",
            "--out", str(tmp_path / "rescore")]
    for name, rows in RUNS.items():
        args += ["--run", f"{name}={_jsonl(tmp_path / f'{name}.jsonl', rows)}"]
    assert main(args) == 0
    return tmp_path / "rescore"


def test_change_matches_rescore_pairwise(rescored: Path, tmp_path: Path) -> None:
    out = tmp_path / "sens"
    assert main(["sensitivity", str(rescored), "--out", str(out), "--resamples", "200"]) == 0
    ours = {(r["system"], r["measure"], r["target_1"], r["target_2"]): r
            for r in read_csv(out / "change.csv")}
    theirs = read_csv(rescored / "pairwise.csv")
    assert theirs
    for r in theirs:
        o = ours[(r["system"], r["measure"], r["target_1"], r["target_2"])]
        for col in ("n_shared", "changed", "changed_fraction", "mean_delta", "mean_abs_delta",
                    "n_abs_delta_ge_0.1", "hit_k", "hit_flips", "top1_flips"):
            if r[col] == "":
                assert o[col] == ""
            else:
                assert float(o[col]) == pytest.approx(float(r[col])), (col, r)


def test_answer_alignment_hand_worked(rescored: Path, tmp_path: Path) -> None:
    out = tmp_path / "sens"
    assert main(["sensitivity", str(rescored), "--out", str(out), "--resamples", "200",
                 "--answers", "--answer-depth", "1"]) == 0
    ans = {(r["system"], r["query_id"]): r for r in read_csv(out / "answers.csv")}
    # A, q1: top item f1 "... on 7 May 2023." -> a "when" question -> the date
    assert ans[("A", "q1")]["answer"] == "7 May 2023" and float(ans[("A", "q1")]["f1"]) == 1.0
    # A, q2: top item x "The weather is nice." (no date) -> content words not in the question
    assert ans[("A", "q2")]["answer"] == "weather nice" and ans[("A", "q2")]["correct"] == "false"
    # A, q3: "Caroline: pottery is my thing." minus question and stop words -> "pottery"
    assert ans[("A", "q3")]["answer"] == "pottery" and ans[("A", "q3")]["correct"] == "true"
    al = {(r["system"], r["target"]): r for r in read_csv(out / "answer_alignment.csv")}
    # A: hits at depth 1 -- raw [0, 0, 1], source [1, 0, 1], canonical [1, 0, -] (q3 has no
    # derived item: undefined); correct [1, 0, 1]
    assert int(al[("A", "raw")]["n"]) == 3
    assert float(al[("A", "raw")]["agreement"]) == pytest.approx(2 / 3)
    assert float(al[("A", "source")]["agreement"]) == 1.0
    assert float(al[("A", "source")]["phi"]) == pytest.approx(1.0)
    assert int(al[("A", "canonical")]["n"]) == 2
    assert float(al[("A", "canonical")]["f1_hit"]) == 1.0
    assert float(al[("A", "canonical")]["f1_miss"]) == 0.0
    man = json.loads((out / "manifest.json").read_text())
    assert man["answers"]["rescore"]["systems"]["A"]["items"].endswith("items.jsonl")


def test_answers_need_inputs(rescored: Path, tmp_path: Path) -> None:
    (tmp_path / "items.jsonl").write_text("")  # the store changed since it was rescored
    assert main(["sensitivity", str(rescored), "--out", str(tmp_path / "s"),
                 "--resamples", "100", "--answers"]) == 2
    # without --answers the alignment is skipped with a note, the rest is written
    assert main(["sensitivity", str(rescored), "--out", str(tmp_path / "s2"),
                 "--resamples", "100", "--no-answers"]) == 0
    assert not (tmp_path / "s2" / "answers.csv").exists()


def test_normalisation_f1_bleu() -> None:
    assert normalize_answer("The Sunrise, and a LAKE!") == "sunrise lake"
    # "7 May 2023" vs "8 May 2023": 2 of 3 tokens shared -> P = R = 2/3 -> F1 = 2/3
    assert token_f1("8 May 2023", "7 May 2023") == pytest.approx(2 / 3)
    assert token_f1("", "") == 1.0 and token_f1("x", "") == 0.0
    # BLEU-1: "may 2023" vs "7 may 2023": precision 1, BP = exp(1 - 3/2)
    assert bleu1("May 2023", "7 May 2023") == pytest.approx(0.6065306597)
    # longer prediction: no penalty, clipped precision 2/4
    assert bleu1("May May 2023 x", "May 2023") == pytest.approx(0.5)
    assert extract_answer("How many kids does she have?", ["She has 3 kids."]) == "3"
    assert extract_answer("Who went?", ["Caroline and Melanie went there."]) == \
        "Caroline Melanie"
    assert extract_answer("anything", []) == ""


@pytest.mark.parametrize("depth", [1, 2, 3, 10])
def test_hits_read_from_rr_equal_a_rescore_of_success(rescored: Path, tmp_path: Path,
                                                      monkeypatch, depth: int) -> None:
    """Success@depth read from the rescored RR@10 (rank of the first credited item = 1/RR)
    gives the same answer tables as rescoring Success@depth."""
    from tiap.sensitivity import answers

    def run(out: Path) -> tuple[list[dict], list[dict]]:  # type: ignore[type-arg]
        assert main(["sensitivity", str(rescored), "--out", str(out), "--resamples", "100",
                     "--answers", "--answer-depth", str(depth)]) == 0
        return read_csv(out / "answers.csv"), read_csv(out / "answer_alignment.csv")

    fast = run(tmp_path / "fast")
    used: list[int] = []
    real = answers._hits_from_rr
    monkeypatch.setattr(answers, "_hits_from_rr",
                        lambda *a: used.append(1) or real(*a) and None)
    slow = run(tmp_path / "slow")
    assert used  # the fast path was on offer and refused
    assert fast == slow
    assert any(r["hits"] for r in fast[0])  # something is credited at all


def test_answer_inputs_are_verified_against_the_rescore(rescored: Path, tmp_path: Path,
                                                         capsys) -> None:
    """The alignment reads the rescored values: a run changed since, or another run given
    with --run, is error[input-changed] naming the file and the manifest; a byte-identical
    copy is accepted; a recorded file that is gone skips the alignment with a note."""
    base = ["sensitivity", str(rescored), "--resamples", "100"]
    run_a = tmp_path / "A.jsonl"
    # another ranking passed for A
    other = tmp_path / "other.jsonl"
    other.write_text(run_a.read_text().replace('"f1", "x", "t1"', '"t1", "x", "f1"'))
    assert main([*base, "--out", str(tmp_path / "s1"), "--answers", "--run",
                 f"A={other}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error[input-changed]: " + str(other))
    assert str(rescored / "manifest.json") in err and "--run" in err
    assert not (tmp_path / "s1").exists()
    # a copy of the very bytes, elsewhere, is fine
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(run_a.read_bytes())
    assert main([*base, "--out", str(tmp_path / "s2"), "--answers", "--run",
                 f"A={copy}"]) == 0
    capsys.readouterr()
    # the recorded run itself changed
    run_a.write_text(other.read_text())
    assert main([*base, "--out", str(tmp_path / "s3"), "--answers"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error[input-changed]: " + str(run_a)) and "records sha256" in err
    # gone: skipped with a note when the alignment is not required
    run_a.unlink()
    assert main([*base, "--out", str(tmp_path / "s4")]) == 0
    man = json.loads((tmp_path / "s4" / "manifest.json").read_text())
    assert any("answer alignment skipped" in n and "gone" in n for n in man["notes"])
