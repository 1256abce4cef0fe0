"""A system with a profile memory of unknown origin at rank 1 appears in every table and
plot with its intervals (issue 36): every sensitivity CSV where its peers appear, every
report table (HTML and Markdown), the target card and the bar chart's data. Before, its
Source and Canonical means were intervals and it dropped out of aggregation, agreement,
design, ranking stability, the per-query deltas and the bar chart, in silence."""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

import tiap
from tiap.report import build_report, flip_summary, plots
from tiap.sensitivity import write_sensitivity

pytest.importorskip("matplotlib")

N = 12
#: Every column of a sensitivity table that names a system (or a configuration).
SYSTEM_COLUMNS = ("system", "system_a", "system_b", "config", "config_a", "config_b")


def _inputs() -> tuple[dict[str, dict[str, list[str]]], list[dict[str, Any]],
                       list[dict[str, Any]]]:
    """12 queries, query q<i> asking about turn c:<i>; each turn has a raw item t<i> and a
    fact f<i>; one profile memory ``prof`` of unknown origin (any unit of collection c).
    A ranks turns first, B facts first, P the profile first for every query."""
    items: list[dict[str, Any]] = []
    queries: list[dict[str, Any]] = []
    for i in range(N):
        items.append({"item_id": f"t{i}", "kind": "raw", "sources": [f"c:{i}"],
                      "collection": "c", "text": f"turn {i}"})
        items.append({"item_id": f"f{i}", "kind": "fact", "sources": [f"c:{i}"],
                      "collection": "c", "text": f"fact {i}"})
        queries.append({"query_id": f"q{i}", "collection": "c", "evidence": [f"c:{i}"],
                        "category": "odd" if i % 2 else "even", "question": "?",
                        "answer": "x"})
    items.append({"item_id": "prof", "kind": "profile", "sources": [], "collection": "c",
                  "text": "user profile", "uncertain": {"possible_sources": "any"}})
    nxt = {i: (i + 1) % N for i in range(N)}
    runs = {
        "A": {f"q{i}": ([f"t{i}", f"t{nxt[i]}", f"f{i}"] if i % 3 else
                        [f"t{nxt[i]}", f"f{i}", f"t{i}"]) for i in range(N)},
        "B": {f"q{i}": ([f"f{i}", f"t{nxt[i]}", f"t{i}"] if i % 4 else
                        [f"t{nxt[i]}", f"t{i}", f"f{i}"]) for i in range(N)},
        "P": {f"q{i}": (["prof", f"t{i}", f"f{i}"] if i % 2 else
                        ["prof", f"f{nxt[i]}", f"t{i}"]) for i in range(N)},
    }
    return runs, queries, items


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("partial")
    runs, queries, items = _inputs()
    scores = tiap.rescore(runs, queries, items, measures="nDCG@10,Success@1,Success@10,RR@10")
    result = tiap.analyze(scores, resamples=200, configs={"grp": ["A", "P"]}, answers=False)
    write_sensitivity(result, tmp / "sens")
    calls: dict[str, list[dict[str, Any]]] = {"bars": [], "forest_plot": [], "design_plot": []}

    def spy(name: str) -> Any:
        real = getattr(plots, name)

        def record(*args: Any, **kwargs: Any) -> bytes:
            calls[name].append({"args": args, "kwargs": kwargs})
            return real(*args, **kwargs)
        return record

    mp = pytest.MonkeyPatch()
    for name in calls:
        mp.setattr(plots, name, spy(name))
    try:
        build_report([tmp / "sens"], tmp / "report")
    finally:
        mp.undo()
    return {"sens": tmp / "sens", "report": tmp / "report", **calls, "notes": result.notes}


# P's nDCG@10 by hand (group credit, one evidence group {c:i} per query, ideal DCG 1):
# odd i ranks [prof, t_i, f_i], even i [prof, f_{i+1}, t_i].
# Raw (prof is not raw): t_i at rank 2 (odd) or 3 (even): 1/log2 3 or 1/log2 4 = 0.5.
# Source: prof may be in c:i (gain at rank 1: 1) or not (as Raw): [raw's value, 1].
# Canonical (not raw): odd: f_i at rank 3 (0.5) or prof at rank 1 (1); even: nothing
# credited but prof: [0, 1].
RAW = (6 / math.log2(3) + 6 * 0.5) / N
BOUNDS = {"raw": (RAW, RAW), "source": (RAW, 1.0), "canonical": ((6 * 0.5) / N, 1.0)}


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_system_means_carry_the_intervals(folders: dict[str, Any]) -> None:
    rows = {r["target"]: r for r in _rows(folders["sens"] / "system_means.csv")
            if r["system"] == "P" and r["measure"] == "nDCG@10"}
    assert float(rows["raw"]["mean"]) == pytest.approx(RAW)
    for t in ("source", "canonical"):
        assert rows[t]["mean"] == ""  # not one number
        lo, hi = BOUNDS[t]
        assert (float(rows[t]["lower"]), float(rows[t]["upper"])) == pytest.approx((lo, hi))


def test_every_sensitivity_table_keeps_the_system(folders: dict[str, Any]) -> None:
    """Wherever a peer (A) is named, P is too; and its intervals are there."""
    checked = []
    for path in sorted(folders["sens"].glob("*.csv")):
        rows = _rows(path)
        cols = [c for c in SYSTEM_COLUMNS if rows and c in rows[0]]
        named = {r[c] for r in rows for c in cols}
        if "A" in named:
            assert "P" in named, path.name
            checked.append(path.name)
    assert {"system_means.csv", "change.csv", "winner_flips.csv", "deltas.csv",
            "category_flips.csv", "design_means.csv", "design_pairwise.csv",
            "agreement.csv", "cost.csv"} <= set(checked)
    # the per-query deltas: P's Δ raw → source only bounded, [0, 1 - value under raw]
    d = [r for r in _rows(folders["sens"] / "deltas.csv")
         if r["system"] == "P" and r["target_1"] == "raw" and r["target_2"] == "source"]
    assert len(d) == N and all(r["delta"] == "" for r in d)
    assert {r["query_id"]: float(r["delta_upper"]) for r in d}["q1"] == pytest.approx(
        1 - 1 / math.log2(3))
    # aggregation names P with its interval; a ranking the intervals leave open says so
    agg = [r for r in _rows(folders["sens"] / "aggregation.csv") if r["measure"] == "nDCG@10"]
    by = {r["scheme"]: r for r in agg if r["subset"] == "common"}
    assert set(by) == {"raw", "source", "canonical", "mean", "min", "max"}
    assert "P=[0.5655, 1.0000]" in by["source"]["means"]  # A 0.8770, B 0.9077: inside
    assert by["source"]["ranking"] == "not determined" and by["raw"]["ranking"] == "A > P > B"
    # agreement: P's hits under Source and Canonical are open: n_agree only bounded
    ag = {r["system"]: r for r in _rows(folders["sens"] / "agreement.csv")
          if r["measure"] == "nDCG@10"}
    assert ag["P"]["n_agree"] == "" and int(ag["P"]["n_agree_lower"]) < int(
        ag["P"]["n_agree_upper"])
    # design: the group compares A and P under every target, P's means bounded
    dm = [r for r in _rows(folders["sens"] / "design_means.csv")
          if r["measure"] == "nDCG@10" and r["config"] == "P"]
    assert {r["target"] for r in dm} == {"raw", "source", "canonical"}
    src = next(r for r in dm if r["target"] == "source")
    assert src["mean"] == "" and float(src["upper"]) == pytest.approx(1.0)
    # ranking stability ranks all three systems and says the statistics are not determined
    rs = [r for r in _rows(folders["sens"] / "ranking_stability.csv")
          if r["measure"] == "nDCG@10"]
    assert {r["n_systems"] for r in rs} == {"3"}
    assert rs[0]["kendall_tau"] == ""
    assert any("ranking_stability nDCG@10 raw → source: not determined (P:" in n
               for n in folders["notes"])


def test_a_flip_decided_on_an_interval_is_not_determined(folders: dict[str, Any]) -> None:
    # A - P under Raw: 0.8333 - 0.5655 > 0; under Source A 0.8770 against P [0.5655, 1]:
    # the gap straddles 0, so whether the winner flips depends on the profile's lineage
    row = next(r for r in _rows(folders["sens"] / "winner_flips.csv")
               if (r["measure"], r["system_a"], r["system_b"], r["target_1"], r["target_2"])
               == ("nDCG@10", "A", "P", "raw", "source"))
    assert row["flip"] == "false" and row["winner_2"] == "not determined"
    md = (folders["report"] / "tables" / "scores_winner_flips.md").read_text(encoding="utf-8")
    line = next(ln for ln in md.splitlines() if ln.startswith("| A vs P | raw → source |"))
    assert line.rstrip(" |").endswith("not determined")
    assert "Flip not determined (" in md
    card = (folders["report"] / "target_card.md").read_text(encoding="utf-8")
    assert "not determined by the lineage" in card


def _html_tables(html: str) -> list[list[str]]:
    """The cells of every table of the page."""
    return [re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", t, flags=re.DOTALL)
            for t in re.findall(r"<table.*?</table>", html, flags=re.DOTALL)]


def _names(cells: list[str]) -> set[str]:
    out: set[str] = set()
    for c in cells:
        text = re.sub(r"<[^>]+>", "", c)
        out |= set(re.findall(r"\b[ABP]\b", text))
    return out


def test_every_report_table_keeps_the_system(folders: dict[str, Any]) -> None:
    rep = folders["report"]
    html = (rep / "index.html").read_text(encoding="utf-8")
    tables = _html_tables(html)
    with_a = [cells for cells in tables if "A" in _names(cells)]
    assert len(with_a) >= 12
    for cells in with_a:
        assert "P" in _names(cells), cells[:12]
    for path in sorted((rep / "tables").glob("*.md")):
        text = path.read_text(encoding="utf-8")
        body = "\n".join(ln for ln in text.splitlines() if ln.startswith("|"))
        if re.search(r"\bA\b", body):
            assert re.search(r"\bP\b", body), path.name
    scores = (rep / "tables" / "scores_scores.md").read_text(encoding="utf-8")
    # the comparison table: P's bounded means as intervals (never bold, no superscript)
    assert "| c | P | 0.565 | [0.565, 1.000] | [0.250, 1.000] |" in scores
    # what a table still leaves out, it says, counted
    rs = (rep / "tables" / "scores_ranking_stability.md").read_text(encoding="utf-8")
    assert "Left out or not determined (3): raw → source: the statistics" in rs
    agg = (rep / "tables" / "scores_aggregation.md").read_text(encoding="utf-8")
    assert "P=[0.5655, 1.0000]" in agg and "| not determined |" in agg
    assert "Left out or not determined (1): the rankings on the agreement subset" in agg


def test_the_card_and_the_bar_chart_keep_the_intervals(folders: dict[str, Any]) -> None:
    card = (folders["report"] / "target_card.md").read_text(encoding="utf-8")
    assert ("| P | 0.5655 (n 12) | [0.5655, 1.0000] (n 12, 0 exact) | [0.2500, 1.0000] "
            "(n 12, 0 exact) | 12 (0 exact) |") in card
    [call] = [c for c in folders["bars"] if "nDCG@10" in c["args"][0]]
    title, systems, series, ylabel = call["args"]
    i = list(systems).index("P")
    assert series["raw"][i].mean == pytest.approx(RAW)
    for t in ("source", "canonical"):
        bar = series[t][i]
        assert bar.mean is None  # no single mean: the interval instead, drawn as a range
        assert (bar.lower, bar.upper) == pytest.approx(BOUNDS[t])
    # every other system's mean is exact
    assert all(b.mean is not None for t in series for j, b in enumerate(series[t]) if j != i)


def test_the_terminal_summary_counts_the_open_flips(folders: dict[str, Any]) -> None:
    """audit-run's flip summary counts the pairs whose flip the lineage leaves open: gap
    intervals of opposite possible signs, not a flip under every lineage."""
    def open_(r: dict[str, str]) -> bool:
        lo1, hi1, lo2, hi2 = (float(r[k]) for k in ("gap_1_lower", "gap_1_upper",
                                                    "gap_2_lower", "gap_2_upper"))
        return r["flip"] == "false" and ((hi1 > 0 > lo2) or (lo1 < 0 < hi2))

    expected = sum(open_(r) for r in _rows(folders["sens"] / "winner_flips.csv"))
    assert expected > 0
    assert flip_summary(folders["sens"]).undetermined == expected
    card = json.loads((folders["report"] / "target_card.json").read_text(encoding="utf-8"))
    ds = card["datasets"][0]
    assert sum(ds["undetermined_flips"].values()) == expected
    assert len(ds["winner_flips_not_determined"]) == expected


def test_the_forest_and_design_plots_draw_the_bounded_values(folders: dict[str, Any]) -> None:
    """P's bounded gaps and means reach the plots as ranges, never dropped."""
    [forest] = [c for c in folders["forest_plot"] if "nDCG@10" in c["args"][0]]
    bounded = [e for e in forest["args"][1] if e[2] is None]
    assert bounded and all(len(e) == 7 and "P" in e[0] and e[5] < e[6] for e in bounded)
    # every pair with P under source or canonical is bounded; under raw its gaps are exact
    assert {e[1] for e in bounded} <= {"source", "canonical"}
    [design] = [c for c in folders["design_plot"] if "nDCG@10" in c["args"][0]]
    _, configs, by_target = design["args"]
    i = list(configs).index("P")
    assert by_target["raw"][i] == pytest.approx(RAW)
    for t in ("source", "canonical"):
        assert by_target[t][i] == pytest.approx(BOUNDS[t])  # (lower, upper), as a range

