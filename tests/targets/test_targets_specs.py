"""Target specs: the grammar, canonical forms, errors, and the registry."""

from __future__ import annotations

import pytest
from fixtures_targets import item

from tiap.errors import TiapError
from tiap.targets import (
    CANONICAL,
    RAW,
    SOURCE,
    Target,
    TargetRegistry,
    get_target,
    parse_target,
    resolve_targets,
)
from tiap.targets.targets import parse_spec

FACT = item("f", "fact", ("u",))
OBS = item("o", "observation", ("u",), serving=False)
RAW_ITEM = item("t", "raw", ("u",))
META = item("m", "event", ("u1", "u2"), confidence="high", level=2, flagged=True)


def test_builtins() -> None:
    assert get_target("raw") is RAW and get_target("Source") is SOURCE
    assert str(RAW) == "raw=kind == raw"
    assert str(SOURCE) == "source=true"
    assert str(CANONICAL) == "canonical=kind != raw and serving"
    assert [RAW.matches(i) for i in (FACT, OBS, RAW_ITEM)] == [False, False, True]
    assert [SOURCE.matches(i) for i in (FACT, OBS, RAW_ITEM)] == [True, True, True]
    # OBS is non-serving, the raw turn is raw
    assert [CANONICAL.matches(i) for i in (FACT, OBS, RAW_ITEM)] == [True, False, False]


@pytest.mark.parametrize(
    ("definition", "canonical", "fact", "obs", "raw"),
    [
        ("facts=kind in {fact,observation}", "facts=kind in {fact, observation}", 1, 1, 0),
        ("served=serving", "served=serving", 1, 0, 1),  # raw turns serve by default
        ("nonraw=kind != raw", "nonraw=kind != raw", 1, 1, 0),
        ("hidden=kind != raw and not serving", "hidden=kind != raw and not serving", 0, 1, 0),
        ("x = kind = fact or kind == raw", "x=kind == fact or kind == raw", 1, 0, 1),
        ("y=not (kind == fact or kind == raw)", "y=not (kind == fact or kind == raw)", 0, 1, 0),
        ("z=kind not in {raw, 'observation',}", "z=kind not in {observation, raw}", 1, 0, 0),
        ("Off=serving == false", "off=serving == false", 0, 1, 0),
        ("none=false", "none=false", 0, 0, 0),
        ("w=item_id in {f, t} AND NOT kind == raw", "w=item_id in {f, t} and not kind == raw",
         1, 0, 0),
    ],
)
def test_valid_specs(definition: str, canonical: str, fact: int, obs: int, raw: int) -> None:
    t = parse_target(definition)
    assert str(t) == canonical
    assert parse_target(str(t)) == t  # the canonical form re-parses to an equal target
    assert [t.matches(i) for i in (FACT, OBS, RAW_ITEM)] == [bool(fact), bool(obs), bool(raw)]


def test_extra_fields_and_lists() -> None:
    assert parse_target("c=confidence == high").matches(META)
    assert parse_target("l=level == 2").matches(META)  # numbers compared as written
    assert parse_target("g=flagged").matches(META)
    assert not parse_target("g=flagged").matches(FACT)  # absent extra field is falsy
    assert parse_target("n=confidence != high").matches(FACT)  # absent: equals nothing
    # list fields match when any element does
    assert parse_target("s=sources == u2").matches(META)
    assert parse_target("s=sources in {u9, u1}").matches(META)
    assert not parse_target("s=sources in {u9}").matches(META)
    assert parse_target('q=kind == "event"').fields == frozenset({"kind"})


@pytest.mark.parametrize(
    ("definition", "fragment"),
    [
        ("kind==raw", "expected 'name=spec'"),
        ("facts", "unknown target 'facts'"),
        ("x=", "empty spec"),
        ("x=kind in {fact", "expected ',' or '}', found end of spec at column 14"),
        ("x=kind in fact", "expected '{' to open a set of values"),
        ("x=kind in {}", "expected a value"),
        ("x=kind ! raw", "unexpected character '!' (use 'not' or '!=') at column 6"),
        ("x=kind == 'raw", "unterminated quoted value"),
        ("x=kind == raw serving", "expected 'and', 'or' or end of spec, found 'serving'"),
        ("x=(kind == raw", "expected ')'"),
        ("x=kind == and", "expected a value"),
        ("x=and", "expected a field name"),
        ("x=kind not raw", "expected 'in' after 'not'"),
        ("x=9kind", "is not a field name"),
        ("x=__import__('os').system('true')", "expected 'and', 'or' or end of spec"),
        ("1x=kind == raw", "expected 'name=spec'"),
        ("raw=kind == fact", "built in and cannot be redefined"),
    ],
)
def test_invalid_specs(definition: str, fragment: str) -> None:
    with pytest.raises(TiapError) as ei:
        resolve_targets([definition], TargetRegistry())
    assert fragment in str(ei.value)


def test_nesting_limit_is_an_error_not_a_crash() -> None:
    with pytest.raises(TiapError, match="nested more than"):
        parse_spec("not " * 200 + "serving")
    with pytest.raises(TiapError, match="nested more than"):
        parse_spec("(" * 200 + "serving" + ")" * 200)
    with pytest.raises(TiapError, match="longer than"):
        parse_spec("serving and " * 1000 + "serving")


def test_invalid_target_name() -> None:
    with pytest.raises(TiapError, match="invalid target name"):
        Target("Bad Name", parse_spec("serving"))


def test_resolve_reports_all_problems_together() -> None:
    reg = TargetRegistry()
    with pytest.raises(TiapError) as ei:
        reg.resolve(["raw", "nope", "a=kind ==", "b=serving", "b=not serving"])
    msgs = [p.message for p in ei.value.problems]
    assert len(msgs) == 3
    assert msgs[0].startswith("unknown target 'nope'")
    assert msgs[1].startswith("target 'a': invalid target spec")
    assert msgs[2] == "target 'b' defined twice: 'serving' and 'not serving'"


def test_registry() -> None:
    reg = TargetRegistry()
    assert reg.names() == ("raw", "source", "canonical")
    facts = reg.register("facts=kind in {fact}")
    assert reg.get("FACTS") is facts and "facts" in reg
    reg.register("facts=kind in {fact}")  # the same definition again: fine
    with pytest.raises(TiapError, match="already defined"):
        reg.register("facts=kind in {observation}")
    reg.register("facts=kind in {observation}", replace=True)
    assert reg.get("facts").spec == "kind in {observation}"
    with pytest.raises(TiapError, match="built in"):
        reg.register("canonical=serving", replace=True)
    # resolve: names, definitions (not registered) and Target objects, duplicates merged
    got = reg.resolve(["raw", "facts", "x=serving", RAW])
    assert [t.name for t in got] == ["raw", "facts", "x"]
    assert "x" not in reg


def test_builtin_name_cannot_be_taken_by_a_target_object() -> None:
    with pytest.raises(TiapError, match="built in"):
        resolve_targets([Target("raw", parse_spec("kind == fact"))], TargetRegistry())
