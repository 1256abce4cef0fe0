"""Kind 9 of the bad-input campaign: faults say what happened, what was kept, how to resume.

A full disk (``ENOSPC``, or sqlite's "database or disk is full") is ``error[disk-full]``,
exit 2; an interrupt (Ctrl-C, SIGINT) is ``error[interrupted]``, exit 130. Both name what is
kept and say that the same command resumes; the rerun then finishes without repeating work.
The mechanism is ``tiap.cli.main.main``; these tests inject the faults.
"""

from __future__ import annotations

import errno
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tiap.audit import read_labels, write_cases
from tiap.audit.run import VerdictCache
from tiap.cli.main import main

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "audit"))
from audit_fixtures import case  # noqa: E402
from stub_openai import StubServer  # noqa: E402

N = 12


def _verdicts(out: Path) -> set[str]:
    db = sqlite3.connect(out / "cache.sqlite")
    try:
        return {r[0] for r in db.execute("SELECT case_id FROM verdicts")}
    finally:
        db.close()


def _cases(tmp_path: Path) -> Path:
    path = tmp_path / "cases.jsonl"
    write_cases(path, [case(i, f"question {i}", text=f"She moved to Paris {i}.")
                       for i in range(N)])
    return path


def test_disk_full_while_judging_keeps_verdicts_and_resumes(tmp_path, monkeypatch,
                                                            capsys) -> None:
    import tiap.audit.run

    cases = _cases(tmp_path)
    out = tmp_path / "judged"
    real_put = VerdictCache.put_many
    calls = {"n": 0}

    def put(self, *a, **kw):  # type: ignore[no-untyped-def]
        calls["n"] += 1
        if calls["n"] > 5:  # the sixth commit finds the disk full
            raise sqlite3.OperationalError("database or disk is full")
        return real_put(self, *a, **kw)

    # an offline judge commits its verdicts in batches: here one verdict per commit
    monkeypatch.setattr(tiap.audit.run, "OFFLINE_COMMIT", 1)
    monkeypatch.setattr(VerdictCache, "put_many", put)
    argv = ["audit", "judge", str(cases), "--judge", "lexical", "--out", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    line = [ln for ln in err.splitlines() if ln.startswith("error[")]
    assert len(line) == 1 and line[0].startswith("error[disk-full]: the disk is full"), err
    assert "verdict cache" in line[0] and "rerun the same command" in line[0]
    assert len(_verdicts(out)) == 5  # what was committed is kept
    assert not (out / "labels.jsonl").exists()  # nothing half-written

    monkeypatch.setattr(VerdictCache, "put_many", real_put)
    assert main(argv) == 0
    assert len(_verdicts(out)) == N
    assert len(read_labels(out / "labels.jsonl")) == N


def test_enospc_on_an_output_is_disk_full(tmp_path, monkeypatch, capsys) -> None:
    """An OSError with errno ENOSPC anywhere under a command is ``disk-full``, not ``io``."""
    import tiap.io

    cases = _cases(tmp_path)

    def full(*a, **kw):  # type: ignore[no-untyped-def]
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "judged"))

    monkeypatch.setattr(tiap.io.tempfile, "mkstemp", full)
    assert main(["audit", "judge", str(cases), "--judge", "lexical", "--out",
                 str(tmp_path / "judged")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error[disk-full]: the disk is full (" + str(tmp_path / "judged"))
    assert "rerun the same command" in err


def test_other_os_errors_are_one_located_line(tmp_path, capsys) -> None:
    missing = tmp_path / "no-such-cases.jsonl"
    rc = main(["audit", "judge", str(missing), "--judge", "lexical", "--out",
               str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 2
    assert "Traceback" not in err and str(missing) in err and err.startswith("error[")


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


@pytest.mark.skipif(not hasattr(signal, "SIGINT"), reason="needs SIGINT")
def test_ctrl_c_says_what_was_kept_and_resumes(tmp_path) -> None:
    pytest.importorskip("httpx")
    cases = _cases(tmp_path)
    out = tmp_path / "judged"
    cmd = [sys.executable, "-m", "tiap.cli.main", "audit", "judge", str(cases), "--judge",
           "openai", "--model", "stub-model", "--concurrency", "1", "--out", str(out)]
    env = {**os.environ, "OPENAI_API_KEY": "sk-test", "PYTHONUNBUFFERED": "1"}
    with StubServer(delay=0.2) as server:
        run = [*cmd, "--base-url", server.base_url]
        # the child gets Ctrl-C as a terminal would deliver it: SIGINT at its default and
        # unblocked, whatever the test worker's own state (this test once failed in the full
        # suite only, the child finishing every case as if SIGINT never came)
        worker = (signal.getsignal(signal.SIGINT), signal.pthread_sigmask(signal.SIG_BLOCK, []))
        proc = subprocess.Popen(run, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, preexec_fn=_default_sigint)
        deadline = time.monotonic() + 60
        while len(server.completed) < 3 and time.monotonic() < deadline:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            time.sleep(0.01)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, f"worker SIGINT {worker}: {err}"
        assert "Traceback" not in err
        assert "error[interrupted]: interrupted: every verdict received so far is in the " \
               "verdict cache; rerun the same command to resume (tiap audit judge ...)" in err
        kept = _verdicts(out)
        assert 0 < len(kept) < N
        server.delay = 0.0
        done = subprocess.run(run, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
    assert len(read_labels(out / "labels.jsonl")) == N


def test_a_secret_in_an_error_message_is_redacted(tmp_path, monkeypatch, capsys) -> None:
    """The last line of defence: whatever raised, the printed line holds no configured key."""
    import tiap.llm.client
    from tiap.errors import TiapError

    tiap.llm.client.add_secret("sk-echoed-SECRET-0042")

    def boom(*a, **kw):  # type: ignore[no-untyped-def]
        raise TiapError("the endpoint said: unknown key sk-echoed-SECRET-0042 (Bearer "
                        "sk-other-token-99999)", file=tmp_path / "x", code="endpoint")

    monkeypatch.setattr("tiap.audit.steps.run_judges", boom)
    assert main(["audit", "judge", str(_cases(tmp_path)), "--judge", "lexical", "--out",
                 str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "SECRET" not in err and "sk-other-token" not in err
    assert err.count("[redacted]") == 2 and err.startswith("error[endpoint]: ")
