"""``tiap rescore --qrels``: one target per TREC qrels file, read column-wise.

Checked three ways on small random runs: against pytrec_eval (trec_eval), against the
lineage path (``--items/--queries`` with a store whose Raw target reproduces the qrels), and
by hand for the query universe and the zero-target reasons.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import numpy as np
import pytest

from tiap.cli.main import main
from tiap.errors import TiapError
from tiap.runs import read_qrels, read_run_columnar
from tiap.scoring.folder import write_per_query_csv
from tiap.scoring.rescore import rescore_qrels

pytrec_eval = pytest.importorskip("pytrec_eval")
pytest.importorskip("pyarrow")

TOL = 1e-9


def _random_files(tmp_path: Path, seed: int = 0, n_queries: int = 60,
                  graded: bool = False) -> tuple[Path, dict[str, Path]]:
    """A run (strictly decreasing scores) and three qrels files with every case of
    interest: queries a file does not judge, queries judged only rel=0, relevant ids never
    ranked, judged queries the run does not rank, ranked queries nobody judges."""
    rng = np.random.default_rng(seed)
    lines = []
    for q in range(n_queries):
        if q % 17 == 3:
            continue  # judged (below), not ranked
        depth = int(rng.integers(1, 40))
        for rank, d in enumerate(rng.choice(300, depth, replace=False), start=1):
            lines.append(f"q{q} Q0 d{d} {rank} {depth - rank + 1} sys\n")
    lines.append("q999 Q0 d1 1 1 sys\n")  # nobody judges q999
    run = tmp_path / "run.trec"
    run.write_text("".join(lines))
    qrels = {}
    for t in range(3):
        out = []
        for q in range(n_queries):
            if rng.random() < 0.15:
                continue  # not judged by this file
            n_rel = int(rng.integers(1, 12))
            for d in rng.choice(300, n_rel, replace=False):
                rel = int(rng.integers(0, 4)) if graded else int(rng.random() < 0.9)
                out.append(f"q{q} 0 d{d} {rel}\n")
        path = tmp_path / f"t{t}.qrels"
        path.write_text("".join(out))
        qrels[f"t{t}"] = path
    return run, qrels


def _trec_eval(run: Path, qrels: Path, k: int) -> dict[str, dict[str, float]]:
    """trec_eval's values at cutoff k; RR from the run truncated to k."""
    with open(run) as fh:
        parsed = pytrec_eval.parse_run(fh)
    with open(qrels) as fh:
        judged = pytrec_eval.parse_qrel(fh)
    top = {q: dict(sorted(d.items(), key=lambda x: -x[1])[:k]) for q, d in parsed.items()}
    measures = {f"ndcg_cut.{k}", f"recall.{k}", f"success.{k}"}
    full = pytrec_eval.RelevanceEvaluator(judged, measures).evaluate(parsed)
    rr = pytrec_eval.RelevanceEvaluator(judged, {"recip_rank"}).evaluate(top)
    return {q: {f"nDCG@{k}": v[f"ndcg_cut_{k}"], f"R@{k}": v[f"recall_{k}"],
                f"Success@{k}": v[f"success_{k}"], f"RR@{k}": rr[q]["recip_rank"]}
            for q, v in full.items()}


@pytest.mark.parametrize("graded", [False, True])
def test_equals_trec_eval(tmp_path: Path, graded: bool) -> None:
    run_path, qrels_paths = _random_files(tmp_path, seed=1, graded=graded)
    run = read_run_columnar(run_path)[0]
    qrels = {n: read_qrels(p) for n, p in qrels_paths.items()}
    credits = ("set",) if graded else ("set", "group")
    for k in (1, 5, 10, 60):
        measures = f"nDCG@{k},R@{k},RR@{k},Success@{k}"
        results = [rescore_qrels([run], qrels, measures=measures, credit=c) for c in credits]
        for name, path in qrels_paths.items():
            expected = _trec_eval(run_path, path, k)
            for res in results:
                qids = res.query_ids["sys"]
                for m in res.measures:
                    values = dict(zip(qids, res.value("sys", name, m).tolist(), strict=True))
                    for q, v in values.items():
                        if q in expected and not math.isnan(v):
                            assert abs(v - expected[q][str(m)]) <= TOL, (name, q, m)
                    # trec_eval scores exactly the judged queries with a relevant id that
                    # the run ranks (a query judged only rel=0 is 0 there, NaN here)
                    defined = {q for q, v in values.items() if not math.isnan(v)}
                    relevant = {q for q, d in qrels[name].as_dict().items()
                                if any(r > 0 for r in d.values())}
                    assert defined == relevant & set(qids)
        if not graded:  # group credit over one-item groups is set credit
            for key, v in results[0].values.items():
                np.testing.assert_array_equal(v, results[1].values[key])


def test_universe_and_reasons(tmp_path: Path) -> None:
    run_path = tmp_path / "r.trec"
    run_path.write_text("q1 Q0 a 1 3 s\nq1 Q0 b 2 2 s\nq2 Q0 c 1 1 s\nq9 Q0 a 1 1 s\n")
    (tmp_path / "x.qrels").write_text("q1 0 b 1\nq1 0 z 1\nq2 0 c 0\nq3 0 a 1\n")
    (tmp_path / "y.qrels").write_text("q1 0 a 1\n")
    run = read_run_columnar(run_path)[0]
    qrels = {n: read_qrels(tmp_path / f"{n}.qrels") for n in ("x", "y")}
    res = rescore_qrels([run], qrels, measures="nDCG@2,R@2,RR@2")
    assert res.query_ids["s"] == ("q1", "q2")  # run order; q9 judged by nobody, q3 not ranked
    # q1 under x: R = {b, z}; b at rank 2 -> DCG 1/log2(3), IDCG 1 + 1/log2(3); R = 1/2
    d2 = 1 / math.log2(3)
    assert res.value("s", "x", "nDCG@2")[0] == pytest.approx(d2 / (1 + d2))
    assert res.value("s", "x", "R@2").tolist()[0] == 0.5
    assert math.isnan(res.value("s", "x", "RR@2")[1])  # q2: only rel=0
    assert res.value("s", "y", "RR@2").tolist()[0] == 1.0
    assert dict(res.zero_reasons[("s", "x")]) == {
        "q2": "only non-relevant judgments (rel <= 0) in qrels 'x'"}
    assert dict(res.zero_reasons[("s", "y")]) == {"q2": "no judgment in qrels 'y'"}
    assert dict(res.zero_codes[("s", "x")]) == {"q2": "no_members"}
    assert dict(res.zero_codes[("s", "y")]) == {"q2": "no_evidence"}
    rep = res.reports["s"]
    assert rep.not_in_queries_file == ("q9",) and rep.not_in_run == ("q3",)
    assert "not in the qrels files" in " ".join(rep.warnings())
    zero = rescore_qrels([run], qrels, measures="R@2", missing="zero")
    assert zero.query_ids["s"] == ("q1", "q2", "q3")
    assert zero.value("s", "x", "R@2").tolist()[2] == 0.0  # q3 scored as an empty ranking
    sizes = list(res.target_size_rows())
    assert ("s", "x", "q1", 2, 2) in sizes and ("s", "x", "q2", 0, 0) in sizes


def test_graded_needs_set_credit(tmp_path: Path) -> None:
    run_path, qrels_paths = _random_files(tmp_path, graded=True)
    run = read_run_columnar(run_path)[0]
    with pytest.raises(TiapError, match="--credit set"):
        rescore_qrels([run], {"t0": read_qrels(qrels_paths["t0"])})


def test_cli_qrels_equals_the_lineage_path(tmp_path: Path) -> None:
    """A store whose Raw target is the qrels: item d with source unit u_d, a query's
    evidence the units of its relevant ids. Then group credit under Raw scores exactly
    what the qrels path scores."""
    run_path, qrels_paths = _random_files(tmp_path, seed=2)
    qrels = read_qrels(qrels_paths["t0"]).as_dict()
    items = [{"item_id": f"d{d}", "kind": "raw", "sources": [f"u{d}"]} for d in range(300)]
    queries = [{"query_id": q, "question": "?", "answer": "", "category": "c",
                "evidence": [f"u{d[1:]}" for d, r in judged.items() if r > 0]}
               for q, judged in qrels.items()]
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(x) + "\n" for x in items))
    (tmp_path / "queries.jsonl").write_text("".join(json.dumps(x) + "\n" for x in queries))
    common = ["rescore", "--run", str(run_path), "--measures", "nDCG@10,R@10,RR@10,Success@1"]
    assert main([*common, "--out", str(tmp_path / "a"), "--qrels", f"raw={qrels_paths['t0']}"]
                ) == 0
    assert main([*common, "--out", str(tmp_path / "b"), "--items", str(tmp_path / "items.jsonl"),
                 "--queries", str(tmp_path / "queries.jsonl"), "--targets", "raw"]) == 0

    def values(folder: str) -> dict[tuple[str, str], str]:
        with open(tmp_path / folder / "per_query.csv", newline="") as fh:
            return {(r["query_id"], r["measure"]): r["value"] for r in csv.DictReader(fh)}

    a, b = values("a"), values("b")
    assert a.keys() == b.keys() and len(a) > 100
    for key in a:
        assert (a[key] == b[key] == "") or float(a[key]) == pytest.approx(float(b[key]), abs=TOL)
    man = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert man["options"]["targets"] == [{"name": "raw", "qrels": str(qrels_paths["t0"]),
                                          "graded": False}]
    assert "sha256" in man["inputs"]["qrels:raw"]
    assert man["systems"]["sys"]["universe"] == "qrels files"
    for name in ("summary.csv", "pairwise.csv", "zero_targets.csv", "target_sizes.csv",
                 "queries.csv"):
        assert (tmp_path / "a" / name).exists()


def test_cli_option_errors(tmp_path: Path, capsys) -> None:
    run_path, qrels_paths = _random_files(tmp_path)
    out = str(tmp_path / "o")
    rc = main(["rescore", "--run", str(run_path), "--out", out, "--qrels", str(qrels_paths["t0"]),
               "--targets", "raw"])
    assert rc == 2 and "--qrels replaces --targets" in capsys.readouterr().err
    rc = main(["rescore", "--run", str(run_path), "--out", out])
    assert rc == 2 and "missing --items and --queries" in capsys.readouterr().err
    bad = tmp_path / "bad.qrels"
    bad.write_text("q1 0 d1 1\nq1 0 d1 1\n")
    rc = main(["rescore", "--run", str(run_path), "--out", out, "--qrels", f"x={bad}"])
    err = capsys.readouterr().err
    assert rc == 2 and "bad.qrels:2, query q1: item 'd1' is judged twice" in err
    rc = main(["rescore", "--run", str(run_path), "--out", out, "--qrels", str(qrels_paths["t0"]),
               "--qrels", str(qrels_paths["t0"])])
    assert rc == 2 and "two qrels files are named 't0'" in capsys.readouterr().err


def test_per_query_csv_is_csv_writer_output(tmp_path: Path) -> None:
    run_path = tmp_path / "r.trec"
    run_path.write_text('q,1 Q0 a 1 2 s\nq,1 Q0 b 2 1 s\nq"2 Q0 a 1 1 s\nq3 Q0 b 1 1 s\n')
    (tmp_path / "x.qrels").write_text('q,1 0 b 1\nq"2 0 c 1\n')
    res = rescore_qrels([read_run_columnar(run_path)[0]],
                        {"x": read_qrels(tmp_path / "x.qrels")}, measures="nDCG@2,RR@2")
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(("system", "target", "query_id", "measure", "value"))
    for row in res.per_query_rows():
        w.writerow(["" if x is None else (repr(x) if isinstance(x, float) else x) for x in row])
    assert write_per_query_csv(tmp_path / "p.csv", res) == 4
    assert (tmp_path / "p.csv").read_bytes().decode() == buf.getvalue()
