"""The paper's published figures, reproduced through the commands a user runs:
``tiap import mtel-trace`` then ``tiap rescore`` (TIAP's own scorer, not a test reference).

Expected values are read at test time from the published ``target_rescore.json`` next to
each trace.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from tiap.cli.main import main

MEASURES = {
    "nDCG@60": "ndcg_at_k",
    "RR@60": "mrr",
    "R@60": "recall_at_k",
    "Success@60": "hit_rate_at_k",
    "Success@1": "top1_hit_rate",
}


@pytest.mark.parametrize("run", ["locomo_mem0", "locomo_memoryos"])
def test_transfer_runs_raw_figures(run: str, data_dir: Path, tmp_path: Path) -> None:
    folder = data_dir / "mtel-mem" / "runs" / "transfer" / run
    published = json.loads((folder / "target_rescore.json").read_text())["targets"]["raw_turn"]
    imp = tmp_path / "import"
    assert main(["import", "mtel-trace", str(folder / "trace.jsonl.gz"), "--out", str(imp)]) == 0
    out = tmp_path / "rescore"
    assert main(["rescore", "--items", str(imp / "items.jsonl"), "--queries",
                 str(imp / "queries.jsonl"), "--run", str(imp / "run.jsonl"), "--out", str(out),
                 "--targets", "raw", "--measures", ",".join(MEASURES)]) == 0
    with open(out / "summary.csv", newline="") as fh:
        rows = {r["measure"]: r for r in csv.DictReader(fh)}
    for ours, theirs in MEASURES.items():
        assert int(rows[ours]["n"]) == published["queries"] == 1977
        assert float(rows[ours]["mean"]) == pytest.approx(published[theirs], abs=1e-9), ours
    # the headline numbers, as the paper prints them
    expected = {"locomo_mem0": 0.2749, "locomo_memoryos": 0.4339}[run]
    assert round(float(rows["nDCG@60"]["mean"]), 4) == expected
