"""Composed support on real data: the two-store audit of conftest.py (LoCoMo conv-26, stores
``f1`` and ``f5`` that reuse item ids for other texts, BM25 runs, ``cases --each``, the
``lexical`` judge, ``audit graded`` with its defaults: k = 20 from the rescoring's nDCG@20,
unjudged members unknown).

Expected values come from outside the code under test:

- a recomputation here, from ``labels.jsonl`` (each store's own labels) and the target
  groups, of every query's bounds (the definition in docs/audit.md, written out plainly);
- the scoring kernel: with every member taken as supporting, Coverage@k is group-credit
  ``R@k`` (the share of groups with a member in the top k) and Sufficient@k is group-credit
  ``Rall@k``, per query.
"""

from __future__ import annotations

import csv
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from audit_fixtures import TWO_STORES as STORES

from tiap.audit.graded import graded_rescore
from tiap.datasets.queryfile import read_queries
from tiap.runs import read_run
from tiap.scoring.rescore import rescore
from tiap.targets import build_groups

K = 20
TARGETS = ("raw", "source", "canonical")
GRADE = {"supports": 1.0, "partial": 0.5, "does_not_support": 0.0}


@pytest.fixture(scope="module")
def real(two_store_audit: dict[str, Any]) -> dict[str, Any]:
    root: Path = two_store_audit["root"]
    runs = {}
    for name in STORES:
        (run,) = read_run(root / "runs" / f"{name}-bm25.jsonl", dedup="first")
        runs[name] = run
    with open(root / "graded" / "support_per_query.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    return {**two_store_audit, "runs": runs, "rows": rows,
            "queries": read_queries(root / "queries.jsonl")}


def _bounds(rows: list[dict[str, str]]) -> dict[tuple[str, str, str, str], tuple[float, float]]:
    return {(r["store"], r["target"], r["query_id"], r["measure"].split("@")[0]):
            (float(r["lower"]), float(r["upper"])) for r in rows if r["lower"] != ""}


def _labels_by(labels: Any, *, by_store: bool) -> dict[tuple[str, ...], float]:
    """Each key's grade. Conflicting labels of one key (its Source and Canonical cases) take
    the least support, the conservative tie rule of two votes. ``by_store=False`` keys
    by (query, item) alone, pooling the stores (the least support of all their votes): the
    mistake the store key prevents."""
    votes: dict[tuple[str, ...], list[float]] = defaultdict(list)
    for r in labels:
        if r.label in GRADE:
            key = (r.store, r.query_id, r.item_id) if by_store else (r.query_id, r.item_id)
            votes[key].append(GRADE[r.label])
    out = {}
    for key, v in votes.items():
        if by_store and len(v) > 2 and len(set(v)) > 1:
            raise AssertionError(f"{key}: more than two votes that differ; not handled here")
        out[key] = min(v)
    return out


def _recompute(real: dict[str, Any], *, by_store: bool = True,
               ) -> dict[tuple[str, str, str, str], tuple[float, float]]:
    """Every query's bounds, from the definition: a unit is supported when one of its
    retrieved members is the Raw turn or has grade 1; unjudged members count 0 below, 1
    above."""
    grades = _labels_by(real["labels"], by_store=by_store)
    out: dict[tuple[str, str, str, str], tuple[float, float]] = {}
    for store in STORES:
        sets = build_groups(real["stores"][store], real["queries"], TARGETS)
        for ranking in real["runs"][store].rankings:
            q = ranking.query_id
            top = set(ranking.item_ids[:K])
            raw = {i for g in sets["raw"][q] for i in g}
            for t in TARGETS:
                groups = sets[t][q]
                if not groups:
                    continue
                sup_lo = sup_hi = 0
                best_lo = best_hi = 0.0
                for g in groups:
                    lo, hi = 0.0, 0.0
                    for i in top & set(g):
                        key = (store, q, i) if by_store else (q, i)
                        if i in raw:
                            gi: float | None = 1.0
                        else:
                            gi = grades.get(key)
                        lo = max(lo, 0.0 if gi is None else gi)
                        hi = max(hi, 1.0 if gi is None else gi)
                    sup_lo += lo == 1.0
                    sup_hi += hi == 1.0
                    best_lo += lo
                    best_hi += hi
                n = len(groups)
                out[(store, t, q, "Coverage")] = (sup_lo / n, sup_hi / n)
                out[(store, t, q, "GradedCoverage")] = (best_lo / n, best_hi / n)
                out[(store, t, q, "Sufficient")] = (float(sup_lo == n), float(sup_hi == n))
    return out


def test_support_rows_are_the_definition_on_real_data(real) -> None:
    got = _bounds(real["rows"])
    want = _recompute(real)
    assert set(got) == set(want)
    for key, (lo, hi) in want.items():
        assert math.isclose(got[key][0], lo, abs_tol=1e-12), key
        assert math.isclose(got[key][1], hi, abs_tol=1e-12), key
    # the data exercise both cases: values the labels decide and values they only bound
    derived = [v for k, v in got.items() if k[1] != "raw"]
    assert sum(lo == hi for lo, hi in derived) > 500
    assert sum(lo < hi for lo, hi in derived) > 20
    assert all(lo == hi for k, (lo, hi) in got.items() if k[1] == "raw")  # Raw: by definition
    # ... and the store key matters here: pooling the two stores' labels by bare id gives
    # other bounds for some queries (so a leak between stores would fail the loop above)
    pooled = _recompute(real, by_store=False)
    assert sum(1 for k in want if pooled[k] != want[k]) > 0


def test_every_row_is_consistent(real) -> None:
    by: dict[tuple[str, str, str], dict[str, dict[str, str]]] = defaultdict(dict)
    for r in real["rows"]:
        by[(r["system"], r["target"], r["query_id"])][r["measure"]] = r
    assert {s for s, _, _ in by} == {f"{n}-bm25" for n in STORES}
    assert {t for _, t, _ in by} == set(TARGETS)
    for key, ms in by.items():
        assert sorted(ms) == [f"Coverage@{K}", f"GradedCoverage@{K}", f"Sufficient@{K}"], key
        c, g, s = ms[f"Coverage@{K}"], ms[f"GradedCoverage@{K}"], ms[f"Sufficient@{K}"]
        if c["lower"] == "":
            assert g["lower"] == s["lower"] == "", key
            continue
        c_lo, c_hi, g_lo, g_hi, s_lo, s_hi = (float(x[b]) for x in (c, g, s)
                                              for b in ("lower", "upper"))
        assert 0 <= c_lo <= c_hi <= 1 and 0 <= g_lo <= g_hi <= 1, key
        assert c_lo <= g_lo and c_hi <= g_hi, key  # a supported unit's best grade is 1
        assert s_lo == float(c_lo == 1.0) and s_hi == float(c_hi == 1.0), key
        assert (c["exact"] == "true") == (c_lo == c_hi), key


def test_all_supporting_is_group_credit_recall(real) -> None:
    """Every member supporting (no labels, unjudged kept): Coverage@k is the scoring
    kernel's group-credit R@k and Sufficient@k its Rall@k, query by query, under every
    target; with the labels, the upper bound can only be lower."""
    runs = [real["runs"][n] for n in STORES]
    stores = {f"{n}-bm25": real["stores"][n] for n in STORES}
    mine = graded_rescore(runs, real["queries"], stores, {}, k=K, unjudged="keep")
    ref = rescore(runs, real["queries"], stores, measures=f"R@{K},Rall@{K}", credit="group")
    got = {(r["system"], r["target"], r["query_id"], r["measure"]): r["lower"]
           for r in mine.support_rows}
    compared = 0
    for system in stores:
        for t in TARGETS:
            for measure, ours in ((f"R@{K}", f"Coverage@{K}"), (f"Rall@{K}", f"Sufficient@{K}")):
                vals = ref.value(system, t, measure)
                for q, v in zip(ref.query_ids[system], vals.tolist(), strict=True):
                    g = got[(system, t, q, ours)]
                    if math.isnan(v):
                        assert g is None, (system, t, q)
                    else:
                        assert math.isclose(g, v, abs_tol=1e-12), (system, t, q, measure)
                        compared += 1
    assert compared > 1000
    labelled = _bounds(real["rows"])
    keep = {(r["store"], r["target"], r["query_id"], r["measure"].split("@")[0]): r["upper"]
            for r in mine.support_rows if r["lower"] is not None}
    assert all(hi <= keep[k] + 1e-12 for k, (_, hi) in labelled.items())
    assert any(hi < keep[k] - 1e-12 for k, (_, hi) in labelled.items())
