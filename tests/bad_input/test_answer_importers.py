"""Bad input to the answer importers: a file of the wrong shape, an id that maps to no
question (counted and named, never dropped in silence), a verdict file whose ids are not
its answers' (a located error), and nothing mappable (a located error). The kit cases
change one file of a copy of the kit (made in the test's folder, never in the project)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tiap.answers.importers import (
    import_longmemeval,
    import_memory_benchmarks,
    import_memos,
)
from tiap.answers.kit import import_kit
from tiap.datasets import Query
from tiap.errors import TiapError

QS = [Query("c:q0", "c", "Who came?", "Ana", "single-hop", ()),
      Query("c:q1", "c", "Who left?", "Ben", "single-hop", ())]
HARD = "experiments/hardening/verdicts"


@pytest.fixture
def kit_copy(data_dir: Path, tmp_path: Path) -> Path:
    src = data_dir / "mnemoverse"
    if not (src / "kit").is_dir():
        pytest.skip("the mnemoverse kit is not in the data folder")
    dst = tmp_path / "mnemoverse"
    shutil.copytree(src, dst)
    return dst


def _edit(path: Path, fn) -> None:  # type: ignore[no-untyped-def]
    data = json.loads(path.read_text())
    fn(data)
    path.write_text(json.dumps(data))


# -- wrong shape ------------------------------------------------------------------------------

def test_wrong_shape_is_located(tmp_path: Path) -> None:
    p = tmp_path / "results.json"
    p.write_text(json.dumps([{"question_id": "q1"}]))
    with pytest.raises(TiapError, match=r'results.json: expected an object with a list '
                                        r'"evaluations", got a list'):
        import_memory_benchmarks(p, dataset="x")
    p = tmp_path / "memos.json"
    p.write_text(json.dumps("judged"))
    with pytest.raises(TiapError, match="memos.json: expected a list of judged records"):
        import_memos(p, queries=QS)
    p = tmp_path / "hyp.jsonl"
    p.write_text('{"question_id": "q1", "hypothesis": "a"}\n["q2", "b"]\n'
                 '{"question_id": "q3", "hypothesis": 7}\n')
    with pytest.raises(TiapError) as err:
        import_longmemeval(p)
    # both bad lines reported together, each located
    assert [(x.line, x.message[:22]) for x in err.value.problems] == [
        (2, "expected an object, go"), (3, "field 'hypothesis' mus")]


def test_kit_file_of_wrong_shape(kit_copy: Path, data_dir: Path) -> None:
    (kit_copy / "kit/data/mem0_oss_answers/conv3.json").write_text('{"qid": "conv3_q0"}')
    _edit(kit_copy / "kit/data/matrix_conv26_perq.json", lambda d: d.update(matrix=[]))
    with pytest.raises(TiapError) as err:
        import_kit(kit_copy, locomo=data_dir / "locomo" / "locomo10.json")
    text = str(err.value)
    assert "conv3.json: expected a list of answers, got an object" in text
    assert "matrix_conv26_perq.json: expected an object with \"matrix\"" in text


def test_not_a_kit(tmp_path: Path) -> None:
    with pytest.raises(TiapError, match="not the mnemoverse kit"):
        import_kit(tmp_path, locomo=[])


# -- unmappable ids: counted, named, the answer and its verdicts left out ----------------------

def test_kit_unmappable_answer_is_counted_with_its_verdicts(kit_copy: Path,
                                                           data_dir: Path) -> None:
    def reword(d: list) -> None:
        assert d[0]["qid"] == "conv2_q0"
        d[0]["question"] = "A question LoCoMo does not ask?"
    _edit(kit_copy / "kit/data/mem0_oss_answers/conv2.json", reword)
    s = import_kit(kit_copy, locomo=data_dir / "locomo" / "locomo10.json")
    w = s.warnings["unmapped_answer"]
    # 1 answer; its verdicts: B x2, MV x2, XB x2, LME = 7 (conv2 has no ABL, golden, human)
    assert (w["count"], w["verdicts"]) == (1, 7)
    assert "conv2_q0" in w["examples"][0] and "no question of the dataset" in w["examples"][0]
    assert sum(a.system == "mem0-platform" for a in s) == 1538
    assert "conv2_q0" not in {a.source_id for a in s if a.system == "mem0-platform"}


def test_memory_benchmarks_unmappable_ids_are_named(tmp_path: Path) -> None:
    evs = [{"question_id": qid, "question": q, "category": "x", "evidence": [],
            "cutoff_results": {"top_5": {"generated_answer": "a", "judgment": "WRONG"}},
            "retrieval": {"search_results": []}}
           for qid, q in (("conv0_q0", "Who came?"), ("conv4_q0", "Who came?"),
                          ("conv0_q7", None))]
    p = tmp_path / "results.json"
    p.write_text(json.dumps({"evaluations": evs}))
    from tiap.datasets import Bundle, Collection
    s = import_memory_benchmarks(p, dataset="locomo",
                                 locomo=[Bundle(Collection("c", 1, 0), (), (), tuple(QS))])
    assert [a.query_id for a in s] == ["c:q0"]
    ex = s.warnings["unmapped_answer"]["examples"]
    assert s.warnings["unmapped_answer"]["count"] == 2
    assert "conversation 4; LoCoMo has 1" in ex[0] and "position 7" in ex[1]


# -- a verdict file whose ids are not its answers' ---------------------------------------------

def test_kit_verdict_file_of_other_answers(kit_copy: Path, data_dir: Path) -> None:
    def other(d: list) -> None:
        d[0]["qid"] = "conv0_q999"
    _edit(kit_copy / HARD / "B_conv0_mem0.json", other)
    _edit(kit_copy / "kit/judge_audit/human_labels_control_slice.json",
          lambda d: d["labels"][0].update(qid=500))
    with pytest.raises(TiapError) as err:
        import_kit(kit_copy, locomo=data_dir / "locomo" / "locomo10.json")
    text = str(err.value)
    # both files named, each with the record, in one error
    assert ("B_conv0_mem0.json[0]: id 'conv0_q999' names no answer of system mem0-platform"
            in text)
    assert "human_labels_control_slice.json[0]: id '500' names no answer" in text


def test_kit_verdict_label_and_score_disagree(kit_copy: Path, data_dir: Path) -> None:
    def flip(d: list) -> None:
        d[3]["score"] = 1.0 if d[3]["label"] == "WRONG" else 0.0
        d[4]["label"] = "MAYBE"
    _edit(kit_copy / HARD / "MV_conv5_strict-4o.json", flip)
    with pytest.raises(TiapError) as err:
        import_kit(kit_copy, locomo=data_dir / "locomo" / "locomo10.json")
    assert [p.code for p in err.value.problems] == ["invalid-value", "invalid-value"]
    assert "MV_conv5_strict-4o.json[3]: score" in str(err.value)
    assert "MV_conv5_strict-4o.json[4]: label 'MAYBE'" in str(err.value)


def test_kit_nan_only_as_a_verdict_score(kit_copy: Path, data_dir: Path) -> None:
    # NaN is the kit's "no usable verdict" score; anywhere else it is refused, located
    _edit(kit_copy / "kit/data/mem0_oss_answers/conv4.json",
          lambda d: d[2].update(answer=float("nan")))
    with pytest.raises(TiapError) as err:
        import_kit(kit_copy, locomo=data_dir / "locomo" / "locomo10.json")
    assert [(p.record, p.code) for p in err.value.problems] == [(".[2].answer",
                                                                  "invalid-value")]
    assert "conv4.json" in str(err.value)


def test_longmemeval_judged_log_of_other_answers(tmp_path: Path) -> None:
    hyp = tmp_path / "hyp.jsonl"
    hyp.write_text('{"question_id": "q1", "hypothesis": "Oslo"}\n')
    log = tmp_path / "log.jsonl"
    log.write_text('{"question_id": "q1", "hypothesis": "Bergen", "autoeval_label": '
                   '{"model": "m", "label": true}}\n'
                   '{"question_id": "q2", "hypothesis": "x", "autoeval_label": true}\n'
                   '{"question_id": "q1", "autoeval_label": "yes"}\n')
    with pytest.raises(TiapError) as err:
        import_longmemeval(hyp, judged=log)
    assert [(p.line, p.message.split(":")[0][:40]) for p in err.value.problems] == [
        (1, "the judged hypothesis of 'q1' differs fr"),
        (2, "question_id 'q2' has no hypothesis in hy"),
        (3, "field 'autoeval_label' must be true/fals")]


# -- nothing maps: a located error --------------------------------------------------------------

def test_nothing_maps(tmp_path: Path) -> None:
    p = tmp_path / "memos.json"
    p.write_text(json.dumps([{"question": "Why?", "answer": "x", "golden_answer": "x",
                              "category": 4, "llm_judgments": {"judgment_1": True}}]))
    with pytest.raises(TiapError, match=r"memos.json: no question of the file maps to a "
                                        r"query of the dataset; first: .*no question of the "
                                        r"dataset has this text"):
        import_memos(p, queries=QS)
    hyp = tmp_path / "hyp.jsonl"
    hyp.write_text('{"question_id": "zz", "hypothesis": "a"}\n')
    with pytest.raises(TiapError, match="hyp.jsonl: no question id of the file maps"):
        import_longmemeval(hyp, longmemeval=QS)


def test_kit_against_no_locomo(kit_copy: Path) -> None:
    with pytest.raises(TiapError, match="no answer of the kit maps to a LoCoMo question; "
                                        ".*conversation 0; LoCoMo has 0"):
        import_kit(kit_copy, locomo=[])
