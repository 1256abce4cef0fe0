"""The declared range of every numeric option and config key, in one table.

Each entry of :data:`LIMITS` is a :class:`Limit`: the smallest and largest value, whether
the value is an integer, and why the upper bound sits where it does. The command line
(:func:`tiap.cli.common.bounded`) and the config schemas (:func:`tiap.config.ranged`) both
read it, so an option and the config key it overrides take the same values; ``--help``
states the range, and a value outside it is ``error[usage]`` naming the option (or
``error[config]`` naming the key), never a crash deep in the work. API functions that take
the same values call :func:`check` (``error[invalid-value]``).

The upper bounds are what fits: either derived from this machine (``workers``: its CPUs)
or a fixed cap past which a value cannot be meant, each with its reason
(``docs/limits.md`` lists them). Stage III's ``resamples`` is also checked against the
memory the machine has once the number of queries is known
(:func:`tiap.sensitivity.stats.evaluate_gaps`).

This module imports nothing from TIAP but :mod:`tiap.errors`, so every layer may use it.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

from tiap.errors import TiapError

__all__ = ["CPUS", "LIMITS", "Limit", "available_memory", "check", "number"]


def _cpus() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


#: The CPUs this process may run on.
CPUS = _cpus()


def number(v: float) -> str:
    """``v`` as the ranges print it: ``10,000,000``, ``0.5``, ``86,400``.

        >>> number(10_000_000), number(0.5), number(2**63 - 1)
        ('10,000,000', '0.5', '2^63 - 1')
    """
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, int):
        if v > 10**12 and not (v + 1) & v:  # 2^63 - 1
            return f"2^{(v + 1).bit_length() - 1} - 1"
        return f"{v:,}" if abs(v) < 10**40 else f"a number of {len(str(abs(v))):,} digits"
    if not math.isfinite(v):
        return str(v)
    return f"{v:,g}" if abs(v) < 1e16 else repr(v)


@dataclass(frozen=True)
class Limit:
    """A closed (or, at an end marked open, half-open) range of numbers.

    ``why``: the reason for the upper bound (what breaks, or what cannot be meant, past it;
    empty where the bound is the quantity's own, a probability's 1).
    ``high_note``: what the upper bound is when the machine decides it (``this machine's
    CPUs``); the docs print the note instead of the number.

        >>> unit = Limit(0, 1, "", integer=False)
        >>> unit.expected(), unit.problem(1.5) is None, unit.problem(0.5) is None
        ('a number from 0 to 1', False, True)
        >>> LIMITS["cutoff"].expected()
        'an integer from 1 to 1,000,000'
    """

    low: int | float
    high: int | float
    why: str
    integer: bool = True
    low_open: bool = False
    high_open: bool = False
    high_note: str = ""

    def expected(self, *, doc: bool = False) -> str:
        """``an integer from 1 to 10,000,000``, ``a number in (0, 1)``."""
        high = self.high_note if doc and self.high_note else number(self.high)
        if not doc and self.high_note:
            high += f" ({self.high_note})"
        kind = "an integer" if self.integer else "a number"
        if not self.low_open and not self.high_open:
            return f"{kind} from {number(self.low)} to {high}"
        return (f"{kind} in {'(' if self.low_open else '['}{number(self.low)}, {high}"
                f"{')' if self.high_open else ']'}")

    def help(self) -> str:
        """The sentence ``--help`` ends with: ``Range: 1 to 10,000,000.``"""
        high = number(self.high) + (f" ({self.high_note})" if self.high_note else "")
        if not self.low_open and not self.high_open:
            return f"Range: {number(self.low)} to {high}."
        return (f"Range: {'(' if self.low_open else '['}{number(self.low)}, {high}"
                f"{')' if self.high_open else ']'}.")

    def problem(self, value: object) -> str | None:
        """``None`` when ``value`` is in the range, else what was expected (``expected an
        integer from 1 to 10,000,000``)."""
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (
                self.integer and not isinstance(value, int)):
            return f"expected {self.expected()}"
        if isinstance(value, float) and not math.isfinite(value):
            return f"expected {self.expected()}"
        if self.too_high(value) or (value <= self.low if self.low_open else value < self.low):
            return f"expected {self.expected()}"
        return None

    def too_high(self, value: object) -> bool:
        return (isinstance(value, (int, float)) and not isinstance(value, bool)
                and (value >= self.high if self.high_open else value > self.high))

    def reason(self, value: object) -> str:
        """``; REASON`` when ``value`` is above the range (why the bound is there), else
        ``""``: what a message adds after the value it names."""
        return f"; {self.why}" if self.why and self.too_high(value) else ""


#: The largest cutoff a measure, a ranking depth or a trace may have (the measures' cap,
#: :data:`tiap.scoring.measures.MAX_CUTOFF`, is this number).
MAX_DEPTH = 1_000_000
_DEPTH_WHY = ("no trace ranks a million items per query, and every measure's cutoff stops "
              "there too")
_COUNT_WHY = "more than any input TIAP reads holds (a billion records)"

#: Every declared range, by name. Options and config keys name their entry; several share
#: one (``cutoff``: ``--k``, ``--depth``, ``k``; ``seed``: every seed).
LIMITS: dict[str, Limit] = {
    # -- Stage III ------------------------------------------------------------------------
    "resamples": Limit(1, 10_000_000, "the smallest p-value, 1/(resamples + 1), is then "
                       "10^-7, fine enough for Holm over 500,000 gaps at alpha 0.05"),
    "seed": Limit(0, 2**63 - 1, "seeds are recorded and sent to endpoints as 64-bit "
                  "integers"),
    "alpha": Limit(0, 1, "", integer=False, low_open=True, high_open=True),
    "min_effect": Limit(0.0, 1.0, "every measure lies in [0, 1], so no gap exceeds 1",
                        integer=False),
    "min_dz": Limit(0.0, 10.0, "a paired effect size d_z of 10 (a mean difference of ten "
                    "standard deviations) is past any threshold in use; Cohen's 'large' is 0.8",
                    integer=False),
    # -- depths, cutoffs and counts -------------------------------------------------------
    "cutoff": Limit(1, MAX_DEPTH, _DEPTH_WHY),
    "count": Limit(1, 1_000_000_000, _COUNT_WHY),
    "per_stratum": Limit(1, 1_000_000_000, _COUNT_WHY),
    "max_facts": Limit(1, 1_000, "no turn holds a thousand facts, and the llm parser asks "
                       "for at most this many in one reply"),
    "window": Limit(1, 1_000, "Mem0's extraction prompt holds the window's turns: a "
                    "thousand turns fit no model's context"),
    # -- parallel work --------------------------------------------------------------------
    "workers": Limit(1, CPUS, "a process per CPU at most: more only costs memory",
                     high_note="this machine's CPUs"),
    "concurrency": Limit(1, 256, "each request in flight holds a connection and a thread; "
                         "an endpoint throttles long before"),
    "threads": Limit(1, 512, "llama.cpp (ggml) runs at most 512 threads"),
    "parallel": Limit(1, 64, "each slot holds a whole context in memory"),
    "batch_size": Limit(1, 65_536, "a batch's texts and embeddings are held in memory at "
                        "once"),
    # -- endpoints ------------------------------------------------------------------------
    "port": Limit(1, 65_535, ""),
    "serve_port": Limit(0, 65_535, ""),
    "timeout": Limit(0, 86_400, "a request that takes a day is a hung server",
                     integer=False, low_open=True),
    "wait": Limit(0, 3_600, "an hour between retries outlasts any outage worth waiting "
                  "for", integer=False),
    "retries": Limit(0, 100, "with doubling waits, a hundred retries outlast any outage "
                     "worth waiting for"),
    "share": Limit(0.0, 1.0, "", integer=False),
    "max_tokens": Limit(1, 1_000_000, "no model's context holds a million tokens"),
    "mem0_max_tokens": Limit(16, 1_000_000, "no model's context holds a million tokens "
                             "(and Mem0's JSON needs at least 16)"),
    "ctx": Limit(256, 1_048_576, "no local model is trained for more (each model's own "
                 "limit is checked too)"),
    "runs": Limit(1, 1_000, "each run asks every request of a judge again"),
    "temperature": Limit(0.0, 2.0, "the range OpenAI-compatible endpoints take",
                         integer=False),
    # -- parsers --------------------------------------------------------------------------
    "context_turns": Limit(0, 1_000, "a thousand earlier turns fit no model's context"),
    "chars": Limit(1, 10_000_000, "ten million characters fit no model's context"),
    # -- retrieval ------------------------------------------------------------------------
    "rrf_k": Limit(0, 1_000_000, "the constant in use is about 60; past a million, the "
                   "weight 1/(rrf_k + rank) of rank r is within r in a million of rank 1's: "
                   "the fusion no longer reads the ranks", integer=False),
    "bm25_k1": Limit(0.0, 100.0, "past a few (1.2 to 2 in use), BM25 weighs raw term "
                     "frequency", integer=False),
    "unit": Limit(0.0, 1.0, "", integer=False),
    "cosine": Limit(-1.0, 1.0, "", integer=False),
    # -- reports --------------------------------------------------------------------------
    "latex_width": Limit(100.0, 1_000.0, "a text width in points: a one-column article is "
                         "345, an A4 page 595", integer=False),
}


def check(name: str, value: object, what: str | None = None) -> None:
    """Raise ``error[invalid-value]`` when ``value`` is outside ``LIMITS[name]`` (``what``:
    how the message names the value, default ``name``).

        >>> check("cutoff", 60, "--k")
        >>> check("cutoff", 0, "--k")
        Traceback (most recent call last):
        tiap.errors.TiapError: --k: expected an integer from 1 to 1,000,000, got 0...
    """
    declared = LIMITS[name]
    wrong = declared.problem(value)
    if wrong is not None:
        shown = number(value) if isinstance(value, (int, float)) and not isinstance(
            value, bool) else repr(value)
        raise TiapError(f"{what or name}: {wrong}, got {shown}{declared.reason(value)}",
                        code="invalid-value")


def available_memory() -> int | None:
    """Bytes of memory this machine can still give (``MemAvailable``), or ``None`` when the
    system does not say.

        >>> free = available_memory()
        >>> free is None or free > 0
        True
    """
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None
