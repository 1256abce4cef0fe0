"""``tiap import SYSTEM`` is a shell over :func:`tiap.importers.run_import` (issue 34): a
Python caller gets the folder the command writes, ``lineage_coverage.json`` included even
when the importer does not write one, and the same checks. Every input is built here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tiap.cli.main import main
from tiap.errors import TiapError
from tiap.importers import COVERAGE_FILE, IMPORTERS, Importer, coverage_of_folder, run_import

ROWS = [{"type": "item", "item_id": "t1", "kind": "raw", "sources": ["c1:D1:1"]},
        {"type": "item", "item_id": "m9", "kind": "fact", "sources": []},
        {"type": "query", "query_id": "q1", "question": "?", "evidence": ["c1:D1:1", "c1:D1:2"]},
        {"type": "ranking", "query_id": "q1", "ranked": ["m9", "t1"]}]

#: a plug-in importer that writes its folder but no coverage report
BARE = '''
from pathlib import Path
from tiap.importers import COVERAGE_FILE, get_importer

def import_bare(path, out_dir):
    result = get_importer("generic").load()(path, out_dir)
    (Path(out_dir) / COVERAGE_FILE).unlink()
    return result
'''


@pytest.fixture()
def export(tmp_path: Path) -> Path:
    path = tmp_path / "export.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    return path


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.name != "manifest.json"}


def test_python_writes_the_folder_the_command_writes(export, tmp_path, capsys) -> None:
    done = run_import("generic", export, tmp_path / "py", system="mine")
    assert main(["import", "generic", str(export), "--out", str(tmp_path / "cli"),
                 "--system", "mine"]) == 0
    assert _files(tmp_path / "py") == _files(tmp_path / "cli")
    # m9 names no source (1 item, ranked once); c1:D1:2 is reached by no item, so q1's
    # evidence is not all reached
    c = done.coverage
    assert (c["items"], c["items_with_no_source"], c["ranked_positions_with_no_source"],
            c["queries_all_evidence_reached"], c["unreached_evidence_units"]) == (2, 1, 1, 0, 1)
    assert done.result.system == "mine" and done.out == tmp_path / "py"


def test_the_coverage_is_added_when_an_importer_writes_none(export, tmp_path,
                                                            monkeypatch) -> None:
    (tmp_path / "plugin_bare.py").write_text(BARE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(IMPORTERS, "bare", Importer("bare", "plugin_bare:import_bare", "bare"))
    done = run_import("bare", export, tmp_path / "out")
    written = json.loads((tmp_path / "out" / COVERAGE_FILE).read_text())
    assert written == done.coverage == coverage_of_folder(tmp_path / "out").to_json()
    assert done.coverage["items_with_no_source"] == 1  # m9, as above


def test_force_reaches_the_importer_and_the_folder_is_checked_first(export, tmp_path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "mine.txt").write_text("x")
    with pytest.raises(TiapError) as exc:
        run_import("generic", tmp_path / "absent.jsonl", notes)  # checked before reading
    assert exc.value.code == "stale-output" and (notes / "mine.txt").exists()
    done = run_import("generic", export, notes, force=True)
    assert not (notes / "mine.txt").exists() and done.coverage["items"] == 2


def test_mem0_takes_its_queries_one_way(tmp_path) -> None:
    results = tmp_path / "results.jsonl"
    results.write_text("{}\n")
    with pytest.raises(TiapError, match="give the queries one way: --dataset or --queries"):
        run_import("mem0", results, tmp_path / "out", dataset="locomo",
                   queries=tmp_path / "queries.jsonl")
    assert not (tmp_path / "out").exists()
