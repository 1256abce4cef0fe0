"""One printing rule for signed values and intervals (:mod:`tiap.numfmt`), used by every
printer: the terminal (``tiap sensitivity``, ``tiap audit-run``), the report's tables and
the target card. CSV files keep full precision (not tested here: they are written by repr)."""

from __future__ import annotations

import pytest

from tiap import numfmt
from tiap.report import flip_cells
from tiap.report.procedure import effect_pair
from tiap.report.render import ci, mean_text, signed
from tiap.sensitivity.flips import gap_text


def ci_text(lo: float | None, hi: float | None) -> str:
    """The interval cell of ``tiap sensitivity``'s terminal table (:func:`flip_cells`)."""
    return flip_cells({"ci_1_low": lo, "ci_1_high": hi}, None)["ci_1"]


def test_float_noise_is_zero() -> None:
    # |x| <= 1e-9 is noise (the test's tie tolerance widens interval ends by up to 1e-9)
    for x in (1e-12, -1e-12, -1e-9, 3e-10, 0.0, -0.0):
        assert numfmt.value(x) == 0.0
        assert numfmt.signed(x) == "+0.0000"  # never -0.0000, never -1.0e-12
    assert numfmt.value(-1.1e-9) == -1.1e-9  # just past the noise: a value
    assert numfmt.signed(-1.1e-9) == "-0.000000001"
    for missing in (None, "", "nan", float("inf"), "x", True):
        assert numfmt.value(missing) is None
        assert numfmt.signed(missing) == "–"


def test_more_decimals_only_where_a_value_would_read_as_zero() -> None:
    assert numfmt.signed(0.01234) == "+0.0123"
    assert numfmt.signed(-0.0000312) == "-0.00003"  # 4 decimals would print -0.0000
    assert numfmt.signed(0.00004, 2) == "+0.00004"
    assert numfmt.plain(0.5) == "0.5000"
    assert numfmt.decimals([0.5, None, 0.0], 3) == 3
    assert numfmt.decimals([0.0004], 3) == 4
    assert numfmt.decimals([4e-7, 0.5], 3) == 7


@pytest.mark.parametrize(("lo", "hi", "text"), [
    (0.0123, 0.0456, "[+0.012, +0.046]"),
    (-0.0014, -0.00042, "[-0.0014, -0.0004]"),  # one more decimal, for both ends
    (3.98686e-07, 0.00121, "[+0.0000004, +0.0012100]"),  # never [+4.0e-07, +0.001210]
    (-1e-12, 0.001048, "[+0.000, +0.001]"),  # never [-1.0e-12, +0.001048]
    (-0.002215, 1e-12, "[-0.002, +0.000]"),
    (-0.0014, 0.0, "[-0.001, +0.000]"),
])
def test_both_ends_share_their_decimals(lo: float, hi: float, text: str) -> None:
    assert numfmt.interval(lo, hi) == text
    assert ci(lo, hi) == text  # the report's tables and the card
    assert ci_text(lo, hi) == text[1:-1]  # tiap sensitivity's terminal table
    left, right = text[1:-1].split(", ")
    assert len(left.split(".")[1]) == len(right.split(".")[1])


def test_open_and_missing_ends() -> None:
    assert numfmt.interval(None, 0.1) == "–"
    assert numfmt.interval(None, 0.1, open_ends=True) == "(-∞, +0.100]"
    assert numfmt.interval(-0.00025, None, open_ends=True) == "[-0.0003, +∞)"
    assert numfmt.interval(0.2, None, sign=False, open_ends=True) == "[0.200, ∞)"
    assert ci_text(None, None) == "-∞, +∞"


def test_every_printer_follows_the_rule() -> None:
    row = {"gap_1": -3.7e-05, "gap_2": "", "gap_2_lower": "-1e-12", "gap_2_upper": "0.00042",
           "effect_1": -0.003, "effect_2": 1e-13}
    assert gap_text(row, 1) == "-0.00004"
    assert gap_text(row, 2) == "[+0.0000, +0.0004]"
    assert signed(row["gap_1"]) == "-0.00004"
    assert effect_pair(row) == "-0.003 / +0.00"  # d_z: 2 decimals, more for small values
    assert mean_text({"mean": "", "lower": "0.00001", "upper": "0.25"}) == \
        "[0.00001, 0.25000]"
