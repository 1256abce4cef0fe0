"""Shared fixtures of the audit tests: a two-store audit on real data (LoCoMo conv-26).

LoCoMo conversation conv-26 only, the heuristic parser at one and at five facts per turn
(stores ``f1`` and ``f5``, which reuse ids such as ``conv-26:D2:1#f1`` for different
texts), BM25 runs over each (systems ``f1-bm25``, ``f5-bm25``), rescored together, and the
whole audit through the CLI: ``cases --each``, the ``lexical`` judge, ``graded``. About two
seconds; built once per test process.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from audit_fixtures import TWO_STORES as STORES

from tiap.audit import read_cases, read_labels
from tiap.cli.main import main
from tiap.memory.store import read_store


@pytest.fixture(scope="session")
def two_store_audit(data_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from tiap.datasets import load
    from tiap.datasets.queryfile import write_queries
    from tiap.memory import build_store
    from tiap.retrieval import make_retriever, retrieve

    root = tmp_path_factory.mktemp("stores")
    queries = root / "queries.jsonl"
    write_queries(queries, [q for q in load("locomo", data_dir).queries_iter()
                            if q.collection_id == "conv-26"])
    rescore = ["rescore", "--queries", str(queries), "--measures", "nDCG@20",
               "--out", str(root / "rs")]
    for name, n in STORES.items():
        build_store(load("locomo", data_dir), "heuristic", root / "stores" / name,
                    parser_args={"max_facts": n}, collections=["conv-26"], store=name)
        run = root / "runs" / f"{name}-bm25.jsonl"
        retrieve(root / "stores" / name, queries, make_retriever("bm25"), run,
                 system=f"{name}-bm25")
        rescore += ["--run", str(run), "--items",
                    f"{name}-bm25={root / 'stores' / name / 'items.jsonl'}"]
    assert main(rescore) == 0
    assert main(["audit", "cases", str(root / "rs"), "--each",
                 "--out", str(root / "cases.jsonl")]) == 0
    assert main(["audit", "judge", str(root / "cases.jsonl"), "--judge", "lexical",
                 "--out", str(root / "judged")]) == 0
    assert main(["audit", "graded", str(root / "rs"), "--labels",
                 str(root / "judged" / "labels.jsonl"), "--out", str(root / "graded")]) == 0
    return {"root": root,
            "stores": {n: read_store(root / "stores" / n / "items.jsonl") for n in STORES},
            "cases": read_cases(root / "cases.jsonl"),
            "labels": read_labels(root / "judged" / "labels.jsonl"),
            "rescore": json.loads((root / "rs" / "manifest.json").read_text())}
