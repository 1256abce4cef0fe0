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
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert meta["license"] == "MIT"
    assert (ROOT / "LICENSE").read_text().startswith("MIT License\n")
    cff = (ROOT / "CITATION.cff").read_text()
    assert f"version: {meta['version']}\n" in cff and "license: MIT\n" in cff
    assert 'value: "arXiv:2605.24060"' in cff
