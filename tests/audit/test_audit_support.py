"""Composed support (``tiap audit graded``): Coverage@k, GradedCoverage@k, Sufficient@k.

Two small inline stores, ``a`` and ``b``, with the same item ids and lineage (``b12`` and
``f3`` are other texts in ``b``)::

    t1 raw [u1]   t2 raw [u2]   t3 raw [u3]
    f1 fact [u1]  f2 fact [u2]  f3 fact [u3]
    b12 fact [u1, u2]           (one fact derived from two turns: in two groups)

Groups of a query with evidence (u1, u2, u3), one per unit:

    raw        u1 {t1}           u2 {t2}           u3 {t3}
    source     u1 {b12, f1, t1}  u2 {b12, f2, t2}  u3 {f3, t3}
    canonical  u1 {b12, f1}      u2 {b12, f2}      u3 {f3}

Queries: ``q`` (u1, u2, u3), ``q2`` (u1, u2), ``q3`` (u1, u3), ``q4`` (u9: no item reaches
it, a zero-target case under every target).

Labels (by store!):

- store ``a``: (q, b12) partial; (q, f1) supports; (q2, b12) partial; (q3, f1) supports;
- store ``b``: (q, b12) supports; (q, f3) does_not_support; (q2, b12) supports.

Runs ``A`` (store ``a``) and ``B`` (store ``b``) rank the same ids:
q ``x9 b12 f3 t2 f1 f2``; q2 ``b12``; q3 ``f1 t3``; q4 ``t1``.

Support grades: a Raw member 1; supports 1, partial 0.5, does_not_support 0; an unjudged
derived member open (policy ``unknown``: 0 in the lower bound, 1 in the upper).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from tiap.audit import LabelRecord, item_relevance, write_labels
from tiap.audit.graded import (
    SupportBounds,
    composed_support,
    graded_rescore,
)
from tiap.cli.main import main
from tiap.datasets.queryfile import write_queries
from tiap.datasets.records import Query
from tiap.errors import TiapError
from tiap.memory.store import Item, Store, Uncertainty, write_items
from tiap.runs import Ranking, Run, write_jsonl_run


def _items(b: bool) -> tuple[Item, ...]:
    return (
        Item("t1", "raw", ("u1",), text="Ann: I moved to Oslo in May."),
        Item("t2", "raw", ("u2",), text="Ben: I teach chess."),
        Item("t3", "raw", ("u3",), text="Ann: my sister is Cleo."),
        Item("f1", "fact", ("u1",), text="Ann moved to Oslo in May."),
        Item("f2", "fact", ("u2",), text="Ben teaches."),
        Item("f3", "fact", ("u3",), text="Ann has a sister." if not b else "Cleo is Ann's aunt."),
        Item("b12", "fact", ("u1", "u2"),
             text="Ann moved; Ben teaches chess." if not b
             else "Ann moved to Oslo and Ben teaches chess."),
    )


A, B = Store("a", _items(False)), Store("b", _items(True))
STORES = {"A": A, "B": B}
QUERIES = [
    Query("q", "c", "Where did Ann move, what does Ben teach, who is Ann's sister?",
          "Oslo; chess; Cleo", "multi-hop", ("u1", "u2", "u3")),
    Query("q2", "c", "Where did Ann move and what does Ben teach?", "Oslo; chess",
          "multi-hop", ("u1", "u2")),
    Query("q3", "c", "Where did Ann move, and who is her sister?", "Oslo; Cleo", "multi-hop",
          ("u1", "u3")),
    Query("q4", "c", "What is Ann's job?", "nurse", "single-hop", ("u9",)),
]
RANKS = {"q": ["x9", "b12", "f3", "t2", "f1", "f2"], "q2": ["b12"], "q3": ["f1", "t3"],
         "q4": ["t1"]}


def _runs() -> list[Run]:
    return [Run(system=s, benchmark="toy",
                rankings=tuple(Ranking(q, s, tuple(ids)) for q, ids in RANKS.items()))
            for s in ("A", "B")]


def lab(store: str, q: str, item: str, label: str) -> LabelRecord:
    system = store.upper()
    return LabelRecord(case_id=f"{system}:{q}:source:{item}", judge="j", label=label,
                       system=system, store=store, query_id=q, item_id=item)


LABELS = [lab("a", "q", "b12", "partial"), lab("a", "q", "f1", "supports"),
          lab("a", "q2", "b12", "partial"), lab("a", "q3", "f1", "supports"),
          lab("b", "q", "b12", "supports"), lab("b", "q", "f3", "does_not_support"),
          lab("b", "q2", "b12", "supports")]


def support(result, system: str, target: str, query: str) -> dict[str, tuple]:
    """measure name without the cutoff -> (lower, upper)."""
    return {r["measure"].split("@")[0]: (r["lower"], r["upper"]) for r in result.support_rows
            if (r["system"], r["target"], r["query_id"]) == (system, target, query)}


def pt(x: float) -> tuple[float, float]:
    return (pytest.approx(x, abs=1e-12), pytest.approx(x, abs=1e-12))


def iv(lo: float, hi: float) -> tuple[float, float]:
    return (pytest.approx(lo, abs=1e-12), pytest.approx(hi, abs=1e-12))


def result(k: int, unjudged=None):
    return graded_rescore(_runs(), QUERIES, STORES, item_relevance(LABELS), k=k,
                          unjudged=unjudged)


def test_support_of_one_query_by_hand_k4() -> None:
    """Run A, q, k = 4: the top 4 are {x9, b12, f3, t2}; f1 (supports) is at rank 5.

    source: u1 ∩ top = {b12} (partial 0.5): not supported, best 0.5; u2 ∩ top = {b12, t2}:
    t2 is the Raw turn (1): supported, best 1; u3 ∩ top = {f3}, unjudged in store a: open.
    Coverage [1/3, 2/3]; GradedCoverage [(0.5 + 1 + 0)/3, (0.5 + 1 + 1)/3] = [1/2, 5/6];
    Sufficient [0, 0]: u1 is never supported, whatever f3's label: exact.

    canonical (no raw turn): u1 {b12} 0.5, u2 {b12} 0.5, u3 {f3} open: Coverage [0, 1/3];
    GradedCoverage [(0.5 + 0.5 + 0)/3, (0.5 + 0.5 + 1)/3] = [1/3, 2/3]; Sufficient 0.

    raw: only t2 of {t1, t2, t3} is retrieved: Coverage = GradedCoverage = 1/3, Sufficient 0.
    """
    res = result(4)
    assert support(res, "A", "source", "q") == {
        "Coverage": iv(1 / 3, 2 / 3), "GradedCoverage": iv(1 / 2, 5 / 6),
        "Sufficient": pt(0.0)}
    assert support(res, "A", "canonical", "q") == {
        "Coverage": iv(0, 1 / 3), "GradedCoverage": iv(1 / 3, 2 / 3), "Sufficient": pt(0.0)}
    assert support(res, "A", "raw", "q") == {
        "Coverage": pt(1 / 3), "GradedCoverage": pt(1 / 3), "Sufficient": pt(0.0)}
    row = next(r for r in res.support_rows if (r["system"], r["target"], r["query_id"],
                                               r["measure"]) == ("A", "source", "q",
                                                                 "Coverage@4"))
    assert (row["n_units"], row["n_unjudged"], row["exact"], row["determined"]) == (
        3, 1, False, True)  # f3 is the one unjudged member in the top 4


def test_the_cutoff_and_an_interval_of_sufficiency_k6() -> None:
    """Run A, q, k = 6: the whole ranking; f1 (supports) now covers u1 under Source and
    Canonical; f2 is unjudged but u2 is covered by t2 anyway (Source); under Canonical
    u2 = {b12 0.5, f2 open}.

    source: u1 1 (f1), u2 1 (t2), u3 open (f3): Coverage [2/3, 1], GradedCoverage [2/3, 1],
    Sufficient [0, 1] (the unknown decides it).
    canonical: u1 1 (f1), u2 best of {0.5, open}: [0.5, 1], supported [no, yes]; u3 open:
    Coverage [1/3, 1], GradedCoverage [(1 + 0.5 + 0)/3, 1] = [1/2, 1], Sufficient [0, 1].
    """
    res = result(6)
    assert support(res, "A", "source", "q") == {
        "Coverage": iv(2 / 3, 1), "GradedCoverage": iv(2 / 3, 1), "Sufficient": iv(0, 1)}
    assert support(res, "A", "canonical", "q") == {
        "Coverage": iv(1 / 3, 1), "GradedCoverage": iv(1 / 2, 1), "Sufficient": iv(0, 1)}


def test_a_label_grades_its_own_store_only() -> None:
    """Run B ranks the same ids in store b, whose b12 supports and whose f3 does not (k = 4).

    source: u1 {b12} 1, u2 {b12, t2} 1, u3 {f3} 0: Coverage 2/3, GradedCoverage 2/3,
    Sufficient 0, all exact (f3 is judged in b).
    canonical: u1 {b12} 1, u2 {b12} 1 (one fact supports two units), u3 {f3} 0: the same.

    Keyed by bare id, b's f3 label would close A's open u3 (A would be exact) and the votes
    on (q, b12), partial and supports, would tie and both stores would get partial (B's
    Coverage would fall to 1/3).
    """
    res = result(4)
    for target in ("source", "canonical"):
        assert support(res, "B", target, "q") == {
            "Coverage": pt(2 / 3), "GradedCoverage": pt(2 / 3), "Sufficient": pt(0.0)}
    assert support(res, "A", "source", "q")["Coverage"] == iv(1 / 3, 2 / 3)  # f3 still open


def test_one_item_in_two_groups_and_support_composed_over_items() -> None:
    """q2 (u1, u2), ranking ``b12`` only: b12 is in both groups. In store b it supports: one
    item covers both units, Coverage 1 and Sufficient 1 under Source and Canonical. In store
    a it is partial: Coverage 0, GradedCoverage (0.5 + 0.5)/2 = 0.5, Sufficient 0.

    q3 (u1, u3), ranking ``f1 t3``: in store a, f1 supports u1 and the Raw turn t3 supports
    u3: neither item alone, the two together are sufficient under Source (Coverage 1,
    Sufficient 1). Under Canonical u3 = {f3}, not retrieved: Coverage 1/2, GradedCoverage
    1/2, Sufficient 0. In store b (q3, f1) has no label: Source u1 open -> Coverage [1/2, 1],
    Sufficient [0, 1].
    """
    res = result(4)
    for target in ("source", "canonical"):
        assert support(res, "B", target, "q2") == {
            "Coverage": pt(1.0), "GradedCoverage": pt(1.0), "Sufficient": pt(1.0)}
        assert support(res, "A", target, "q2") == {
            "Coverage": pt(0.0), "GradedCoverage": pt(0.5), "Sufficient": pt(0.0)}
    assert support(res, "A", "source", "q3") == {
        "Coverage": pt(1.0), "GradedCoverage": pt(1.0), "Sufficient": pt(1.0)}
    assert support(res, "A", "canonical", "q3") == {
        "Coverage": pt(0.5), "GradedCoverage": pt(0.5), "Sufficient": pt(0.0)}
    assert support(res, "B", "source", "q3") == {
        "Coverage": iv(0.5, 1), "GradedCoverage": iv(0.5, 1), "Sufficient": iv(0, 1)}


@pytest.mark.parametrize(("policy", "want"), [
    # run A, q, Source, k = 6: u1 1, u2 1, u3 = f3 (unjudged) at the policy's grade
    ("keep", (1.0, 1.0, 1.0)),  # f3 1: every unit supported
    ("partial", (2 / 3, (1 + 1 + 0.5) / 3, 0.0)),  # f3 0.5: u3 not supported, best 0.5
    ("drop", (2 / 3, 2 / 3, 0.0)),  # f3 0
])
def test_a_chosen_policy_decides_exactly(policy: str, want: tuple[float, ...]) -> None:
    res = result(6, policy)
    got = support(res, "A", "source", "q")
    assert got == dict(zip(("Coverage", "GradedCoverage", "Sufficient"),
                           (pt(w) for w in want), strict=True))
    assert all(r["exact"] for r in res.support_rows if r["lower"] is not None)
    assert (res.unjudged, res.support_unjudged, res.unjudged_given) == (policy, policy, policy)


def test_defaults_and_unknown() -> None:
    """Not chosen: nDCG keeps unjudged members (relevance 2, as before), composed support
    bounds them. ``unknown`` chosen: the same values (nDCG has one relevance per member, so
    it uses keep), recorded as chosen."""
    default, unknown, keep = result(6), result(6, "unknown"), result(6, "keep")
    assert (default.unjudged, default.support_unjudged, default.unjudged_given) == (
        "keep", "unknown", None)
    assert (unknown.unjudged, unknown.support_unjudged, unknown.unjudged_given) == (
        "keep", "unknown", "unknown")
    assert default.rows == unknown.rows == keep.rows  # the nDCG columns
    assert default.support_rows == unknown.support_rows
    with pytest.raises(TiapError, match="unjudged must be one of unknown, keep, partial, drop"):
        result(6, "maybe")


def test_zero_target_and_undetermined_queries_have_no_value() -> None:
    """q4's evidence u9 is in no store: no group under any target, so no value (empty, never
    0), counted as n_zero_target. An item whose lineage may reach u1 or u7 (partial lineage)
    leaves every query with u1 (q, q2, q3) open under Source (Canonical too): no value,
    counted as n_undetermined; q4 stays a zero-target case."""
    res = result(4)
    for r in res.support_rows:
        if r["query_id"] == "q4":
            assert (r["lower"], r["upper"], r["exact"], r["n_units"]) == (None, None, None, 0)
    maybe = Item("m9", "fact", (), uncertain=Uncertainty(possible=("u1", "u7"), max_sources=1))
    res2 = graded_rescore(_runs(), QUERIES, {"A": Store("a", (*A.items, maybe)), "B": B},
                          item_relevance(LABELS), k=4)
    s = {(r["target"], r["measure"]): r for r in res2.support_summary if r["system"] == "A"}
    src = s[("source", "Coverage@4")]
    assert (src["n"], src["n_undetermined"], src["n_zero_target"]) == (0, 3, 1)
    assert (src["lower"], src["upper"]) == (None, None)
    assert all(r["lower"] is None and r["determined"] is False for r in res2.support_rows
               if r["system"] == "A" and r["target"] == "source" and r["query_id"] != "q4")


def test_summary_by_hand() -> None:
    """Run A, Source, k = 4, over q, q2, q3 (q4 has no value):

    - Coverage: q [1/3, 2/3], q2 0, q3 1 -> [(1/3 + 0 + 1)/3, (2/3 + 0 + 1)/3] = [4/9, 5/9],
      2 exact;
    - GradedCoverage: q [1/2, 5/6], q2 1/2, q3 1 -> [2/3, 7/9], 2 exact;
    - Sufficient: q 0, q2 0, q3 1 -> 1/3, 3 exact.
    """
    res = result(4)
    s = {r["measure"]: r for r in res.support_summary
         if (r["system"], r["target"]) == ("A", "source")}
    assert list(s) == ["Coverage@4", "GradedCoverage@4", "Sufficient@4"]
    want = {"Coverage@4": (4 / 9, 5 / 9, 2), "GradedCoverage@4": (2 / 3, 7 / 9, 2),
            "Sufficient@4": (1 / 3, 1 / 3, 3)}
    for m, (lo, hi, exact) in want.items():
        assert (s[m]["lower"], s[m]["upper"]) == iv(lo, hi), m
        assert (s[m]["n"], s[m]["n_exact"], s[m]["n_zero_target"], s[m]["n_undetermined"],
                s[m]["unjudged"]) == (3, exact, 1, 0, "unknown"), m


def test_composed_support_directly() -> None:
    """Groups {a, b}, {b, c}, {d}; top 2 of ``b d a``: {b, d}. b partial (0.5, in two groups),
    d open: Coverage [0, 1/3] (only {d} can be supported), GradedCoverage
    [(0.5 + 0.5 + 0)/3, (0.5 + 0.5 + 1)/3] = [1/3, 2/3], Sufficient 0. a (rank 3) is not
    retrieved, so its grade is never asked for."""
    got = composed_support(["b", "d", "a"], [("a", "b"), ("b", "c"), ("d",)],
                           {"b": 0.5, "d": None}, 2)
    assert got == SupportBounds(n_units=3, n_open=1, coverage=iv(0, 1 / 3),
                                graded_coverage=iv(1 / 3, 2 / 3), sufficient=(0.0, 0.0))
    with pytest.raises(TiapError, match="at least one group"):
        composed_support(["a"], [], {}, 1)
    with pytest.raises(TiapError, match="not in \\[0, 1\\]"):
        composed_support(["a"], [("a",)], {"a": 2.0}, 1)
    with pytest.raises(TiapError, match="no support grade"):
        composed_support(["a"], [("a",)], {}, 1)


# -- the command ----------------------------------------------------------------------------

def _rescored(tmp_path: Path) -> Path:
    write_items(tmp_path / "a.jsonl", A.items, store="a")
    write_items(tmp_path / "b.jsonl", B.items, store="b")
    write_queries(tmp_path / "queries.jsonl", QUERIES)
    write_jsonl_run(tmp_path / "run.jsonl", _runs())
    write_labels(tmp_path / "labels.jsonl", LABELS)
    assert main(["rescore", "--run", str(tmp_path / "run.jsonl"),
                 "--items", f"A={tmp_path / 'a.jsonl'}", "--items", f"B={tmp_path / 'b.jsonl'}",
                 "--queries", str(tmp_path / "queries.jsonl"), "--measures", "nDCG@4",
                 "--out", str(tmp_path / "rs")]) == 0
    return tmp_path / "rs"


def _graded(tmp_path: Path, *extra: str) -> list[str]:
    return ["audit", "graded", str(tmp_path / "rs"), "--labels", str(tmp_path / "labels.jsonl"),
            "--out", str(tmp_path / "g"), *extra]


def test_cli_writes_and_prints_composed_support(tmp_path: Path, capsys) -> None:
    _rescored(tmp_path)
    capsys.readouterr()
    assert main(_graded(tmp_path)) == 0  # k = 4: the rescoring's nDCG@4
    out = " ".join(capsys.readouterr().out.split())
    # run A, Source: the summary of test_summary_by_hand, printed to 4 places
    assert "[0.4444, 0.5556]" in out and "[0.6667, 0.7778]" in out
    assert "unjudged members unknown: [lower, upper]" in out
    assert "unjudged derived members: keep (relevance 2) in nDCG; unknown in composed" in out
    g = tmp_path / "g"
    with open(g / "support_per_query.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == ["system", "store", "target", "query_id", "measure", "lower",
                             "upper", "exact", "n_units", "n_unjudged", "determined"]
    got = {(r["system"], r["target"], r["query_id"], r["measure"]): r for r in rows}
    r = got[("A", "source", "q", "GradedCoverage@4")]
    assert (r["store"], float(r["lower"]), float(r["upper"]), r["exact"], r["n_units"]) == (
        "a", 0.5, pytest.approx(5 / 6), "false", "3")
    r = got[("B", "canonical", "q2", "Sufficient@4")]
    assert (r["store"], r["lower"], r["upper"], r["exact"]) == ("b", "1.0", "1.0", "true")
    r = got[("A", "raw", "q4", "Coverage@4")]  # zero target: empty, never 0
    assert (r["lower"], r["upper"], r["exact"], r["n_units"]) == ("", "", "", "0")
    assert len(rows) == 2 * 3 * 4 * 3  # systems x targets (raw too) x queries x measures
    with open(g / "support_summary.csv", newline="") as fh:
        summ = {(s["system"], s["target"], s["measure"]): s for s in csv.DictReader(fh)}
    s = summ[("A", "source", "Sufficient@4")]
    assert (float(s["lower"]), s["n"], s["n_exact"], s["n_zero_target"], s["unjudged"]) == (
        pytest.approx(1 / 3), "3", "3", "1", "unknown")
    man = json.loads((g / "manifest.json").read_text())
    for name in ("support_per_query.csv", "support_summary.csv"):
        assert len(man["outputs"][name]["sha256"]) == 64
    assert man["outputs"]["support_per_query.csv"]["rows"] == len(rows)
    opts = man["options"]
    assert (opts["unjudged"], opts["support_unjudged"], opts["unjudged_given"], opts["k"]) == (
        "keep", "unknown", None, 4)
    assert opts["support_grades"] == {"raw_member": 1.0, "supports": 1.0, "partial": 0.5,
                                      "does_not_support": 0.0, "unjudged": None}
    assert opts["support_measures"] == ["Coverage@4", "GradedCoverage@4", "Sufficient@4"]


def test_cli_chosen_policy_is_recorded(tmp_path: Path, capsys) -> None:
    _rescored(tmp_path)
    capsys.readouterr()
    assert main(_graded(tmp_path, "--unjudged", "drop")) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "unjudged members: drop, exact under that assumption" in out
    assert "[" not in out.split("composed support")[1]  # no interval under a chosen policy
    man = json.loads((tmp_path / "g" / "manifest.json").read_text())
    opts = man["options"]
    assert (opts["unjudged"], opts["support_unjudged"], opts["unjudged_given"]) == (
        "drop", "drop", "drop")
    assert opts["support_grades"]["unjudged"] == 0.0
    with open(tmp_path / "g" / "support_summary.csv", newline="") as fh:
        s = {(r["system"], r["target"], r["measure"]): r for r in csv.DictReader(fh)}
    # drop = the lower bound of unknown: run A, Source Coverage@4 = 4/9, all 3 exact
    r = s[("A", "source", "Coverage@4")]
    assert (float(r["lower"]), float(r["upper"]), r["n_exact"]) == (
        pytest.approx(4 / 9), pytest.approx(4 / 9), "3")


def test_cli_unknown_policy_name_is_refused(tmp_path: Path, capsys) -> None:
    capsys.readouterr()
    assert main(_graded(tmp_path, "--unjudged", "maybe")) == 2  # before anything is read
    err = capsys.readouterr().err
    assert err.splitlines()[0] == ("error[invalid-value]: --unjudged 'maybe': expected one of "
                                   "unknown, keep, partial, drop"), err
    assert not (tmp_path / "g").exists()
