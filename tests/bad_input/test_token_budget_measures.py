"""A token budget (``nDCG@tok500``) is a measure, never a rank cutoff (issue 33, item 5): an
``audit-run`` config with one wrote the whole run, then crashed printing the flips
(``int('tok500')``); the answer alignment read ``RR@tok500`` as a whole-list RR."""

from __future__ import annotations

import csv
from pathlib import Path
from types import SimpleNamespace

import numpy as np

from tiap.cli.main import main
from tiap.report import flip_headline
from tiap.scoring.measures import parse_measure

CONFIG = """name = "tok"
dataset = "locomo"
retrievers = ["bm25"]
k = 20
targets = ["raw", "source"]
measures = ["nDCG@10", "nDCG@tok500", "R@20"]
collections = ["conv-26"]
sessions = 3
resamples = 2000

[[stores]]
name = "f1"
parser = "heuristic"
max_facts = 1

[[stores]]
name = "native"
parser = "native"
"""


def test_audit_run_with_a_token_budget_measure(data_dir: Path, tmp_path: Path, capsys) -> None:
    cfg = tmp_path / "tok.toml"
    cfg.write_text(CONFIG)
    out = tmp_path / "out"
    assert main(["audit-run", str(cfg), "--out", str(out), "--data", str(data_dir)]) == 0
    printed = capsys.readouterr()
    assert "Traceback" not in printed.err
    root = out / "tok"
    with open(root / "rescore" / "summary.csv", newline="") as fh:
        budgeted = [r for r in csv.DictReader(fh) if r["measure"] == "nDCG@tok500"]
    assert len(budgeted) == 4  # two systems under two targets
    with open(root / "sensitivity" / "winner_flips.csv", newline="") as fh:
        flipped = {r["measure"] for r in csv.DictReader(fh) if r["flip"] == "true"}
    # the budget measure flips too (the case that crashed); the printed table is on the
    # headline, nDCG at its largest rank cutoff among the flipped measures: nDCG@10
    assert "nDCG@tok500" in flipped and "nDCG@10" in flipped
    assert "winner flips on nDCG@10 (" in printed.out
    assert (root / "report" / "index.html").exists()


def test_the_flip_table_measure_by_hand() -> None:
    # nDCG at its largest rank cutoff; a budget is no rank cutoff, bare nDCG is the whole list
    assert flip_headline(["nDCG@tok500", "nDCG@5", "nDCG@10", "R@20"]) == "nDCG@10"
    assert flip_headline(["nDCG@tok500", "nDCG@tok2000"]) == "nDCG@tok500"  # else the first
    assert flip_headline(["R@5", "nDCG", "nDCG@60"]) == "nDCG"
    assert flip_headline(["ndcg@10", "R@5"]) == "ndcg@10"  # as written in the file


def test_the_answer_alignment_reads_no_budget_as_a_whole_list_rr() -> None:
    from tiap.sensitivity.answers import _hits_from_rr

    def ds(*measures: str) -> SimpleNamespace:
        # one query with RR 1/4 (first credited item at rank 4) under every measure
        ms = tuple(parse_measure(m) for m in measures)
        scores = SimpleNamespace(get=lambda t, m: np.array([0.25]))
        return SimpleNamespace(measures=ms, systems={"A": scores}, targets=("raw",),
                               query_ids=("q1",))

    # RR@tok500 says nothing of the ranks past the budget: no exact Success@5 from it
    assert _hits_from_rr(ds("RR@tok500"), "A", 5) is None
    # RR (whole list) or RR@10 >= depth 5: Success@5 = [RR >= 1/5] = [0.25 >= 0.2] = 1
    for m in ("RR", "RR@10"):
        ids, hits = _hits_from_rr(ds("RR@tok500", m), "A", 5)
        assert ids == ["q1"] and hits["raw"].tolist() == [1.0]
