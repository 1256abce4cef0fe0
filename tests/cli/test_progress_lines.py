"""Where stderr is a log file, a long loop prints plain progress lines (values by hand)."""

from __future__ import annotations

import pytest

from tiap.cli import common
from tiap.cli.common import progress_line, track


def test_progress_line() -> None:
    # 37 of 419 in 41:02 (2,462 s): 2,462 / 37 * 382 = 25,418.5 s left = 7:03:38
    assert progress_line("conv-26: add", 37, 419, 2462.0) == (
        "conv-26: add: 37/419 (8.8%), 41:02 elapsed, about 7:03:38 left")
    assert progress_line("x", 5, 5, 61.0) == "x: 5/5 (100.0%), 1:01 elapsed"
    assert progress_line("x", 0, 5, 3.0) == "x: 0/5 (0.0%), 0:03 elapsed"
    assert progress_line("x", 7, None, 3725.0) == "x: 7 done, 1:02:05 elapsed"


def test_track_logs_lines_when_stderr_is_not_a_terminal(monkeypatch, capsys) -> None:
    assert not common.err_console.is_terminal  # pytest captures stderr
    monkeypatch.setattr(common, "LOG_EVERY", 0.0)
    assert list(track(range(3), "c1: add", 3)) == [0, 1, 2]
    lines = capsys.readouterr().err.splitlines()
    assert [line.split(",")[0] for line in lines] == [
        "c1: add: 1/3 (33.3%)", "c1: add: 2/3 (66.7%)", "c1: add: 3/3 (100.0%)"]
    assert "left" not in lines[-1]


def test_a_short_loop_prints_nothing(capsys) -> None:
    assert list(track(range(3), "c1: add", 3)) == [0, 1, 2]
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("seconds", [59.4, 59.6])
def test_rounding_carries(seconds: float) -> None:
    assert progress_line("x", 1, None, seconds) == (
        "x: 1 done, 0:59 elapsed" if seconds < 59.5 else "x: 1 done, 1:00 elapsed")
