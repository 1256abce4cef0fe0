"""The documentation runs as written: every fenced shell or Python block of a checked page
carries a marker on the line before it, and every ``run`` block is executed, in page order,
in a fresh folder; a ``text`` block marked ``output`` right after a run block holds lines its
output must contain (the figures the page states), compared with whitespace collapsed.

Markers (an HTML comment, invisible on GitHub)::

    <!-- doc-test: run -->             execute the next block
    <!-- doc-test: skip: <reason> -->  do not, for the reason given (printed by -rs)
    <!-- doc-test: output -->          the next block's lines must appear in the output of
                                       the run block before it

The folder: ``work/`` is the working directory, ``configs/`` links to the repository's
configs, ``../shared/data`` to the benchmark data (``TIAP_DATA`` too), and ``tiap`` and
``python`` are the ones of this interpreter. A page's blocks share the folder, so a later
block reads what an earlier one wrote.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: Every page of the documentation: each of its blocks is marked and checked.
PAGES = ("README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md")))
_MARKER = re.compile(r"^<!-- doc-test: (run|skip|output)(?::\s*(.*?))?\s*-->$")
_FENCE = re.compile(r"^```(\w*)\s*$")
CODE = {"bash", "sh", "console", "python"}


@dataclass
class Block:
    page: str
    line: int  # 1-based line of the opening fence
    lang: str
    text: str
    marker: str | None  # run / skip / output / None
    reason: str = ""


def blocks(page: str) -> list[Block]:
    lines = (ROOT / page).read_text(encoding="utf-8").splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and lines[j].strip() != "```":
            j += 1
        prev = next((lines[k].strip() for k in range(i - 1, -1, -1) if lines[k].strip()), "")
        mk = _MARKER.match(prev)
        out.append(Block(page, i + 1, m.group(1), "\n".join(lines[i + 1:j]),
                         mk.group(1) if mk else None, (mk.group(2) or "") if mk else ""))
        i = j + 1
    return out


def test_every_block_of_a_checked_page_is_marked() -> None:
    bad = [f"{b.page}:{b.line} ({b.lang})" for p in PAGES for b in blocks(p)
           if b.lang in CODE and b.marker not in ("run", "skip")]
    bad += [f"{b.page}:{b.line}: skip without a reason" for p in PAGES for b in blocks(p)
            if b.marker == "skip" and not b.reason]
    assert not bad, "blocks without a doc-test marker: " + ", ".join(bad)


def _sandbox(tmp: Path, data_dir: Path) -> tuple[Path, dict[str, str]]:
    work = tmp / "work"
    work.mkdir()
    (work / "configs").symlink_to(ROOT / "configs")
    (tmp / "shared").mkdir()
    (tmp / "shared" / "data").symlink_to(data_dir.resolve())
    env = {**os.environ, "TIAP_DATA": str(data_dir.resolve()), "TIAP_OFFLINE": "1",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "COLUMNS": "200"}
    return work, env


def _norm(text: str) -> str:
    return " ".join(text.split())


#: Pages whose run takes a minute or more on 2 cores: marked ``slow`` (``make test-all`` runs
#: them, ``make test`` does not). docs/mem0.md runs a real Mem0 over all of LoCoMo conv-26 (419
#: add() calls, about 50 s) and dense retrieval; tests/traces/test_mem0_harness.py runs the
#: same harness on a 2-session slice in ``make test``. docs/transfer.md imports the paper's
#: Mem0 and MemoryOS traces and rescores them, which tests/importers/test_transfer.py checks
#: figure by figure in ``make test``.
SLOW_PAGES = frozenset({"docs/mem0.md", "docs/transfer.md"})


@pytest.mark.parametrize("page", [
    pytest.param(p, marks=pytest.mark.slow) if p in SLOW_PAGES else p
    for p in PAGES if any(b.marker == "run" for b in blocks(p))])
def test_page_runs_as_written(page: str, data_dir: Path, tmp_path: Path) -> None:
    work, env = _sandbox(tmp_path, data_dir)
    found = blocks(page)
    for i, b in enumerate(found):
        if b.marker != "run":
            continue
        if b.lang == "python":
            cmd = [sys.executable, "-c", b.text]
        else:
            cmd = ["bash", "-euo", "pipefail", "-c", b.text]
        proc = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True,
                              timeout=900, check=False)
        where = f"{page}:{b.line}"
        assert proc.returncode == 0, f"{where} failed ({proc.returncode}):\n{proc.stderr[-3000:]}"
        nxt = found[i + 1] if i + 1 < len(found) else None
        if nxt is not None and nxt.marker == "output":
            said = _norm(proc.stdout + "\n" + proc.stderr)
            missing = [ln for ln in nxt.text.splitlines() if ln.strip() and _norm(ln) not in said]
            assert not missing, f"{where}: the page's output lines not printed: {missing}"
