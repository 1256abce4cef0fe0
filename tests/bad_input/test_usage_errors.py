"""Kind 1 of the bad-input campaign: every command-line usage error is one line, exit 2.

The mechanism is ``tiap.cli.main.main``: it catches typer's (and click's) usage exceptions
and prints ``error[usage]: <command path>: <what is wrong, naming the option>; see
'<command path> --help'``. The tests walk every registered command, so a command added later
is covered without a new test.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
import typer

from tiap.cli.main import app, main


def _paths() -> list[list[str]]:
    """Every command path of the CLI: ``["rescore"]``, ``["audit", "judge"]``, ..."""
    root = typer.main.get_command(app)
    out: list[list[str]] = []

    def walk(cmd, path: list[str]) -> None:  # type: ignore[no-untyped-def]
        subs = getattr(cmd, "commands", None)
        if subs:
            for name, sub in subs.items():
                walk(sub, path + [name])
        else:
            out.append(path)

    walk(root, [])
    return out


PATHS = _paths()


def _one_usage_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("error[usage]: "), err
    assert "Traceback" not in err
    return lines[0]


def test_every_command_is_walked() -> None:
    names = {" ".join(p) for p in PATHS}
    # hand list of a few commands that must be there (one per group)
    assert {"rescore", "audit-run", "audit judge", "datasets list", "import generic"} <= names
    assert len(PATHS) >= 15


@pytest.mark.parametrize("path", PATHS, ids=[" ".join(p) for p in PATHS])
def test_unknown_option_is_one_line_naming_it(path: list[str], capsys) -> None:
    assert main([*path, "--no-such-option-xyz"]) == 2
    line = _one_usage_line(capsys)
    assert "--no-such-option-xyz" in line
    assert f"tiap {' '.join(path)}" in line


@pytest.mark.parametrize("flag", ["-h", "--help"])
@pytest.mark.parametrize("path", PATHS, ids=[" ".join(p) for p in PATHS])
def test_h_is_help(path: list[str], flag: str, capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert main([*path, flag]) == 0
    out = capsys.readouterr()
    assert "Usage: tiap " + " ".join(path) in " ".join(out.out.split())
    assert out.err == ""
    # a help page fits an 80-column terminal: plain text, no boxes, value names as PATH/INT
    lines = out.out.splitlines()
    assert max(map(len, lines)) <= 80, max(lines, key=len)
    assert not any(ch in out.out for ch in "╭│╰"), out.out[:400]
    assert "<bool>" not in out.out and "<list[" not in out.out


def test_no_arguments(capsys) -> None:
    assert main([]) == 2
    out = capsys.readouterr()
    assert "Usage: tiap" in out.out  # the help, as typer shows it
    line = [ln for ln in out.err.splitlines() if ln.strip()]
    assert len(line) == 1 and line[0].startswith("error[usage]: tiap: a command is missing")
    assert "rescore" in line[0]  # the commands are listed


@pytest.mark.parametrize("group", ["audit", "datasets", "import"])
def test_group_without_command(group: str, capsys) -> None:
    assert main([group]) == 2
    err = capsys.readouterr().err
    assert f"error[usage]: tiap {group}: a command is missing (one of: " in err


@pytest.mark.parametrize(("argv", "names"), [
    (["rescore"], ["--run"]),                               # a missing required option
    (["audit", "cases"], ["RESCORE_DIR"]),                  # a missing argument
    (["build-store", "locomo", "--max-facts", "abc"], ["--max-facts", "abc"]),  # a bad integer
    (["frobnicate"], ["frobnicate"]),                       # an unknown command
    (["audit", "frobnicate"], ["frobnicate"]),              # an unknown subcommand
    (["--max"], ["--max"]),                                 # an unknown option of the root
])
def test_usage_errors_name_what_is_wrong(argv: list[str], names: list[str], capsys) -> None:
    assert main(argv) == 2
    line = _one_usage_line(capsys)
    for n in names:
        assert n in line


def test_the_installed_entry_point_prints_no_traceback() -> None:
    """Through a real process, as a user runs it (``python -m tiap.cli.main``)."""
    done = subprocess.run([sys.executable, "-m", "tiap.cli.main", "rescore", "--k", "x"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith("error[usage]: tiap rescore: ")
