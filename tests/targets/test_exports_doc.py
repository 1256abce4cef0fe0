"""docs/exports.md runs as written: its `tiap targets` command writes the folder its
examples read, and its pytrec_eval and ir_measures examples give, per query, what
pytrec_eval gives when each run is scored against its own store's qrels (and what TIAP's
set-credit rescoring gives). The ranx example is marked to be skipped (ranx is not a test
dependency).

Every Python block of the page carries a marker, ``<!-- doc-test: run -->`` or
``<!-- doc-test: skip (why) -->``, on the line before it, so no example goes untested
unnoticed. The examples run on a small made-up pair of stores, and on LoCoMo conv-26 when
the real data is present.
"""

from __future__ import annotations

import math
import random
import re
import shlex
import shutil
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from fixtures_targets import queries
from fixtures_targets import store as fixture_store
from locomo_conv26 import SYSTEMS

from tiap.cli.main import main
from tiap.datasets.queryfile import read_queries, write_queries
from tiap.memory.store import read_store, write_items
from tiap.runs import Ranking, Run, read_run, write_trec_run
from tiap.scoring.rescore import rescore

pytrec_eval = pytest.importorskip("pytrec_eval")

DOC = Path(__file__).resolve().parents[2] / "docs" / "exports.md"
_MARKER = re.compile(r"<!-- doc-test: (run|skip)\b.*-->")
_FENCE = re.compile(r"```(\w*)")


@dataclass(frozen=True)
class Block:
    lang: str
    code: str
    line: int  # of the opening fence
    marker: str | None  # "run", "skip" or None


def doc_blocks(text: str) -> list[Block]:
    """The fenced code blocks of a Markdown text, each with the marker before it."""
    out: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.fullmatch(lines[i].strip())
        if not m:
            i += 1
            continue
        start = i
        prev = next((ln for ln in reversed(lines[:start]) if ln.strip()), "")
        mk = _MARKER.fullmatch(prev.strip())
        end = next(j for j in range(start + 1, len(lines)) if lines[j].strip() == "```")
        out.append(Block(m.group(1), "\n".join(lines[start + 1:end]) + "\n", start + 1,
                         mk.group(1) if mk else None))
        i = end + 1
    return out


BLOCKS = doc_blocks(DOC.read_text(encoding="utf-8"))
PYTHON = [b for b in BLOCKS if b.lang == "python"]


def test_every_python_example_is_marked() -> None:
    unmarked = [b.line for b in PYTHON if b.marker is None]
    assert not unmarked, f"docs/exports.md: Python blocks without a doc-test marker at {unmarked}"
    # the pytrec_eval and ir_measures examples run; only ranx's is skipped
    assert [("pytrec_eval" in b.code, "ir_measures" in b.code, "ranx" in b.code, b.marker)
            for b in PYTHON if "per_query" in b.code] == [
        (True, False, False, "run"), (False, True, False, "run"), (False, False, True, "skip")]
    ranx = next(b for b in PYTHON if "ranx" in b.code)
    for call in ('Qrels.from_file(', 'kind="trec"', 'Run.from_file(',
                 'evaluate(qrels, run, "ndcg@20", return_mean=False)'):
        assert call in ranx.code


def _synthetic(root: Path) -> None:
    """Stores f1 and f5 with the same ids and different lineage, six queries, and a
    shuffled run of each store's items per query."""
    f1 = fixture_store()
    f5 = [replace(it, kind="observation") if it.item_id == "f2" else
          replace(it, serving=False) if it.item_id == "f1" else it
          for it in f1 if it.item_id != "s1"]
    for name, items in (("f1", f1), ("f5", f5)):
        write_items(root / "stores" / name / "items.jsonl", items, store=name)
    write_queries(root / "queries.jsonl", queries())
    for system, name in SYSTEMS.items():
        ids = [it.item_id for it in (f1 if name == "f1" else f5)]
        rankings = []
        for q in queries():
            order = list(ids)
            random.Random(f"{system}:{q.query_id}").shuffle(order)
            rankings.append(Ranking(q.query_id, system, tuple(order[:6])))
        write_trec_run(root / "runs" / f"{system}.trec", Run(system, tuple(rankings)))


@pytest.fixture(params=["synthetic", "locomo-conv-26"])
def workdir(request: pytest.FixtureRequest, tmp_path: Path,
            monkeypatch: pytest.MonkeyPatch) -> Path:
    if request.param == "synthetic":
        _synthetic(tmp_path)
    else:
        shutil.copytree(request.getfixturevalue("conv26"), tmp_path, dirs_exist_ok=True)
        shutil.rmtree(tmp_path / "targets")  # the page's command writes it
    monkeypatch.chdir(tmp_path)
    # the page's own `tiap targets` command writes targets/
    commands = [line for b in BLOCKS if b.lang == "sh"
                for line in b.code.replace("\\\n", " ").splitlines()
                if line.startswith("tiap targets ")]
    assert len(commands) == 1
    assert main(shlex.split(commands[0])[1:]) == 0
    return tmp_path


def reference(root: Path, system: str, store: str) -> dict[str, float]:
    """pytrec_eval's nDCG@20 per query, the run against its own store's Source qrels."""
    with open(root / "targets" / "qrels" / f"{store}.source.qrels") as fh:
        qrels = pytrec_eval.parse_qrel(fh)
    with open(root / "runs" / f"{system}.trec") as fh:
        run = pytrec_eval.parse_run(fh)
    res = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.20"}).evaluate(run)
    return {q: float(m["ndcg_cut_20"]) for q, m in res.items()}


def run_block(block: Block) -> dict[str, Any]:
    ns: dict[str, Any] = {"__name__": "docs_exports_example"}
    exec(compile(block.code, f"{DOC}:{block.line}", "exec"), ns)  # noqa: S102 (the doc's own code)
    return ns


@pytest.mark.parametrize("tool", ["pytrec_eval", "ir_measures"])
def test_examples_score_each_run_against_its_own_store(workdir: Path, tool: str,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    if tool == "ir_measures":
        pytest.importorskip("ir_measures")
    else:
        pytest.importorskip("scipy")
    block = next(b for b in PYTHON if b.marker == "run" and f"import {tool}" in b.code
                 and "per_query" in b.code)
    per_query = run_block(block)["per_query"]
    assert sorted(per_query) == sorted(SYSTEMS)
    for system, store in SYSTEMS.items():
        ref = reference(workdir, system, store)
        assert ref and sorted(per_query[system]) == sorted(ref)
        for q, v in ref.items():
            assert per_query[system][q] == pytest.approx(v, abs=1e-9), (system, q)
        # and TIAP's set-credit rescoring of the run under its own store agrees
        res = rescore(read_run(workdir / "runs" / f"{system}.trec"),
                      read_queries(workdir / "queries.jsonl"),
                      {None: read_store(workdir / "stores" / store / "items.jsonl")},
                      targets=["source"], measures="nDCG@20", credit="set")
        tiap = {q: float(v) for q, v in zip(res.query_ids[system],
                                            res.value(system, "source", "nDCG@20"), strict=True)
                if not math.isnan(v)}
        assert sorted(tiap) == sorted(ref)
        assert all(tiap[q] == pytest.approx(v, abs=1e-9) for q, v in ref.items())
    if tool == "pytrec_eval":
        out = capsys.readouterr().out
        assert "f1-bm25: nDCG@20" in out and "TtestResult" in out and "WilcoxonResult" in out


def test_api_example_writes_the_same_folder(workdir: Path) -> None:
    before = {p.name: p.read_bytes() for p in (workdir / "targets" / "qrels").iterdir()}
    block = next(b for b in PYTHON if "write_targets(" in b.code)
    assert block.marker == "run"
    ns = run_block(block)
    assert ns["written"].qrels["f1", "source"] == Path("targets/qrels/f1.source.qrels")
    assert {p.name: p.read_bytes() for p in (workdir / "targets" / "qrels").iterdir()} == before
