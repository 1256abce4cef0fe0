"""Measures as values: ``nDCG@60``, ``R@60``, ``RR@60``, ``RR``, ``Success@1``, ``P@10``.

A measure name is parsed with Python's own :mod:`ast` (``nDCG@10`` is the expression
``nDCG @ 10``, a matrix-multiplication of a name by an integer), never with a regex or by
splitting strings. The result is a frozen :class:`Measure` whose ``str()`` is the
canonical name and whose equality and hash use that name, so ``parse_measure("ndcg@10")``,
``parse_measure("nDCG @ 10")`` and ``Measure("nDCG", 10)`` are one and the same value.

Families (canonical name, what it computes; the formulas for both credit modes are in
:func:`tiap.scoring.score`):

=========== =================================================== ========================
canonical   meaning                                             cutoff
=========== =================================================== ========================
``nDCG``    normalised discounted cumulative gain, log2(i+1)    ``@k``; bare = no cutoff
``R``       recall: credited targets in the top k / all targets ``@k``; bare = no cutoff
``RR``      reciprocal rank of the first relevant item          ``@k``; bare = no cutoff
``Success`` 1 if anything relevant is in the top k              ``@k``; bare = no cutoff
``P``       precision: relevant positions in the top k / k      ``@k`` required
=========== =================================================== ========================

A cutoff is an integer from 1 to :data:`MAX_CUTOFF` (one million): a deeper cutoff cannot
be meant (no trace ranks a million items per query) and is an error (code
``invalid-value``) naming the measure, not a number the kernels overflow on.

"No cutoff" means the whole ranked list (and, for ``nDCG``, an ideal over every target,
like trec_eval's ``ndcg``). The target (Raw, Source, Canonical, ...) and the credit mode
are separate axes and never part of a measure's name.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tiap.errors import TiapError

__all__ = [
    "KNOWN_MEASURES",
    "RR",
    "Measure",
    "MeasureSpec",
    "R",
    "Success",
    "nDCG",
    "parse_measure",
    "parse_measures",
    "primary_measure",
]

#: Canonical family names, in display order.
FAMILIES: tuple[str, ...] = ("nDCG", "R", "RR", "Success", "P")

#: What each family computes (``tiap measures`` prints it).
MEANINGS: dict[str, str] = {
    "nDCG": "normalised discounted cumulative gain, discount log2(i + 1)",
    "R": "recall: targets credited in the top k / all targets",
    "RR": "reciprocal rank of the first credited item",
    "Success": "1 if anything is credited in the top k, else 0",
    "P": "precision: credited positions in the top k / k",
}

#: Families that may be used without a cutoff (meaning: the whole ranked list).
_CUTOFF_OPTIONAL = frozenset({"nDCG", "R", "RR", "Success"})

#: Accepted spellings (compared case-insensitively) -> canonical family.
_ALIASES: dict[str, str] = {
    "ndcg": "nDCG",
    "ndcg_cut": "nDCG",
    "r": "R",
    "recall": "R",
    "rr": "RR",
    "mrr": "RR",
    "recip_rank": "RR",
    "reciprocal_rank": "RR",
    "success": "Success",
    "hit": "Success",
    "hits": "Success",
    "hitrate": "Success",
    "hit_rate": "Success",
    "p": "P",
    "prec": "P",
    "precision": "P",
}

#: Human-readable list of what parses, used in error messages.
KNOWN_MEASURES: str = (
    "nDCG@k (or nDCG), R@k (or R), RR@k (or RR), Success@k (or Success), P@k; "
    "aliases (any case): ndcg, ndcg_cut -> nDCG; recall -> R; mrr, recip_rank, "
    "reciprocal_rank -> RR; hit, hits, hitrate, hit_rate -> Success; prec, precision -> P"
)

_MAX_SPEC_CHARS = 10_000

#: The largest cutoff a measure may have (``nDCG@1000000``).
MAX_CUTOFF = 1_000_000


@dataclass(frozen=True, eq=False)
class Measure:
    """One measure: a family and an optional cutoff ``k`` (``None`` = the whole list).

    ``str(m)`` is the canonical name (``nDCG@60``, ``RR``); ``==`` and ``hash`` compare
    that name. ``m @ k`` gives the same family at cutoff ``k`` (``RR @ 10`` is ``RR@10``).
    """

    family: str
    cutoff: int | None = None

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise TiapError(f"unknown measure family {self.family!r}; known: {KNOWN_MEASURES}")
        k = self.cutoff
        if k is None:
            if self.family not in _CUTOFF_OPTIONAL:
                raise TiapError(f"measure {self.family} needs a cutoff, e.g. {self.family}@10")
        elif isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_CUTOFF:
            shown = _number(k)
            raise TiapError(f"the cutoff of {self.family} must be an integer from 1 to "
                            f"{MAX_CUTOFF:,}, got {shown}", code="invalid-value")

    @property
    def name(self) -> str:
        """The canonical name, e.g. ``nDCG@60`` or ``RR``."""
        return self.family if self.cutoff is None else f"{self.family}@{self.cutoff}"

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return self.name

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Measure):
            return NotImplemented
        return self.name == other.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __matmul__(self, k: int) -> Measure:
        return Measure(self.family, k)

    def at(self, k: int | None) -> Measure:
        """The same family at cutoff ``k`` (``None`` = no cutoff)."""
        return Measure(self.family, k)


# Bare families usable in Python code: ``nDCG @ 10``, ``RR``. (``P`` always needs a cutoff:
# write ``Measure("P", 10)`` or ``parse_measure("P@10")``.)
nDCG = Measure("nDCG")
R = Measure("R")
RR = Measure("RR")
Success = Measure("Success")


MeasureSpec = str | Measure | Iterable[str | Measure]


def _number(k: int) -> str:
    """``k`` in a message: in full up to 40 digits, else its size."""
    if abs(k) < 10**40:
        return str(k)
    return f"a number of about {int(abs(k).bit_length() * 0.30103) + 1:,} digits"


def _shown(text: str, limit: int = 60) -> str:
    """``repr(text)``, cut to about ``limit`` characters."""
    return repr(text) if len(text) <= limit else repr(text[:limit]) + "…"


def _unknown(text: str, detail: str) -> TiapError:
    return TiapError(f"cannot parse measure {_shown(text)}: {detail}; known measures: "
                     f"{KNOWN_MEASURES}")


def _family(node: ast.expr, text: str) -> str:
    if not isinstance(node, ast.Name):
        raise _unknown(text, "expected a measure name such as nDCG or R")
    family = _ALIASES.get(node.id.lower())
    if family is None:
        raise _unknown(text, f"unknown measure {node.id!r}")
    return family


def _from_node(node: ast.expr, text: str) -> Measure:
    if isinstance(node, ast.Name):
        return Measure(_family(node, text))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
        family = _family(node.left, text)
        right = node.right
        if (isinstance(right, ast.UnaryOp) and isinstance(right.op, ast.USub)
                and isinstance(right.operand, ast.Constant)
                and type(right.operand.value) is int):
            right = ast.Constant(-right.operand.value)  # nDCG@-3: out of range, below
        if not (
            isinstance(right, ast.Constant)
            and isinstance(right.value, int)
            and not isinstance(right.value, bool)
        ):
            raise _unknown(text, "the cutoff after '@' must be a positive integer")
        if not 1 <= right.value <= MAX_CUTOFF:
            shown = _number(right.value)
            raise TiapError(f"measure {_shown(text)}: the cutoff must be an integer from 1 to "
                            f"{MAX_CUTOFF:,}, got {shown}", code="invalid-value")
        return Measure(family, right.value)
    raise _unknown(text, "expected NAME or NAME@k")


def _parse_expr(text: str) -> ast.expr:
    if len(text) > _MAX_SPEC_CHARS:
        raise TiapError(f"measure list too long ({len(text)} characters)")
    try:
        return ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError):
        raise _unknown(text, "not of the form NAME or NAME@k") from None
    except (RecursionError, MemoryError):  # CPython's parser on deeply nested text
        raise _unknown(text, "nested too deeply to be a measure name") from None


def parse_measure(spec: str | Measure) -> Measure:
    """Parse one measure name (``nDCG@10``, ``recall@5``, ``MRR``) into a :class:`Measure`.

    Raises :class:`TiapError` listing the known measures when the name is unknown.
    """
    if isinstance(spec, Measure):
        return spec
    if not isinstance(spec, str):
        raise TiapError(f"a measure must be a string such as 'nDCG@10', got {spec!r}")
    node = _parse_expr(spec)
    if isinstance(node, ast.Tuple):
        raise _unknown(spec, "expected one measure, got a list (use parse_measures)")
    return _from_node(node, spec)


def parse_measures(spec: MeasureSpec) -> tuple[Measure, ...]:
    """Parse several measures: ``"nDCG@60,R@60"``, a :class:`Measure`, or an iterable of either.

    A string is parsed as one Python expression (a comma makes it a tuple). Duplicates are
    dropped (the first occurrence keeps its place); an empty list is an error.
    """
    out: list[Measure] = []
    if isinstance(spec, Measure):
        out.append(spec)
    elif isinstance(spec, str):
        node = _parse_expr(spec)
        nodes = node.elts if isinstance(node, ast.Tuple) else [node]
        out.extend(_from_node(n, spec) for n in nodes)
    else:
        try:
            items = list(spec)
        except TypeError:
            raise TiapError(f"cannot read measures from {spec!r}") from None
        out.extend(parse_measure(s) for s in items)
    if not out:
        raise TiapError(f"no measure given; known measures: {KNOWN_MEASURES}")
    return tuple(dict.fromkeys(out))


#: The one default cutoff of every command: the retrieval depth (``tiap retrieve --k``), the
#: cutoff of the rescoring's default measures (``tiap rescore --k``) and so of the headline
#: measure, nDCG@60, that ``tiap sensitivity`` and ``tiap audit`` use by default.
DEFAULT_K = 60


def default_measures(k: int = DEFAULT_K) -> str:
    """The measures ``tiap rescore`` computes unless ``--measures`` is given, at cutoff ``k``."""
    return f"nDCG@{k},R@{k},RR@{k},Success@{k}"


def primary_measure(measures: Sequence[Measure | str]) -> Measure:
    """The headline measure, the one default of every command that needs one measure
    (Stage III's headline, the audit's cases and graded credit, the report's primary): nDCG
    at its largest cutoff (no cutoff counts as the largest), else the first measure."""
    parsed = [parse_measure(m) for m in measures]
    ndcg = [m for m in parsed if m.family == "nDCG"]
    if ndcg:
        return max(ndcg, key=lambda m: (m.cutoff is None, m.cutoff or 0))
    return parsed[0]
