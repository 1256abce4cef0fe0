"""One per-query score model (issue 34): Stage III works on :meth:`Scores.system`, the
per-system view of a :class:`~tiap.scoring.scores.Scores`, whether the scores are held in
memory or read back from their rescore folder; a target size a folder cannot hold (not a
whole number) is a located error, and an empty one stays "not known"."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from tiap.datasets.records import Query
from tiap.errors import TiapError
from tiap.memory.store import Item, Uncertainty
from tiap.runs import Ranking, Run
from tiap.scoring.measures import parse_measure
from tiap.scoring.rescore import rescore
from tiap.scoring.scores import Scores, SystemScores
from tiap.sensitivity.load import load_datasets, read_folder

MEASURES = "nDCG@2,Success@2,Success@1"


def _partial() -> Scores:
    """Turns c:1 and c:2 with raw items r1 and r2, and a summary s1 whose lineage is unknown
    (it may reach either turn). qA asks about c:1, qB about c:2; both rank s1, r1."""
    items = [Item("r1", "raw", ("c:1",), collection="c"),
             Item("r2", "raw", ("c:2",), collection="c"),
             Item("s1", "summary", (), collection="c", uncertain=Uncertainty())]
    queries = [Query("qA", "c", "?", None, "", ("c:1",)),
               Query("qB", "c", "?", None, "", ("c:2",))]
    run = Run("sys", (Ranking("qA", "sys", ("s1", "r1")), Ranking("qB", "sys", ("s1", "r1"))))
    return rescore([run], queries, {None: items}, measures=MEASURES, tokenizer="none")


def _same(a: SystemScores, b: SystemScores) -> None:
    def arrays(x: object, y: object) -> None:
        assert np.array_equal(np.asarray(x), np.asarray(y), equal_nan=True)

    for field in ("values", "lower", "upper", "flip_pairs", "inferred"):
        x, y = getattr(a, field), getattr(b, field)
        assert list(x) == list(y), field
        for key in x:
            arrays(x[key], y[key])
    assert list(a.sizes) == list(b.sizes)
    for t in a.sizes:
        arrays(a.sizes[t][0], b.sizes[t][0])
        arrays(a.sizes[t][1], b.sizes[t][1])
    assert dict(a.report) == dict(b.report)


def test_the_view_of_scores_and_of_their_folder_agree(tmp_path: Path) -> None:
    """By hand, over the universe (qZ, qA, qB), qZ not scored (NaN throughout):
    Raw nDCG@2: qA credits r1 at rank 2 of one group: 1/log2 3; qB credits nothing: 0.
    Source nDCG@2: s1 at rank 1 may be credited: qA [1/log2 3, 1], qB [0, 1], value NaN.
    Source vs Canonical at k = 1: s1 is credited under both or neither, so neither query
    flips (0, 0), though each target's bounds leave its top-1 open; at k = 2 qB's hit is s1
    under both (0), qA's Source hit is r1 for sure while Canonical's may be s1 (open: -1)."""
    scores = _partial()
    scores.to_folder(tmp_path / "r")
    back = read_folder(tmp_path / "r").scores
    universe = ("qZ", "qA", "qB")
    view = scores.system("sys", universe)
    _same(view, back.system("sys", universe))
    ndcg = parse_measure("nDCG@2")
    assert view.get("raw", ndcg)[1:].tolist() == pytest.approx([1 / math.log2(3), 0.0])
    assert math.isnan(view.get("raw", ndcg)[0])
    lo, hi = view.interval("source", ndcg)
    assert np.isnan(view.get("source", ndcg)).all()
    assert lo[1:].tolist() == pytest.approx([1 / math.log2(3), 0.0])
    assert hi[1:].tolist() == pytest.approx([1.0, 1.0])
    assert view.flip_pairs[("source", "canonical", 1)].tolist() == [-1, 0, 0]
    assert view.flip_pairs[("source", "canonical", 2)].tolist() == [-1, -1, 0]
    # Stage III's dataset holds the same view, from memory and from the folder
    held, = load_datasets([scores])
    read, = load_datasets([tmp_path / "r"])
    _same(held.systems["sys"], read.systems["sys"])
    assert held.query_ids == read.query_ids == ("qA", "qB")


def test_a_query_outside_the_universe_is_refused() -> None:
    with pytest.raises(ValueError, match="not in the universe"):
        _partial().system("sys", ("qA",))


def _sizes(folder: Path, row: str) -> Path:
    lines = (folder / "target_sizes.csv").read_text(encoding="utf-8").splitlines()
    assert lines[1].startswith("sys,raw,qA,")
    lines[1] = row
    (folder / "target_sizes.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder / "target_sizes.csv"


def test_a_size_that_is_not_a_whole_number_is_a_located_error(tmp_path: Path) -> None:
    _partial().to_folder(tmp_path / "r")
    path = _sizes(tmp_path / "r", "sys,raw,qA,1.5,1")
    with pytest.raises(TiapError) as exc:
        Scores.from_folder(tmp_path / "r")
    err = exc.value.problems[0]
    assert (err.file, err.line, err.query_id, err.code) == (str(path), 2, "qA",
                                                             "invalid-value")
    assert "n_groups must be a whole number, got '1.5'" in str(exc.value)


def test_an_empty_size_stays_not_known(tmp_path: Path) -> None:
    """An empty n_groups (the lineage does not determine it) is read back as not known: the
    view's NaN and an empty cell when the scores are written again, never 0."""
    _partial().to_folder(tmp_path / "r")
    _sizes(tmp_path / "r", "sys,raw,qA,,1")
    back = Scores.from_folder(tmp_path / "r")
    g, mem = back.system("sys").sizes["raw"]
    assert math.isnan(g[0]) and mem[0] == 1.0
    assert ("sys", "raw", "qA", None, None) in list(back.target_size_rows())
