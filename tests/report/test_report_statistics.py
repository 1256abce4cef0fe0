"""The report and the target card state the statistical procedure actually used.

A hand-built dataset: 16 queries, each with one evidence turn ``u_i`` stored as a raw turn
``t_i`` and a fact ``f_i``. System A ranks ``[t_i, f_i]`` everywhere; system B ranks
``[f_i, t_i]`` on the first 12 queries and ``[t_i, f_i]`` on the last 4. Under group credit:

- target ``raw`` credits ``t_i``: A scores nDCG@5 1 and B ``1 / log2(3)`` on the 12 swapped
  queries, so the gap A - B is ``12/16 · (1 - 1/log2 3) = 0.2768`` on nDCG@5 and
  ``12/16 = 0.75`` on Success@1;
- target ``canonical`` credits ``f_i``: the same gaps with the opposite sign (a winner
  flip raw -> canonical on both measures);
- target ``source`` credits both: every system scores 1, gap 0 (no flip with source).

The per-query differences are ``c`` on 12 queries and 0 on 4, so d_z = 0.75 / sqrt(0.2) =
1.68 and the share of queries that move is 0.75. Each measure's winner-flip family has 6
gaps (3 pairs of targets, 2 gaps each): the raw and the canonical gap twice each, with the
same small p-value ``p`` (12 equal differences on the same 16 queries), and the source gap
twice with p = 1, so Benjamini-Hochberg gives the four ``p_adj = 6 p / 4 = 1.5 p``. With
``--min-effect 0.5`` the Success@1 flip (|gaps| 0.75) is a headline and the nDCG@5 flip
(|gaps| 0.277) is significant but below that threshold: reported, never headlined (both
have |d_z| 1.68, past the default d_z threshold 0.2).
"""

from __future__ import annotations

import csv
import json
import math
import re
import shutil
from pathlib import Path

import pytest

from tiap.cli.main import main
from tiap.report import build_report
from tiap.report.render import ci, pval

pytest.importorskip("matplotlib")

N, SWAPPED = 16, 12
NDCG_GAP = SWAPPED / N * (1 - 1 / math.log2(3))  # 0.2768
SUCCESS_GAP = SWAPPED / N  # 0.75
MIN_EFFECT = 0.5


def _jsonl(path: Path, rows: list[dict]) -> Path:  # type: ignore[type-arg]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def flipdemo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tiap.sensitivity import analyze, write_sensitivity

    tmp = tmp_path_factory.mktemp("flipdemo")
    items = [x for i in range(N) for x in (
        {"item_id": f"t{i}", "kind": "raw", "sources": [f"u{i}"], "text": f"turn {i}"},
        {"item_id": f"f{i}", "kind": "fact", "sources": [f"u{i}"], "text": f"fact {i}"})]
    queries = [{"query_id": f"q{i}", "question": f"question {i}?", "answer": "a",
                "category": "single-hop", "evidence": [f"u{i}"]} for i in range(N)]
    run_a = [{"query_id": f"q{i}", "ranking": [f"t{i}", f"f{i}"]} for i in range(N)]
    run_b = [{"query_id": f"q{i}", "ranking": [f"f{i}", f"t{i}"] if i < SWAPPED
              else [f"t{i}", f"f{i}"]} for i in range(N)]
    assert main(["rescore", "--items", str(_jsonl(tmp / "items.jsonl", items)),
                 "--queries", str(_jsonl(tmp / "queries.jsonl", queries)),
                 "--measures", "nDCG@5,Success@1", "--out", str(tmp / "rescore"),
                 "--run", f"A={_jsonl(tmp / 'a.jsonl', run_a)}",
                 "--run", f"B={_jsonl(tmp / 'b.jsonl', run_b)}"]) == 0
    res = analyze([("flipdemo", tmp / "rescore")], seed=0, resamples=2000, correction="bh",
                  min_effect=MIN_EFFECT, answers=False)
    write_sensitivity(res, tmp / "sens")
    build_report([tmp / "sens"], tmp / "report")
    return tmp


def _text(html: str) -> str:
    """The page's visible text, cells separated by `` | ``."""
    html = re.sub(r"<style>.*?</style>", "", html, flags=re.S)
    html = re.sub(r"</t[dh]>", " | ", html)
    html = re.sub(r"</(p|tr|h\d|caption|li|div|figcaption)>", "\n", html)
    import html as h

    return h.unescape(re.sub(r"<[^>]+>", "", html))


def _row(text: str, start: str, *more: str) -> str:
    """The one line that starts with ``start`` and contains every ``more``."""
    hits = [ln for ln in text.splitlines() if ln.startswith(start) and all(m in ln for m in more)]
    assert len(hits) == 1, (start, more, hits)
    return hits[0]


def test_the_data_are_what_the_docstring_says(flipdemo: Path) -> None:
    flips = [r for r in _csv(flipdemo / "sens" / "winner_flips.csv") if r["flip"] == "true"]
    assert {(r["measure"], r["target_1"], r["target_2"]) for r in flips} == {
        ("nDCG@5", "raw", "canonical"), ("Success@1", "raw", "canonical")}
    by = {r["measure"]: r for r in flips}
    assert float(by["nDCG@5"]["gap_1"]) == pytest.approx(NDCG_GAP)
    assert float(by["nDCG@5"]["gap_2"]) == pytest.approx(-NDCG_GAP)
    assert float(by["Success@1"]["gap_1"]) == pytest.approx(SUCCESS_GAP)
    for r in flips:
        assert float(r["effect_1"]) == pytest.approx(0.75 / math.sqrt(0.2))
        assert float(r["moved_1"]) == pytest.approx(0.75)
        assert float(r["p_1_adjusted"]) == pytest.approx(1.5 * float(r["p_1"]))  # BH, 4 of 6
        assert float(r["p_1_adjusted"]) <= 0.05 and float(r["p_2_adjusted"]) <= 0.05


def test_intro_states_correction_and_min_effect(flipdemo: Path) -> None:
    html = (flipdemo / "report" / "index.html").read_text(encoding="utf-8")
    text = _text(html)
    intro = _row(text, "Statistics: every gap")
    assert "paired sign-flip (randomization) test" in intro
    assert "2000 resamples and seed 0" in intro
    assert "Correction: Benjamini-Hochberg over each family at alpha 0.05" in intro
    assert "Holm" not in intro
    assert ("clear the practical threshold, |d_z| ≥ 0.2 and |gap| ≥ 0.5 in the measure's "
            "units on both gaps") in intro
    assert "Cohen (1988) calls 0.2 a small effect" in intro
    assert "reported, never headlined" in intro
    assert "excludes 0 exactly when the adjusted p-value is at most 0.05" in intro
    assert "bootstrap" not in text  # the old procedure is gone from a new folder's page
    assert "1 (1 significant, 0 headline)" in text  # KPI: primary nDCG@5


def test_flip_below_min_effect_is_not_a_headline(flipdemo: Path) -> None:
    text = _text((flipdemo / "report" / "index.html").read_text(encoding="utf-8"))
    flips = {r["measure"]: r for r in _csv(flipdemo / "sens" / "winner_flips.csv")
             if r["flip"] == "true"}
    # primary table: the nDCG@5 flip, |gap| 0.277 < 0.5
    ndcg = _row(text, "A vs B | raw → canonical | 16 | +0.2768")
    cells = [c.strip() for c in ndcg.split(" | ")]
    assert cells[-2] == "significant, below threshold"
    assert "headline" not in ndcg
    assert cells[5] == pval(1.5 * float(flips["nDCG@5"]["p_1"]))  # p adj 1
    assert cells[9] == "+1.68 / -1.68"  # d_z of both gaps
    # other measures: the Success@1 flip, |gap| 0.75 >= 0.5
    succ = _row(text, "Success@1 | A vs B | raw → canonical")
    assert succ.rstrip(" |").endswith("headline")
    # the card
    card = json.loads((flipdemo / "report" / "target_card.json").read_text())
    st = card["statistics"]
    assert st["correction"] == "bh" and st["min_effect"] == MIN_EFFECT and st["alpha"] == 0.05
    assert "Benjamini-Hochberg" in st["correction_method"]
    by = {f["measure"]: f for f in card["datasets"][0]["winner_flips"]}
    assert by["nDCG@5"]["significant_flip"] is True
    assert by["nDCG@5"]["practical"] is False and by["nDCG@5"]["headline"] is False
    assert by["Success@1"]["headline"] is True
    assert by["nDCG@5"]["p_1_adjusted"] == pytest.approx(1.5 * by["nDCG@5"]["p_1"])
    assert by["nDCG@5"]["effect_1"] == pytest.approx(0.75 / math.sqrt(0.2))
    assert by["nDCG@5"]["moved_2"] == pytest.approx(0.75)
    # the one-screen card: the headline flip of the primary measure (nDCG@5: significant,
    # below the threshold), the counts; the long tables in the appendix
    head = (flipdemo / "report" / "target_card.md").read_text()
    assert ("nDCG@5: 1 flip (1 significant, 0 headline); all 2 measures: 2 flips "
            "(2 significant, 1 headline)") in head
    assert "| A vs B | raw → canonical |" not in head  # no headline flip on nDCG@5
    md = (flipdemo / "report" / "target_card_appendix.md").read_text()
    assert "- Correction: **Benjamini-Hochberg** (`bh`" in md
    threshold = "\\|d_z\\| ≥ 0.2 and \\|gap\\| ≥ 0.5 in the measure's units on both gaps"
    assert f"- Practical threshold of a headline: **{threshold}** (min_dz 0.2, min_effect " \
           "0.5 in the measure's units" in md
    assert "2 winner flips, 2 significant after Benjamini-Hochberg at alpha 0.05, 1 headline " \
           f"(practical threshold: {threshold})" in md
    ndcg_md = _row(md, "| nDCG@5 | A vs B |")
    assert ndcg_md.endswith("| yes | no (below threshold) |")
    assert _row(md, "| Success@1 | A vs B |").endswith("| yes | yes |")
    assert ("1 headline (practical threshold: |d_z| ≥ 0.2 and |gap| ≥ 0.5 in the measure's "
            "units on both gaps)") in text  # the card section of the page


def test_ranking_stability_section(flipdemo: Path) -> None:
    text = _text((flipdemo / "report" / "index.html").read_text(encoding="utf-8"))
    assert "Ranking stability" in text
    # A above B under raw, below under canonical: one pair of systems, discordant
    assert _row(text, "raw → canonical | 2 | 16 |").startswith(
        "raw → canonical | 2 | 16 | -1.000 | -1.000 | 1 / 1 | 0 |")
    # under source both score 1: the pair is tied and tau-b undefined
    assert _row(text, "raw → source | 2 | 16 |").startswith("raw → source | 2 | 16 | – |")
    md = (flipdemo / "report" / "tables" / "flipdemo_ranking_stability.md").read_text()
    assert "Kendall τ-b" in md and "τ-AP" in md


def test_wilson_interval_in_change_tables(flipdemo: Path) -> None:
    md = (flipdemo / "report" / "tables.md").read_text()
    assert "changed [95% CI]" in md
    # A changes on all 16 queries raw -> canonical (1 -> 1/log2 3): Wilson lower end
    # n / (n + z^2) at z = 1.96, upper end 1
    z2 = 1.959963984540054 ** 2
    assert f"| A | raw → canonical | 16 | 100.0% [{100 * N / (N + z2):.1f}, 100.0] |" in md
    # and on none raw -> source: 0 with upper end z^2 / (n + z^2)
    assert f"| A | raw → source | 16 | 0.0% [0.0, {100 * z2 / (N + z2):.1f}] |" in md
    assert "| single-hop | A | raw → canonical | 16 | 100.0% [80.6, 100.0] |" in md


def test_category_flips_show_correction_and_mde(flipdemo: Path) -> None:
    md = (flipdemo / "report" / "tables" / "flipdemo_category_flips.md").read_text()
    assert "p adj 1 / 2" in md and "MDE 1 / 2" in md
    assert "(Benjamini-Hochberg)" in md and "\\|gap\\| ≥ 0.5 in the measure's units" in md
    row = _row(md, "| **single-hop** |")
    assert "significant, below threshold" in row and "headline" not in row
    cat = next(r for r in _csv(flipdemo / "sens" / "category_flips.csv")
               if r["flip"] == "true" and r["measure"] == "nDCG@5")
    assert f"{float(cat['mde_1']):.4f} / {float(cat['mde_2']):.4f}" in row


def test_forest_plot_caption_names_the_inverted_test(flipdemo: Path) -> None:
    text = _text((flipdemo / "report" / "index.html").read_text(encoding="utf-8"))
    cap = _row(text, "Gap between two systems under each target")
    assert "inverted sign-flip interval" in cap and "family-adjusted effective level" in cap
    assert "95% paired bootstrap" not in cap


def _strip_new_columns(src: Path, dst: Path, *, legacy_manifest: bool) -> None:
    """A folder as an older ``tiap sensitivity`` wrote it: no ranking table, no new columns
    (and, with ``legacy_manifest``, no correction / min effect in the options)."""
    shutil.copytree(src, dst)
    new = {"p_1_adjusted", "p_2_adjusted", "effect_1", "effect_2", "moved_1", "moved_2",
           "mde_1", "mde_2", "practical", "headline", "p_adjusted", "effect", "moved",
           "changed_fraction_low", "changed_fraction_high"}
    for f in dst.glob("*.csv"):
        rows = _csv(f)
        if not rows:
            continue
        cols = [c for c in rows[0] if c not in new]
        with open(f, "w", newline="", encoding="utf-8") as fh:
            w = csv.DictWriter(fh, cols, extrasaction="ignore")
            w.writeheader()
            w.writerows(rows)
    (dst / "ranking_stability.csv").unlink()
    man = json.loads((dst / "manifest.json").read_text())
    man["outputs"] = [o for o in man["outputs"] if o != "ranking_stability.csv"]
    if legacy_manifest:
        for k in ("correction", "min_effect", "min_dz", "test"):
            man["options"].pop(k, None)
    (dst / "manifest.json").write_text(json.dumps(man))


@pytest.mark.parametrize("legacy_manifest", [True, False])
def test_older_folders_degrade_gracefully(flipdemo: Path, tmp_path: Path,
                                          legacy_manifest: bool) -> None:
    old = tmp_path / "old"
    _strip_new_columns(flipdemo / "sens", old, legacy_manifest=legacy_manifest)
    build_report([old], tmp_path / "r")
    text = _text((tmp_path / "r" / "index.html").read_text(encoding="utf-8"))
    assert "Ranking stability" not in text
    card = json.loads((tmp_path / "r" / "target_card.json").read_text())
    f = card["datasets"][0]["winner_flips"][0]
    assert f["headline"] is None and f["p_1_adjusted"] is None
    assert _row(text, "A | raw → canonical | 16 |").startswith(
        "A | raw → canonical | 16 | 100.0% |")  # the share without its interval
    if legacy_manifest:
        assert "older tiap sensitivity" in _row(text, "Statistics")
        assert "paired bootstrap" in (tmp_path / "r" / "target_card_appendix.md").read_text()
        assert card["statistics"]["correction"] is None
    else:  # new options, old columns: the missing values read "–"
        row = _row(text, "A vs B | raw → canonical | 16 | +0.2768")
        assert row.split(" | ")[5] == "–"  # p adj 1
        assert "significant" in row


def test_open_interval_ends() -> None:
    assert ci(None, 0.1) == "–"  # no interval at all
    assert ci(None, 0.1, open_ends=True) == "(-∞, +0.100]"
    assert ci(-0.25, None, open_ends=True) == "[-0.250, +∞)"
    assert ci(None, None, open_ends=True) == "(-∞, +∞)"
    # a bound that would print as 0 at 6 digits gets more, and so does the other end
    # (one number of decimals for both, never scientific notation; tiap.numfmt)
    assert ci(3.98686e-07, 0.00121) == "[+0.0000004, +0.0012100]"
    assert ci(-1e-12, 0.001048) == "[+0.000, +0.001]"  # float noise at an end prints as 0
