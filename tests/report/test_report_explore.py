"""The report as something to explore, at scale and under partial lineage: the per-query
data is one JSON block however many queries there are, long tables keep their first rows in
the page and the rest in JSON, a bounded mean is drawn as its range (never dropped), and
the cost plot's labels never overlap."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from tiap.cli.main import main
from tiap.memory.store import Item, Uncertainty
from tiap.report import plots
from tiap.report.build import HTML_LIMIT, _bar
from tiap.report.load import load_sensitivity_dirs

pytest.importorskip("matplotlib")


def _jsonl(path: Path, rows: list[dict]) -> Path:  # type: ignore[type-arg]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _query_data(html: str) -> list[dict]:  # type: ignore[type-arg]
    blocks = re.findall(r'<script type="application/json" id="tiap-query-data">(.*?)</script>',
                        html, re.DOTALL)
    assert len(blocks) == 1
    return json.loads(blocks[0])


def test_500_queries_one_json_block_and_a_bounded_dom(tmp_path: Path) -> None:
    """500 queries in 25 categories, 2 systems: the per-query data is there once, for every
    query; no table puts more than HTML_LIMIT rows in the page (the long category table
    keeps the rest in its JSON block, all of them)."""
    n, cats = 500, 25
    items, queries = [], []
    for i in range(n):
        items += [Item(f"t{i}", "raw", (f"u{i}",), text=f"turn {i}").to_json(),
                  Item(f"f{i}", "fact", (f"u{i}",), text=f"fact {i}").to_json()]
        queries.append({"query_id": f"q{i}", "question": f"question {i}?", "answer": str(i),
                        "category": f"c{i % cats}", "evidence": [f"u{i}"]})
    runs = {"A": [{"query_id": f"q{i}", "ranking": [f"t{i}", f"f{(i + 1) % n}", f"f{i}"]}
                  for i in range(n)],
            "B": [{"query_id": f"q{i}", "ranking": [f"f{i}"] + [f"t{i}"] * (i % 2)}
                  for i in range(n)]}
    args = ["rescore", "--items", str(_jsonl(tmp_path / "items.jsonl", items)), "--queries",
            str(_jsonl(tmp_path / "queries.jsonl", queries)), "--measures", "nDCG@3,Success@1",
            "--out", str(tmp_path / "rescore")]
    for name, rows in runs.items():
        args += ["--run", f"{name}={_jsonl(tmp_path / f'{name}.jsonl', rows)}"]
    assert main(args) == 0
    assert main(["sensitivity", f"big={tmp_path / 'rescore'}", "--out", str(tmp_path / "sens"),
                 "--resamples", "50"]) == 0
    assert main(["report", str(tmp_path / "sens"), "--out", str(tmp_path / "report")]) == 0
    html = (tmp_path / "report" / "index.html").read_text(encoding="utf-8")
    [rec] = _query_data(html)
    assert len(rec["queries"]) == n and rec["systems"] == ["A", "B"]
    q7 = next(q for q in rec["queries"] if q["id"] == "q7")
    # B ranks f7, t7 for q7: raw's group {t7} at 2, source's {f7, t7} at 1 and 2 (items
    # listed as first met: raw's first; kinds by index, raw first)
    assert q7["g"][1]["i"] == [[2, "t7", 0], [1, "f7", 1]]
    assert q7["g"][1]["t"] == [[[0, 1, [0]]], [[0, 2, [1, 0]]], [[0, 1, [1]]]]
    assert q7["ev"] == ["u7"] and q7["et"] == ["turn 7"]
    bodies = re.findall(r'<table class="t" id="([^"]+)">(.*?)</table>', html, re.DOTALL)
    assert bodies
    for name, body in bodies:
        assert body.count("<tr") <= HTML_LIMIT + 1, name  # header + at most HTML_LIMIT rows
    assert html.count("<tr") < 1500  # not one row per query anywhere
    long = re.search(r'id="big_category_change">(.*?)</table>.*?<script type="application/json" '
                     r'class="tiap-rows">(.*?)</script>', html, re.DOTALL)
    assert long is not None
    rows = json.loads(long.group(2))["rows"]
    assert len(rows) > HTML_LIMIT and long.group(1).count("<tr") == HTML_LIMIT + 1
    md = (tmp_path / "report" / "tables" / "big_category_change.md").read_text()
    assert len(rows) == md.count("\n| ") - 1  # every row of the table, not only those shown


def test_bounded_means_are_drawn_as_ranges(tmp_path: Path) -> None:
    """Turns c:1, c:2 (raw r1, r2) and a summary s1 of unknown origin (it may reach any
    unit), ranked first by sys for qA (about c:1) and qB (about c:2), r1 second.

    By hand, nDCG@2 under Source: qA is 1 if s1 is in c:1's family, else r1 at rank 2 earns
    1/log2(3) = 0.6309; qB is 1 if s1 is in c:2's, else 0 (r2 is not ranked). The mean is
    bounded by [(0.6309 + 0) / 2, 1] = [0.3155, 1]: the bar is that range, and the
    per-query view has qA's interval and s1 at rank 1 as possibly credited."""
    items = [Item("r1", "raw", ("c:1",), collection="c", text="one").to_json(),
             Item("r2", "raw", ("c:2",), collection="c", text="two").to_json(),
             Item("s1", "summary", (), collection="c", uncertain=Uncertainty()).to_json()]
    queries = [{"query_id": "qA", "collection": "c", "question": "a?", "evidence": ["c:1"]},
               {"query_id": "qB", "collection": "c", "question": "b?", "evidence": ["c:2"]}]
    run = [{"query_id": q, "ranking": ["s1", "r1"]} for q in ("qA", "qB")]
    assert main(["rescore", "--items", str(_jsonl(tmp_path / "items.jsonl", items)),
                 "--queries", str(_jsonl(tmp_path / "queries.jsonl", queries)),
                 "--run", f"sys={_jsonl(tmp_path / 'run.jsonl', run)}",
                 "--measures", "nDCG@2,Success@2", "--out", str(tmp_path / "rs")]) == 0
    assert main(["sensitivity", f"d={tmp_path / 'rs'}", "--out", str(tmp_path / "sens"),
                 "--resamples", "20"]) == 0
    [sd] = load_sensitivity_dirs([tmp_path / "sens"])
    [row] = sd.rows("system_means", "d", system="sys", target="source", measure="nDCG@2")
    bar = _bar(row, None)
    assert bar is not None and bar.mean is None
    assert bar.lower == pytest.approx((1 / math.log2(3)) / 2) and bar.upper == pytest.approx(1)
    png = plots.bars("t", ["sys"], {"source": [bar]}, "nDCG@2")
    assert png[:4] == b"\x89PNG"
    assert main(["report", str(tmp_path / "sens"), "--out", str(tmp_path / "report")]) == 0
    html = (tmp_path / "report" / "index.html").read_text(encoding="utf-8")
    assert "a hatched range from its lower to its upper bound" in html
    [rec] = _query_data(html)
    qa = next(q for q in rec["queries"] if q["id"] == "qA")
    source = rec["targets"].index("source")
    assert qa["v"][0][source][rec["measures"].index("nDCG@2")] == [0.6309, 1]
    assert qa["u"] == [[[1, "s1"]]]  # sys: s1 at rank 1, origin unknown


def test_cost_labels_never_overlap() -> None:
    """Four systems at nearly one point (LoCoMo's f5 and f8 differ by 3 tokens): every pair
    of label boxes is apart."""
    pts = [(100.0, 50.0, 40.0), (101.0, 50.2, 40.0), (100.5, 49.9, 40.0), (300.0, 50.0, 40.0)]
    boxes = [(x, y, x + w, y + 10.0) for (x, y), (_, _, w) in
             zip(plots.place_labels(pts), pts, strict=True)]
    for i, a in enumerate(boxes):
        for b in boxes[i + 1:]:
            assert a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] + 1e-9 or b[3] <= a[1] + 1e-9


def test_latency_column_only_where_a_run_records_latency(tmp_path: Path) -> None:
    """No run records latency: the cost table has no latency column, and says so once.
    One run records it: the column is there, "–" for the run without (not zero)."""
    items = [Item("t1", "raw", ("u1",), text="one two").to_json()]
    queries = [{"query_id": "q1", "question": "?", "evidence": ["u1"]}]
    _jsonl(tmp_path / "items.jsonl", items)
    _jsonl(tmp_path / "queries.jsonl", queries)
    for with_latency in (False, True):
        out = tmp_path / f"lat{int(with_latency)}"
        out.mkdir()
        a = [{"query_id": "q1", "ranking": ["t1"], **({"latency_ms": 12.5} if with_latency
                                                        else {})}]
        b = [{"query_id": "q1", "ranking": ["t1"]}]
        assert main(["rescore", "--items", str(tmp_path / "items.jsonl"), "--queries",
                     str(tmp_path / "queries.jsonl"), "--measures", "nDCG@1",
                     "--run", f"A={_jsonl(out / 'a.jsonl', a)}",
                     "--run", f"B={_jsonl(out / 'b.jsonl', b)}", "--out", str(out / "rs")]) == 0
        assert main(["sensitivity", f"d={out / 'rs'}", "--out", str(out / "sens"),
                     "--resamples", "20"]) == 0
        assert main(["report", str(out / "sens"), "--out", str(out / "report")]) == 0
        md = (out / "report" / "tables" / "d_cost.md").read_text()
        head = next(ln for ln in md.splitlines() if ln.startswith("| system"))
        if with_latency:
            assert head.endswith("| latency ms (mean / median / p95) |")
            assert "| A | 1 | 1 | 2 | 2 | 2 | 12.5 / 12.5 / 12.5 (1) |" in md
            assert md.count("| – |") >= 1 and "no latency recorded" not in md
        else:
            assert "latency ms" not in head and md.count("no latency recorded") == 1


def test_unreachable_inputs_are_said_not_filled_in(tmp_path: Path) -> None:
    """The store changed after the rescoring: the view keeps the values (from
    per_query.csv) and says why it shows no ranks; the rescore folder gone: it says that."""
    items = [Item("t1", "raw", ("u1",), text="one").to_json()]
    queries = [{"query_id": "q1", "question": "?", "evidence": ["u1"]}]
    store = _jsonl(tmp_path / "items.jsonl", items)
    run = [{"query_id": "q1", "ranking": ["t1"]}]
    assert main(["rescore", "--items", str(store), "--queries",
                 str(_jsonl(tmp_path / "queries.jsonl", queries)), "--measures", "RR@5",
                 "--run", f"A={_jsonl(tmp_path / 'a.jsonl', run)}",
                 "--out", str(tmp_path / "rs")]) == 0
    assert main(["sensitivity", f"d={tmp_path / 'rs'}", "--out", str(tmp_path / "sens"),
                 "--resamples", "20"]) == 0
    store.write_text(store.read_text() + json.dumps(
        Item("t2", "raw", ("u2",), text="two").to_json()) + "\n")
    assert main(["report", str(tmp_path / "sens"), "--out", str(tmp_path / "r1")]) == 0
    [rec] = _query_data((tmp_path / "r1" / "index.html").read_text())
    [q] = rec["queries"]
    assert q["v"] == [[[1], [1], [None]]] and q["g"] == [None]  # canonical: no member
    assert len(rec["notes"]) == 1 and "A: ranks not shown:" in rec["notes"][0]
    assert "items.jsonl" in rec["notes"][0] and "sha256" in rec["notes"][0]
    (tmp_path / "rs" / "per_query.csv").rename(tmp_path / "moved.csv")
    assert main(["report", str(tmp_path / "sens"), "--out", str(tmp_path / "r2")]) == 0
    [rec] = _query_data((tmp_path / "r2" / "index.html").read_text())
    assert rec["queries"] == [] and "rescore folder" in rec["notes"][0]


@pytest.mark.parametrize("partial", [False, True])
def test_preloaded_inputs_give_the_same_report(tmp_path: Path, partial: bool) -> None:
    """A caller that holds what the rescoring read (and its result) passes it as
    ``preloaded``: the report is byte for byte the one that reads the files, and it reads
    none of them (they are moved away here; read again, their ranks would be missing).
    ``partial``: a summary of unknown origin, ranked first by A, is shown as possibly
    credited either way (the held store's lineage is then built, not skipped)."""
    import tiap
    from tiap.datasets.queryfile import read_queries
    from tiap.memory.store import read_store
    from tiap.runs import read_run
    from tiap.scoring.folder import read_per_query

    n = 12
    items, queries = [], []
    for i in range(n):
        items += [Item(f"t{i}", "raw", (f"u{i}",), text=f"turn {i}").to_json(),
                  Item(f"f{i}", "fact", (f"u{i}",), text=f"fact {i}").to_json()]
        queries.append({"query_id": f"q{i}", "question": f"question {i}?", "answer": str(i),
                        "evidence": [f"u{i}"]})
    runs = {"A": [{"query_id": f"q{i}", "ranking": [f"t{i}", f"f{(i + 1) % n}", f"f{i}"]}
                  for i in range(n)],
            "B": [{"query_id": f"q{i}", "ranking": [f"f{i}", f"t{(i + i % 3) % n}"]}
                  for i in range(n)]}
    if partial:
        items.append(Item("s1", "summary", (), uncertain=Uncertainty()).to_json())
        for row in runs["A"]:
            row["ranking"].insert(0, "s1")
    ipath = _jsonl(tmp_path / "items.jsonl", items)
    qpath = _jsonl(tmp_path / "queries.jsonl", queries)
    args = ["rescore", "--items", str(ipath), "--queries", str(qpath), "--measures",
            "nDCG@3,Success@1", "--out", str(tmp_path / "rescore")]
    rpaths = {name: _jsonl(tmp_path / f"{name}.jsonl", rows) for name, rows in runs.items()}
    for name, p in rpaths.items():
        args += ["--run", f"{name}={p}"]
    assert main(args) == 0
    assert main(["sensitivity", f"d={tmp_path / 'rescore'}", "--out", str(tmp_path / "sens"),
                 "--resamples", "50"]) == 0
    tiap.build_report([tmp_path / "sens"], tmp_path / "read")
    store, qs = read_store(ipath), read_queries(qpath)
    held_runs = {name: read_run(p, system=name) for name, p in rpaths.items()}
    rdir = tmp_path / "rescore"
    man = json.loads((rdir / "manifest.json").read_text())
    result = tiap.rescore([r for rs in held_runs.values() for r in rs], qs, store,
                          measures="nDCG@3,Success@1")
    preloaded = {ipath.resolve(): store, qpath.resolve(): qs,
                 **{p.resolve(): held_runs[name] for name, p in rpaths.items()},
                 (rdir / "per_query.csv").resolve(): read_per_query(
                     rdir / "per_query.csv", man, rdir / "manifest.json"),
                 rdir.resolve(): result}
    (tmp_path / "away").mkdir()
    for p in (ipath, *rpaths.values()):
        p.rename(tmp_path / "away" / p.name)
    tiap.build_report([tmp_path / "sens"], tmp_path / "held", preloaded=preloaded)
    tiap.build_report([tmp_path / "sens"], tmp_path / "missing")
    read, held = (tmp_path / "read" / "index.html").read_bytes(), (
        tmp_path / "held" / "index.html").read_bytes()
    assert held == read
    assert b"ranks not shown" not in held
    [rec] = _query_data(held.decode("utf-8"))
    assert ("u" in rec["queries"][0]) == partial  # s1 at rank 1: possibly credited
    assert b"ranks not shown" in (tmp_path / "missing" / "index.html").read_bytes()
    for f in sorted((tmp_path / "read" / "tables").iterdir()):
        assert (tmp_path / "held" / "tables" / f.name).read_bytes() == f.read_bytes()


def test_score_chart_interval_is_scipy_t_interval() -> None:
    """The score chart's 95% interval is scipy.stats' t interval of the mean, bit for bit
    (computed here by scipy.stats itself; the report uses scipy.special's quantile)."""
    import numpy as np
    from scipy import stats

    rng = np.random.default_rng(7)
    for n in (2, 3, 10, 97, 500):
        for values in (rng.random(n), np.round(rng.random(n), 1),
                       (rng.random(n) < 0.3).astype(float)):
            if values.std() == 0:
                continue
            bar = _bar({"mean": "0.5"}, values)
            assert bar is not None
            lo, hi = stats.t.interval(0.95, n - 1, loc=float(values.mean()),
                                      scale=float(stats.sem(values)))
            assert (bar.ci_low, bar.ci_high) == (float(lo), float(hi))
