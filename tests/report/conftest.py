"""pdflatex for the report's LaTeX tests: Debian's TeX Live (``.ci/run`` installs it and sets
``TIAP_REQUIRE_LATEX``, so that in CI these tests fail rather than skip without it)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

#: What a compiled table must never make LaTeX say: wider than the text, scaled down to fit
#: it (``\tiapfit``'s message: TIAP's layout should have split it), taller than a page.
BAD = ("Overfull \\hbox", "tiap: table", "Float too large")


@pytest.fixture
def compile_tex() -> Callable[..., str]:
    """``compile_tex(body, folder, options="")``: pdflatex an ``article`` (with ``options``) holding
    ``body`` in ``folder``; asserts it compiles with none of :data:`BAD` in its log, and
    returns the log."""
    if shutil.which("pdflatex") is None:
        if os.environ.get("TIAP_REQUIRE_LATEX"):
            pytest.fail("TIAP_REQUIRE_LATEX is set but pdflatex is not installed")
        pytest.skip("pdflatex is not installed (Debian: apt-get install texlive-latex-base "
                    "texlive-latex-recommended)")

    def run(body: str, folder: Path, options: str = "") -> str:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "doc.tex").write_text(
            f"\\documentclass[{options}]{{article}}\n\\usepackage[T1]{{fontenc}}\n"
            "\\usepackage{booktabs}\n\\usepackage{graphicx}\n\\newsavebox\\testbox\n"
            f"\\begin{{document}}\n{body}\n\\end{{document}}\n", encoding="utf-8")
        proc = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error",
                               "doc.tex"], cwd=folder, capture_output=True, text=True,
                              timeout=300, check=False)
        log = (folder / "doc.log").read_text(errors="replace")
        assert proc.returncode == 0, log[-2000:]
        for bad in BAD:
            assert bad not in log, (folder.name, log[log.find(bad):][:300])
        assert (folder / "doc.pdf").stat().st_size > 1000
        return log

    return run
