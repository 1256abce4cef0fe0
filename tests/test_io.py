"""Atomic writes: nothing half-written, and what a killed run left is cleaned by the next."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tiap.io import atomic_dir, atomic_write

_KILLED_WRITER = """
import sys, time
from pathlib import Path
from tiap.io import atomic_dir, atomic_write
out = Path(sys.argv[1])
with atomic_dir(out / "store") as tmp:
    (tmp / "items.jsonl").write_text("half")
    with atomic_write(out / "run.jsonl") as fh:
        fh.write("half")
        fh.flush()
        (out / "ready").write_text("1")
        time.sleep(60)
"""


def _temps(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_failure_leaves_nothing(tmp_path: Path) -> None:
    (tmp_path / "kept.txt").write_text("old")
    with pytest.raises(RuntimeError), atomic_write(tmp_path / "kept.txt") as fh:
        fh.write("new")
        raise RuntimeError("boom")
    with pytest.raises(RuntimeError), atomic_dir(tmp_path / "d") as tmp:
        (tmp / "a").write_text("x")
        raise RuntimeError("boom")
    assert (tmp_path / "kept.txt").read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept.txt"]


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL")
def test_a_killed_run_leaves_temps_that_the_next_run_removes(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", _KILLED_WRITER, str(tmp_path)])
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / "ready").exists():
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait()
    left = _temps(tmp_path)
    assert [n.startswith((f".run.jsonl.{proc.pid}.", f".store.{proc.pid}.")) for n in left] \
        == [True, True]
    assert not (tmp_path / "store").exists()
    assert not (tmp_path / "run.jsonl").exists()

    # a temp of a process that still runs is left alone
    alive = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        theirs = tmp_path / f".run.jsonl.{alive.pid}.abc.tmp"
        theirs.write_text("theirs")
        with atomic_write(tmp_path / "run.jsonl") as fh:
            fh.write("done\n")
        with atomic_dir(tmp_path / "store") as tmp:
            (tmp / "items.jsonl").write_text("done\n")
        assert _temps(tmp_path) == [theirs.name]
    finally:
        alive.kill()
        alive.wait()
    assert (tmp_path / "run.jsonl").read_text() == "done\n"
    assert (tmp_path / "store" / "items.jsonl").read_text() == "done\n"


def test_bad_json_is_located_once(tmp_path: Path) -> None:
    from tiap.errors import TiapError
    from tiap.io import iter_jsonl

    f = tmp_path / "r.jsonl"
    f.write_text('{"a": 1}\n{"b": "x\ty"}\n', encoding="utf-8")  # a raw tab inside a string
    with pytest.raises(TiapError) as exc:
        list(iter_jsonl(f))
    assert str(exc.value) == f"{f}:2: invalid JSON (Invalid control character at column 9)"
