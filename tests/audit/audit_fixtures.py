"""Small inline fixtures for the audit tests: cases, and the hand-made store and runs that
test_audit_cases.py describes (and the stores of conftest.py's two-store audit)."""

from __future__ import annotations

from tiap.audit.cases import Case
from tiap.datasets.records import Query
from tiap.memory.store import Item
from tiap.runs import Ranking, Run


def case(i: int | str, question: str, *, answer: str = "Paris", text: str = "She moved to Paris.",
         dataset: str = "d", system: str = "s", target: str = "source", item: str | None = None,
         query: str | None = None, rank: int = 1) -> Case:
    return Case(
        case_id=f"{system}:q{i}:{target}", system=system, query_id=query or f"q{i}",
        target=target, item_id=item or f"f{i}", item_text=text, question=question,
        answer=answer, credited_rank=rank, item_kind="fact", dataset=dataset)


ITEMS = [
    Item("t1", "raw", ("u1",), text="Caroline: I moved to Paris last year!"),
    Item("t2", "raw", ("u2",), text="Melanie: pottery class was fun."),
    Item("t3", "raw", ("u3",), text="Caroline: hi."),
    Item("f1", "fact", ("u1",), text="Caroline moved to Paris in 2022."),
    Item("f2", "fact", (), ("f1",), text="Caroline lives in France."),
    Item("o2", "observation", ("u2",), text="Melanie likes pottery."),
    Item("n2", "fact", ("u2",), serving=False, text="Melanie said hi."),
    Item("s1", "summary", (), ("f1", "t2"), text="Caroline moved; Melanie does pottery."),
]
QUERIES = [
    Query("q1", "c", "Where did Caroline move, and what does Melanie do?", "Paris; pottery",
          "multi-hop", ("u1", "u2")),
    Query("q2", "c", "Who said hi?", "Caroline", "single-hop", ("u3",)),
    Query("q3", "c", "Where did Caroline move?", "Paris", "single-hop", ("u1",)),
]
RANKINGS = {
    "sys": {"q1": ["x9", "s1", "t1", "f1", "o2", "f2"], "q2": ["t3", "f1"],
            "q3": ["f2", "t1", "f1"]},
    "sys2": {"q1": ["o2", "t2", "t1"], "q3": ["f1", "x1"]},
}


def runs(benchmark: str | None = "toy") -> list[Run]:
    return [Run(system=s, benchmark=benchmark,
                rankings=tuple(Ranking(q, s, tuple(ids)) for q, ids in qs.items()))
            for s, qs in RANKINGS.items()]


#: The two stores of conftest.py's real-data audit: store name -> the parser's max_facts.
TWO_STORES = {"f1": 1, "f5": 5}
