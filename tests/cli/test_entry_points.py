"""``python -m tiap`` is the ``tiap`` command; the licence and citation files agree with the
package's metadata."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_python_m_tiap_is_the_command() -> None:
    ok = subprocess.run([sys.executable, "-m", "tiap", "datasets", "list", "--help"],
                        capture_output=True, text=True, timeout=120, check=False)
    assert ok.returncode == 0 and "datasets list" in ok.stdout
    bad = subprocess.run([sys.executable, "-m", "tiap", "no-such-command"],
                         capture_output=True, text=True, timeout=120, check=False)
    assert bad.returncode == 2 and "no-such-command" in bad.stderr


def test_licence_and_citation_match_the_package() -> None:
    import tiap

    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert meta["license"] == "MIT" and meta["dynamic"] == ["version"]  # tiap.__version__
    assert (ROOT / "LICENSE").read_text().startswith("MIT License\n")
    cff = (ROOT / "CITATION.cff").read_text()
    assert f"version: {tiap.__version__}\n" in cff and "license: MIT\n" in cff
    # the change log has a section for the version the package says it is
    assert f"\n## [{tiap.__version__}]" in (ROOT / "CHANGELOG.md").read_text()
    assert 'value: "arXiv:2605.24060"' in cff


def test_tiap_measures(capsys) -> None:
    from tiap.cli.main import main

    assert main(["measures"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    for family in ("nDCG", "R", "RR", "Success", "P"):
        assert f"│ {family} │" in out
    assert "mrr, recip_rank, reciprocal_rank" in out
    assert main(["measures", "ndcg@20, mrr@60,hit@1,NDCG@60"]) == 0
    out = capsys.readouterr().out
    assert "RR@60" in out and "Success@1" in out
    assert "headline (default of sensitivity, audit and report): nDCG@60" in out
    assert main(["measures", "ndcg@x"]) == 2
    assert "cannot parse measure 'ndcg@x'" in capsys.readouterr().err


def test_one_headline_measure() -> None:
    from tiap.scoring.measures import primary_measure

    assert str(primary_measure(["nDCG@20", "RR@60", "nDCG@60", "nDCG@40"])) == "nDCG@60"
    assert str(primary_measure(["nDCG@20", "nDCG"])) == "nDCG"  # no cutoff: the whole list
    assert str(primary_measure(["RR@10", "R@60"])) == "RR@10"  # no nDCG: the first
