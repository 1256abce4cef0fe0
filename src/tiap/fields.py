"""Unknown keys of a record: one rule for every reader of records with a fixed key set.

A key a reader does not know is never ignored in silence: a misspelled ``"sorces"`` would
leave an item without its lineage, a ``"sytem"`` a run without its name.

- A record with a *fixed* key set (``strict``): every other key is an error naming it and
  the nearest known key (``difflib``), or the keys the record may have.
- A record whose format keeps extra keys (``items.jsonl`` rows and ``queries.jsonl`` rows
  keep them as metadata; ranked-trace rows ignore extra columns): an extra key is kept,
  unless it is a *near miss* of a known key
  (:func:`near_miss`): the same key but for case or ``-`` for ``_``, or one whose
  ``difflib`` similarity ratio to a known key is at least :data:`NEAR` with a length within
  two characters of it (``sorces``, ``parnts``, ``Sources``, ``evidences``; not
  ``category_id`` beside ``category``). Such a key is an error, suggesting the known key.

:func:`key_problems` returns the messages; each reader adds them to its own located
problems (file, line, record).
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Collection, Mapping
from typing import Any

__all__ = ["NEAR", "key_problems", "near_miss", "nearest"]

#: The ``difflib`` ratio at or above which an extra key is taken for a misspelling.
NEAR = 0.8


def _norm(key: str) -> str:
    return key.casefold().replace("-", "_")


def nearest(key: str, known: Collection[str], cutoff: float = 0.6) -> str | None:
    """The known key ``key`` most resembles (``difflib``), or None."""
    same = [k for k in known if _norm(k) == _norm(key)]
    if same:
        return same[0]
    found = difflib.get_close_matches(key, sorted(known), n=1, cutoff=cutoff)
    return found[0] if found else None


def near_miss(key: str, known: Collection[str]) -> str | None:
    """The known key that ``key`` is a near miss of (module docstring), or None.

    >>> near_miss("sorces", {"sources", "parents"}), near_miss("speaker", {"sources"})
    ('sources', None)
    """
    return _near_miss(key, known if isinstance(known, frozenset) else frozenset(known))


@functools.lru_cache(maxsize=4096)
def _near_miss(key: str, known: frozenset[str]) -> str | None:
    # cached: a file's rows repeat the same few extra keys (a million rows of a store name
    # the same four), and each comparison runs difflib over every known key
    best: tuple[float, str] | None = None
    for k in sorted(known):
        if _norm(k) == _norm(key):
            return k
        if abs(len(k) - len(key)) > 2:
            continue
        ratio = difflib.SequenceMatcher(None, key, k).ratio()
        if ratio >= NEAR and (best is None or ratio > best[0]):
            best = (ratio, k)
    return None if best is None else best[1]


def key_problems(record: Mapping[str, Any], known: Collection[str], what: str, *,
                 strict: bool = True,
                 extras: str = "extra keys are kept as metadata") -> list[str]:
    """One message per key of ``record`` the reader must refuse (module docstring): with
    ``strict`` every key not in ``known``; else only the near misses of a known key
    (``extras`` says what the format does with the others). ``what`` names the record
    (``"an item record"``)."""
    out: list[str] = []
    frozen = known if isinstance(known, frozenset) else None
    for key in record:
        if key in known:
            continue
        if strict:
            near = nearest(key, known)
            hint = (f"did you mean {near!r}?" if near is not None
                    else f"expected only {', '.join(repr(k) for k in sorted(known))}")
            out.append(f"unknown key {key!r} in {what}; {hint}")
            continue
        if frozen is None:
            frozen = frozenset(known)
        near = _near_miss(key, frozen)
        if near is not None:
            out.append(f"unknown key {key!r} in {what}; did you mean {near!r}? ({extras}, "
                       "but not one this close to a known key: rename it)")
    return out
