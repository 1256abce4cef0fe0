"""Measures are values: parsed with ``ast``, canonical ``str()``, equality and hash by name."""

from __future__ import annotations

import pytest

from tiap.errors import TiapError
from tiap.scoring import KNOWN_MEASURES, Measure, parse_measure, parse_measures
from tiap.scoring.measures import RR, R, Success, nDCG


@pytest.mark.parametrize(
    "name", ["nDCG@60", "R@60", "RR@60", "RR", "Success@1", "P@10", "nDCG", "R", "Success"]
)
def test_canonical_round_trip(name: str) -> None:
    m = parse_measure(name)
    assert str(m) == name
    assert repr(m) == name
    assert parse_measure(str(m)) == m


@pytest.mark.parametrize(
    ("alias", "canonical"),
    [
        ("ndcg@10", "nDCG@10"),
        ("NDCG@10", "nDCG@10"),
        ("ndcg_cut@10", "nDCG@10"),
        ("nDCG @ 10", "nDCG@10"),
        ("Recall@10", "R@10"),
        ("recall@10", "R@10"),
        ("r@10", "R@10"),
        ("MRR@10", "RR@10"),
        ("mrr", "RR"),
        ("recip_rank", "RR"),
        ("Hit@10", "Success@10"),
        ("hit_rate@10", "Success@10"),
        ("HitRate@5", "Success@5"),
        ("success@1", "Success@1"),
        ("Precision@5", "P@5"),
        ("p@5", "P@5"),
    ],
)
def test_aliases_map_to_canonical(alias: str, canonical: str) -> None:
    assert str(parse_measure(alias)) == canonical


def test_equality_and_hash_use_the_canonical_name() -> None:
    a, b, c = parse_measure("ndcg@10"), parse_measure("nDCG@10"), Measure("nDCG", 10)
    assert a == b == c
    assert len({a, b, c}) == 1
    assert {a: 1}[c] == 1
    assert parse_measure("nDCG@10") != parse_measure("nDCG@11")
    assert parse_measure("RR") != parse_measure("RR@10")
    assert parse_measure("R@10") != "R@10"  # a measure is not a string


def test_measures_are_frozen() -> None:
    m = parse_measure("R@5")
    with pytest.raises(AttributeError):
        m.cutoff = 6  # type: ignore[misc]


def test_matmul_builds_cutoffs_like_the_parser() -> None:
    assert nDCG @ 60 == parse_measure("nDCG@60")
    assert R @ 60 == parse_measure("R@60")
    assert RR @ 10 == parse_measure("RR@10")
    assert Success @ 1 == parse_measure("Success@1")
    assert RR.at(None) == RR


def test_parse_measures_list_forms() -> None:
    expected = (parse_measure("nDCG@60"), parse_measure("R@60"))
    assert parse_measures("nDCG@60,R@60") == expected
    assert parse_measures("nDCG@60, R@60") == expected
    assert parse_measures(["ndcg@60", "recall@60"]) == expected
    assert parse_measures([parse_measure("nDCG@60"), "R@60"]) == expected
    assert parse_measures(parse_measure("RR")) == (parse_measure("RR"),)
    # duplicates are dropped, first occurrence keeps its place
    assert parse_measures("R@5,nDCG@5,recall@5") == (parse_measure("R@5"), parse_measure("nDCG@5"))


@pytest.mark.parametrize("bad", ["foo@10", "MAP@10", "ndcg_cut.10", "nDCG@", "@10", "nDCG(10)", ""])
def test_unknown_or_malformed_names_list_the_known_ones(bad: str) -> None:
    with pytest.raises(TiapError) as exc:
        parse_measure(bad)
    assert KNOWN_MEASURES in str(exc.value)
    assert "nDCG@k" in str(exc.value) and "Success@k" in str(exc.value)


@pytest.mark.parametrize("bad", ["nDCG@0", "nDCG@-1", "nDCG@1.5", "nDCG@True", "P", "precision"])
def test_bad_cutoffs(bad: str) -> None:
    with pytest.raises(TiapError):
        parse_measure(bad)


def test_parse_measure_rejects_a_list_and_non_strings() -> None:
    with pytest.raises(TiapError, match="parse_measures"):
        parse_measure("nDCG@10,R@10")
    with pytest.raises(TiapError):
        parse_measure(10)  # type: ignore[arg-type]
    with pytest.raises(TiapError):
        parse_measures([])
    with pytest.raises(TiapError):
        Measure("MAP", 10)


def test_parsing_never_evaluates_code() -> None:
    # a call expression parses but is rejected: nothing is evaluated
    with pytest.raises(TiapError):
        parse_measure("__import__('os').system('true')")
