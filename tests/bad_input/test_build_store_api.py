"""``tiap.memory.build_dataset_store``: the checks of ``tiap build-store`` happen in the API,
so a Python caller gets them too, all problems of the options together, before any data is
read or any folder written."""

from __future__ import annotations

from pathlib import Path

import pytest

from tiap.errors import TiapError
from tiap.memory import build_dataset_store


def test_the_options_are_checked_together(tmp_path: Path) -> None:
    with pytest.raises(TiapError) as err:  # two problems, one error
        build_dataset_store("locomo", "heuristic", tmp_path / "s", model="m",
                            local_model="qwen2.5-0.5b-instruct", data=tmp_path / "no-data")
    assert [p.message for p in err.value.problems] == [
        "options for --parser llm only: --model",
        "--local-model serves the model of --parser llm only"]
    assert not (tmp_path / "s").exists()


def test_native_takes_no_max_facts(tmp_path: Path) -> None:
    with pytest.raises(TiapError, match="--max-facts does not apply to --parser native"):
        build_dataset_store("locomo", "native", tmp_path / "s", max_facts=5,
                            data=tmp_path / "no-data")


def test_a_foreign_folder_is_refused_before_the_data_is_read(tmp_path: Path) -> None:
    out = tmp_path / "s"
    out.mkdir()
    (out / "mine.txt").write_text("keep me", encoding="utf-8")
    with pytest.raises(TiapError, match="not empty"):  # the data folder does not exist
        build_dataset_store("locomo", "heuristic", out, data=tmp_path / "no-data")
    assert (out / "mine.txt").read_text(encoding="utf-8") == "keep me"


def test_a_slice_of_one_collection(data_dir: Path, tmp_path: Path) -> None:
    res = build_dataset_store("locomo", "native", tmp_path / "s", collections=["conv-26"],
                              sessions=1, data=data_dir)
    # locomo10.json, conv-26: conversation.session_1 holds 18 turns, and
    # observation.session_1_observation 7 observations (counted in the file by hand), plus
    # one event summary and one session summary of the session
    assert res.counts["turns"] == 18
    assert res.counts["by_kind"] == {"raw": 18, "event_summary": 1, "observation": 7,
                                     "session_summary": 1}
    assert res.manifest["dataset"]["id"] == "locomo"
    assert (tmp_path / "s" / "items.jsonl").is_file()


def test_a_script_without_the_main_guard_gets_a_located_error(tmp_path: Path) -> None:
    # Worker processes import the calling script again: unguarded, each worker starts a
    # build of its own and dies. The caller gets a TiapError saying why, not a bare
    # BrokenProcessPool, and nothing is left in the output folder.
    import subprocess
    import sys

    script = tmp_path / "unguarded.py"
    script.write_text(
        "from tiap.datasets import Bundle, Collection, InlineDataset, Session, Turn\n"
        "from tiap.memory import build_store\n"
        "bundles = [Bundle(Collection(f'c{i}', 1, 1), (Session(f'c{i}', 's1', 1, None),),\n"
        "                  (Turn(f'c{i}:D1:1', f'c{i}', 's1', 1, 'Ana', 'I adopted a cat.'),),\n"
        "                  ()) for i in range(4)]\n"
        f"build_store(InlineDataset(bundles), 'heuristic', {str(tmp_path / 'out')!r},\n"
        "            workers=2)\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          cwd=tmp_path, timeout=300)
    assert done.returncode != 0
    # the error the script ends with (the multiprocessing resource tracker may print a
    # warning after it, at a time of its own: the error is looked for, not taken as last)
    errors = [x for x in done.stderr.splitlines()
              if x.startswith(("tiap.errors.TiapError:", "concurrent.futures"))]
    assert len(errors) == 1, done.stderr
    assert errors[0].startswith("tiap.errors.TiapError: a worker process of the build stopped")
    assert "if __name__ == '__main__':" in errors[0]
    assert not (tmp_path / "out").exists()
