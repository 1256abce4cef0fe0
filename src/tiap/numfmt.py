"""How TIAP prints a signed value or an interval: one rule for the terminal, the HTML report,
its tables and the target card (CSV files keep every value at full precision).

1. A value within :data:`NOISE` of 0 is 0. Such values are float noise: the sign-flip test
   widens an interval end by its tie tolerance (1e-9 times the mean |difference|, so at most
   1e-9 for measures in [0, 1]), and a mean of equal values can differ from 0 in its last
   bits. They print as 0, never as ``-1.0e-12``.
2. A value prints with ``digits`` decimals, more where a value other than 0 would otherwise
   print as 0 (``-0.00004``, not ``-0.0000``); never in scientific notation.
3. The two ends of an interval share one number of decimals: ``[+0.000, +0.001]``, never
   ``[-1.0e-12, +0.001048]``; ``[+0.0000004, +0.0012100]``, never ``[+4.0e-07, +0.001210]``.
4. A signed value carries its sign; 0 is ``+0.000`` (so a column of signed values lines up).

>>> signed(-3.7e-05)
'-0.00004'
>>> interval(-1e-12, 0.001048)
'[+0.000, +0.001]'
>>> interval(3.98686e-07, 0.00121)
'[+0.0000004, +0.0012100]'
"""

from __future__ import annotations

import math
from collections.abc import Iterable

__all__ = ["NOISE", "decimals", "interval", "plain", "signed", "value"]

#: Values within this of 0 print as 0 (see the module docstring).
NOISE = 1e-9


def value(x: object) -> float | None:
    """``x`` as a finite float with float noise snapped to 0; ``None`` when it is missing
    (``None``, ``""``, NaN, an infinity or text that is not a number)."""
    if x is None or x == "" or isinstance(x, bool):
        return None
    try:
        v = float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    if not math.isfinite(v):
        return None
    return 0.0 if abs(v) <= NOISE else v


def decimals(values: Iterable[float | None], digits: int) -> int:
    """The decimals that show every value other than 0 as other than 0: ``digits``, or more
    (at most 9 are ever needed, :data:`NOISE` being 1e-9)."""
    d = digits
    for v in values:
        if v:
            while round(abs(v), d) == 0:
                d += 1
    return d


def _text(v: float, d: int, sign: bool) -> str:
    return f"{v:+.{d}f}" if sign else f"{v:.{d}f}"


def signed(x: object, digits: int = 4, missing: str = "–") -> str:
    """A signed value by the rule (``+0.0123``; ``missing`` when there is none)."""
    v = value(x)
    return missing if v is None else _text(v, decimals([v], digits), True)


def plain(x: object, digits: int = 4, missing: str = "–") -> str:
    """An unsigned value (a mean, a share) by the same rule."""
    v = value(x)
    return missing if v is None else _text(v, decimals([v], digits), False)


def interval(lo: object, hi: object, digits: int = 3, *, sign: bool = True,
             open_ends: bool = False, missing: str = "–") -> str:
    """``[lo, hi]`` by the rule, both ends with one number of decimals.

    A missing end makes the whole interval ``missing``, unless ``open_ends``: then it is
    unbounded, ``(-∞, hi]`` or ``[lo, +∞)`` (a test inversion with too few queries to
    reject any shift on that side)."""
    a, b = value(lo), value(hi)
    if (a is None or b is None) and not open_ends:
        return missing
    d = decimals([a, b], digits)
    left = "(-∞" if a is None else f"[{_text(a, d, sign)}"
    right = ("+∞)" if sign else "∞)") if b is None else f"{_text(b, d, sign)}]"
    return f"{left}, {right}"
