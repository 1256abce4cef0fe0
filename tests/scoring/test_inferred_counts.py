"""Values that rest on inferred lineage: an item whose lineage the import assumed
(``"inferred"`` in items.jsonl) makes the values that rest on it ``n_inferred``, never
``n_exact``, in every summary: summary.csv, inferred.csv, Stage III's system means and the
target card. Built by hand, the expected values worked out in each docstring."""

from __future__ import annotations

import csv
from pathlib import Path

from tiap.datasets.records import Query
from tiap.memory.store import Inference, Item, item_from_json
from tiap.runs import Ranking, Run
from tiap.scoring.folder import write_rescore
from tiap.scoring.rescore import rescore


def _query(qid: str, evidence: tuple[str, ...]) -> Query:
    return Query(qid, "c", "?", None, "", evidence)


def _run(rankings: dict[str, tuple[str, ...]]) -> Run:
    return Run("sys", tuple(Ranking(q, "sys", r) for q, r in rankings.items()))


def _inferred_store() -> tuple[list[Item], list[Query], Run]:
    """Turns c:1, c:2 (raw r1, r2); f1, a fact the import assigned to c:1 by a heuristic
    (proof allows c:1 or c:2); f2, a fact of c:2; g1, an item assigned to c:2 whose kind
    (raw) is assumed too."""
    items = [Item("r1", "raw", ("c:1",), collection="c"),
             Item("r2", "raw", ("c:2",), collection="c"),
             Item("f1", "fact", ("c:1",), collection="c",
                  inferred=Inference(possible=("c:1", "c:2"))),
             Item("f2", "fact", ("c:2",), collection="c"),
             Item("g1", "raw", ("c:2",), collection="c",
                  inferred=Inference(possible=("c:2",), kind=True))]
    queries = [_query("qa", ("c:1",)), _query("qb", ("c:2",)), _query("qc", ("c:2",)),
               _query("qd", ("c:1",))]
    run = _run({"qa": ("f1", "r1"), "qb": ("f1", "r2"), "qc": ("g1", "r2"), "qd": ("r1",)})
    return items, queries, run


def test_values_resting_on_inferred_lineage_are_counted_apart(tmp_path: Path) -> None:
    """By hand, group credit:

    - Raw: only qc ranks an inferred item a Raw target may credit (g1). qb's c:2 group has
      r2, of proven lineage: g1, unranked there, changes nothing. 1 inferred of 4.
    - Source: qa and qb rank f1, which may reach c:1 or c:2 by proof; qc ranks g1: 3.
      qd ranks r1 only and its group has r1: f1 changes nothing.
    - Canonical: qa, qb (f1), qc (g1: its kind is assumed, so it may be a Canonical item);
      qd's Canonical group of c:1 exists only through f1: whether it exists at all rests on
      the assumption: 4 of 4.

    The values are single numbers under the stated lineage: the mean is printed, and
    n_exact + n_inferred = n."""
    items, queries, run = _inferred_store()
    res = rescore([run], queries, {None: items}, measures="nDCG@5,RR@5", tokenizer="none")
    rows = {(r["target"], r["measure"]): r for r in res.summary_rows()}
    for target, n_inferred in (("raw", 1), ("source", 3), ("canonical", 4)):
        r = rows[(target, "nDCG@5")]
        assert (r["n"], r["n_exact"], r["n_inferred"]) == (4, 4 - n_inferred, n_inferred)
        assert r["mean"] is not None and r["mean"] == r["lower"] == r["upper"]
    assert set(res.inferred[("sys", "source")]) == {"qa", "qb", "qc"}
    assert "rests on item f1" in res.inferred[("sys", "canonical")]["qd"]
    # set credit: any inferred item that may belong to the groups counts (the union's size)
    res_set = rescore([run], queries, {None: items}, measures="nDCG@5", credit="set",
                      tokenizer="none")
    assert {r["target"]: r["n_inferred"] for r in res_set.summary_rows()} == {
        "raw": 2, "source": 4, "canonical": 4}
    # the folder: summary.csv's n_inferred (the last column), inferred.csv per query
    out = tmp_path / "rs"
    write_rescore(res, out, queries=queries)
    with open(out / "summary.csv", newline="") as fh:
        head = fh.readline().strip().split(",")
    assert head[-1] == "n_inferred" and head[:9] == [
        "system", "target", "measure", "n", "n_exact", "n_possibly_empty", "mean", "lower",
        "upper"]
    with open(out / "inferred.csv", newline="") as fh:
        got = [(r["target"], r["query_id"]) for r in csv.DictReader(fh)]
    assert got == [("raw", "qc"), ("source", "qa"), ("source", "qb"), ("source", "qc"),
                   ("canonical", "qa"), ("canonical", "qb"), ("canonical", "qc"),
                   ("canonical", "qd")]


def test_inference_passes_to_derived_items() -> None:
    """h1 derives (parents) from f1, whose turn is inferred: h1's lineage rests on it too.
    qd ranks h1 under Source: inferred."""
    items, queries, run = _inferred_store()
    items.append(Item("h1", "summary", (), parents=("f1",), collection="c"))
    run = _run({"qd": ("h1",)})
    res = rescore([run], queries[3:], {None: items}, targets=["source"], measures="RR@5",
                  tokenizer="none")
    assert set(res.inferred[("sys", "source")]) == {"qd"}


def test_stage_three_and_the_card_count_inferred_values(tmp_path: Path) -> None:
    from tiap.report.card import appendix_markdown, card_json, card_markdown
    from tiap.report.load import load_sensitivity_dirs
    from tiap.sensitivity import analyze, write_sensitivity

    items, queries, run = _inferred_store()
    res = rescore([run], queries, {None: items}, measures="nDCG@5", tokenizer="none")
    write_rescore(res, tmp_path / "rs", queries=queries)
    sens = analyze([tmp_path / "rs"], resamples=50, answers=False, by_category_tests=False)
    means = {r["target"]: r for r in sens.table("system_means")}
    assert [(means[t]["n_exact"], means[t]["n_inferred"]) for t in ("raw", "source",
                                                                    "canonical")] == [
        (3, 1), (1, 3), (0, 4)]
    assert means["raw"]["mean"] is not None
    write_sensitivity(sens, tmp_path / "sens")
    card = card_json(load_sensitivity_dirs([tmp_path / "sens"]))
    cov = card["datasets"][0]["coverage"]["sys"]["targets"]
    assert {t: (c["exact"], c["inferred"], c["bounded"]) for t, c in cov.items()} == {
        "raw": (3, 1, 0), "source": (1, 3, 0), "canonical": (0, 4, 0)}
    assert "| sys | canonical | 4 | 0 | 4 | 0 |" in appendix_markdown(card)  # in full
    # the one-screen card counts them too, beside each mean
    assert "(n 4, 0 exact, 4 inferred)" in card_markdown(card)


def test_inferred_field_round_trips() -> None:
    row = {"item_id": "f1", "kind": "fact", "sources": ["c:1"],
           "inferred": {"possible_sources": ["c:1", "c:2"], "kind": True}}
    it = item_from_json(row)
    assert it.inferred == Inference(possible=("c:1", "c:2"), kind=True)
    assert it.to_json()["inferred"] == row["inferred"]
    assert item_from_json({**row, "inferred": {}}).inferred == Inference()
    assert Inference().to_json() == {"possible_sources": "any"}
    assert not dict(it.meta)  # a field of its own, not metadata
