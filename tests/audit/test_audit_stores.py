"""An item is what its store says it is: the audit on two stores that reuse item ids.

Real data, kept small: the two-store audit of conftest.py (LoCoMo conv-26; stores ``f1``
and ``f5``, which reuse ids such as ``conv-26:D2:1#f1`` for different texts; BM25 runs over
each, rescored together; ``cases --each``, the ``lexical`` judge and ``graded`` through the
CLI).

Expected values come from independent references: the stores' own texts, and pytrec_eval
(trec_eval's ``ndcg_cut``) on each store's graded qrels.
"""

from __future__ import annotations

import csv
import json
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from audit_fixtures import TWO_STORES as STORES

from tiap.audit import GRADES
from tiap.runs import read_run


@pytest.fixture()
def audit(two_store_audit: dict[str, Any]) -> dict[str, Any]:
    return two_store_audit


def texts(store: Any) -> dict[str, str]:
    return {it.item_id: it.text or "" for it in store}


def test_the_two_stores_reuse_ids_for_other_texts(audit) -> None:
    """The premise: the same (query, item id) is judged in both stores, on other texts, with
    other labels, so that keying labels by item id alone would apply one to the other."""
    f1, f5 = (texts(audit["stores"][n]) for n in STORES)
    assert sum(1 for i in set(f1) & set(f5) if f1[i] != f5[i]) > 0
    by: dict[tuple[str, str], dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for r in audit["labels"]:
        if r.scored:
            by[(r.query_id, r.item_id)][r.store].add(r.label)
    clashing = [k for k, v in by.items() if len(v) == 2 and v["f1"] != v["f5"]
                and f1[k[1]] != f5[k[1]]]
    assert clashing


def test_every_case_and_label_names_its_store(audit) -> None:
    systems = {s: v["store"] for s, v in audit["rescore"]["systems"].items()}
    assert systems == {"f1-bm25": "f1", "f5-bm25": "f5"}
    assert {c.store for c in audit["cases"]} == set(STORES)
    for c in audit["cases"]:
        assert c.store == systems[c.system]
    assert {r.store for r in audit["labels"]} == set(STORES)
    sidecar = json.loads((audit["root"] / "cases.jsonl.manifest.json").read_text())
    assert sidecar["stores"] == systems


def test_every_label_sits_on_the_text_it_judged(audit) -> None:
    store_texts = {n: texts(s) for n, s in audit["stores"].items()}
    cases = {c.case_id: c for c in audit["cases"]}
    assert len(audit["labels"]) == len(cases)
    for r in audit["labels"]:
        case = cases[r.case_id]
        assert (r.store, r.item_id) == (case.store, case.item_id)
        assert store_texts[r.store][r.item_id] == case.item_text, r.case_id


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = defaultdict(dict)
    for line in path.read_text().splitlines():
        q, _, item, rel = line.split()
        out[q][item] = int(rel)
    return dict(out)


def test_graded_qrels_per_store_match_pytrec_eval(audit) -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    root = audit["root"]
    man = json.loads((root / "graded" / "manifest.json").read_text())
    assert {s: v["store"] for s, v in man["systems"].items()} == {"f1-bm25": "f1",
                                                                  "f5-bm25": "f5"}
    assert sorted(p.name for p in (root / "graded" / "qrels").iterdir()) == sorted(
        f"{s}.{t}.graded.qrels" for s in STORES for t in ("source", "canonical"))
    tiap: dict[tuple[str, str, str], float] = {}
    with open(root / "graded" / "graded_per_query.csv", newline="") as fh:
        for row in csv.DictReader(fh):
            if row["graded"] != "":
                tiap[(row["system"], row["target"], row["query_id"])] = float(row["graded"])
    compared = 0
    for system, entry in man["systems"].items():
        (run,) = read_run(root / "runs" / f"{system}.jsonl", dedup="first")
        scored = {r.query_id: {i: float(len(r.item_ids) - j) for j, i in enumerate(r.item_ids)}
                  for r in run.rankings}  # strictly decreasing scores: rank order is kept
        for target, rel_path in entry["qrels"].items():
            qrels = read_qrels(root / "graded" / rel_path)
            ref = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.20"}).evaluate(scored)
            mine = {q: v for (s, t, q), v in tiap.items() if s == system and t == target}
            assert set(ref) == set(mine)
            for q, m in ref.items():
                assert math.isclose(mine[q], m["ndcg_cut_20"], rel_tol=0, abs_tol=1e-12), (
                    system, target, q)
            compared += len(ref)
    assert compared > 500


def test_each_store_is_graded_with_its_own_labels(audit) -> None:
    """In each store's qrels, a judged item has the grade of that store's labels (0: gone)."""
    root = audit["root"]
    votes: dict[tuple[str, str, str, str], set[str]] = defaultdict(set)
    for r in audit["labels"]:
        if r.scored:
            votes[(r.store, r.target, r.query_id, r.item_id)].add(r.label)
    checked = 0
    for (store, target, q, item), labels in votes.items():
        if len(labels) != 1:
            continue  # several labels: combined by the tie rule (tested by hand elsewhere)
        qrels = read_qrels(root / "graded" / "qrels" / f"{store}.{target}.graded.qrels")
        assert qrels.get(q, {}).get(item, 0) == GRADES[next(iter(labels))], (store, q, item)
        checked += 1
    assert checked > 100
