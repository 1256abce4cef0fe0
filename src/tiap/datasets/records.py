"""Typed, frozen records for benchmark data.

Names follow TIAP's conventions (``query_id``, ``unit_id``, ``item_id``, ``sources``): a
*source unit* is one dialogue turn, addressed by a ``unit_id`` that is unique within its
dataset and stable across releases of TIAP. Evidence is always a tuple of unit ids; the
evidence exactly as the file gave it is kept beside it (``evidence_given``), and every
problem found while resolving it is an :class:`EvidenceProblem`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Collection:
    """One retrieval universe: a LoCoMo conversation, a LongMemEval haystack, a BEAM chat.

    >>> from tiap.datasets import Collection
    >>> Collection("conv-26", n_sessions=19, n_turns=419, speakers=("Caroline", "Melanie"))
    Collection(collection_id='conv-26', n_sessions=19, n_turns=419,
               speakers=('Caroline', 'Melanie'))
    """

    collection_id: str
    n_sessions: int
    n_turns: int
    speakers: tuple[str, ...] = ()


@dataclass(frozen=True)
class Session:
    """One session of a collection: its place in the collection's order and its date as
    the dataset writes it (``None`` when it gives none).

    >>> from tiap.datasets import Session
    >>> s = Session("conv-26", "session_1", position=1, date="1:56 pm on 8 May, 2023")
    >>> s.session_id, s.position, s.date
    ('session_1', 1, '1:56 pm on 8 May, 2023')
    """

    collection_id: str
    session_id: str
    position: int  # 1-based order within the collection
    date: str | None


@dataclass(frozen=True)
class Turn:
    """One dialogue turn: the *source unit* that benchmark evidence points at.

    >>> from tiap.datasets import Turn
    >>> t = Turn("conv-26:D1:3", "conv-26", "session_1", 3, "Caroline", "I went to a group.",
    ...          extra=(("image_caption", "a photo of a poster"),))
    >>> t.to_json()
    {'unit_id': 'conv-26:D1:3', 'collection': 'conv-26', 'session_id': 'session_1',
     'position': 3, 'speaker': 'Caroline', 'text': 'I went to a group.',
     'image_caption': 'a photo of a poster'}
    """

    unit_id: str
    collection_id: str
    session_id: str
    position: int  # 1-based position within the session
    speaker: str  # speaker name (LoCoMo) or role (LongMemEval, BEAM)
    text: str
    extra: tuple[tuple[str, str], ...] = ()  # e.g. (("image_caption", "..."),)

    def to_json(self) -> dict[str, Any]:
        row = {
            "unit_id": self.unit_id,
            "collection": self.collection_id,
            "session_id": self.session_id,
            "position": self.position,
            "speaker": self.speaker,
            "text": self.text,
        }
        row.update(dict(self.extra))
        return row


@dataclass(frozen=True)
class Query:
    """A benchmark question with its evidence as source unit ids.

    >>> from tiap.datasets import Query
    >>> q = Query("conv-26:q0", "conv-26", "When did Caroline go to the group?", "7 May 2023",
    ...           "temporal", evidence=("conv-26:D1:3",), evidence_given=["D1:3"])
    >>> q.evidence
    ('conv-26:D1:3',)
    >>> q.to_json()
    {'query_id': 'conv-26:q0', 'question': 'When did Caroline go to the group?',
     'answer': '7 May 2023', 'category': 'temporal', 'evidence': ['conv-26:D1:3'],
     'collection': 'conv-26', 'abstention': False, 'evidence_given': ['D1:3']}
    """

    query_id: str
    collection_id: str
    question: str
    answer: str | None
    category: str
    evidence: tuple[str, ...]
    evidence_given: Any = None  # exactly as in the file (string, list, dict)
    abstention: bool = False
    evidence_sessions: tuple[str, ...] = ()
    evidence_note: str | None = None  # e.g. "fallback: all turns of answer sessions"
    extra: tuple[tuple[str, Any], ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The ``queries.jsonl`` row (docs/datasets.md), plus TIAP's provenance fields."""
        row: dict[str, Any] = {
            "query_id": self.query_id,
            "question": self.question,
            "answer": self.answer,
            "category": self.category,
            "evidence": list(self.evidence),
            "collection": self.collection_id,
            "abstention": self.abstention,
            "evidence_given": self.evidence_given,
        }
        if self.evidence_sessions:
            row["evidence_sessions"] = list(self.evidence_sessions)
        if self.evidence_note:
            row["evidence_note"] = self.evidence_note
        row.update(dict(self.extra))
        return row


@dataclass(frozen=True)
class DerivedMemory:
    """A derived memory that a dataset ships (LoCoMo observations and summaries), with its
    lineage: the source units it derives from.

    >>> from tiap.datasets import DerivedMemory
    >>> m = DerivedMemory("conv-26:session_1:observation:1", "conv-26", "observation",
    ...                   "Caroline went to an LGBTQ support group.", ("conv-26:D1:3",),
    ...                   session_id="session_1", speaker="Caroline", sources_given="D1:3")
    >>> m.kind, m.sources
    ('observation', ('conv-26:D1:3',))
    """

    item_id: str
    collection_id: str
    kind: str  # "observation", "session_summary", "event_summary"
    text: str
    sources: tuple[str, ...]
    session_id: str | None = None
    speaker: str | None = None
    sources_given: Any = None


@dataclass(frozen=True)
class EvidenceProblem:
    """A label problem found while resolving a query's (or memory's) evidence.

    >>> from tiap.datasets import EvidenceProblem
    >>> p = EvidenceProblem("conv-26:q7", "D30:05", "malformed", "zero-padded turn number")
    >>> p.to_json()
    {'query_id': 'conv-26:q7', 'evidence': 'D30:05', 'problem': 'malformed',
     'detail': 'zero-padded turn number'}
    """

    query_id: str
    evidence: str  # the evidence string (or element) as given
    problem: str  # "malformed", "unresolvable", "split", "fallback", "missing_chat", ...
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class DatasetStats:
    """What :meth:`tiap.datasets.Dataset.stats` counts in one pass over a dataset.

    >>> from tiap.datasets import Bundle, Collection, InlineDataset, Query, Session, Turn
    >>> turn = Turn("c1:D1:1", "c1", "s1", 1, "Ana", "I adopted a cat.")
    >>> queries = (Query("q1", "c1", "Who adopted a cat?", "Ana", "single-hop", ("c1:D1:1",)),
    ...            Query("q2", "c1", "Who adopted a dog?", None, "adversarial", (),
    ...                  abstention=True))
    >>> stats = InlineDataset([Bundle(Collection("c1", 1, 1), (Session("c1", "s1", 1, None),),
    ...                               (turn,), queries)]).stats()
    >>> stats.turns, stats.queries, stats.queries_with_evidence, stats.abstention_queries
    (1, 2, 1, 1)
    >>> stats.per_category
    {'adversarial': {'queries': 1, 'with_evidence': 0, 'abstention': 1},
     'single-hop': {'queries': 1, 'with_evidence': 1, 'abstention': 0}}
    """

    dataset_id: str
    collections: int
    sessions: int
    turns: int
    queries: int
    queries_with_evidence: int
    abstention_queries: int
    derived_memories: int
    per_category: dict[str, dict[str, int]] = field(default_factory=dict)
    evidence_problems: tuple[EvidenceProblem, ...] = ()
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        problem_counts: dict[str, int] = {}
        for p in self.evidence_problems:
            problem_counts[p.problem] = problem_counts.get(p.problem, 0) + 1
        return {
            "dataset": self.dataset_id,
            "collections": self.collections,
            "sessions": self.sessions,
            "turns": self.turns,
            "queries": self.queries,
            "queries_with_evidence": self.queries_with_evidence,
            "abstention_queries": self.abstention_queries,
            "derived_memories": self.derived_memories,
            "per_category": self.per_category,
            "evidence_problem_counts": problem_counts,
            "evidence_problems": [p.to_json() for p in self.evidence_problems],
            "notes": list(self.notes),
        }
