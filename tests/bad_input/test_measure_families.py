"""Each measure family is declared once (tiap.scoring.families.FAMILIES) and everything
reads that declaration: parsing, the kernels, ``tiap measures`` and the docs table. Plus
the structure of tiap.scoring: no import circle, no module importing another's private name.
"""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import tiap
from tiap.cli.main import app
from tiap.errors import TiapError
from tiap.scoring import families, kernels
from tiap.scoring.families import FAMILIES, families_markdown, family_rows
from tiap.scoring.kernels import Targets, check_credit, repeated_rows, score
from tiap.scoring.measures import Measure, parse_measure

ROOT = Path(tiap.__file__).parent
DOCS = ROOT.parents[1] / "docs" / "targets-and-scoring.md"


# ------------------------------------------------------------------------------------------
# one declaration, read by everything


def test_docs_table_is_rendered_from_the_declarations() -> None:
    text = DOCS.read_text(encoding="utf-8")
    start, end = "<!-- measures:start -->\n", "<!-- measures:end -->"
    assert start in text and end in text
    table = text.split(start, 1)[1].split(end, 1)[0]
    assert table == families_markdown(), "re-render with tiap.scoring.families.families_markdown()"


def test_every_declared_spelling_parses_to_its_family() -> None:
    for f in FAMILIES.values():
        for spelling, params in f.spellings().items():
            for text in (spelling, spelling.upper()):
                m = parse_measure(f"{text}@5")
                assert m.family == f.name, text
                for name, value in params.items():
                    assert m.param(name) == value, text
        if "_" in f.name:  # alpha-nDCG, ERR-IA
            assert parse_measure(f.name.replace("_", "-") + "@5").family == f.name


def test_cutoff_budget_and_parameters_follow_the_declaration() -> None:
    for f in FAMILIES.values():
        if f.cutoff_optional:
            assert Measure(f.name).cutoff is None
        else:
            with pytest.raises(TiapError, match="needs a cutoff"):
                Measure(f.name)
        if f.budget:
            assert str(parse_measure(f"{f.name}@tok100")) == f"{f.name}@tok100"
        else:
            with pytest.raises(TiapError, match="takes no token budget"):
                parse_measure(f"{f.name}@tok100")
        m = Measure(f.name, 3)
        assert dict(m.params) == f.defaults
        with pytest.raises(TiapError, match="has no parameter 'nope'"):
            Measure(f.name, 3, (("nope", 1),))


def test_parameters_are_checked_by_their_declaration() -> None:
    for bad in (-0.1, 1.5, math.nan, True, "x"):
        with pytest.raises(TiapError, match="alpha must be a number from 0 to 1"):
            Measure("alpha_nDCG", 5, (("alpha", bad),))
    with pytest.raises(TiapError, match="discount must be one of 'log2', 'jk'"):
        parse_measure("nDCG(discount='ln')@5")


def test_tiap_measures_prints_the_declarations() -> None:
    rows = family_rows(100)
    assert [r[0] for r in rows] == list(FAMILIES)
    for f, (_, computes, cutoff, spelled) in zip(FAMILIES.values(), rows, strict=True):
        assert computes == f.meaning
        assert cutoff == ("@k, 1 to 100; bare = the whole list" if f.cutoff_optional
                          else "@k required, 1 to 100")
        for alias in (*f.aliases, *f.presets):
            assert alias in spelled
    got = CliRunner().invoke(app, ["measures"])
    assert got.exit_code == 0, got.output
    for f in FAMILIES.values():
        assert any(line.startswith(f"│ {f.name} ") for line in got.output.splitlines())


def test_the_kernel_is_the_one_the_declaration_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """score() dispatches on FAMILIES: swap a family's kernel and the value follows."""
    def seven(r: families.Ranked, m: families.MeasureArgs, k: int) -> np.ndarray:
        return np.full(r.n_targets.size, 7.0 + k)

    table = dict(FAMILIES)
    table["P"] = dataclasses.replace(FAMILIES["P"], kernel=seven)
    monkeypatch.setattr(families, "FAMILIES", table)
    monkeypatch.setattr(kernels, "FAMILIES", table)
    t = Targets.from_groups([[[1]], []])
    got = score(np.array([[1, 2], [3, -1]]), t, "P@2,R@2")
    assert got[parse_measure("P@2")].tolist()[0] == 9.0  # 7 + k, k = 2
    assert math.isnan(got[parse_measure("P@2")].tolist()[1])  # zero-target: NaN still
    assert got[parse_measure("R@2")].tolist()[0] == 1.0  # the others unchanged


# Groups g1 = {1, 2}, g2 = {3}, g3 = {4}; ranking [2, 9, 1, 3] (depth 4). Group credit:
# rank 1 (item 2) opens g1, gain 1; rank 2 nothing; rank 3 (item 1) is in g1, already
# matched, gain 0; rank 4 (item 3) opens g2, gain 1. G = 3, hits@4 = 2.
_L = math.log2
_HAND = {
    # (1/log2 2 + 1/log2 5) / (1/log2 2 + 1/log2 3 + 1/log2 4)
    "nDCG@4": (1 + 1 / _L(5)) / (1 + 1 / _L(3) + 1 / _L(4)),
    # jk discounts 1, 1, 1/log2 3, 1/log2 4: gains at ranks 1 and 4; ideal 3 ones
    "nDCG(discount='jk')@4": (1 + 1 / _L(4)) / (1 + 1 + 1 / _L(3)),
    "R@4": 2 / 3,
    "RR@4": 1.0,
    "Success@1": 1.0,
    "P@4": 2 / 4,
    "Rall@4": 0.0,
    # intent gains a_i: 1, 0, (1 - 0.5)^1 = 0.5 (g1's second item), 1; the greedy ideal
    # takes one item of each group (1, 1, 1), then g1's other item (0.5)
    "alpha_nDCG(alpha=0.5)@4": (1 + 0.5 / _L(4) + 1 / _L(5))
    / (1 + 1 / _L(3) + 1 / _L(4) + 0.5 / _L(5)),
    # sum a_i / i over |G| sum_{i<=4} 0.5^(i-1) / i
    "ERR_IA(alpha=0.5)@4": (1 + 0.5 / 3 + 1 / 4) / (3 * (1 + 0.5 / 2 + 0.25 / 3 + 0.125 / 4)),
}


def test_every_family_by_hand() -> None:
    assert {parse_measure(n).family for n in _HAND} == set(FAMILIES)
    t = Targets.from_groups([[[1, 2], [3], [4]]])
    got = score(np.array([[2, 9, 1, 3]]), t, list(_HAND), "group")
    for name, want in _HAND.items():
        assert got[parse_measure(name)][0] == pytest.approx(want, abs=1e-12), name


# ------------------------------------------------------------------------------------------
# public helpers that replaced private imports


def test_check_credit_and_repeated_rows() -> None:
    assert check_credit("group") == "group"
    with pytest.raises(TiapError, match="unknown credit mode 'sets'"):
        check_credit("sets")
    rows = np.array([[3, 1, -1], [2, 2, -1], [5, -1, -1], [7, 8, 7]])
    assert repeated_rows(rows).tolist() == [1, 3]
    assert repeated_rows(np.zeros((2, 1), np.int64)).tolist() == []


# ------------------------------------------------------------------------------------------
# structure of tiap.scoring


# The package-wide structure facts (no import circle, no private name across modules, the
# scoring package included) are checked in tests/test_structure.py.
