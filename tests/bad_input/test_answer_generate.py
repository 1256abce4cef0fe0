"""Bad input to tiap.answers.generate: refused before any request, every problem located and
reported together. The endpoint is a closed port: a check that let a request through would
fail with a connection error instead of the message asserted."""

from __future__ import annotations

from pathlib import Path

import pytest

from tiap.answers.generate import generate_answers
from tiap.datasets import Query
from tiap.errors import TiapError
from tiap.memory.store import Item
from tiap.runs import Ranking, Run

NOWHERE = ("http://127.0.0.1:9/v1", "m")  # the discard port: nothing answers there
ITEMS = [Item("t1", "raw", ("c:1",), text="Ann: I adopted a cat called Pixel."),  # 9 tokens
         Item("t2", "raw", ("c:2",), text="Bob: Lisbon."),  # 4 tokens
         Item("t3", "raw", ("c:3",), text="one two three four five six seven")]  # 7 tokens
QUERIES = [Query("q1", "c", "Cat?", "Pixel", "single-hop", ("c:1",)),
           Query("q2", "c", "City?", "Lisbon", "single-hop", ("c:2",)),
           Query("q3", "c", "Count?", "seven", "single-hop", ("c:3",))]


def _run(name: str, store: str | None, ranks: dict[str, list[str]] | None = None) -> Run:
    ranks = ranks or {"q1": ["t1", "t2"], "q2": ["t2", "t1"], "q3": ["t3"]}
    return Run(name, [Ranking(q, name, ids) for q, ids in ranks.items()], store=store)


def _gen(run, stores=None, **kw):
    return generate_answers(run, QUERIES, {"s": ITEMS} if stores is None else stores,
                            endpoint=NOWHERE, **kw)


def test_a_run_naming_a_store_not_given(tmp_path: Path) -> None:
    with pytest.raises(TiapError) as exc:
        _gen([_run("a", "f1"), _run("b", "native"), _run("c", "s")], cache=tmp_path / "c")
    assert exc.value.code == "usage"
    # both runs named, together; the third (store s) is fine
    assert [p.message for p in exc.value.problems] == [
        "run a ranks items of store 'f1', which is not given (stores: s)",
        "run b ranks items of store 'native', which is not given (stores: s)"]
    # a run that names no store, with two stores given: which one is not guessed
    with pytest.raises(TiapError, match="run a does not name its store and 2 stores"):
        _gen(_run("a", None), {"s": ITEMS, "t": ITEMS}, cache=tmp_path / "c")


@pytest.mark.parametrize(("option", "value"), [("k", 0), ("k", -3), ("k", 2.5), ("k", True),
                                                ("token_budget", 0), ("max_tokens", 0)])
def test_out_of_range_options_name_the_option(option: str, value: object,
                                              tmp_path: Path) -> None:
    with pytest.raises(TiapError, match=rf"^{option} must be an integer from 1 to [\d,]+, "
                                        rf"got {value!r}$") as exc:
        _gen(_run("a", "s"), cache=tmp_path / "c", **{option: value})
    assert exc.value.code == "usage"


def test_a_budget_too_small_for_one_item_is_an_error_naming_every_query(tmp_path) -> None:
    # budget 5: q1's first item has 9 tokens (Ann : I adopted a cat called Pixel .), q3's 7;
    # q2's first (Bob : Lisbon . = 4) fits, and its second (9 more) is cut, as usual
    with pytest.raises(TiapError) as exc:
        _gen(_run("a", "s"), token_budget=5, cache=tmp_path / "c")
    assert exc.value.code == "usage"
    assert [(p.query_id, p.message) for p in exc.value.problems] == [
        ("q1", "token_budget 5 is too small for the first item of run a ('t1', 9 tokens)"),
        ("q3", "token_budget 5 is too small for the first item of run a ('t3', 7 tokens)")]
    assert not (tmp_path / "c").exists()  # refused before the cache was even opened


def test_rankings_that_do_not_match_the_store_or_the_queries(tmp_path: Path) -> None:
    run = _run("a", "s", {"q1": ["t1", "ghost"], "q2": ["t2"]})
    with pytest.raises(TiapError) as exc:
        _gen(run, cache=tmp_path / "c")
    assert [(p.query_id, p.code, p.message) for p in exc.value.problems] == [
        ("q1", "input", "run a ranks item 'ghost' (rank 2), which store 's' does not hold"),
        ("q3", "usage", "run a has no ranking for query q3")]
    with pytest.raises(TiapError, match="1 query ids are not among the queries: q9"):
        _gen(_run("a", "s"), query_ids=["q1", "q9"], cache=tmp_path / "c")
    with pytest.raises(TiapError, match=r"no run of system 'b'; the runs are of a"):
        _gen(_run("a", "s"), systems=["b"], cache=tmp_path / "c")


def test_what_would_give_two_answers_to_one_query(tmp_path: Path) -> None:
    # refused before any request, not after them (the answer set refuses a second answer
    # of one system to one query only once every request has been made)
    with pytest.raises(TiapError, match=r"two runs of system 'a': one run per system"):
        _gen([_run("a", "s"), _run("a", "s")], cache=tmp_path / "c")
    with pytest.raises(TiapError, match="query_ids names 1 queries twice: q1"):
        _gen(_run("a", "s"), query_ids=["q1", "q2", "q1"], cache=tmp_path / "c")


def test_a_prompt_without_its_fields(tmp_path: Path) -> None:
    bad = tmp_path / "p.txt"
    bad.write_text("Answer this: {question}\n")
    with pytest.raises(TiapError, match=r"p.txt: the answer prompt has no \{context\}") as exc:
        _gen(_run("a", "s"), prompt=bad, cache=tmp_path / "c")
    assert exc.value.code == "invalid-value"
    with pytest.raises(TiapError, match="answer prompt file not found"):
        _gen(_run("a", "s"), prompt=tmp_path / "none.txt", cache=tmp_path / "c")
