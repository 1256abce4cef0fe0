"""The per-query score model :class:`tiap.scoring.scores.Scores`: one ``hit_k`` rule for
rescoring and Stage III, its tables, and the folder round trip."""

from __future__ import annotations

from pathlib import Path

from tiap.datasets.records import Query
from tiap.memory.store import Item
from tiap.runs import Ranking, Run
from tiap.scoring.folder import write_rescore
from tiap.scoring.rescore import rescore
from tiap.scoring.scores import Scores
from tiap.sensitivity.change import change_rows
from tiap.sensitivity.load import load_datasets

ITEMS = [Item("r1", "raw", ("c:1",), collection="c"),
         Item("r2", "raw", ("c:2",), collection="c"),
         Item("d1", "fact", ("c:1",), collection="c")]
QUERIES = [Query("qA", "c", "?", None, "single", ("c:1",)),
           Query("qB", "c", "?", None, "multi", ("c:2",))]


def _scores(measures: str) -> Scores:
    # qA ranks r2, d1: under raw only r1 is credited (not ranked), under source r1 and d1
    # are (d1 at rank 2); qB ranks r2 first, credited under both targets
    run = Run("sys", (Ranking("qA", "sys", ("r2", "d1")), Ranking("qB", "sys", ("r2", "r1"))))
    return rescore([run], QUERIES, {None: ITEMS}, targets=["raw", "source"],
                   measures=measures)


def test_hit_k_without_a_cutoff_is_the_whole_ranking_in_both_stages(tmp_path: Path) -> None:
    # RR without a cutoff: the hit is "anything credited anywhere in the ranking".
    # qA: raw hit 0, source hit 1 -> one hit flip; rank 1 is credited under neither -> no
    # top-1 flip. qB: rank 1 credited under both -> no flip. (Rescoring took k = 1 here
    # before, counting 0 hit flips where Stage III counted 1.)
    res = _scores("RR")
    (row,) = res.pairwise_rows()
    assert (row["hit_k"], row["hit_flips"], row["top1_flips"]) == ("all", 1, 0)
    write_rescore(res, tmp_path / "rs", queries=QUERIES)
    (ds,) = load_datasets([tmp_path / "rs"])
    (change,) = change_rows(ds)
    assert (change["hit_k"], change["hit_flips"], change["top1_flips"]) == ("all", 1, 0)


def test_in_universe_and_determined_are_two_words() -> None:
    res = _scores("RR@5")
    # both queries are in both universes and every value is one number
    assert res.in_universe("sys", "raw").tolist() == [True, True]
    assert res.shared_mask("sys").tolist() == [True, True]
    # qA under raw: RR 0; under source: 1/2 (d1 at rank 2); qB: 1 under both
    assert res.value("sys", "raw", "RR@5").tolist() == [0.0, 1.0]
    assert res.value("sys", "source", "RR@5").tolist() == [0.5, 1.0]


def _partial() -> Scores:
    """Two systems over turns c:1, c:2 (raw r1, r2), a fact d1 of c:1 and a summary s1 of
    unknown lineage: values under source and canonical are only bounded where s1 is ranked
    (see tests/report/test_card_partial_lineage.py for the hand calculation)."""
    from tiap.memory.store import Uncertainty

    items = [*ITEMS, Item("s1", "summary", (), collection="c", uncertain=Uncertainty())]
    runs = [Run("sys", (Ranking("qA", "sys", ("s1", "r1")), Ranking("qB", "sys", ("s1", "r2")))),
            Run("alt", (Ranking("qA", "alt", ("d1", "r2")), Ranking("qB", "alt", ("r1",))))]
    return rescore(runs, QUERIES, {None: items}, measures="nDCG@2,RR@2,Success@2")


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


def test_the_folder_round_trip_is_byte_identical(tmp_path: Path) -> None:
    import json

    res = _partial()
    assert res.lower, "the fixture must have bounded values"
    res.to_folder(tmp_path / "a")
    back = Scores.from_folder(tmp_path / "a")
    back.to_folder(tmp_path / "b")
    a, b = _files(tmp_path / "a"), _files(tmp_path / "b")
    man_a, man_b = (json.loads(x.pop("manifest.json")) for x in (a, b))
    assert a.keys() == b.keys() and "pairwise.csv" in a and "flip_pairs.csv" in a
    for name in a:
        assert a[name] == b[name], name
    for man in (man_a, man_b):
        man.pop("created", None)
    assert man_a == man_b


def test_analyze_takes_scores_as_it_takes_their_folder(tmp_path: Path) -> None:
    from tiap.sensitivity import analyze

    res = _partial()
    res.to_folder(tmp_path / "rs")
    opts = {"resamples": 50, "seed": 3, "answers": False}
    held = analyze([("d", res)], **opts)
    read = analyze([("d", tmp_path / "rs")], **opts)
    assert held.tables.keys() == read.tables.keys()
    for name, table in read.tables.items():
        if name != "cost":
            assert held.tables[name].rows == table.rows, name


def test_a_shared_summary_over_no_query_is_refused_in_the_api(tmp_path: Path) -> None:
    import pytest

    from tiap.errors import TiapError

    # raw turns only: no derived memory, so canonical holds no query of either system
    items = [it for it in ITEMS if it.kind == "raw"]
    run = Run("sys", (Ranking("qA", "sys", ("r1",)), Ranking("qB", "sys", ("r2",))))
    res = rescore([run], QUERIES, {None: items}, measures="RR@5")
    assert not res.in_universe("sys", "canonical").any()
    with pytest.raises(TiapError) as err:
        write_rescore(res, tmp_path / "rs", shared=True)
    (p,) = err.value.problems
    assert "target(s) 'canonical' define no query" in p.message and p.code == "invalid-value"
    assert not (tmp_path / "rs").exists()
    write_rescore(res, tmp_path / "rs")  # each target's own queries: written
    assert (tmp_path / "rs" / "summary.csv").exists()
