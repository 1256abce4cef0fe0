"""--parquet: per_query.csv as a Hive-partitioned Parquet dataset, the same rows."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest

from tiap.cli.main import main

pa_ds = pytest.importorskip("pyarrow.dataset")


def test_partitions_hold_the_csv_rows(tmp_path: Path) -> None:
    items = [{"item_id": i, "kind": k, "sources": [u]} for i, k, u in
             (("t1", "raw", "u1"), ("t2", "raw", "u2"), ("f1", "fact", "u1"))]
    queries = [{"query_id": q, "evidence": ev, "question": "?", "category": "c"}
               for q, ev in (("q1", ["u1"]), ("q2", ["u2"]), ("q3", ["u9"]))]
    (tmp_path / "i.jsonl").write_text("".join(json.dumps(x) + "\n" for x in items))
    (tmp_path / "q.jsonl").write_text("".join(json.dumps(x) + "\n" for x in queries))
    args = ["rescore", "--items", str(tmp_path / "i.jsonl"), "--queries", str(tmp_path / "q.jsonl"),
            "--measures", "nDCG@2,RR@2", "--parquet", "--tokenizer", "none",
            "--targets", "raw,source", "--out", str(tmp_path / "r")]
    for s, rank in (("a/b", ["f1", "t1", "t2"]), ("c", ["t2"])):  # a '/' in a system name
        p = tmp_path / f"{s.replace('/', '_')}.jsonl"
        p.write_text("".join(json.dumps({"query_id": q, "ranking": rank}) + "\n"
                             for q in ("q1", "q2", "q3")))
        args += ["--run", f"{s}={p}"]
    assert main(args) == 0
    rows = list(csv.DictReader((tmp_path / "r" / "per_query.csv").read_text().splitlines()))
    table = pa_ds.dataset(tmp_path / "r" / "per_query", partitioning="hive").to_table()
    got = sorted((s, t, q, m, v) for s, t, q, m, v in zip(
        table.column("system").to_pylist(), table.column("target").to_pylist(),
        table.column("query_id").to_pylist(), table.column("measure").to_pylist(),
        table.column("value").to_pylist(), strict=True))
    want = sorted((r["system"], r["target"], r["query_id"], r["measure"],
                   None if r["value"] == "" else float(r["value"])) for r in rows)
    assert [g[:4] for g in got] == [w[:4] for w in want]
    for g, w in zip(got, want, strict=True):
        assert (g[4] is None and w[4] is None) or math.isclose(g[4], w[4], abs_tol=0)
    # a '/' in a value is escaped in its directory name and read back as '/'
    assert (tmp_path / "r" / "per_query" / "system=a%2Fb" / "target=raw" /
            "part-0.parquet").is_file()
    man = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert "per_query/system=c/target=source/part-0.parquet" in man["outputs"]
