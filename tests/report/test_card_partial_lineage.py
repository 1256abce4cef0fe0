"""The target card states coverage under partial lineage as bounded, never as exact: a
query in a target's universe whose value the lineage only bounds is defined (and the card
says how many are exact), and a query whose target the lineage may leave empty makes the
zero-target count a range."""

from __future__ import annotations

from pathlib import Path

from tiap.datasets.records import Query
from tiap.memory.store import Item, Uncertainty
from tiap.report import build_report
from tiap.runs import Ranking, Run
from tiap.scoring.folder import write_rescore
from tiap.scoring.rescore import rescore
from tiap.sensitivity import analyze, write_sensitivity


def _rows(md: str, system: str) -> dict[str, str]:
    """The sizes table's "defined queries | zero-target" cells per target."""
    out: dict[str, str] = {}
    table = md.split("### Target-set sizes and coverage")[1].split("\n\n")[1]
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 6 and cells[0] == system:
            out[cells[1]] = " | ".join(cells[2:4])
    return out


def test_card_coverage_under_partial_lineage(tmp_path: Path) -> None:
    """Turns c:1 and c:2 (raw r1, r2) and a summary s1 of unknown lineage, as MemoryOS
    session summaries. qA asks about c:1, qB about c:2; both rank s1, r1.

    By hand: Raw is exact for both queries (r1 credited for qA; qB's group {r2} exists).
    Source: qA's value depends on s1 (nDCG@2 in [1/log2 3, 1]), qB's too: 2 defined, 0
    exact; neither can be empty (r1, r2 are in the families). Canonical: the only possible
    member of either group is s1, so both targets may be empty: 2 defined, 0 exact,
    zero-target 0 to 2. Before, the card printed Source and Canonical as "0 of 2" defined
    and Canonical's zero-target count as 0."""
    items = [Item("r1", "raw", ("c:1",), collection="c"),
             Item("r2", "raw", ("c:2",), collection="c"),
             Item("s1", "summary", (), collection="c", uncertain=Uncertainty())]
    queries = [Query("qA", "c", "?", None, "", ("c:1",)),
               Query("qB", "c", "?", None, "", ("c:2",))]
    run = Run("sys", (Ranking("qA", "sys", ("s1", "r1")), Ranking("qB", "sys", ("s1", "r1"))))
    res = rescore([run], queries, {None: items}, measures="nDCG@2,Success@2")
    write_rescore(res, tmp_path / "rs")
    write_sensitivity(analyze([tmp_path / "rs"], resamples=20, answers=False,
                              by_category_tests=False), tmp_path / "sens")
    build_report([tmp_path / "sens"], tmp_path / "report")
    md = (tmp_path / "report" / "target_card_appendix.md").read_text(encoding="utf-8")
    assert _rows(md, "sys") == {"raw": "2 of 2 | 0", "source": "2 of 2 (0 exact) | 0",
                                "canonical": "2 of 2 (0 exact) | 0 to 2"}
    assert ("- sys: 2 queries in every target's universe, 0 of them exact under every "
            "target") in md
