"""Every number a user gives has a declared range (issue 33, item 5): each numeric option of
every command states its range in ``--help`` and refuses a value past either end with one
``error[usage]`` line naming the option, exit 2, no traceback (``sensitivity --resamples
1000000000000`` was accepted, then numpy failed to allocate tens of TiB); every numeric key of
a config schema or settings object takes a declared range of :data:`tiap.limits.LIMITS`; and
Stage III refuses resamples whose test does not fit the memory the machine has.

The commands and their options are walked from the CLI itself, so an option added later
without a range fails here.
"""

from __future__ import annotations

import importlib
import re
import typing
from pathlib import Path

import numpy as np
import pytest
import typer

from tiap.cli.main import app, main
from tiap.errors import TiapError
from tiap.limits import LIMITS

_NUM = r"-?[\d,]+(?:\.\d+)?|2\^\d+ - 1"
#: ``Range: 1 to 10,000,000.``, ``Range: (0, 1).``, ``Range: (0, 86,400].``,
#: ``Range: 1 to 2 (this machine's CPUs).``
_RANGE = re.compile(rf"Range: (?:([\[(])({_NUM}), ({_NUM})([\])])|({_NUM}) to ({_NUM}))"
                    r"(?: \([^)]*\))?\.$")


def _number(text: str) -> float:
    if text.startswith("2^"):
        return 2 ** int(text[2:].split()[0]) - 1
    return float(text.replace(",", ""))


def _numeric_options() -> list[tuple[list[str], typer.core.TyperOption, type]]:
    """``(command path, option, int or float)`` for every numeric option of every command."""
    root = typer.main.get_command(app)
    out = []

    def walk(cmd, path: list[str]) -> None:  # type: ignore[no-untyped-def]
        if hasattr(cmd, "commands"):
            for name, sub in cmd.commands.items():
                walk(sub, [*path, name])
            return
        for p in cmd.params:
            hint = p.type_descriptor.annotation
            args = [a for a in typing.get_args(hint) if a is not type(None)]
            base = args[0] if typing.get_origin(hint) is not None and args else hint
            if base in (int, float):
                out.append((path, p, base))

    walk(root, [])
    return out


OPTIONS = _numeric_options()


def test_the_walk_finds_the_options_of_every_command() -> None:
    # a check of the walk itself: these options are numeric and must be among those found
    found = {(" ".join(path), p.opts[0]) for path, p, _ in OPTIONS}
    assert {("sensitivity", "--resamples"), ("audit-run", "--resamples"), ("rescore", "--k"),
            ("retrieve", "--bm25-b"), ("llm serve", "--ctx"), ("audit judge", "--timeout"),
            ("report", "--latex-width"), ("mem0-run", "--threshold")} <= found
    assert len(OPTIONS) >= 49


def _config(tmp_path: Path) -> Path:
    cfg = tmp_path / "c.toml"
    cfg.write_text('name = "c"\ndataset = "locomo"\n\n[[stores]]\nname = "f1"\n'
                   'parser = "heuristic"\n')
    return cfg


def _past(text: str, kind: type) -> tuple[str, str]:
    """A value just below and one just above the range a help text states."""
    m = _RANGE.search(text)
    assert m, f"no range at the end of the help: {text!r}"
    if m.group(1):
        low, high = _number(m.group(2)), _number(m.group(3))
        low_open, high_open = m.group(1) == "(", m.group(4) == ")"
    else:
        low, high = _number(m.group(5)), _number(m.group(6))
        low_open = high_open = False
    if kind is int:
        return str(int(low) - 1), str(int(high) + 1)
    below = low if low_open else low - max(1.0, abs(low))
    above = high if high_open else high + max(1.0, abs(high))
    return repr(below), repr(above)


@pytest.mark.parametrize("path,option,kind", OPTIONS,
                         ids=[f"{' '.join(p)} {o.opts[0]}" for p, o, _ in OPTIONS])
def test_each_numeric_option_states_its_range_and_refuses_values_past_it(
        path, option, kind, tmp_path: Path, capsys) -> None:
    name = option.opts[0]
    assert option.help and _RANGE.search(option.help), f"{' '.join(path)} {name}: {option.help}"
    # the help as printed names the range too
    assert main([*path, "--help"]) == 0
    printed = capsys.readouterr().out
    assert printed.count("Range:") == sum(1 for p2, _, _ in OPTIONS if p2 == path), printed
    # audit-run's overrides are checked by the config's schema: it needs a config
    extra = [str(_config(tmp_path))] if path == ["audit-run"] else []
    out = tmp_path / "out"
    for value in _past(option.help, kind):
        rc = main([*path, name, value, *extra, "--out", str(out)]
                  if "--out" in _opts(path) else [*path, name, value, *extra])
        err = capsys.readouterr().err
        assert rc == 2, (name, value, err)
        assert "Traceback" not in err
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith(f"error[usage]: option {name}: expected "), (
            name, value, err)
        assert not out.exists()


def _opts(path: list[str]) -> set[str]:
    cmd = typer.main.get_command(app)
    for word in path:
        cmd = cmd.commands[word]  # type: ignore[attr-defined]
    return {o for p in cmd.params for o in p.opts}


def test_resamples_past_the_bound_is_refused_as_given_in_the_issue(capsys) -> None:
    assert main(["sensitivity", "r", "--out", "o", "--resamples", "1000000000000"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error[usage]: option --resamples: expected an integer from 1 to "
                          "10,000,000, got 1000000000000 (an integer); the smallest p-value")


# -- config keys -------------------------------------------------------------------------------

#: The modules declaring every config schema and settings object.
SCHEMA_MODULES = ("tiap.pipeline", "tiap.llm.client", "tiap.audit.openai_judge",
                  "tiap.audit.judges", "tiap.retrieval.factory", "tiap.memory.heuristic",
                  "tiap.memory.llm_parser", "tiap.importers.mem0_harness")


def _schemas() -> list[type]:
    from tiap.config import Schema

    for m in SCHEMA_MODULES:
        importlib.import_module(m)
    seen: list[type] = []
    todo = [Schema]
    while todo:
        cls = todo.pop()
        for sub in cls.__subclasses__():
            if sub not in seen:
                seen.append(sub)
                todo.append(sub)
    return seen


def test_every_numeric_config_key_has_a_declared_range() -> None:
    schemas = _schemas()
    assert len(schemas) >= 10  # the walk finds them
    missing, found = [], 0
    for cls in schemas:
        for key, field in cls.model_fields.items():
            hint = field.annotation
            args = [a for a in typing.get_args(hint) if a is not type(None)]
            base = args[0] if typing.get_origin(hint) is not None and args else hint
            if base not in (int, float):
                continue
            limits = [getattr(getattr(v, "func", None), "limit", None) for v in field.metadata]
            if not any(lim in LIMITS for lim in limits):
                missing.append(f"{cls.__name__}.{key}")
            found += 1
    assert not missing, missing
    assert found >= 40


def test_a_config_key_past_its_range_is_a_config_error(tmp_path: Path, capsys) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text('name = "c"\ndataset = "locomo"\nresamples = 1000000000000\n'
                   'seed = 9223372036854775808\n\n[[stores]]\nname = "f1"\n'
                   'parser = "heuristic"\nmax_facts = 5000\n')
    assert main(["audit-run", str(cfg), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    assert err.splitlines() == [
        f"error[config]: {cfg}:3: key resamples: expected an integer from 1 to 10,000,000, "
        "got 1000000000000 (an integer); the smallest p-value, 1/(resamples + 1), is then "
        "10^-7, fine enough for Holm over 500,000 gaps at alpha 0.05",
        f"error[config]: {cfg}:4: key seed: expected an integer from 0 to 2^63 - 1, got "
        "9223372036854775808 (an integer); seeds are recorded and sent to endpoints as 64-bit "
        "integers",
        f"error[config]: {cfg}:9: key stores[0].max_facts: expected an integer from 1 to "
        "1,000, got 5000 (an integer); no turn holds a thousand facts, and the llm parser "
        "asks for at most this many in one reply"]
    assert not (tmp_path / "out").exists()


# -- what fits the machine ---------------------------------------------------------------------


def test_resamples_that_do_not_fit_the_memory_are_refused_before_any_test(monkeypatch) -> None:
    from tiap.sensitivity import stats

    rng = np.random.default_rng(0)
    gaps = [stats.Gap(("f",), np.ones(40, bool), rng.normal(size=40))]
    # 40 queries, 1 gap, B resamples: 3*40*B (signs) + 33*B + 19*1*B (the interval ends of
    # one column, width = min(1, 2^20 // B) = 1) + 4*8*2^20 = 172*B + 33,554,432 bytes
    assert stats.subset_test_bytes(40, 100_000, 1) == 172 * 100_000 + 33_554_432
    monkeypatch.setattr(stats, "available_memory", lambda: 172 * 50_000 + 33_554_432)
    called = []
    monkeypatch.setattr(stats, "_test_subset", lambda job: called.append(job))
    with pytest.raises(TiapError) as err:
        stats.evaluate_gaps(gaps, seed=0, dataset="d", resamples=100_000)
    (p,) = err.value.problems
    assert p.code == "invalid-value" and not called
    # the largest B with 172*B + 33,554,432 <= 172*50,000 + 33,554,432 is 50,000
    assert p.message == (
        "resamples (--resamples) 100,000: the sign-flip test of a shared subset of 40 queries "
        "(1 gap, dataset d) needs about 51 MB, more than the 42 MB this machine has "
        "available; give at most --resamples 50,000")
    # what fits runs (the memory the system reports unknown: no check)
    monkeypatch.undo()
    monkeypatch.setattr(stats, "available_memory", lambda: None)
    (res,) = stats.evaluate_gaps(gaps, seed=0, dataset="d", resamples=50)
    assert res.n == 40


# -- the docs ----------------------------------------------------------------------------------

DOC = Path(__file__).resolve().parents[2] / "docs" / "limits.md"


def table() -> str:
    """The ranges table of docs/limits.md, as it must read (rendered from LIMITS)."""
    rows = ["| range | values | why the upper bound |", "|---|---|---|"]
    for name, lim in LIMITS.items():
        rows.append(f"| `{name}` | {lim.expected(doc=True)} | {lim.why or '-'} |")
    return "\n".join(rows)


def test_docs_list_exactly_the_declared_ranges() -> None:
    text = DOC.read_text(encoding="utf-8")
    start = text.index("<!-- limits:start -->") + len("<!-- limits:start -->")
    end = text.index("<!-- limits:end -->")
    assert text[start:end].strip() == table(), (
        "docs/limits.md is out of date; its table must read:\n\n" + table())
