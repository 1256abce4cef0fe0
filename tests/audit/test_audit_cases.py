"""Contested credits on a small hand-made store and run.

Store (``->`` reads "derived from")::

    t1 raw [u1]   t2 raw [u2]   t3 raw [u3]
    f1 fact [u1]            f2 fact -> f1 (lineage u1)
    o2 observation [u2]     n2 fact [u2], serving=false
    s1 summary -> f1, t2 (lineage u1, u2)

Families: u1 = {f1, f2, s1, t1}; u2 = {n2, o2, s1, t2}; u3 = {t3}.
Raw groups: {t1} {t2} {t3}. Source: the families. Canonical: u1 -> {f1, f2, s1},
u2 -> {o2, s1}, u3 -> none.

Queries: q1 [u1, u2]; q2 [u3]; q3 [u1]. Measure nDCG@5 (k = 5), group credit.

Run ``sys``:
- q1 ``x9 s1 t1 f1 o2 f2``: under Source, s1 (rank 2) matches both groups; t1, f1, o2 then
  earn nothing; Raw credits t1 at rank 3. Contested: s1 @2 (raw_hit, raw support t1 @3).
  Canonical: the same s1 @2. Source nDCG@5 = (1/log2 3) / (1 + 1/log2 3) = 0.386853;
  Raw = (1/log2 4) / (1 + 1/log2 3) = 0.306574.
- q2 ``t3 f1``: Source credits only the raw t3; Canonical has no group. No case.
- q3 ``f2 t1 f1``: f2 @1 under Source and Canonical; Raw hits t1 @2.

Run ``sys2``: q1 ``o2 t2 t1``: o2 @1 (matches u2's group); raw support t2 @2.
q3 ``f1 x1``: f1 @1, Raw misses (raw_miss).

Set credit (trec_eval semantics) credits every member: sys q1 under Source gives s1 @2,
f1 @4, o2 @5 (f2 @6 is beyond k = 5).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from audit_fixtures import ITEMS, QUERIES, runs

from tiap.audit import Case, contested_cases, read_cases, sample_cases
from tiap.audit.cases import rank_bucket
from tiap.cli.main import main
from tiap.datasets.queryfile import write_queries
from tiap.errors import TiapError
from tiap.memory.store import write_items
from tiap.runs import write_jsonl_run


def by_id(cases: list[Case]) -> dict[str, Case]:
    return {c.case_id: c for c in cases}


def test_group_credit_cases_by_hand() -> None:
    got = by_id(contested_cases(runs(), QUERIES, {None: ITEMS}, k=5))
    assert sorted(got) == ["sys2:q1:canonical", "sys2:q1:source", "sys2:q3:canonical",
                           "sys2:q3:source", "sys:q1:canonical", "sys:q1:source",
                           "sys:q3:canonical", "sys:q3:source"]
    c = got["sys:q1:source"]
    assert (c.item_id, c.credited_rank, c.item_kind) == ("s1", 2, "summary")
    assert c.item_text == "Caroline moved; Melanie does pottery."
    assert (c.case_type, c.raw_support_rank, c.raw_support_item_id) == ("raw_hit", 3, "t1")
    assert c.raw_support_text == "Caroline: I moved to Paris last year!"
    assert [(x.rank, x.item_id) for x in c.contested] == [(2, "s1")]
    assert (c.question, c.answer, c.dataset, c.rank_bucket) == (
        QUERIES[0].question, "Paris; pottery", "toy", "1-5")
    assert got["sys:q1:canonical"].item_id == "s1"
    assert (got["sys:q3:source"].item_id, got["sys:q3:source"].credited_rank) == ("f2", 1)
    assert got["sys:q3:source"].raw_support_rank == 2
    c2 = got["sys2:q1:source"]
    assert (c2.item_id, c2.credited_rank, c2.raw_support_item_id, c2.raw_support_rank) == (
        "o2", 1, "t2", 2)
    m = got["sys2:q3:source"]
    assert (m.item_id, m.case_type, m.raw_support_rank, m.raw_support_text) == (
        "f1", "raw_miss", None, None)


def test_set_credit_lists_every_member() -> None:
    got = by_id(contested_cases(runs(), QUERIES, {None: ITEMS}, k=5, credit="set"))
    c = got["sys:q1:source"]
    assert [(x.rank, x.item_id) for x in c.contested] == [(2, "s1"), (4, "f1"), (5, "o2")]
    assert [(x.rank, x.item_id) for x in got["sys:q1:canonical"].contested] == [
        (2, "s1"), (4, "f1"), (5, "o2")]


def test_each_contested_credit_as_its_own_case() -> None:
    got = by_id(contested_cases(runs(), QUERIES, {None: ITEMS}, k=5, credit="set", each=True))
    mine = sorted((c.credited_rank, c.item_id) for c in got.values()
                  if c.system == "sys" and c.query_id == "q1" and c.target == "source")
    assert mine == [(2, "s1"), (4, "f1"), (5, "o2")]
    assert got["sys:q1:source:f1"].rank_bucket == "1-5"
    assert got["sys:q1:source:f1"].raw_support_rank == 3


def test_the_cutoff_bounds_the_walk() -> None:
    got = by_id(contested_cases(runs(), QUERIES, {None: ITEMS}, k=1))
    assert "sys:q1:source" not in got  # s1 is at rank 2
    assert got["sys:q3:source"].case_type == "raw_miss"  # t1 at rank 2 is beyond k


def test_raw_cannot_be_audited() -> None:
    with pytest.raises(TiapError, match="cannot also be audited"):
        contested_cases(runs(), QUERIES, {None: ITEMS}, targets=("raw",))


@pytest.mark.parametrize(("rank", "bucket"), [(1, "1-5"), (5, "1-5"), (6, "6-20"),
                                              (20, "6-20"), (21, "21-60"), (60, "21-60"),
                                              (61, "61+")])
def test_rank_buckets(rank: int, bucket: str) -> None:
    assert rank_bucket(rank) == bucket


def _synthetic(n: int) -> list[Case]:
    out = []
    for i in range(n):
        out.append(Case(case_id=f"c{i:03d}", system=f"s{i % 2}", query_id=f"q{i}",
                        target="source", item_id=f"i{i}", item_text="x", question="?",
                        answer="a", credited_rank=[1, 7, 30][i % 3], dataset=f"d{i % 2}",
                        case_type=["raw_miss", "raw_hit"][(i // 6) % 2]))
    return out


def test_stratified_sampling_is_seeded_and_bounded() -> None:
    cases = _synthetic(120)
    a = sample_cases(cases, "stratified", per_stratum=3, seed=7)
    b = sample_cases(cases, "stratified", per_stratum=3, seed=7)
    c = sample_cases(cases, "stratified", per_stratum=3, seed=8)
    assert [x.case_id for x in a] == [x.case_id for x in b]
    assert [x.case_id for x in a] != [x.case_id for x in c]
    counts: dict[tuple[str, ...], int] = {}
    for x in a:
        counts[x.stratum] = counts.get(x.stratum, 0) + 1
    strata = {x.stratum for x in cases}
    assert set(counts) == strata and all(v == 3 for v in counts.values())
    assert [x.case_id for x in a] == sorted(x.case_id for x in a)  # input order kept
    assert sample_cases(cases, "all") == cases
    small = sample_cases(cases[:5], "stratified", per_stratum=10, seed=0)
    assert small == cases[:5]


def test_cli_cases_from_a_rescore_folder(tmp_path: Path) -> None:
    write_items(tmp_path / "items.jsonl", ITEMS)
    write_queries(tmp_path / "queries.jsonl", QUERIES)
    write_jsonl_run(tmp_path / "run.jsonl", runs())
    rc = main(["rescore", "--run", str(tmp_path / "run.jsonl"), "--items",
               str(tmp_path / "items.jsonl"), "--queries", str(tmp_path / "queries.jsonl"),
               "--measures", "nDCG@5,R@5", "--out", str(tmp_path / "rs")])
    assert rc == 0
    rc = main(["audit", "cases", str(tmp_path / "rs"), "--out", str(tmp_path / "cases.jsonl")])
    assert rc == 0
    got = by_id(read_cases(tmp_path / "cases.jsonl"))
    assert len(got) == 8
    c = got["sys:q1:source"]
    assert c.measure == "nDCG@5" and c.k == 5 and c.credit == "group"
    ideal = 1 + 1 / math.log2(3)
    assert math.isclose(c.target_value, (1 / math.log2(3)) / ideal, rel_tol=1e-12)
    assert math.isclose(c.raw_value, 0.5 / ideal, rel_tol=1e-12)
    assert got["sys2:q3:source"].raw_value == 0.0
    man = json.loads((tmp_path / "cases.jsonl.manifest.json").read_text())
    assert man["counts"]["contested"] == 8 and man["options"]["k"] == 5
    assert {"run:sys", "run:sys2", "rescore_manifest"} <= set(man["inputs"])
    # stratified sample through the CLI
    rc = main(["audit", "cases", str(tmp_path / "rs"), "--out", str(tmp_path / "s.jsonl"),
               "--sample", "stratified", "--per-stratum", "1", "--seed", "3",
               "--items", str(tmp_path / "items.jsonl"), "--queries",
               str(tmp_path / "queries.jsonl"), "--run", str(tmp_path / "run.jsonl")])
    assert rc == 0
    sampled = read_cases(tmp_path / "s.jsonl")
    assert len({c.stratum for c in sampled}) == len(sampled)
    # --k 5 is --measure nDCG@5, the default here: the same cases
    rc = main(["audit", "cases", str(tmp_path / "rs"), "--out", str(tmp_path / "k.jsonl"),
               "--k", "5"])
    assert rc == 0 and read_cases(tmp_path / "k.jsonl") == read_cases(tmp_path / "cases.jsonl")


def test_cli_cases_k_names_a_measure_of_the_rescoring(tmp_path: Path, capsys) -> None:
    write_items(tmp_path / "items.jsonl", ITEMS)
    write_queries(tmp_path / "queries.jsonl", QUERIES)
    write_jsonl_run(tmp_path / "run.jsonl", runs())
    assert main(["rescore", "--run", str(tmp_path / "run.jsonl"), "--items",
                 str(tmp_path / "items.jsonl"), "--queries", str(tmp_path / "queries.jsonl"),
                 "--k", "5", "--out", str(tmp_path / "rs")]) == 0
    capsys.readouterr()
    out = tmp_path / "c.jsonl"
    assert main(["audit", "cases", str(tmp_path / "rs"), "--out", str(out), "--k", "3"]) == 2
    err = capsys.readouterr().err
    assert "--k: 'nDCG@3' is not a measure of the rescoring" in err
    assert "nDCG@5, R@5, RR@5, Success@5" in err
    assert main(["audit", "cases", str(tmp_path / "rs"), "--out", str(out), "--k", "5",
                 "--measure", "R@5"]) == 2
    assert "give --measure or --k, not both" in capsys.readouterr().err
    assert not out.exists()


def test_cli_rejects_a_folder_that_is_not_a_rescoring(tmp_path: Path, capsys) -> None:
    rc = main(["audit", "cases", str(tmp_path), "--out", str(tmp_path / "c.jsonl")])
    assert rc == 2
    assert "not a `tiap rescore` output folder" in capsys.readouterr().err


def test_cases_round_trip(tmp_path: Path) -> None:
    from tiap.audit import write_cases

    cs = contested_cases(runs(), QUERIES, {None: ITEMS}, k=5)
    write_cases(tmp_path / "c.jsonl", cs)
    assert read_cases(tmp_path / "c.jsonl") == cs
