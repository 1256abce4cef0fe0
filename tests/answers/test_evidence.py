"""Answers tied to retrieval (tiap.answers.evidence) on constructed cases whose tables,
intervals and tests are worked out by hand below; the McNemar p-values are checked against
scipy's binomial test called directly."""

from __future__ import annotations

import pytest
from scipy.stats import binomtest

from tiap.answers.evidence import EvidenceTable, answer_evidence
from tiap.answers.records import Answer, AnswerSet, AnswerVerdict, Context, JudgeConfig
from tiap.datasets import Query
from tiap.errors import TiapError
from tiap.memory.store import Item, item_from_json

N = 20
# units c:1..c:20, each with a raw turn t<i> and a fact f<i> derived from it
ITEMS = [it for i in range(1, N + 1) for it in (Item(f"t{i}", "raw", (f"c:{i}",)),
                                                 Item(f"f{i}", "fact", (f"c:{i}",)))]
QUERIES = [Query(f"q{i}", "c", "?", "x", "single-hop", (f"c:{i}",)) for i in range(1, N + 1)]
QUERIES.append(Query("q0", "c", "?", None, "adversarial", ()))  # no evidence: no target
J = {"J": JudgeConfig("J", kind="offline")}


def _a(system: str, q: str, ctx: list[str] | None, label: str | None) -> Answer:
    return Answer("toy", system, q, "x", context=None if ctx is None else Context("s", tuple(ctx)),
                  verdicts=(AnswerVerdict("J", label),))


C, W = "correct", "wrong"
# System A, by hand (raw credits t<i>; source t<i> and f<i>; canonical f<i>):
#   query context   verdict  raw   source canonical
#   q1    t1        C        hit   hit    miss
#   q2    f2        C        miss  hit    hit
#   q3    t3 f3     W        hit   hit    hit
#   q4    t1        W        miss  miss   miss
#   q5    f5        C        miss  hit    hit
#   q6    t6        W        hit   hit    miss
#   q7    (empty)   C        miss  miss   miss
#   q8    t8        null     (no verdict)
#   q9    (no context)       (no context)
#   q0    t1        C        (no evidence: no target)
A = [_a("A", "q1", ["t1"], C), _a("A", "q2", ["f2"], C), _a("A", "q3", ["t3", "f3"], W),
     _a("A", "q4", ["t1"], W), _a("A", "q5", ["f5"], C), _a("A", "q6", ["t6"], W),
     _a("A", "q7", [], C), _a("A", "q8", ["t8"], None), _a("A", "q9", None, C),
     _a("A", "q0", ["t1"], C)]
# System B: ten facts given, all judged correct: raw misses all, source and canonical hit.
B = [_a("B", f"q{i}", [f"f{i}"], C) for i in range(1, 11)]
# System C: ten turns given, all judged wrong: raw and source hit, canonical misses.
CC = [_a("C", f"q{i}", [f"t{i}"], W) for i in range(1, 11)]


def _result():
    return answer_evidence(AnswerSet(tuple(A + B + CC), J), {"s": ITEMS}, QUERIES)


def test_the_tables_counted_by_hand() -> None:
    r = _result()
    cells = ("hit_correct", "hit_wrong", "miss_correct", "miss_wrong")
    got = {t: tuple(getattr(r.table("A", t, "J"), c) for c in cells)
           for t in ("raw", "source", "canonical")}
    # raw: hits q1 C, q3 W, q6 W; misses q2 C, q4 W, q5 C, q7 C
    # source: hits q1 C, q2 C, q3 W, q5 C, q6 W; misses q4 W, q7 C
    # canonical: hits q2 C, q3 W, q5 C; misses q1 C, q4 W, q6 W, q7 C
    assert got == {"raw": (1, 2, 3, 1), "source": (3, 2, 1, 1), "canonical": (2, 1, 2, 2)}
    t = r.table("A", "raw", "J")
    assert (t.n, t.no_verdict, t.no_context, t.no_target) == (7, 1, 1, 1)
    # P(correct | hit) = 1/3, P(correct | miss) = 3/4; phi = (1*1 - 2*3) / sqrt(3*4*4*3) = -5/12
    assert t.p_correct_hit == (1 / 3, 1 / 3) and t.p_correct_miss == (0.75, 0.75)
    assert t.phi == pytest.approx((-5 / 12, -5 / 12))
    # Wilson 95% of 1 in 3 (statsmodels' proportion_confint, method wilson)
    from statsmodels.stats.proportion import proportion_confint

    assert t.ci_correct_hit == pytest.approx(proportion_confint(1, 3, method="wilson"))
    b = r.table("B", "raw", "J")
    assert (b.hit_correct, b.miss_correct, b.p_correct_hit, b.phi) == (0, 10, (None, None),
                                                                        (None, None))


def test_which_target_predicts_correctness_mcnemar_holm() -> None:
    r = _result()
    comps = {(c.system, c.first, c.second): c for c in r.comparisons}
    assert len(comps) == 9  # 3 systems x 3 pairs: one family
    # A: right predictions (hit == correct): raw q1 q4 (2 of 7); source q1 q2 q4 q5 (4);
    # canonical q2 q4 q5 q6 (4). raw vs source: source alone right on q2, q5 (0 vs 2);
    # raw vs canonical: raw alone q1, canonical alone q2 q5 q6 (1 vs 3); source vs
    # canonical: q1 vs q6 (1 vs 1)
    a = [comps[("A", "raw", "source")], comps[("A", "raw", "canonical")],
         comps[("A", "source", "canonical")]]
    assert [(c.n, c.only_first, c.only_second) for c in a] == [(7, 0, 2), (7, 1, 3), (7, 1, 1)]
    assert (a[0].accuracy_first, a[0].accuracy_second) == (2 / 7, 4 / 7)
    # exact McNemar = two-sided binomial test of the discordant split against 1/2:
    # 0 of 2: 2 * 0.5^2 = 0.5; 1 of 4: 2 * 5/16 = 0.625; 1 of 2: 1
    assert [c.p for c in a] == pytest.approx([0.5, 0.625, 1.0])
    for c in a:
        d = c.only_first + c.only_second
        assert c.p == pytest.approx(binomtest(c.only_first, d, 0.5).pvalue)
    # B: raw wrong on all 10, source and canonical right: 0 vs 10 twice, p = 2 / 2^10;
    # C: canonical right on all 10 (misses, all wrong), raw and source wrong: 0 vs 10 twice
    small = 2 / 2**10
    assert comps[("B", "raw", "source")].p == pytest.approx(small)
    assert comps[("C", "raw", "canonical")].p == pytest.approx(small)
    assert comps[("C", "raw", "source")].p == 1.0  # no discordant query
    # Holm over the 9: the four smallest (equal) get 9 * small (the running max); the rest
    # are 0.5 * 5, 0.625 * 4, ... all capped at 1
    adj = sorted(c.p_adjusted for c in r.comparisons)
    assert adj == pytest.approx([9 * small] * 4 + [1.0] * 5)
    # the best target: one that beats every other significantly after correction
    assert r.best_target("C", "J") == "canonical"
    assert r.best_target("B", "J") is None  # source and canonical tie
    assert r.best_target("A", "J") is None


def test_partial_lineage_is_counted_and_bounded_never_guessed() -> None:
    # m1 is a fact that may come from c:1 or c:2 (partial lineage): it is certainly credited
    # for neither. Queries q1, q3 (evidence c:1) and q2 (c:2):
    #   q1 context m1     correct: raw miss (m1 is no raw item); source and canonical: m1
    #                              may be a member: not determined
    #   q2 context t2     wrong:   raw, source hit; canonical: m1 may be c:2's only
    #                              member, but it is not in the context: a certain miss
    #   q3 context t1 m1  wrong:   raw, source hit (t1); canonical not determined
    items = [Item("t1", "raw", ("c:1",)), Item("t2", "raw", ("c:2",)),
             item_from_json({"item_id": "m1", "kind": "fact", "sources": [],
                             "uncertain": {"possible_sources": ["c:1", "c:2"]}})]
    qs = [Query("q1", "c", "?", "x", "s", ("c:1",)), Query("q2", "c", "?", "x", "s", ("c:2",)),
          Query("q3", "c", "?", "x", "s", ("c:1",))]
    s = AnswerSet((_a("D", "q1", ["m1"], C), _a("D", "q2", ["t2"], W),
                   _a("D", "q3", ["t1", "m1"], W)), J)
    r = answer_evidence(s, {"s": items}, qs)
    hits = {(x["query_id"], x["target"]): x["hit"] for x in r.rows}
    assert hits == {("q1", "raw"): False, ("q2", "raw"): True, ("q3", "raw"): True,
                    ("q1", "source"): None, ("q2", "source"): True, ("q3", "source"): True,
                    ("q1", "canonical"): None, ("q2", "canonical"): False,
                    ("q3", "canonical"): None}
    t = r.table("D", "canonical", "J")
    assert (t.hit_correct, t.hit_wrong, t.miss_correct, t.miss_wrong,
            t.undetermined_correct, t.undetermined_wrong) == (0, 0, 0, 1, 1, 1)
    assert not t.determined and t.cell("hit_correct") == (0, 1) and t.cell("miss_wrong") == (1, 2)
    # the four ways the two undetermined queries fall, (a, b, c, d):
    #   both miss (0,0,1,2): no hit; P(C|miss) 1/3; phi undefined (empty hit row)
    #   q3 hit   (0,1,1,1): P(C|hit) 0, P(C|miss) 1/2, phi (0 - 1)/sqrt(1*2*1*2) = -1/2
    #   q1 hit   (1,0,0,2): P(C|hit) 1, P(C|miss) 0, phi (2 - 0)/sqrt(1*2*1*2) = 1
    #   both hit (1,1,0,1): P(C|hit) 1/2, P(C|miss) 0, phi (1 - 0)/sqrt(2*1*1*2) = 1/2
    assert t.p_correct_hit == (0.0, 1.0) and t.p_correct_miss == (0.0, 0.5)
    assert t.phi == pytest.approx((-0.5, 1.0))
    # a comparison leaves out the queries whose hit is not determined under either target
    comp = next(c for c in r.comparisons if (c.first, c.second) == ("raw", "source"))
    assert (comp.n, comp.left_out) == (2, 1)


def test_bounds_of_a_table_built_directly() -> None:
    # 2 hits correct, 1 miss wrong, and 1 undetermined correct: P(C|hit) is 2/2 either way;
    # P(C|miss) is 0/1 (the undetermined one a hit) or 1/2 (a miss)
    t = EvidenceTable("A", "source", "J", 2, 0, 0, 1, undetermined_correct=1)
    assert t.p_correct_hit == (1.0, 1.0) and t.p_correct_miss == (0.0, 0.5)
    assert t.row()["p_correct_miss"] == [0.0, 0.5] and t.n == 4


def test_bad_input_to_answer_evidence() -> None:
    s = AnswerSet(tuple(A), J)
    with pytest.raises(TiapError, match=r"the contexts name store 's', which is not given "
                                        r"\(stores: t\)"):
        answer_evidence(s, {"t": ITEMS}, QUERIES)
    with pytest.raises(TiapError, match="answer of system A to query q9, which is not"):
        answer_evidence(s, {"s": ITEMS}, QUERIES[:8])
    with pytest.raises(TiapError, match="1 context items are not in their store"):
        answer_evidence(AnswerSet((_a("A", "q1", ["t1", "ghost"], C),), J), {"s": ITEMS},
                        QUERIES)
    with pytest.raises(TiapError, match="the answers carry no verdict"):
        answer_evidence(AnswerSet((Answer("toy", "A", "q1", "x"),)), {"s": ITEMS}, QUERIES)
