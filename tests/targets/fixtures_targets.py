"""A small hand-built store and query set shared by the targets tests.

Store (``->`` reads "derived from"):

    t1 raw   [u1]          f1 fact  [u1]
    t2 raw   [u2]          f2 fact  parents f1              -> lineage {u1}
    t3 raw   [u3]          f3 fact  [u2], parents f2        -> lineage {u1, u2}
    t4 raw   [u4]          o1 observation [u2], serving=false
                           s1 summary parents f3, t3        -> lineage {u1, u2, u3}
                           x1 fact, no sources, no parents  -> orphan (no family)

Families (sorted):
    u1: f1 f2 f3 s1 t1
    u2: f3 o1 s1 t2
    u3: s1 t3
    u4: t4

Queries:
    q1 [u1, u2]   q2 [] (abstention)   q3 [u9] (unknown)   q4 [u3, u9]
    q5 [u1, u1]   q6 [u4]
"""

from __future__ import annotations

from typing import Any

from tiap.datasets.records import Query
from tiap.memory.store import Item


def item(
    item_id: str,
    kind: str,
    sources: tuple[str, ...] = (),
    parents: tuple[str, ...] = (),
    serving: bool | None = None,
    **meta: Any,
) -> Item:
    return Item(
        item_id=item_id,
        kind=kind,
        sources=sources,
        parents=parents,
        serving=serving,
        meta=tuple(sorted(meta.items())),
    )


def query(qid: str, evidence: tuple[str, ...], abstention: bool = False) -> Query:
    return Query(
        query_id=qid,
        collection_id="c",
        question="?",
        answer=None,
        category="x",
        evidence=evidence,
        abstention=abstention,
    )


def store() -> list[Item]:
    # children deliberately listed before their parents: order must not matter
    return [
        item("s1", "summary", parents=("f3", "t3")),
        item("f3", "fact", ("u2",), parents=("f2",)),
        item("f2", "fact", parents=("f1",)),
        item("f1", "fact", ("u1",), confidence="high"),
        item("o1", "observation", ("u2",), serving=False),
        item("x1", "fact"),
        item("t1", "raw", ("u1",)),
        item("t2", "raw", ("u2",)),
        item("t3", "raw", ("u3",)),
        item("t4", "raw", ("u4",)),
    ]


def queries() -> list[Query]:
    return [
        query("q1", ("u1", "u2")),
        query("q2", (), abstention=True),
        query("q3", ("u9",)),
        query("q4", ("u3", "u9")),
        query("q5", ("u1", "u1")),
        query("q6", ("u4",)),
    ]
