"""The paper's audit files: label counts, the per-dataset split and the validation data.

Read at test time from ``$TIAP_DATA/mtel-mem`` (``../shared/data`` here); skipped when the
folder is absent. Expected counts are the paper's (issue 6): supports 504, partial 759,
does_not_support 639 over 1,902 cases; 504 / 1,902 = 26.5%, not the abstract's 29.2%
(which is the five-judge majority vote, appendix G).
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import pytest

from tiap.audit import agreement, read_human_labels, write_labels
from tiap.audit.paper import PAPER_LABEL_COUNTS, read_paper_cases, read_paper_labels
from tiap.cli.main import main
from tiap.datasets.files import default_data_dir


@pytest.fixture(scope="module")
def mtel() -> Path:
    d = default_data_dir()
    if d is None or not (d / "mtel-mem" / "semantic_audit" / "judged_cases.csv").exists():
        pytest.skip("the paper's MTEL-Mem artifacts are not here (set TIAP_DATA)")
    return d / "mtel-mem"


@pytest.fixture(scope="module")
def labels(mtel: Path):
    return read_paper_labels(mtel / "semantic_audit" / "judged_cases.csv")


def test_label_counts(labels) -> None:
    assert len(labels) == 1902
    assert Counter(r.label for r in labels) == PAPER_LABEL_COUNTS
    assert {r.judge for r in labels} == {"anthropic/claude-sonnet-4"}
    assert round(504 / 1902, 3) == 0.265


def test_per_dataset_split(labels) -> None:
    by: dict[str, Counter[str]] = {}
    for r in labels:
        by.setdefault(r.dataset, Counter())[r.label] += 1
    assert by["locomo"] == {"supports": 384, "partial": 553, "does_not_support": 341}
    assert by["longmemeval/s"] == {"supports": 120, "partial": 206, "does_not_support": 298}
    assert sum(by["locomo"].values()) == 1278 and sum(by["longmemeval/s"].values()) == 624
    tg = Counter((r.target, r.label) for r in labels)
    assert tg[("source", "supports")] == 252 and tg[("canonical", "supports")] == 252
    serving = Counter(r.serving_label for r in labels)
    assert serving == {"either_ok": 1493, "raw_needed": 264, "unclear": 91,
                       "transformed_ok": 54}


def test_cases_are_the_raw_miss_credits(mtel: Path) -> None:
    cases = read_paper_cases(mtel / "semantic_audit" / "all_audit_cases.csv")
    assert len(cases) == 1902
    assert {c.case_type for c in cases} == {"raw_miss"}
    assert all(c.raw_value == 0.0 and c.target_value > 0 for c in cases)
    assert Counter(c.rank_bucket for c in cases)["1-5"] > 0
    judged = {c.case_id for c in read_paper_cases(mtel / "semantic_audit" /
                                                   "judged_cases.csv")}
    assert judged == {c.case_id for c in cases}


def test_human_validation_against_the_paper_judge(mtel: Path, labels) -> None:
    val = mtel / "validation"
    primary = read_human_labels(val / "semantic_validation_sample_115.csv")
    external = read_human_labels(val / "external_semantic_review_set_36.csv")
    assert len(primary) == 240 and len(external) == 72  # one row per audit target
    rep = agreement(labels, human=primary + external)
    rows = {(r["human"], r["rater"], r["target"], r["scheme"]): r for r in rep.human}
    son = "anthropic/claude-sonnet-4"
    r3 = rows[("human:primary", son, "source", "three_class")]
    r2 = rows[("human:primary", son, "source", "binary")]
    assert r3["n"] == 120 and r3["agreement"] == pytest.approx(105 / 120)
    assert r3["cohen_kappa"] == pytest.approx(0.809966, abs=1e-6)
    assert r2["agreement"] == pytest.approx(0.9)
    ext = rows[("human:primary", "human:external", "source", "three_class")]
    assert ext["n"] == 36 and ext["agreement"] == pytest.approx(23 / 36)
    assert ext["cohen_kappa"] == pytest.approx(0.471186, abs=1e-6)
    es = rows[("human:external", son, "source", "three_class")]
    assert es["agreement"] == pytest.approx(25 / 36)
    assert es["cohen_kappa"] == pytest.approx(0.533019, abs=1e-6)


def distinct_rows(path: Path, *columns: str) -> int:
    """Distinct values of ``columns`` in a CSV: the cases it judges, counted on their own."""
    with open(path, newline="", encoding="utf-8-sig") as fh:
        return len({tuple(row[c].strip() for c in columns) for row in csv.DictReader(fh)})


def test_agreement_counts_each_human_judgment_once(mtel: Path, labels, tmp_path: Path,
                                                   ) -> None:
    """A validation row judges one memory, which stands for a Source and a Canonical case:
    agreement over all targets counts it once (it used to count 240 for 120 rows)."""
    val = mtel / "validation"
    n_primary = distinct_rows(val / "semantic_validation_sample_115.csv", "run_label",
                              "query_index")
    n_external = distinct_rows(val / "external_semantic_review_set_36.csv", "dataset",
                               "provider", "query_index")
    assert n_primary == distinct_rows(val / "semantic_validation_sample_115.csv", "sample_id")
    son = "anthropic/claude-sonnet-4"
    primary = read_human_labels(val / "semantic_validation_sample_115.csv")
    external = read_human_labels(val / "external_semantic_review_set_36.csv")
    rep = agreement(labels, human=primary + external)
    rows = {(r["human"], r["rater"], r["target"], r["scheme"]): r for r in rep.human}
    for key, want in [(("human:primary", son), n_primary),
                      (("human:primary", "human:external"), n_external),
                      (("human:external", son), n_external)]:
        for target in ("all", "source", "canonical"):
            for scheme in ("three_class", "binary"):
                assert rows[(*key, target, scheme)]["n"] == want, (key, target, scheme)
    # two humans, each with one label per judgment: pooling the targets changes nothing
    both = rows[("human:primary", "human:external", "all", "three_class")]
    assert both["agreement"] == rows[("human:primary", "human:external", "source",
                                      "three_class")]["agreement"]
    assert both["split"] == 0
    per = rep.summary["human"]["per_rater"]
    assert per["human:primary"]["cases"] == n_primary
    assert per["human:external"]["cases"] == n_external
    assert per["human:primary"]["audit_cases"] == 2 * n_primary  # Source and Canonical
    # the CLI reports the same n
    write_labels(tmp_path / "labels.jsonl", labels)
    assert main(["audit", "agreement", str(tmp_path / "labels.jsonl"), "--human",
                 str(val / "semantic_validation_sample_115.csv"), "--human",
                 str(val / "external_semantic_review_set_36.csv"), "--out",
                 str(tmp_path / "ag")]) == 0
    with open(tmp_path / "ag" / "human.csv", newline="") as fh:
        got = {(r["human"], r["rater"]): int(r["n"]) for r in csv.DictReader(fh)
               if r["target"] == "all" and r["scheme"] == "three_class"}
    assert got == {("human:primary", son): n_primary,
                   ("human:primary", "human:external"): n_external,
                   ("human:external", son): n_external}
    summary = json.loads((tmp_path / "ag" / "agreement.json").read_text())["human_cases"]
    assert summary["per_rater"]["human:external"]["cases"] == n_external


def test_the_judge_repeats_itself_on_source_and_canonical(labels) -> None:
    by: dict[tuple[str, str], dict[str, str]] = {}
    for r in labels:
        by.setdefault((r.system, r.query_id), {})[r.target] = r.label
    assert len(by) == 951
    assert sum(v["source"] == v["canonical"] for v in by.values()) == 917


def test_cli_import_paper(mtel: Path, tmp_path: Path, capsys) -> None:
    rc = main(["audit", "import-paper", str(mtel / "semantic_audit" / "judged_cases.csv"),
               "--out", str(tmp_path / "labels.jsonl"), "--cases-out",
               str(tmp_path / "cases.jsonl")])
    assert rc == 0
    out = capsys.readouterr().out
    assert "504 (26.5%)" in out and "759 (39.9%)" in out and "639 (33.6%)" in out
    assert (tmp_path / "labels.jsonl.manifest.json").exists()
