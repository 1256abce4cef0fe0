"""Granularity: targets rolled up from turns to sessions or windows of turns.

A target's name may end in ``@session`` or ``@windowN`` (``raw@session``,
``source@window3``): the same target, with its evidence units rolled up from turns to
*blocks*:

- ``session``: the turns of one session of one collection (raw items carry
  ``session_id`` and ``collection``);
- ``windowN``: N consecutive turns of one session (turns 1..N, N+1..2N, ... in the
  store's order of the session's raw items).

A query's evidence blocks are the blocks of its evidence turns (in evidence order, each
once); the group of a block is every item the target credits whose lineage reaches *any*
turn of the block, so a retrieved turn of an evidence session is credited although it is not
itself an evidence turn, as LongMemEval's session-level metrics credit it.

**Cutoffs count blocks.** At a coarser granularity, a measure's cutoff ``k`` means the
first ``k`` distinct blocks of the ranking: the ranking is read down to the first rank at
which ``k`` distinct blocks have been listed (LongMemEval's rule for its session-level
metrics on turn rankings: "k extended until k distinct sessions are covered"), and the
measure is computed at that rank (numerator and ideal alike). A ranked item lists the
blocks of its source turns (a raw turn: its own block; a derived item: the blocks of every
turn its lineage reaches); an item whose lineage reaches no turn counts as a block of its
own. A ranking that lists fewer than ``k`` blocks is read whole.

Partial lineage (:mod:`tiap.targets.possible`) is not rolled up: an item that may or may
not reach a session cannot be placed in blocks exactly, and such a target is refused with
an error rather than guessed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from tiap.errors import Problem, TiapError

if TYPE_CHECKING:  # pragma: no cover
    from tiap.targets.lineage import Lineage

__all__ = ["TURN", "Blocks", "effective_cutoffs", "parse_granularity", "split_name"]

TURN = "turn"
_GRAN_RE = re.compile(r"(session|window([1-9][0-9]{0,5}))\Z")


def parse_granularity(text: str) -> str:
    """``turn``, ``session`` or ``windowN`` (N from 1 to 999,999), checked.

        >>> parse_granularity("window3")
        'window3'
        >>> parse_granularity("day")
        Traceback (most recent call last):
        tiap.errors.TiapError: unknown granularity 'day': use session or windowN ...
    """
    if text == TURN or _GRAN_RE.match(text):
        return text
    raise TiapError(f"unknown granularity {text!r}: use session or windowN (N turns, e.g. "
                    "window3) after '@', as in raw@session", code="invalid-value")


def split_name(name: str) -> tuple[str, str]:
    """``raw@session`` -> ``("raw", "session")``; ``raw`` -> ``("raw", "turn")`` (an evidence
    overlay's ``~name`` suffix, :mod:`tiap.datasets.overlays`, is not part of either)."""
    base, sep, gran = name.partition("~")[0].partition("@")
    return base, (parse_granularity(gran) if sep else TURN)


@dataclass(frozen=True, eq=False)
class Blocks:
    """The blocks of a store's turns at one granularity (from its raw items).

    Attributes:
        granularity: ``session`` or ``windowN``.
        of_unit: turn (source unit) -> its block.
        units: block -> its turns, in store order.
    """

    granularity: str
    of_unit: dict[str, str]
    units: dict[str, tuple[str, ...]]
    _lineage: Lineage

    @classmethod
    def build(cls, lineage: Lineage, granularity: str) -> Blocks:
        """Blocks of ``lineage``'s raw items; every raw item needs a ``session_id``."""
        size = None if granularity == "session" else int(granularity[len("window"):])
        of_unit: dict[str, str] = {}
        units: dict[str, list[str]] = {}
        counts: dict[str, int] = {}
        missing: list[Problem] = []
        for it in lineage.items.values():
            if not it.is_raw:
                continue
            meta = dict(it.meta)
            sid = meta.get("session_id")
            if sid is None or len(it.sources) != 1:
                if len(missing) < 5:
                    missing.append(Problem(
                        f"granularity {granularity} needs each raw item's session: this raw "
                        "item has no session_id" if sid is None else
                        f"granularity {granularity} needs one source turn per raw item",
                        record=it.item_id))
                continue
            session = f"{it.collection}:{sid}" if it.collection else str(sid)
            if size is None:
                block = session
            else:
                pos = counts.get(session, 0)
                counts[session] = pos + 1
                block = f"{session}:w{pos // size + 1}"
            of_unit[it.sources[0]] = block
            units.setdefault(block, []).append(it.sources[0])
        if missing:
            raise TiapError(problems=missing)
        return cls(granularity, of_unit, {b: tuple(u) for b, u in units.items()}, lineage)

    def item_blocks(self, item_id: str) -> tuple[str, ...]:
        """The blocks an item lists: those of its source turns; itself when it has none
        (an item outside the store lists itself)."""
        if item_id not in self._lineage.items:
            return (f"item:{item_id}",)
        got = tuple(dict.fromkeys(self.of_unit[u] for u in self._lineage.sources_of(item_id)
                                  if u in self.of_unit))
        return got or (f"item:{item_id}",)


def effective_cutoffs(rankings: Sequence[Sequence[str]], blocks: Blocks,
                      k: int) -> NDArray[np.int64]:
    """Per ranking, the number of ranks to read for ``k`` blocks: the first rank at which
    ``k`` distinct blocks have been listed (``k`` at least), or the ranking's length when
    it lists fewer."""
    out = np.empty(len(rankings), np.int64)
    for q, ranking in enumerate(rankings):
        seen: set[str] = set()
        cut = len(ranking)
        for rank, item in enumerate(ranking, start=1):
            seen.update(blocks.item_blocks(item))
            if len(seen) >= k and rank >= k:
                cut = rank
                break
        out[q] = max(cut, min(k, len(ranking)))
    return out
