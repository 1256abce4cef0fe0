"""``order="score"`` (``--order score``): runs read as trec_eval reads them.

The reference is trec_eval itself, through pytrec_eval: its ``parse_run`` reads the file we
wrote (it keeps only each line's query, docno and score), its evaluator sorts every query by
score with its own tie rule, and its nDCG@k, recall@k and reciprocal rank must equal TIAP's
set-credit values to 1e-9. The runs are built here to hold every case the rule decides:
tied scores, equal scores on ids whose string order is not their number order (``9`` >
``10`` > ``100`` as bytes), non-ASCII ids (``é`` > ``z`` as UTF-8 bytes), ``0`` against
``-0.0``, constant rank columns (all 1, all 0), repeated ranks, ranks against the scores,
and queries interleaved in the file. Every route TIAP reads a run by is checked: the
columnar reader's pyarrow path (what ``tiap rescore --qrels`` takes), in one block and in
blocks of a few hundred bytes, its reference route (``read_run``, which ``--items`` /
``--queries`` and every other format take), and the lineage path of the CLI.
"""

from __future__ import annotations

import csv
import json
import math
import random
from pathlib import Path

import numpy as np
import pytest

from tiap.cli.main import main
from tiap.errors import TiapError
from tiap.runs import (
    ColumnarRun,
    columnar,
    read_qrels,
    read_run,
    read_run_columnar,
)
from tiap.runs.formats import id_keys, score_order
from tiap.scoring.rescore import rescore_qrels

pytrec_eval = pytest.importorskip("pytrec_eval")
pytest.importorskip("pyarrow")

TOL = 1e-9
K = (1, 3, 5, 10, 100)
#: ids whose byte order differs from their number order or their letters' case order
IDS = [str(n) for n in (1, 2, 9, 10, 11, 19, 100, 101, 1000)] + [
    "d1", "d2", "d9", "d10", "d100", "D3", "a", "Z", "z", "é", "ÿ", "Ā", "😀", "x-1", "x_1"]
#: few distinct scores, so most queries tie; equal values written differently
SCORES = ["2.5", "2.50", "1", "1.0", "1e0", "0", "0.0", "-0.0", "-0", "-1.5", "7"]


def _rank_column(rng: random.Random, n: int, score_rank: list[int]) -> list[str]:
    """One query's rank column, of a kind chosen at random (none of it is data here)."""
    kind = rng.randrange(6)
    if kind == 0:
        return ["1"] * n  # constant
    if kind == 1:
        return ["0"] * n  # constant, and no 1..n at all
    if kind == 2:
        return [str(rng.randint(1, 3)) for _ in range(n)]  # repeated
    if kind == 3:
        return [str(n - r + 1) for r in score_rank]  # against the scores
    if kind == 4:
        return [str(r) for r in rng.sample(range(1, n + 1), n)]  # 1..n, any order
    return [str(-r) for r in range(n)]  # negative


def _write_run(path: Path, seed: int, n_queries: int = 40) -> Path:
    rng = random.Random(seed)
    lines = []
    for q in range(n_queries):
        depth = rng.randint(1, len(IDS))
        docs = rng.sample(IDS, depth)
        scores = [rng.choice(SCORES) for _ in docs]
        order = sorted(range(depth), key=lambda i: -float(scores[i]))
        score_rank = [order.index(i) + 1 for i in range(depth)]
        ranks = _rank_column(rng, depth, score_rank)
        lines += [f"q{q} Q0 {d} {r} {s} sys\n"
                  for d, r, s in zip(docs, ranks, scores, strict=True)]
    rng.shuffle(lines)  # queries interleaved: the file order decides nothing
    path.write_text("".join(lines), encoding="utf-8")
    return path


def _write_qrels(path: Path, seed: int, graded: bool) -> Path:
    rng = random.Random(seed + 1000)
    lines = []
    for q in range(40):
        if q % 9 == 4:
            continue  # not judged
        for d in rng.sample(IDS, rng.randint(1, 8)):
            rel = rng.randint(0, 3) if graded else int(rng.random() < 0.8)
            lines.append(f"q{q} 0 {d} {rel}\n")
    path.write_text("".join(lines), encoding="utf-8")
    return path


def _trec_eval(run: Path, qrels: Path) -> dict[str, dict[str, float]]:
    """pytrec_eval's values per query: nDCG@k and R@k; RR@k from the full reciprocal rank
    (the first relevant item sits at rank 1 / RR: RR@k is RR when that rank is <= k)."""
    with open(run, encoding="utf-8") as fh:
        parsed = pytrec_eval.parse_run(fh)
    with open(qrels, encoding="utf-8") as fh:
        judged = pytrec_eval.parse_qrel(fh)
    measures = {"recip_rank", *(f"ndcg_cut.{k}" for k in K), *(f"recall.{k}" for k in K)}
    got = pytrec_eval.RelevanceEvaluator(judged, measures).evaluate(parsed)
    out: dict[str, dict[str, float]] = {}
    for q, v in got.items():
        rr = v["recip_rank"]
        first = round(1 / rr) if rr > 0 else math.inf
        row = {}
        for k in K:
            row[f"nDCG@{k}"] = v[f"ndcg_cut_{k}"]
            row[f"R@{k}"] = v[f"recall_{k}"]
            row[f"RR@{k}"] = rr if first <= k else 0.0
        out[q] = row
    return out


MEASURES = ",".join(f"{m}@{k}" for k in K for m in ("nDCG", "R", "RR"))


def _assert_equal(run: ColumnarRun, qrels_path: Path, expected: dict[str, dict[str, float]]
                  ) -> int:
    """TIAP's set-credit values equal trec_eval's on every query both define; returns how
    many values were compared."""
    res = rescore_qrels([run], {"t": read_qrels(qrels_path)}, measures=MEASURES, credit="set")
    compared = 0
    for m in res.measures:
        values = dict(zip(res.query_ids["sys"], res.value("sys", "t", m).tolist(), strict=True))
        for q, v in values.items():
            if math.isnan(v):  # judged only rel <= 0, or not at all: trec_eval's 0 or absent
                assert q not in expected or expected[q][str(m)] == 0.0
                continue
            assert abs(v - expected[q][str(m)]) <= TOL, (q, str(m), v, expected[q][str(m)])
            compared += 1
    return compared


# --------------------------------------------------------------------------------------------
# The differential test


@pytest.mark.parametrize("graded", [False, True])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_score_order_equals_trec_eval_on_every_route(tmp_path: Path, monkeypatch,
                                                     seed: int, graded: bool) -> None:
    run_path = _write_run(tmp_path / "run.trec", seed)
    qrels_path = _write_qrels(tmp_path / "t.qrels", seed, graded)
    expected = _trec_eval(run_path, qrels_path)

    # the rank column as the data: refused, naming the option
    with pytest.raises(TiapError, match="pass --order score"):
        read_run(run_path)

    # the reference reader, and the columnar reader's route through it
    (ref,) = read_run(run_path, order="score")
    assert not ref.warnings  # no score_order / score_ties: the order is the scores'
    routes = {"read_run": ColumnarRun.from_run(ref)}
    with monkeypatch.context() as m:
        m.setattr(columnar, "pyarrow_or_none", lambda: None)
        routes["columnar, reference route"] = read_run_columnar(run_path, order="score")[0]
    # the pyarrow path, whole and in blocks of 300 bytes (queries then span blocks)
    with monkeypatch.context() as m:
        m.setattr(columnar, "read_run", lambda *a, **k: pytest.fail("reference route taken"))
        routes["columnar, pyarrow"] = read_run_columnar(run_path, order="score")[0]
        m.setattr(columnar, "BLOCK_BYTES", 300)
        routes["columnar, pyarrow, small blocks"] = read_run_columnar(run_path,
                                                                      order="score")[0]
    orders = {name: {q: r.ranking(q) for q in r.query_ids} for name, r in routes.items()}
    first = orders["read_run"]
    for name, got in orders.items():
        assert got == first, name
    for name, run in routes.items():
        assert _assert_equal(run, qrels_path, expected) > 300, name


def test_lineage_path_in_score_order_equals_trec_eval(tmp_path: Path) -> None:
    """``tiap rescore --items/--queries --credit set --order score`` (the lineage path reads
    runs with ``read_run``) against a store whose Raw target is the binary qrels: item ``d``
    has the one source unit ``u:d``, a query's evidence the units of its relevant ids."""
    run_path = _write_run(tmp_path / "run.trec", seed=4)
    qrels_path = _write_qrels(tmp_path / "t.qrels", seed=4, graded=False)
    expected = _trec_eval(run_path, qrels_path)
    judged = read_qrels(qrels_path).as_dict()
    items = [{"item_id": d, "kind": "raw", "sources": [f"u:{d}"], "text": f"text {i}"}
             for i, d in enumerate(IDS)]
    queries = [{"query_id": q, "question": "?", "answer": "text", "category": "c",
                "evidence": [f"u:{d}" for d, r in rels.items() if r > 0]}
               for q, rels in judged.items()]
    (tmp_path / "items.jsonl").write_text(
        "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in items), encoding="utf-8")
    (tmp_path / "queries.jsonl").write_text("".join(json.dumps(x) + "\n" for x in queries))
    args = ["rescore", "--run", str(run_path), "--items", str(tmp_path / "items.jsonl"),
            "--queries", str(tmp_path / "queries.jsonl"), "--targets", "raw",
            "--measures", MEASURES, "--credit", "set"]
    assert main([*args, "--out", str(tmp_path / "rank")]) == 2  # refused in rank order
    out = tmp_path / "score"
    assert main([*args, "--order", "score", "--out", str(out)]) == 0
    compared = 0
    with open(out / "per_query.csv", newline="") as fh:
        for r in csv.DictReader(fh):
            if r["value"] == "":
                continue
            assert abs(float(r["value"]) - expected[r["query_id"]][r["measure"]]) <= TOL, r
            compared += 1
    assert compared > 300
    man = json.loads((out / "manifest.json").read_text())
    assert man["options"]["order"] == "score"

    # the later steps re-read the run as the rescoring did (in rank order it is refused)
    from tiap.audit.cases import RescoreDir, load_rescore_inputs

    _stores, _queries, runs, _inputs = load_rescore_inputs(RescoreDir.open(out))
    (run,) = runs
    (ref,) = read_run(run_path, order="score")
    assert [r.item_ids for r in run.rankings] == [r.item_ids for r in ref.rankings]
    assert main(["sensitivity", str(out), "--out", str(tmp_path / "sens"), "--answers",
                 "--resamples", "50"]) == 0


# --------------------------------------------------------------------------------------------
# The rule itself, by hand


def test_ties_break_by_id_descending_as_bytes(tmp_path: Path) -> None:
    # One query, every score 1 but one: '2' scores 2 and leads; the rest tie and go by id,
    # the greater as bytes first: 'é' (C3 A9) > 'z' (7A) > '9' > '2' > '100' > '10'.
    path = tmp_path / "r.trec"
    path.write_text("q Q0 10 1 1 s\nq Q0 9 1 1.0 s\nq Q0 100 1 1 s\nq Q0 2 1 2 s\n"
                    "q Q0 z 1 1 s\nq Q0 é 1 1 s\nq Q0 1 1 1 s\n", encoding="utf-8")
    want = ("2", "é", "z", "9", "100", "10", "1")
    assert read_run(path, order="score")[0].ranking("q").item_ids == want
    assert read_run_columnar(path, order="score")[0].ranking("q") == want
    with open(path, encoding="utf-8") as fh:  # trec_eval agrees: each id's rank is 1 / RR
        parsed = pytrec_eval.parse_run(fh)
    for rank, doc in enumerate(want, start=1):
        ev = pytrec_eval.RelevanceEvaluator({"q": {doc: 1}}, {"recip_rank"})
        assert ev.evaluate(parsed)["q"]["recip_rank"] == pytest.approx(1 / rank)


def test_score_order_function() -> None:
    # scores [1, 3, 1, -0.0, 0.0]; ids ['a', 'b', 'c', 'd', 'e']: 3 first (index 1), then
    # the two 1s with 'c' > 'a', then 0.0 = -0.0 with 'e' > 'd'; padding (-inf) last.
    scores = np.array([[1, 3, 1, -0.0, 0.0, -np.inf]])
    ids = ["a", "b", "c", "d", "e", "a"]
    assert score_order(scores, id_keys(ids)[None, :]).tolist() == [[1, 2, 0, 4, 3, 5]]


def test_dedup_in_score_order(tmp_path: Path) -> None:
    """A repeated id is an error in score order too (trec_eval stops on it; pytrec_eval's
    parse_run refuses it); ``dedup="first"`` keeps its first place in score order, its
    highest score."""
    path = tmp_path / "dup.trec"
    path.write_text("q Q0 a 1 1 s\nq Q0 b 1 2 s\nq Q0 a 1 3 s\n")
    with pytest.raises(TiapError, match="item 'a' appears more than once"):
        read_run(path, order="score")
    with open(path) as fh, pytest.raises(AssertionError):
        pytrec_eval.parse_run(fh)
    (run,) = read_run(path, order="score", dedup="first")
    assert run.ranking("q").item_ids == ("a", "b") and run.ranking("q").scores == (3.0, 2.0)
    assert [w.code for w in run.warnings] == ["duplicate_dropped"]
    (col,) = read_run_columnar(path, order="score", dedup="first")
    assert col.ranking("q") == ("a", "b")


def test_other_formats_in_score_order(tmp_path: Path) -> None:
    """JSONL rankings and ranked-trace rows follow the same rule; a ranking without scores
    cannot be ordered by them: an error naming the option and the query."""
    jsonl = tmp_path / "r.jsonl"
    jsonl.write_text('{"query_id": "q", "system": "s", "ranking": ["10", "9", "2"], '
                     '"scores": [1, 1, 0.5]}\n'
                     '{"query_id": "e", "system": "s", "ranking": []}\n')
    (run,) = read_run(jsonl, order="score")
    assert run.ranking("q").item_ids == ("9", "10", "2")
    assert run.ranking("e").item_ids == ()
    assert read_run(jsonl)[0].ranking("q").item_ids == ("10", "9", "2")  # list order
    rows = tmp_path / "rows.csv"
    rows.write_text("query_id,retrieved_id,rank,score\nq,10,1,1\nq,9,1,1\nq,2,2,3\n")
    assert read_run(rows, order="score")[0].ranking("q").item_ids == ("2", "9", "10")
    with pytest.raises(TiapError, match="pass --order score") as exc:
        read_run(rows)
    assert exc.value.problems[0].line == 3
    unscored = tmp_path / "noscore.csv"
    unscored.write_text("query_id,retrieved_id,rank\nq,a,1\nq,b,1\n")
    with pytest.raises(TiapError) as exc:
        read_run(unscored)
    assert "--order score" not in str(exc.value)  # it would not help: there are no scores
    with pytest.raises(TiapError, match=r"--order score \(order='score'\) orders items by "
                       r"score, but this ranking has no scores") as exc:
        read_run(unscored, order="score")
    assert (exc.value.problems[0].line, exc.value.problems[0].query_id) == (2, "q")
    nolist = tmp_path / "n.jsonl"
    nolist.write_text('{"query_id": "q", "system": "s", "ranking": ["a"]}\n')
    for read in (read_run, read_run_columnar):
        with pytest.raises(TiapError, match="has no scores"):
            read(nolist, order="score")
        with pytest.raises(TiapError, match="order must be 'rank' or 'score'") as exc:
            read(nolist, order="scores")  # type: ignore[arg-type]
        assert exc.value.code == "invalid-value"


def test_rank_order_refusal_is_the_same_on_both_readers(tmp_path: Path, capsys) -> None:
    path = tmp_path / "r.trec"
    path.write_text("q Q0 a 1 2 s\nq Q0 b 1 1 s\nq2 Q0 a 1 1 s\nq2 Q0 b 3 1 s\n")
    texts = []
    for read in (read_run, read_run_columnar):
        with pytest.raises(TiapError) as exc:
            read(path)
        texts.append(str(exc.value))
    assert texts[0] == texts[1]
    assert [p.line for p in exc.value.problems] == [2, 4]
    assert all(p.message.endswith("to order by score as trec_eval does, pass --order score "
                                  "(order='score')") for p in exc.value.problems)
    assert "rank 1 is given twice" in texts[0] and "rank 2 is missing" in texts[0]
    qrels = tmp_path / "t.qrels"
    qrels.write_text("q 0 a 1\n")
    assert main(["rescore", "--run", str(path), "--qrels", f"t={qrels}",
                 "--out", str(tmp_path / "o")]) == 2
    assert "pass --order score" in capsys.readouterr().err
    assert main(["rescore", "--run", str(path), "--qrels", f"t={qrels}", "--order", "x",
                 "--out", str(tmp_path / "o")]) == 2
    assert "--order" in capsys.readouterr().err
