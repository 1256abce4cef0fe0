"""Work shared between a build's workers (Parser.memo_keys / Parser.memo): the heuristic
parser's choice of clauses for a turn, done once per dataset, gives what a fresh parse gives."""

from __future__ import annotations

from pathlib import Path

from memory_fixtures import make_bundle

from tiap.datasets.base import InlineDataset
from tiap.memory import build_store, make_parser
from tiap.memory.heuristic import HeuristicParser
from tiap.memory.parsers import Parser

SHARED = [("user", "I adopted a beagle named Max in March 2023 and I love walking him."),
          ("assistant", "Beagles need about an hour of exercise a day, so plan two walks.")]


def dataset(n: int = 6) -> InlineDataset:
    # n haystacks that repeat two turns (as LongMemEval-S repeats sessions), each with a
    # turn of its own, on different dates
    return InlineDataset([
        make_bundle(f"q{i}", [*SHARED, ("user", f"I moved to Lyon {i} years ago for work.")],
                    speakers=("user", "assistant"), date=f"2023/05/{10 + i} (Sat) 00:31")
        for i in range(n)])


def texts(parser: Parser, bundle) -> list[tuple[str, str | None]]:  # type: ignore[no-untyped-def]
    return [(it.item_id, it.text) for it in parser.derive(bundle)]


def test_work_handed_over_gives_what_a_fresh_parse_gives() -> None:
    b0, b1 = list(dataset(2).bundles())
    first, second, fresh = HeuristicParser(5), HeuristicParser(5), HeuristicParser(5)
    assert first.memo() == {}  # sharing starts with the first call
    texts(first, b0)
    done = first.memo()
    keys = second.memo_keys(b1)
    # the two repeated turns have the same keys in both haystacks (the third does not)
    assert keys[:2] == first.memo_keys(b0)[:2] and keys[2] not in done
    assert set(first.memo_keys(b0)) == set(done)
    second.memo({k: done[k] for k in keys if k in done})
    assert texts(second, b1) == texts(fresh, b1)
    # the second parser chose only its own turn's clauses, and says so
    assert set(second.memo()) == {keys[2]}


def test_work_handed_over_is_used() -> None:
    # a doctored entry shows the handed-over choice is what the parser rewrites
    b0 = next(iter(dataset(1).bundles()))
    p = HeuristicParser(5)
    key = p.memo_keys(b0)[0]
    p.memo({key: ("I adopted a parrot",)})
    assert texts(p, b0)[0] == ("q0:D1:1#f1", "On 10 May 2023, the user adopted a parrot.")


def test_a_parser_that_shares_nothing_is_never_asked() -> None:
    assert Parser().memo_keys(next(iter(dataset(1).bundles()))) is None
    # without memo(), a parser keeps nothing of what it chose (no growth in a long build)
    p = HeuristicParser(5)
    for b in dataset(3).bundles():
        texts(p, b)
    assert p.memo() == {}


def test_a_build_with_workers_sharing_work_writes_the_same_bytes(tmp_path: Path) -> None:
    ds = dataset(12)
    parser = make_parser("heuristic", max_facts=2)
    one = build_store(ds, parser, tmp_path / "one", workers=1, store="s")
    two = build_store(ds, parser, tmp_path / "two", workers=2, store="s")
    assert one.counts == two.counts and one.counts["by_kind"]["fact"] >= 24
    assert ((tmp_path / "one" / "items.jsonl").read_bytes()
            == (tmp_path / "two" / "items.jsonl").read_bytes())
