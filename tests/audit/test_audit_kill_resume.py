"""``kill -9`` in the middle of ``tiap audit judge``, then a resume.

The endpoint is the local stand-in server (tests/audit/stub_openai.py, 127.0.0.1, the
chat-completions protocol); the judge runs in a subprocess that is SIGKILLed while requests
are in flight. The rerun must complete every case and must not ask the endpoint again for
any case whose verdict was committed before the kill.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from audit_fixtures import case
from stub_openai import StubServer

from tiap.audit import read_labels, write_cases

pytest.importorskip("httpx")

N = 24
KEY = "sk-kill-test-SECRET-987654"
LABELS = ("supports", "partial", "does_not_support")


def _cmd(cases: Path, out: Path, base_url: str) -> list[str]:
    return [sys.executable, "-m", "tiap.cli.main", "audit", "judge", str(cases), "--judge",
            "openai", "--model", "stub-model", "--base-url", base_url, "--concurrency", "3",
            "--api-key-env", "TIAP_KILL_KEY", "--out", str(out)]


def _finished(out: Path) -> set[str]:
    db = sqlite3.connect(out / "cache.sqlite")
    try:
        return {r[0] for r in db.execute("SELECT case_id FROM verdicts")}
    finally:
        db.close()


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_kill_9_mid_run_then_resume(tmp_path: Path) -> None:
    questions = {f"s:q{i}:source": f"question number {i} [label={LABELS[i % 3]}]"
                 for i in range(N)}
    cases = [case(i, questions[f"s:q{i}:source"]) for i in range(N)]
    write_cases(tmp_path / "cases.jsonl", cases)
    out = tmp_path / "out"
    env = {**os.environ, "TIAP_KILL_KEY": KEY, "PYTHONUNBUFFERED": "1"}
    with StubServer(delay=0.15) as server:
        proc = subprocess.Popen(_cmd(tmp_path / "cases.jsonl", out, server.base_url), env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while len(server.completed) < 8 and time.monotonic() < deadline:
            if proc.poll() is not None:
                pytest.fail("the judge ended before it could be killed: "
                            + proc.stderr.read().decode())
            time.sleep(0.01)
        assert len(server.completed) >= 8
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        assert proc.returncode == -signal.SIGKILL
        before = _finished(out)  # verdicts committed before the kill
        assert 0 < len(before) < N
        assert not (out / "labels.jsonl").exists()
        first_run = dict(server.arrivals)

        # resume: same command, no delay
        server.delay = 0.0
        mark = {q: server.count(q) for q in questions.values()}
        done = subprocess.run(_cmd(tmp_path / "cases.jsonl", out, server.base_url), env=env,
                              capture_output=True, timeout=120)
        assert done.returncode == 0, done.stderr.decode()
        second = Counter({q: server.count(q) - mark[q] for q in questions.values()})

    # every case finished, with the verdict the server gave
    recs = read_labels(out / "labels.jsonl")
    assert len(recs) == N
    assert {r.case_id: r.label for r in recs} == {
        cid: q.split("[label=")[1].rstrip("]") for cid, q in questions.items()}
    # no case finished before the kill was requested again
    for cid in before:
        assert second[questions[cid]] == 0, cid
    # every unfinished case was requested exactly once by the resume
    for cid, q in questions.items():
        if cid not in before:
            assert second[q] == 1, cid
    # and nothing was asked more than twice overall (once before, once after the kill)
    assert all(first_run.get(q, 0) + second[q] <= 2 for q in questions.values())
    assert sum(1 for r in recs if r.timing.get("from_cache")) == len(before)
    # the key reached the server only
    for f in out.rglob("*"):
        if f.is_file():
            assert KEY.encode() not in f.read_bytes(), f
    assert KEY not in done.stdout.decode() + done.stderr.decode()
