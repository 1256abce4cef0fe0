"""Two real stores of LoCoMo conversation conv-26 (parser densities 1 and 5, named f1 and
f5), their BM25 runs and their targets, laid out as docs/exports.md assumes::

    stores/f1/items.jsonl  stores/f5/items.jsonl  queries.jsonl
    runs/f1-bm25.trec      runs/f5-bm25.trec      targets/ (tiap targets, both stores)

Built in about a second; shared by the tests that need real per-store qrels.
"""

from __future__ import annotations

from pathlib import Path

from tiap.datasets import load
from tiap.datasets.queryfile import write_queries
from tiap.memory import build_store
from tiap.memory.store import read_store
from tiap.retrieval import make_retriever, retrieve
from tiap.targets.folder import write_targets

STORES = {"f1": 1, "f5": 5}  # store -> max_facts
SYSTEMS = {f"{s}-bm25": s for s in STORES}  # run -> the store it ranks
DEPTH = 20


def build_stores(root: Path, data_dir: Path) -> None:
    """``stores/``, ``queries.jsonl`` and ``runs/`` under ``root``."""
    ds = load("locomo", data_dir)
    for name, facts in STORES.items():
        build_store(ds, "heuristic", root / "stores" / name, parser_args={"max_facts": facts},
                    collections=["conv-26"], store=name)
    write_queries(root / "queries.jsonl",
                  (q for q in ds.queries_iter() if q.collection_id == "conv-26"))
    for system, name in SYSTEMS.items():
        retrieve(root / "stores" / name, root / "queries.jsonl", make_retriever("bm25"),
                 root / "runs" / f"{system}.jsonl", depth=DEPTH, system=system)


def build_all(root: Path, data_dir: Path) -> Path:
    """Everything, ``targets/`` included (written for both stores at once); returns ``root``."""
    from tiap.datasets.queryfile import read_queries

    build_stores(root, data_dir)
    write_targets(root / "targets",
                  [read_store(root / "stores" / s / "items.jsonl") for s in STORES],
                  read_queries(root / "queries.jsonl"))
    return root
