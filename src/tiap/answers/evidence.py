"""Answers tied to retrieval: was the evidence in the context, and was the answer right?

For answers that carry their context (:class:`tiap.answers.records.Context`: a store and
the item ids given) and verdicts, :func:`answer_evidence` asks per (system, query, target)
whether any item of the context is credited for the query's evidence under the target
(:func:`tiap.targets.build_groups`: Raw, Source, Canonical, or any target spec), and per
judge whether the answer was judged correct. Each (system, target, judge) gets a 2x2 table:

=================  ================  ===========================
\\                 judged correct    judged wrong
=================  ================  ===========================
evidence given     ``hit_correct``   ``hit_wrong``: retrieved but not used
evidence missing   ``miss_correct``  ``miss_wrong``: not retrieved
=================  ================  ===========================

**Not determined, never guessed.** Where the store's lineage is partial, a context with no
certain member may still hold a possible one: its hit is *not determined*. Such queries are
counted (``undetermined_correct``, ``undetermined_wrong``) and every figure is bounded over
all the ways they could fall: each cell is an interval, ``P(correct | hit)`` and
``P(correct | miss)`` are intervals of their value (each end attained by putting every
undetermined query on one side) with the Wilson 95% interval around them (the union over
the two ends), and ``phi`` is the range over every assignment. Queries whose answer has no
usable verdict of the judge (``null``, ``ambiguous``) or no context, or whose evidence is
unknown to the target (a zero-target case: abstention, evidence not in the store) are left
out and counted (``no_verdict``, ``no_context``, ``no_target``).

**Which target's credit best predicts a correct answer.** A target *predicts* "correct" for
a query when its hit is true. Its accuracy is the share of queries where that prediction
matches the verdict. Targets are compared pairwise per (system, judge) on the queries where
both hits and the verdict are determined, by an exact McNemar test on the discordant
queries (one target right, the other wrong; ``statsmodels.stats.contingency_tables.mcnemar``
with ``exact=True``: a two-sided binomial test of the discordant split against 1/2). The
p-values of one call form one family, Holm-corrected (:func:`tiap.sensitivity.stats.adjust`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

from tiap.answers.files import ANSWERS_FILE, load_answers
from tiap.answers.records import CORRECT, WRONG, AnswerSet
from tiap.errors import Problems, TiapError, require
from tiap.io import output_folder
from tiap.provenance import Manifest, input_entry
from tiap.sensitivity.analyze import Table, write_table
from tiap.sensitivity.stability import wilson_interval
from tiap.sensitivity.stats import adjust

__all__ = [
    "EvidenceResult",
    "EvidenceTable",
    "TargetComparison",
    "answer_evidence",
]

#: the counts of one table, in order
CELLS = ("hit_correct", "hit_wrong", "miss_correct", "miss_wrong", "undetermined_correct",
         "undetermined_wrong")


def _phi(a: int, b: int, c: int, d: int) -> float | None:
    den = (a + b) * (c + d) * (a + c) * (b + d)
    return None if den == 0 else (a * d - b * c) / math.sqrt(den)


@dataclass(frozen=True)
class EvidenceTable:
    """The 2x2 table of one (system, target, judge) with its undetermined queries.

    6 hits of which 2 wrong, 4 misses of which 1 correct: P(correct | hit) = 6/8, P(correct |
    miss) = 1/4, phi = (6*3 - 2*1) / sqrt(8*4*7*5) = 16 / sqrt(1120):

    >>> t = EvidenceTable("A", "raw", "f1", 6, 2, 1, 3)
    >>> t.n, t.p_correct_hit, t.p_correct_miss, round(t.phi[0], 4)
    (12, (0.75, 0.75), (0.25, 0.25), 0.4781)
    """

    system: str
    target: str
    judge: str
    hit_correct: int
    hit_wrong: int
    miss_correct: int
    miss_wrong: int
    undetermined_correct: int = 0
    undetermined_wrong: int = 0
    no_verdict: int = 0
    no_context: int = 0
    no_target: int = 0

    @property
    def n(self) -> int:
        """Queries in the table (undetermined ones included)."""
        return sum(getattr(self, c) for c in CELLS)

    @property
    def determined(self) -> bool:
        return not (self.undetermined_correct or self.undetermined_wrong)

    def _extremes(self) -> list[tuple[int, int, int, int]]:
        """(a, b, c, d) with every undetermined query put on one side, both ways."""
        a, b, c, d = self.hit_correct, self.hit_wrong, self.miss_correct, self.miss_wrong
        uc, uw = self.undetermined_correct, self.undetermined_wrong
        return [(a + x, b + y, c + uc - x, d + uw - y) for x in (0, uc) for y in (0, uw)]

    def cell(self, name: str) -> tuple[int, int]:
        """A cell's bounds: ``hit_correct`` is ``hit_correct`` plus 0 to all undetermined
        correct queries, and so on."""
        base = getattr(self, name)
        extra = self.undetermined_correct if name.endswith("_correct") else \
            self.undetermined_wrong
        return base, base + extra

    def _p(self, hit: bool) -> tuple[float | None, float | None]:
        vals = []
        for a, b, c, d in self._extremes():
            num, den = (a, a + b) if hit else (c, c + d)
            if den:
                vals.append(num / den)
        return (min(vals), max(vals)) if vals else (None, None)

    def _ci(self, hit: bool) -> tuple[float | None, float | None]:
        lows, highs = [], []
        for a, b, c, d in self._extremes():
            lo, hi = wilson_interval(a, a + b) if hit else wilson_interval(c, c + d)
            if lo is not None and hi is not None:
                lows.append(lo)
                highs.append(hi)
        return (min(lows), max(highs)) if lows else (None, None)

    @property
    def p_correct_hit(self) -> tuple[float | None, float | None]:
        """P(correct | evidence given): (low, high); equal when determined; None: no hit."""
        return self._p(True)

    @property
    def p_correct_miss(self) -> tuple[float | None, float | None]:
        """P(correct | evidence missing), as :attr:`p_correct_hit`."""
        return self._p(False)

    @property
    def ci_correct_hit(self) -> tuple[float | None, float | None]:
        """The Wilson 95% interval of P(correct | hit) (the union over the extremes)."""
        return self._ci(True)

    @property
    def ci_correct_miss(self) -> tuple[float | None, float | None]:
        return self._ci(False)

    @property
    def phi(self) -> tuple[float | None, float | None]:
        """The phi coefficient (hit vs correct): (low, high) over every way the
        undetermined queries could fall; None when a margin is empty."""
        a, b, c, d = self.hit_correct, self.hit_wrong, self.miss_correct, self.miss_wrong
        uc, uw = self.undetermined_correct, self.undetermined_wrong
        vals = [v for x in range(uc + 1) for y in range(uw + 1)
                if (v := _phi(a + x, b + y, c + uc - x, d + uw - y)) is not None]
        return (min(vals), max(vals)) if vals else (None, None)

    def row(self) -> dict[str, Any]:
        """The table as one flat row (bounds as ``[low, high]``)."""
        out: dict[str, Any] = {"system": self.system, "target": self.target,
                               "judge": self.judge, "n": self.n}
        for c in CELLS + ("no_verdict", "no_context", "no_target"):
            out[c] = getattr(self, c)
        for name in ("p_correct_hit", "ci_correct_hit", "p_correct_miss", "ci_correct_miss",
                     "phi"):
            out[name] = list(getattr(self, name))
        return out


@dataclass(frozen=True)
class TargetComparison:
    """Two targets' prediction accuracy on the same queries, with the exact McNemar test.

    ``only_first``: queries the first target predicts right and the second wrong;
    ``left_out``: queries where either hit is not determined.

    >>> c = TargetComparison("A", "f1", "raw", "source", 7, 2 / 7, 4 / 7, 0, 2, 0.5)
    >>> c.row()["only_second"], c.row()["p"]
    (2, 0.5)
    """

    system: str
    judge: str
    first: str
    second: str
    n: int
    accuracy_first: float | None
    accuracy_second: float | None
    only_first: int
    only_second: int
    p: float | None
    p_adjusted: float | None = None
    left_out: int = 0

    def row(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class EvidenceResult:
    """What :func:`answer_evidence` gives: the tables, the pairwise comparisons, and the
    per-query rows they were counted from (``hit`` ``None``: not determined).

    >>> r = EvidenceResult((EvidenceTable("A", "raw", "f1", 1, 0, 0, 1),), ())
    >>> r.table("A", "raw", "f1").n, r.best_target("A", "f1")
    (2, None)
    """

    tables: tuple[EvidenceTable, ...]
    comparisons: tuple[TargetComparison, ...]
    rows: tuple[dict[str, Any], ...] = ()
    correction: str = "holm"
    warnings: Mapping[str, Any] = field(default_factory=dict)

    def table(self, system: str, target: str, judge: str) -> EvidenceTable:
        """The table of (system, target, judge) (``KeyError`` if there is none)."""
        for t in self.tables:
            if (t.system, t.target, t.judge) == (system, target, judge):
                return t
        raise KeyError((system, target, judge))

    def best_target(self, system: str, judge: str) -> str | None:
        """The target whose credit predicts correctness best on (system, judge), when it
        beats every other one significantly after correction (adjusted p < 0.05); else
        ``None`` (no target is shown better)."""
        comps = [c for c in self.comparisons if (c.system, c.judge) == (system, judge)]
        targets = {c.first for c in comps} | {c.second for c in comps}
        for t in sorted(targets):
            wins = 0
            for c in comps:
                if t not in (c.first, c.second) or c.p_adjusted is None or c.p_adjusted >= 0.05:
                    continue
                mine = c.only_first if t == c.first else c.only_second
                theirs = c.only_second if t == c.first else c.only_first
                wins += mine > theirs
            if wins == len(targets) - 1 and wins:
                return t
        return None


def _store_items(store: Any) -> list[Any]:
    if isinstance(store, (str, Path)):
        from tiap.memory.store import read_items

        p = Path(store)
        return read_items(p / "items.jsonl" if p.is_dir() else p)
    return list(store)


def _maybe_hit(lineage: Any, index: Any, items: Sequence[str], units: Sequence[str],
               collection: str | None) -> bool:
    """Whether some context item may (not certainly) be credited for one of ``units``."""
    if index is None:
        return False
    poss = lineage.possible_families
    open_ids = set(index.open_items(collection)) if index is not None else set()
    for iid in items:
        if iid not in lineage.items or not index.match.get(iid, False):
            continue
        for u in units:
            if iid in poss.get(u, ()):
                return True
            if iid in open_ids and lineage.possible[iid].may_reach(u):
                return True
    return False


def answer_evidence(answers: AnswerSet, stores: Mapping[str, Any], queries: Any, *,
                    targets: Sequence[str] = ("raw", "source", "canonical"),
                    judges: Sequence[str] | None = None,
                    systems: Sequence[str] | None = None,
                    correction: str = "holm") -> EvidenceResult:
    """The retrieval-by-answer tables and the target comparison (module docstring).

    Args:
        answers: answers with contexts and verdicts.
        stores: store name -> its items (list, ``items.jsonl`` or a store folder): every
            store a context names must be given.
        queries: the queries (with ``evidence``) or ``queries.jsonl``.
        targets: target names or specs (:func:`tiap.targets.build_groups`).
        judges, systems: which to tabulate (``None``: all in the set).
        correction: the family-wise correction of the McNemar p-values (one family: every
            comparison of this call).

    Two queries; the context of q1 holds its evidence turn, that of q2 does not:

    >>> from tiap.answers.records import Answer, AnswerSet, AnswerVerdict, Context, JudgeConfig
    >>> from tiap.datasets import Query
    >>> from tiap.memory.store import Item
    >>> items = [Item("t1", "raw", ("c:1",)), Item("t2", "raw", ("c:2",))]
    >>> qs = [Query("q1", "c", "?", "x", "single-hop", ("c:1",)),
    ...       Query("q2", "c", "?", "y", "single-hop", ("c:2",))]
    >>> s = AnswerSet((Answer("locomo", "A", "q1", "x", context=Context("s", ("t1",)),
    ...                       verdicts=(AnswerVerdict("f1", "correct"),)),
    ...                Answer("locomo", "A", "q2", "z", context=Context("s", ("t1",)),
    ...                       verdicts=(AnswerVerdict("f1", "wrong"),))),
    ...               {"f1": JudgeConfig("f1", kind="offline")})
    >>> t = answer_evidence(s, {"s": items}, qs, targets=["raw"]).table("A", "raw", "f1")
    >>> t.hit_correct, t.hit_wrong, t.miss_correct, t.miss_wrong
    (1, 0, 0, 1)
    """
    from tiap.targets import build_groups, build_lineage
    from tiap.targets.possible import PossibleIndex
    from tiap.targets.targets import resolve_targets

    if isinstance(queries, (str, Path)):
        from tiap.datasets.queryfile import read_queries

        queries = read_queries(queries)
    qlist = list(queries)
    qby = {q.query_id: q for q in qlist}
    chosen = answers.select(systems=systems, judges=judges)
    judge_names = list(judges) if judges is not None else list(chosen.judges)
    if not judge_names:
        raise TiapError("the answers carry no verdict: judge them first", code="usage")
    if not targets:
        raise TiapError("targets is empty: name at least one target", code="usage")
    problems = Problems()
    needed = dict.fromkeys(a.context.store for a in chosen if a.context is not None)
    for s in needed:
        if s not in stores:
            problems.add(f"the contexts name store {s!r}, which is not given (stores: "
                         f"{', '.join(stores) or 'none'})", code="usage")
    for a in chosen:
        if a.query_id not in qby:
            problems.add(f"answer of system {a.system} to query {a.query_id}, which is not "
                         "among the queries", query_id=a.query_id, code="usage")
    problems.raise_if_any()
    tlist = resolve_targets(targets)
    tnames = [t.name for t in tlist]

    # per store: groups of the queries answered from it, and what partial lineage leaves open
    hits: dict[tuple[str, str, str], bool | None] = {}  # (system, query, target)
    zero: set[tuple[str, str, str]] = set()
    unknown_items = 0
    for sname in needed:
        lineage = build_lineage(_store_items(stores[sname]))
        asked = [a for a in chosen if a.context is not None and a.context.store == sname]
        qs = [qby[q] for q in dict.fromkeys(a.query_id for a in asked)]
        sets = build_groups(lineage, qs, tlist)
        index = ({t.name: PossibleIndex(lineage, t) for t in tlist} if lineage.uncertain
                 else {})
        for a in asked:
            assert a.context is not None
            ctx = set(a.context.items)
            unknown_items += sum(1 for i in ctx if i not in lineage.items)
            q = qby[a.query_id]
            for t in tnames:
                g = sets[t].queries[a.query_id]
                key = (a.system, a.query_id, t)
                if g.groups and ctx & set(g.members):
                    hits[key] = True
                elif g.open_units and _maybe_hit(lineage, index.get(t), a.context.items,
                                                 g.open_units, q.collection_id or None):
                    hits[key] = None
                elif not g.groups and not g.open_units:
                    zero.add(key)
                else:
                    hits[key] = False
    if unknown_items:
        raise TiapError(f"{unknown_items} context items are not in their store: the contexts "
                        "do not match the stores given", code="input")

    rows: list[dict[str, Any]] = []
    tables: list[EvidenceTable] = []
    for system in chosen.systems:
        mine = [a for a in chosen if a.system == system]
        for t in tnames:
            for j in judge_names:
                cnt = dict.fromkeys(CELLS + ("no_verdict", "no_context", "no_target"), 0)
                for a in mine:
                    v = a.verdict(j)
                    label = None if v is None else v.label
                    if a.context is None:
                        cnt["no_context"] += 1
                        continue
                    key = (system, a.query_id, t)
                    if key in zero:
                        cnt["no_target"] += 1
                        continue
                    if label not in (CORRECT, WRONG):
                        cnt["no_verdict"] += 1
                        continue
                    hit = hits[key]
                    side = "hit" if hit else "miss" if hit is False else "undetermined"
                    cnt[f"{side}_{label}"] += 1
                    rows.append({"system": system, "query_id": a.query_id, "target": t,
                                 "judge": j, "hit": hit, "correct": label == CORRECT})
                tables.append(EvidenceTable(system, t, j, **cnt))
    comparisons = _compare(rows, tnames, correction)
    return EvidenceResult(tuple(tables), comparisons, tuple(rows), correction)


def _compare(rows: Iterable[dict[str, Any]], targets: Sequence[str],
             correction: str) -> tuple[TargetComparison, ...]:

    by: dict[tuple[str, str, str], dict[str, tuple[bool | None, bool]]] = {}
    for r in rows:
        by.setdefault((r["system"], r["judge"], r["target"]), {})[r["query_id"]] = (
            r["hit"], r["correct"])
    out: list[TargetComparison] = []
    systems_judges = dict.fromkeys((s, j) for s, j, _ in by)
    for s, j in systems_judges:
        for t1, t2 in combinations(targets, 2):
            r1, r2 = by.get((s, j, t1), {}), by.get((s, j, t2), {})
            common = [q for q in r1 if q in r2]
            both = [q for q in common if r1[q][0] is not None and r2[q][0] is not None]
            right1 = [r1[q][0] == r1[q][1] for q in both]
            right2 = [r2[q][0] == r2[q][1] for q in both]
            b = sum(x and not y for x, y in zip(right1, right2, strict=True))
            c = sum(y and not x for x, y in zip(right1, right2, strict=True))
            p = None
            if both:
                sm = require("statsmodels.stats.contingency_tables", "stats")
                both_right = sum(x and y for x, y in zip(right1, right2, strict=True))
                table = [[both_right, b], [c, len(both) - both_right - b - c]]
                p = float(sm.mcnemar(table, exact=True).pvalue)
            n = len(both)
            out.append(TargetComparison(s, j, t1, t2, n,
                                        sum(right1) / n if n else None,
                                        sum(right2) / n if n else None, b, c, p,
                                        left_out=len(common) - n))
    ps = [math.nan if c.p is None else c.p for c in out]
    adj = adjust(ps, correction) if out else []
    return tuple(TargetComparison(**{**c.__dict__, "p_adjusted": None if math.isnan(a)
                                     else float(a)}) for c, a in zip(out, adj, strict=True))


#: the columns of ``evidence.csv`` (one row per system x target x judge table)
TABLE_COLUMNS = ("system", "target", "judge", "n", *CELLS, "no_verdict", "no_context",
                 "no_target", "p_correct_hit_low", "p_correct_hit_high", "ci_correct_hit_low",
                 "ci_correct_hit_high", "p_correct_miss_low", "p_correct_miss_high",
                 "ci_correct_miss_low", "ci_correct_miss_high", "phi_low", "phi_high")
#: the columns of ``target_comparison.csv``
COMPARISON_COLUMNS = ("system", "judge", "first", "second", "n", "accuracy_first",
                      "accuracy_second", "only_first", "only_second", "p", "p_adjusted",
                      "left_out")


def _flat(row: Mapping[str, Any]) -> dict[str, Any]:
    out = {}
    for k, v in row.items():
        if isinstance(v, list):
            out[f"{k}_low"], out[f"{k}_high"] = v
        else:
            out[k] = v
    return out


def evidence_files(answers: str | Path, out: str | Path, *, queries: Any,
                   stores: Mapping[str, Any], force: bool = False,
                   **options: Any) -> EvidenceResult:
    """``tiap answers evidence``: :func:`answer_evidence` of the answers in ``answers`` (a
    file or a folder of ``tiap answers judge``), written to ``out``: ``evidence.csv`` (the
    2x2 table of each system, target and judge), ``target_comparison.csv`` (the McNemar
    comparisons) and ``manifest.json``.

    >>> from tiap.answers import Answer, AnswerSet, AnswerVerdict, Context, JudgeConfig
    >>> from tiap.answers import save_answers
    >>> from tiap.datasets.records import Query
    >>> from tiap.memory.store import Item
    >>> s = AnswerSet((Answer("locomo", "A", "q1", "Paris", context=Context("S", ("t1",)),
    ...                       verdicts=(AnswerVerdict("f1", "correct"),)),),
    ...               {"f1": JudgeConfig("f1", kind="offline")})
    >>> _ = save_answers(s, "judged", step="answers judge")
    >>> res = evidence_files("judged", "evidence",
    ...                      queries=[Query("q1", "c", "?", "Paris", "single-hop", ("c:1",))],
    ...                      stores={"S": [Item("t1", "raw", ("c:1",))]}, targets=["raw"])
    >>> res.table("A", "raw", "f1").hit_correct
    1
    >>> sorted(p.name for p in Path("evidence").iterdir())
    ['evidence.csv', 'manifest.json', 'target_comparison.csv']
    """
    aset = load_answers(answers)
    res = answer_evidence(aset, stores, queries, **options)
    p = Path(answers)
    src = p / ANSWERS_FILE if p.is_dir() else p
    with output_folder(out, "answers evidence", force=force) as tmp:
        write_table(tmp / "evidence.csv", Table("evidence", TABLE_COLUMNS,
                                               [_flat(t.row()) for t in res.tables]))
        write_table(tmp / "target_comparison.csv",
                    Table("target_comparison", COMPARISON_COLUMNS,
                          [c.row() for c in res.comparisons]))
        shown = {k: (list(v) if isinstance(v, tuple) else v) for k, v in options.items()}
        man = Manifest.new("answers evidence", inputs={"answers": input_entry(src)},
                           options={"correction": res.correction, **shown},
                           warnings=dict(res.warnings) or None,
                           outputs=["evidence.csv", "target_comparison.csv"])
        man.write(tmp / "manifest.json")
    return res
