"""The fixed edge-case matrix: every measure x both credit modes x every edge case.

Each case is a small inline fixture; expected values come from the naive reference scorer
(``scoring_reference.reference``) and, where the contract fixes them, explicitly (NaN for
no target, 0 for an empty run).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from scoring_reference import reference

from tiap.scoring import Credit, encode, parse_measures, score

MEASURES = parse_measures(
    "nDCG@1,nDCG@3,nDCG@70,nDCG,R@1,R@3,R@70,R,RR@1,RR@3,RR,Success@1,Success@3,Success,P@1,P@3,P@70"
)
CREDITS: tuple[Credit, ...] = ("group", "set")

Case = tuple[Sequence[Sequence[Any]], Sequence[Sequence[Any]]]

MANY = [f"m{i}" for i in range(100)]
CASES: dict[str, Case] = {
    "empty run": ([[], ["a"]], [[{"a"}, {"b"}], [{"a"}]]),
    "empty target": ([["a", "b"], ["a"]], [[], [{"a"}]]),
    "only empty groups": ([["a", "b"]], [[set(), set()]]),
    "partial coverage": (
        [["x", "a", "y", "b", "z"]],
        [[{"a", "u"}, {"v", "w"}, {"b"}, {"t"}]],
    ),
    "duplicate item in groups": (
        [["a", "b", "c", "d"]],
        [[["b", "b", "c"], {"b", "d"}, {"b"}, ["x", "c"]]],
    ),
    "unknown ids": (
        [["r1", "r2", "r3"], ["r4"]],
        [[{"never1"}, {"never2", "r3"}], [{"never3"}]],
    ),
    "more than 64 groups": (
        [MANY[:70]],
        [[{m} for m in MANY[:90]] + [{MANY[0], MANY[69]}, set(MANY[60:80])]],
    ),
    "ranking deeper than 64": (
        [MANY[:100]],
        [[{MANY[66]}, {MANY[3], MANY[99]}, {"gone"}]],
    ),
    "single item run": ([["a"]], [[{"a"}, {"b"}]]),
    "everything relevant": ([["a", "b", "c"]], [[{"a", "b", "c"}]]),
}


def _run(case: Case, credit: Credit) -> dict[str, np.ndarray]:
    rankings, groups = case
    enc = encode(rankings, groups)
    return {
        str(m): v for m, v in score(enc.rankings, enc.targets[0], MEASURES, credit=credit).items()
    }


@pytest.mark.parametrize("credit", CREDITS)
@pytest.mark.parametrize("case", list(CASES))
def test_edge_case_matrix(case: str, credit: Credit) -> None:
    rankings, groups = CASES[case]
    got = _run(CASES[case], credit)
    assert set(got) == {str(m) for m in MEASURES}
    for m in MEASURES:
        values = got[str(m)]
        assert values.shape == (len(rankings),) and values.dtype == np.float64
        for q, (ranking, query_groups) in enumerate(zip(rankings, groups, strict=True)):
            expected = reference(ranking, query_groups, m.family, m.cutoff, credit)
            if math.isnan(expected):
                assert np.isnan(values[q]), (case, credit, str(m), q)
            else:
                assert values[q] == pytest.approx(expected, abs=1e-12), (case, credit, str(m), q)


@pytest.mark.parametrize("credit", CREDITS)
def test_contract_values(credit: Credit) -> None:
    # empty run with targets -> 0 for every measure; no target -> NaN for every measure
    empty_run = _run(CASES["empty run"], credit)
    empty_target = _run(CASES["empty target"], credit)
    only_empty = _run(CASES["only empty groups"], credit)
    for m in MEASURES:
        assert empty_run[str(m)][0] == 0.0
        assert np.isnan(empty_target[str(m)][0]) and not np.isnan(empty_target[str(m)][1])
        assert np.isnan(only_empty[str(m)][0])
    # unknown ids are simply never matched
    unknown = _run(CASES["unknown ids"], credit)
    assert unknown["RR"][0] == pytest.approx(1 / 3) and unknown["RR"][1] == 0.0


def test_more_than_64_groups_values() -> None:
    # 92 groups; ranking m0..m69. 70 singleton groups are matched at their own rank; the
    # group {m0, m69} is matched at rank 1 together with {m0}; {m60..m79} at rank 61.
    got = _run(CASES["more than 64 groups"], "group")
    assert got["R@70"][0] == pytest.approx(72 / 92)
    assert got["R@1"][0] == pytest.approx(2 / 92)
    assert got["P@70"][0] == pytest.approx(1.0)  # every rank credits at least one group
    # nDCG@70: all 70 ranks have gain 1 and the ideal is 70 ones
    assert got["nDCG@70"][0] == pytest.approx(1.0)
