"""``tiap build-store`` as a user runs it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tiap.cli.main import main


def test_heuristic_build(data_dir: Path, tmp_path: Path,
                         capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "d1"
    assert main(["build-store", "locomo", "--parser", "heuristic", "--max-facts", "1",
                 "--collections", "conv-26", "--data", str(data_dir), "--out", str(out)]) == 0
    printed = capsys.readouterr()
    assert "items: raw" in printed.out and "419" in printed.out
    assert "wrote" in printed.err
    man = json.loads((out / "manifest.json").read_text())
    assert man["parser"] == {"name": "heuristic", "args": {"max_facts": 1}}
    assert man["counts"]["derived_per_turn"].keys() <= {"0", "1"}
    assert man["seed"] == 1337


def test_native_build(data_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "native"
    assert main(["build-store", "locomo", "--parser", "native", "--collections", "conv-26",
                 "--data", str(data_dir), "--out", str(out)]) == 0
    man = json.loads((out / "manifest.json").read_text())
    assert man["counts"]["by_kind"]["observation"] == 184


@pytest.mark.parametrize(("args", "message"), [
    (["--parser", "magic"], "unknown parser 'magic'; known: heuristic, llm, native"),
    (["--parser", "heuristic", "--max-facts", "0"],
     "option --max-facts: expected an integer from 1 to 1,000, got 0"),
    (["--parser", "native", "--max-facts", "5"], "--max-facts does not apply to --parser native"),
    (["--parser", "heuristic", "--model", "m"], "options for --parser llm only: --model"),
    (["--parser", "llm"], "base_url: missing: the llm parser needs the endpoint's API root"),
    (["--parser", "heuristic", "--collections", "conv-999"],
     "error[invalid-value]: dataset 'locomo' has no collection(s) conv-999"),
])
def test_bad_input(args: list[str], message: str, data_dir: Path, tmp_path: Path,
                   capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "s"
    assert main(["build-store", "locomo", *args, "--data", str(data_dir), "--out", str(out)]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_native_without_memories(data_dir: Path, tmp_path: Path,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["build-store", "longmemeval/oracle", "--parser", "native", "--data",
                 str(data_dir), "--out", str(tmp_path / "s")]) == 2
    assert "ships no derived memories" in capsys.readouterr().err
