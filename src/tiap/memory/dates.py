"""Session dates as the datasets give them, read into calendar dates for fact anchors.

The three benchmarks write a session's date in three ways:

- LoCoMo: ``"1:56 pm on 8 May, 2023"`` (a clock time, then day, month name, year);
- LongMemEval: ``"2023/05/20 (Sat) 00:31"``;
- BEAM: ``"March-15-2024"`` (the batch's ``time_anchor``).

ISO dates (``2023-05-20``) and ``May 8, 2023`` are read too. :func:`parse_session_date`
returns a :class:`datetime.date` or ``None`` (no date, or a form it does not know: such a
turn's facts simply carry no anchor). :func:`anchor_text` writes the date the way facts carry
it: ``"8 May 2023"`` (day without a leading zero, full month name, year).
"""

from __future__ import annotations

import re
from datetime import date

__all__ = ["MONTHS", "anchor_text", "parse_session_date"]

MONTHS: dict[str, int] = {}
for _i, _name in enumerate(
    ("january", "february", "march", "april", "may", "june", "july", "august", "september",
     "october", "november", "december"),
    start=1,
):
    MONTHS[_name] = _i
    MONTHS[_name[:3]] = _i
MONTHS["sept"] = 9

_MONTH_NAMES = ("January", "February", "March", "April", "May", "June", "July", "August",
                "September", "October", "November", "December")

# 8 May, 2023 / 8 May 2023 (LoCoMo, after "<clock> on ")
_DAY_MONTH_YEAR = re.compile(r"\b(\d{1,2})\s+([A-Za-z]{3,9})\.?,?\s+(\d{4})\b")
# May 8, 2023 / March-15-2024 (BEAM)
_MONTH_DAY_YEAR = re.compile(
    r"\b([A-Za-z]{3,9})\.?[\s-]+(\d{1,2})(?:st|nd|rd|th)?,?[\s-]+(\d{4})\b"
)
# 2023/05/20 (LongMemEval) / 2023-05-20 (ISO)
_YEAR_MONTH_DAY = re.compile(r"\b(\d{4})[/-](\d{1,2})[/-](\d{1,2})\b")


def _make(year: str, month: int | None, day: str) -> date | None:
    if month is None:
        return None
    try:
        return date(int(year), month, int(day))
    except ValueError:
        return None


def parse_session_date(value: str | None) -> date | None:
    """The calendar date in a session's date string, or ``None``.

    >>> parse_session_date("1:56 pm on 8 May, 2023")
    datetime.date(2023, 5, 8)
    >>> parse_session_date("2023/05/20 (Sat) 00:31")
    datetime.date(2023, 5, 20)
    >>> parse_session_date("March-15-2024")
    datetime.date(2024, 3, 15)
    >>> parse_session_date("sometime last spring") is None
    True
    """
    if not value:
        return None
    text = value.strip()
    m = _YEAR_MONTH_DAY.search(text)
    if m:
        return _make(m.group(1), int(m.group(2)), m.group(3))
    m = _DAY_MONTH_YEAR.search(text)
    if m:
        return _make(m.group(3), MONTHS.get(m.group(2).lower()), m.group(1))
    m = _MONTH_DAY_YEAR.search(text)
    if m:
        return _make(m.group(3), MONTHS.get(m.group(1).lower()), m.group(2))
    return None


def anchor_text(d: date | None) -> str | None:
    """``date(2023, 5, 8)`` -> ``"8 May 2023"``; ``None`` stays ``None``."""
    if d is None:
        return None
    return f"{d.day} {_MONTH_NAMES[d.month - 1]} {d.year}"
