"""The ``tiap datasets`` commands as a user runs them."""

from __future__ import annotations

import json
from pathlib import Path

from tiap.cli.main import main


def test_list(data_dir: Path, capsys) -> None:
    assert main(["datasets", "list", "--data", str(data_dir)]) == 0
    out = capsys.readouterr().out
    for did in ("locomo", "longmemeval/s", "longmemeval/oracle", "beam/100k", "beam/1m"):
        assert did in out


def test_stats_json(data_dir: Path, capsys) -> None:
    assert main(["datasets", "stats", "locomo", "--json", "--data", str(data_dir)]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert {"collections", "sessions", "turns", "queries", "evidence_problems"} <= obj.keys()
    assert (obj["collections"], obj["sessions"], obj["turns"], obj["queries"]) == (10, 272, 5882, 1986)
    given = {(p["query_id"], p["evidence"], p["problem"]) for p in obj["evidence_problems"]}
    assert ("conv-43:q18", "D:11:26", "malformed") in given
    assert ("conv-47:q38", "D4:36", "unresolvable") in given


def test_stats_table_lists_problems(data_dir: Path, capsys) -> None:
    assert main(["datasets", "stats", "locomo", "--data", str(data_dir)]) == 0
    out = capsys.readouterr().out
    for s in ("D:11:26", "D30:05", "D10:19", "D4:36", "5,882", "1,986"):
        assert s in out


def test_export(data_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "locomo"
    assert main(["datasets", "export", "locomo", "--out", str(out), "--data", str(data_dir)]) == 0
    turns = (out / "turns.jsonl").read_text().splitlines()
    queries = [json.loads(x) for x in (out / "queries.jsonl").read_text().splitlines()]
    assert len(turns) == 5882 and len(queries) == 1986
    assert json.loads(turns[0])["unit_id"] == "conv-26:D1:1"
    assert queries[0]["evidence"] == ["conv-26:D1:3"] and queries[0]["category"] == "temporal"
    man = json.loads((out / "manifest.json").read_text())
    assert man["inputs"][0]["sha256"].startswith("79fa87e9")
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".")]  # no temp dirs left


def test_help_and_version(capsys) -> None:
    assert main(["--version"]) == 0
    assert "tiap" in capsys.readouterr().out
    assert main(["datasets", "--help"]) == 0
    assert "stats" in capsys.readouterr().out


def test_unwritable_output_is_a_clear_error(data_dir: Path, tmp_path: Path, capsys) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    rc = main(["datasets", "export", "locomo", "--out", str(blocker / "x"), "--data", str(data_dir)])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("error[io]: ") and "a_file" in err and "Traceback" not in err
