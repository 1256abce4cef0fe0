"""The mnemoverse kit read by :func:`tiap.answers.kit.import_kit`, checked against the kit's
files counted by hand here (plain ``json.load`` of each file, no TIAP code), against LoCoMo
read with plain ``json`` and against figures the kit's README publishes."""

from __future__ import annotations

import hashlib
import json
import math
from collections import Counter
from pathlib import Path

import pytest

from tiap.answers.kit import KIT_SYSTEMS, import_kit, judge_name
from tiap.answers.records import AnswerSet

VERDICTS = "experiments/hardening/verdicts"
#: verdict file pattern -> judge configuration, as the kit's README states them
MEM0_FILES = {
    "B_conv{n}_mem0.json": "gpt-5|judge_mem0_generous|r0",
    "B_conv{n}_strict.json": "gpt-5|judge_strict_ours|r0",
    "MV_conv{n}_mem0-4o.json": "gpt-4o|judge_mem0_generous|r0",
    "MV_conv{n}_strict-4o.json": "gpt-4o|judge_strict_ours|r0",
    "XB_conv{n}_mem0-claude.json": "claude|judge_mem0_generous|r0",
    "XB_conv{n}_strict-claude.json": "claude|judge_strict_ours|r0",
    "LME_conv{n}.json": "gpt-4o-2024-08-06|judge_longmemeval|r0",
}
MATRIX = {"mem0": "gpt-5|judge_mem0_generous|r0", "mem0-4o": "gpt-4o|judge_mem0_generous|r0",
          "strict": "gpt-5|judge_strict_ours|r0", "mnemoverse": "gpt-5-mini|judge_mnemoverse|r0"}


@pytest.fixture(scope="module")
def kit_dir(data_dir: Path) -> Path:
    d = data_dir / "mnemoverse"
    if not (d / "kit").is_dir():
        pytest.skip("the mnemoverse kit is not in the data folder")
    return d


@pytest.fixture(scope="module")
def kit(kit_dir: Path, data_dir: Path) -> AnswerSet:
    return import_kit(kit_dir, locomo=data_dir / "locomo" / "locomo10.json")


def _counts(s: AnswerSet) -> dict[tuple[str, str], tuple[int, int]]:
    """(system, judge) -> (correct, scored) from the answer set."""
    out: Counter[tuple[str, str, str]] = Counter()
    for a in s:
        for v in a.verdicts:
            out[(a.system, v.judge, "n")] += v.score is not None
            out[(a.system, v.judge, "c")] += v.score == 1.0
    return {(sy, j): (out[(sy, j, "c")], out[(sy, j, "n")]) for sy, j, _ in out}


def _hand(records: list[dict]) -> tuple[int, int]:
    """(correct, scored) of a verdict file by hand: label CORRECT / not null."""
    return (sum(r["label"] == "CORRECT" for r in records),
            sum(r["label"] is not None for r in records))


def test_systems_and_sizes(kit: AnswerSet) -> None:
    assert kit.systems == KIT_SYSTEMS
    sizes = Counter(a.system for a in kit)
    # README: 1,539 published Mem0 answers, 6 pipelines x 152, 143 control, 152 engine
    assert sizes == {"mem0-platform": 1539, **{p: 152 for p in KIT_SYSTEMS[1:7]},
                     "mem0-oss-control": 143, "mnemoverse-engine-20260521": 152}
    assert {a.dataset for a in kit} == {"locomo"}


def test_mem0_counts_equal_the_verdict_files_counted_by_hand(kit: AnswerSet,
                                                              kit_dir: Path) -> None:
    got = _counts(kit)
    for pattern, judge in MEM0_FILES.items():
        c = n = 0
        for conv in range(10):
            hc, hn = _hand(json.loads((kit_dir / VERDICTS / pattern.format(n=conv))
                                      .read_text()))
            c, n = c + hc, n + hn
        assert got[("mem0-platform", judge)] == (c, n), (pattern, judge)
    # every conversation's verdicts cover all 1,539 answers for these seven configurations
    for pattern, judge in MEM0_FILES.items():
        total = sum(len(json.loads((kit_dir / VERDICTS / pattern.format(n=conv)).read_text()))
                    for conv in range(10))
        assert total == 1539, pattern
    # the README's published figures: gpt-4o 91.9% (mem0 prompt) / 43.1% (strict) of 1,539
    c, n = got[("mem0-platform", "gpt-4o|judge_mem0_generous|r0")]
    assert n == 1539 and round(100 * c / n, 1) == 91.9
    c, n = got[("mem0-platform", "gpt-4o|judge_strict_ours|r0")]
    assert n == 1539 and round(100 * c / n, 1) == 43.1


def test_conv0_only_files_and_nan_verdicts(kit: AnswerSet, kit_dir: Path) -> None:
    got = _counts(kit)
    for rule in ("datetol", "extradetail", "paraphrase", "partial"):
        recs = json.loads((kit_dir / VERDICTS / f"ABL_conv0_abl-no-{rule}.json").read_text())
        assert got[("mem0-platform", f"unrecorded|judge_abl_no_{rule}|r0")] == _hand(recs)
    # README: extradetail .608 over 148 scored of 152 (4 NaN verdicts: label None, a reason)
    assert got[("mem0-platform", "unrecorded|judge_abl_no_extradetail|r0")][1] == 148
    nan = [v for a in kit for v in a.verdicts
           if v.judge == "unrecorded|judge_abl_no_extradetail|r0" and v.label is None]
    assert len(nan) == 4 and all(v.reason.startswith("no usable verdict") for v in nan)
    golden = json.loads((kit_dir / "experiments/golden_judge/fullrun_verdicts/"
                                   "conv0_golden2.json").read_text())
    val = json.loads((kit_dir / "experiments/golden_judge/"
                                "verdicts_golden2_validation_set.json").read_text())["records"]
    c1, n1 = _hand(golden)
    c2, n2 = _hand(val)
    # conv0 and the validation set (conv1..9) are disjoint answers of one system
    assert got[("mem0-platform", "gpt-5|judge_golden_v2|r0")] == (c1 + c2, n1 + n2)


def test_six_pipelines_equal_the_matrix_counted_by_hand(kit: AnswerSet, kit_dir: Path) -> None:
    got = _counts(kit)
    matrix = json.loads((kit_dir / "kit/data/matrix_conv26_perq.json").read_text())["matrix"]
    assert len(matrix) == 6
    for system, rows in matrix.items():
        for col, judge in MATRIX.items():
            if system == "naked_cosine" and col == "mnemoverse":
                judge = "gpt-5-mini|judge_mnemoverse_binary|r0"  # its own configuration
            c = sum(r[col] == 1.0 for r in rows.values())
            assert got[(system, judge)] == (c, 152), (system, col)
    assert ("naked_cosine", "gpt-5-mini|judge_mnemoverse|r0") not in got
    w = kit.warnings["judge_provenance"]
    assert w["count"] == 1 and "naked_cosine" in w["examples"][0]


def test_control_slice_and_engine(kit: AnswerSet, kit_dir: Path) -> None:
    got = _counts(kit)
    for prompt, stem in (("mem0", "judge_mem0_generous"), ("strict", "judge_strict_ours")):
        for run in range(3):
            recs = json.loads((kit_dir / VERDICTS / f"A_{prompt}_rep{run}.json").read_text())
            assert got[("mem0-oss-control", f"gpt-5|{stem}|r{run}")] == _hand(recs)
    # README: strict reps .329 / .336 / .343 of 143, mem0 .741 each
    assert [got[("mem0-oss-control", f"gpt-5|judge_strict_ours|r{r}")] for r in range(3)] \
        == [(47, 143), (48, 143), (49, 143)]
    rejudge = json.loads((kit_dir / "kit/data/rejudge_20260521_235650.json").read_text())
    for j in rejudge["judges"]:
        name = {"mem0": "judge_mem0_generous", "mem0-4o": "judge_mem0_generous",
                "strict": "judge_strict_ours", "mnemoverse": "judge_mnemoverse"}[j["judge"]]
        assert got[("mnemoverse-engine-20260521", judge_name(j["model"], name))] == (
            int(sum(j["scores"])), 152)


def test_human_labels(kit: AnswerSet, kit_dir: Path) -> None:
    labels = Counter((a.system, v.label) for a in kit for v in a.verdicts if v.judge == "human")
    # README: validation set 38 CORRECT, 6 WRONG, 10 AMBIGUOUS
    assert (labels[("mem0-platform", "correct")], labels[("mem0-platform", "wrong")],
            labels[("mem0-platform", "ambiguous")]) == (38, 6, 10)
    for rel, system in (("human_labels_control_slice.json", "mem0-oss-control"),
                        ("human_labels_engine_side.json", "mnemoverse-engine-20260521")):
        hand = Counter(r["human_verdict"].lower() for r in json.loads(
            (kit_dir / "kit/judge_audit" / rel).read_text())["labels"])
        assert {k: labels[(system, k)] for k in hand} == dict(hand), rel
    assert kit.configs["human"].kind == "human"
    # engine exhibits mapped by question text: each to an answer the strict judge rejected
    ex = [a for a in kit if a.system == "mnemoverse-engine-20260521" and a.verdict("human")]
    assert len(ex) == 64
    assert all(a.verdict("gpt-5|judge_strict_ours|r0").label == "wrong" for a in ex)


def test_query_ids_count_adversarial_questions(kit: AnswerSet, data_dir: Path) -> None:
    # LoCoMo read with plain json: the query id's position in qa asks the kit's question
    raw = json.loads((data_dir / "locomo" / "locomo10.json").read_text())
    qa = {c["sample_id"]: c["qa"] for c in raw}
    for a in kit:
        conv, pos = a.query_id.split(":q")
        assert qa[conv][int(pos)]["question"] == a.question, a.source_id
        assert qa[conv][int(pos)]["category"] != 5
    byid = {(a.system, a.source_id): a.query_id for a in kit}
    assert byid[("mem0-platform", "conv0_q0")] == "conv-26:q0"
    # conv1's ids skip position 79: q80 and q81 are kept under their question (counted)
    assert byid[("mem0-platform", "conv1_q80")] == "conv-30:q80"
    w = kit.warnings["remapped_by_text"]
    assert w["count"] == 2 and "conv1_q80" in w["examples"][0]
    assert "unmapped_answer" not in kit.warnings


def test_judge_configurations(kit: AnswerSet, kit_dir: Path) -> None:
    for name, cfg in kit.configs.items():
        if cfg.kind == "llm":
            assert name == judge_name(cfg.model, cfg.prompt, cfg.run)
            if cfg.prompt_sha256 is not None:  # sha256 of the template file's bytes
                assert cfg.prompt_sha256 == hashlib.sha256(
                    (kit_dir / "kit/prompts" / f"{cfg.prompt}.txt").read_bytes()).hexdigest()
    lme = kit.configs["gpt-4o-2024-08-06|judge_longmemeval|r0"]
    assert lme.temperature == 0.0 and lme.prompt_sha256 is None
    assert set(lme.settings["templates"]) == {"judge_longmemeval_default",
                                               "judge_longmemeval_temporal"}
    assert kit.configs["gpt-5|judge_strict_ours|r0"].temperature is None
    assert kit.configs["gpt-5-mini|judge_mnemoverse_binary|r0"].prompt_sha256 is None
    # one configuration, many systems: gpt-5 strict judges the Mem0 answers, the pipelines,
    # the control slice (run 0) and the engine
    users = {a.system for a in kit for v in a.verdicts if v.judge == "gpt-5|judge_strict_ours|r0"}
    assert users == set(KIT_SYSTEMS)
    assert not any(math.isnan(v.score) for a in kit for v in a.verdicts if v.score is not None)
