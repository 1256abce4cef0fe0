"""Measures as values: ``nDCG@60``, ``R@60``, ``RR@60``, ``RR``, ``Success@1``, ``P@10``.

A measure name is parsed with Python's own :mod:`ast` (``nDCG@10`` is the expression
``nDCG @ 10``, a matrix-multiplication of a name by an integer), never with a regex or by
splitting strings. The result is a frozen :class:`Measure` whose ``str()`` is the
canonical name and whose equality and hash use that name, so ``parse_measure("ndcg@10")``,
``parse_measure("nDCG @ 10")`` and ``Measure("nDCG", 10)`` are one and the same value.

Each family (``nDCG``, ``R``, ``RR``, ``Success``, ``P``, ``Rall``, ``alpha_nDCG``,
``ERR_IA``) is declared once in :data:`tiap.scoring.families.FAMILIES`: its spellings,
parameters and defaults, whether a cutoff is optional, what it computes, its formula,
citation and kernel. This module reads those declarations to parse names; ``tiap measures``
prints them. For example ``alpha_nDCG(alpha=0.5)@20`` (also ``alpha-nDCG``),
``nDCG(discount='jk')@10`` (LongMemEval's ``ndcg_any@10``), ``recall_all@5`` (``Rall@5``),
``StRecall@10`` (``R@10``).

A **token budget** replaces the rank cutoff: ``nDCG@tok2000``, ``R@tok500`` (nDCG, R, RR,
Success, Rall): the measure at the rank where the ranking's items, read in rank order, stop
fitting ``2000`` tokens of a named tokenizer (:mod:`tiap.scoring.cost`).

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
from tiap.limits import MAX_DEPTH
from tiap.scoring.families import FAMILIES, known_measures

__all__ = [
    "KNOWN_MEASURES",
    "RR",
    "Measure",
    "MeasureSpec",
    "R",
    "Rall",
    "Success",
    "nDCG",
    "parse_measure",
    "parse_measures",
    "primary_measure",
]

_TOK = "tok"

#: Every accepted spelling (lower case) -> (family, the parameters it sets), read from the
#: declarations of :data:`tiap.scoring.families.FAMILIES`.
_SPELLINGS: dict[str, tuple[str, dict[str, float | str]]] = {
    spelling: (f.name, params) for f in FAMILIES.values()
    for spelling, params in f.spellings().items()}

#: Human-readable list of what parses, used in error messages.
KNOWN_MEASURES: str = known_measures()

_MAX_SPEC_CHARS = 10_000

#: The largest cutoff a measure may have (``nDCG@1000000``): the declared largest depth
#: (:data:`tiap.limits.MAX_DEPTH`, the range of ``--k`` and ``--depth`` too).
MAX_CUTOFF = MAX_DEPTH


@dataclass(frozen=True, eq=False)
class Measure:
    """One measure: a family, an optional cutoff ``k`` (``None`` = the whole list) and
    the family's parameters (``params``: name -> value pairs; missing ones take
    the defaults its family declares).

    ``str(m)`` is the canonical name (``nDCG@60``, ``RR``, ``alpha_nDCG(alpha=0.5)@20``);
    ``==`` and ``hash`` compare that name. ``m @ k`` gives the same measure at cutoff ``k``
    (``RR @ 10`` is ``RR@10``).

    >>> m = Measure("nDCG", 10)
    >>> str(m), m.family, m.cutoff, m == parse_measure("ndcg_cut@10")
    ('nDCG@10', 'nDCG', 10, True)
    >>> str(Measure("RR") @ 5), str(Measure("nDCG", 5, (("discount", "jk"),)))
    ('RR@5', "nDCG(discount='jk')@5")
    >>> Measure("P")
    Traceback (most recent call last):
    ...
    tiap.errors.TiapError: measure P needs a cutoff, e.g. P@10
    """

    family: str
    cutoff: int | None = None
    params: tuple[tuple[str, float | str], ...] = ()
    #: a token budget instead of a rank cutoff (``nDCG@tok2000``): the ranking is read in
    #: rank order while its items' tokens fit the budget (:mod:`tiap.scoring.cost`)
    budget: int | None = None

    def __post_init__(self) -> None:
        declared = FAMILIES.get(self.family)
        if declared is None:
            raise TiapError(f"unknown measure family {self.family!r}; known: {KNOWN_MEASURES}")
        object.__setattr__(self, "params", _check_params(self.family, dict(self.params)))
        k = self.cutoff
        if self.budget is not None:
            b = self.budget
            if not declared.budget:
                budgeted = sorted(f.name for f in FAMILIES.values() if f.budget)
                raise TiapError(f"measure {self.family} takes no token budget (budgets: "
                                f"{', '.join(budgeted)})", code="invalid-value")
            if k is not None:
                raise TiapError("a measure has a rank cutoff or a token budget, not both",
                                code="invalid-value")
            if isinstance(b, bool) or not isinstance(b, int) or not 1 <= b <= MAX_CUTOFF * 100:
                raise TiapError(f"the token budget of {self.family} must be an integer from 1 "
                                f"to {MAX_CUTOFF * 100:,}, got {_number(b)}",
                                code="invalid-value")
            return
        if k is None:
            if not declared.cutoff_optional:
                raise TiapError(f"measure {self.family} needs a cutoff, e.g. {self.family}@10")
        elif isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_CUTOFF:
            shown = _number(k)
            raise TiapError(f"the cutoff of {self.family} must be an integer from 1 to "
                            f"{MAX_CUTOFF:,}, got {shown}", code="invalid-value")

    def param(self, name: str) -> float | str:
        """The value of parameter ``name`` (its default when not given)."""
        return dict(self.params)[name]

    @property
    def name(self) -> str:
        """The canonical name, e.g. ``nDCG@60``, ``RR`` or ``alpha_nDCG(alpha=0.5)@20``."""
        declared = FAMILIES[self.family]
        defaults = declared.defaults
        shown = [(n, v) for n, v in self.params if declared.show_params or v != defaults[n]]
        base = self.family + ("(" + ", ".join(f"{n}={_value(v)}" for n, v in shown) + ")"
                              if shown else "")
        if self.budget is not None:
            return f"{base}@tok{self.budget}"
        return base if self.cutoff is None else f"{base}@{self.cutoff}"

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
        return Measure(self.family, k, self.params)

    def at(self, k: int | None) -> Measure:
        """The same measure (family and parameters) at cutoff ``k`` (``None`` = no cutoff; a
        token budget is dropped)."""
        return Measure(self.family, k, self.params)


def _value(v: float | str) -> str:
    return repr(v) if isinstance(v, str) else f"{v:g}"


def _check_params(family: str, given: dict[str, object]) -> tuple[tuple[str, float | str], ...]:
    """``given`` completed with the family's defaults, each value checked by its declaration."""
    declared = {p.name: p for p in FAMILIES[family].params}
    unknown = sorted(set(given) - set(declared))
    if unknown:
        known = ", ".join(declared) or "none"
        raise TiapError(f"measure {family} has no parameter {unknown[0]!r} (its parameters: "
                        f"{known})", code="invalid-value")
    out: dict[str, float | str] = {n: p.default for n, p in declared.items()}
    for name, v in given.items():
        out[name] = declared[name].check(family, v)
    return tuple(sorted(out.items()))


# Bare families usable in Python code: ``nDCG @ 10``, ``RR``. (``P``, ``alpha_nDCG`` and
# ``ERR_IA`` always need a cutoff: write ``parse_measure("P@10")``.)
nDCG = Measure("nDCG")
R = Measure("R")
RR = Measure("RR")
Success = Measure("Success")
Rall = Measure("Rall")


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


def _family(node: ast.expr, text: str, prefix: str = "",
            ) -> tuple[str, dict[str, float | str]]:
    """The family and parameters of a measure's name part: ``nDCG``, ``ndcg_any``,
    ``alpha_nDCG(alpha=0.3)`` (``prefix``: the ``alpha`` of ``alpha-nDCG``)."""
    params: dict[str, float | str] = {}
    if isinstance(node, ast.Call):
        if node.args or any(kw.arg is None for kw in node.keywords):
            raise _unknown(text, "parameters are given by name, e.g. alpha_nDCG(alpha=0.5)@20")
        for kw in node.keywords:
            v = kw.value
            if isinstance(v, ast.UnaryOp) and isinstance(v.op, ast.USub) \
                    and isinstance(v.operand, ast.Constant):
                v = ast.Constant(-v.operand.value)  # alpha=-1: out of range, said below
            if not isinstance(v, ast.Constant) or not isinstance(v.value, (int, float, str)):
                raise _unknown(text, f"parameter {kw.arg} must be a number or a string")
            if kw.arg in params:
                raise _unknown(text, f"parameter {kw.arg} given twice")
            params[str(kw.arg)] = v.value
        node = node.func
    if not isinstance(node, ast.Name):
        raise _unknown(text, "expected a measure name such as nDCG or R")
    spelled = _SPELLINGS.get((prefix + node.id).lower())
    if spelled is None:
        raise _unknown(text, f"unknown measure {prefix.replace('_', '-') + node.id!r}")
    family, preset = spelled
    return family, {**preset, **params}


def _from_node(node: ast.expr, text: str, prefix: str = "") -> Measure:
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub) and not prefix \
            and isinstance(node.left, ast.Name):  # alpha-nDCG..., ERR-IA...
        return _from_node(node.right, text, node.left.id + "_")
    if isinstance(node, (ast.Name, ast.Call)):
        family, params = _family(node, text, prefix)
        return Measure(family, None, tuple(params.items()))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
        family, params = _family(node.left, text, prefix)
        right = node.right
        if (isinstance(right, ast.UnaryOp) and isinstance(right.op, ast.USub)
                and isinstance(right.operand, ast.Constant)
                and type(right.operand.value) is int):
            right = ast.Constant(-right.operand.value)  # nDCG@-3: out of range, below
        if isinstance(right, ast.Name) and right.id.startswith(_TOK) \
                and right.id[len(_TOK):].isdigit():  # nDCG@tok2000: a token budget
            return Measure(family, None, tuple(params.items()), budget=int(right.id[len(_TOK):]))
        if not (
            isinstance(right, ast.Constant)
            and isinstance(right.value, int)
            and not isinstance(right.value, bool)
        ):
            raise _unknown(text, "the cutoff after '@' must be a positive integer (or a token "
                           "budget, tokN)")
        if not 1 <= right.value <= MAX_CUTOFF:
            shown = _number(right.value)
            raise TiapError(f"measure {_shown(text)}: the cutoff must be an integer from 1 to "
                            f"{MAX_CUTOFF:,}, got {shown}", code="invalid-value")
        return Measure(family, right.value, tuple(params.items()))
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
    """Parse one measure name (``nDCG@10``, ``recall@5``, ``MRR``,
    ``alpha-nDCG(alpha=0.5)@20``) into a :class:`Measure`.

    Raises :class:`TiapError` listing the known measures when the name is unknown.

    >>> parse_measure("recall@5"), parse_measure("MRR"), parse_measure("ndcg_any@5")
    (R@5, RR, nDCG(discount='jk')@5)
    >>> parse_measure("MAP@10")
    Traceback (most recent call last):
    ...
    tiap.errors.TiapError: cannot parse measure 'MAP@10': unknown measure 'MAP'; known measures: ...
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

    >>> parse_measures("nDCG@60,R@60")
    (nDCG@60, R@60)
    >>> parse_measures(["hit@1", "Success@1", "mrr"])  # aliases of one measure: kept once
    (Success@1, RR)
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
    """The measures ``tiap rescore`` computes unless ``--measures`` is given, at cutoff ``k``.

        >>> default_measures(10)
        'nDCG@10,R@10,RR@10,Success@10'
    """
    return f"nDCG@{k},R@{k},RR@{k},Success@{k}"


def primary_measure(measures: Sequence[Measure | str]) -> Measure:
    """The headline measure, the one default of every command that needs one measure
    (Stage III's headline, the audit's cases and graded credit, the report's primary): nDCG
    at its largest cutoff (no cutoff counts as the largest), else the first measure.

        >>> primary_measure(["R@60", "nDCG@20", "nDCG@60"])
        nDCG@60
        >>> primary_measure(["Success@1", "R@10"])
        Success@1
    """
    parsed = [parse_measure(m) for m in measures]
    ndcg = [m for m in parsed if m.family == "nDCG" and m.param("discount") == "log2"
            and m.budget is None]
    if ndcg:
        return max(ndcg, key=lambda m: (m.cutoff is None, m.cutoff or 0))
    return parsed[0]
