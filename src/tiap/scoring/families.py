"""Every measure family, declared once: name, spellings, parameters, cutoff rules, meaning,
formula, citation and kernel.

One :class:`Family` record per family, in :data:`FAMILIES`. Everything else reads it:
parsing a measure name (:mod:`tiap.scoring.measures`), ``tiap measures``
(:func:`family_rows`), the table of docs/targets-and-scoring.md (:func:`families_markdown`),
the kernels (:func:`tiap.scoring.kernels.score` calls the record's ``kernel``) and the
bounds under partial lineage (:mod:`tiap.scoring.bounds` reads ``range_bounded``).

A kernel gets the credited ranks of a block of queries (:class:`Ranked`), the measure and
its effective cutoff ``k`` (the cutoff, at most the ranking depth; no cutoff: the depth),
and returns one value per query. The caller sets NaN for zero-target queries. The
notation of the formulas (``g_i``, ``G``, ``S``, ``disc``) is that of
:func:`tiap.scoring.kernels.score`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from tiap.errors import TiapError
from tiap.scoring.discounts import ideal_dcg_table, jk_discounts, log2_discounts, row_dot
from tiap.scoring.intents import err_ia_norm

__all__ = [
    "FAMILIES",
    "Family",
    "MeasureArgs",
    "Param",
    "Ranked",
    "families_markdown",
    "family_rows",
    "known_measures",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


class MeasureArgs(Protocol):
    """What a kernel reads of a measure (a :class:`tiap.scoring.measures.Measure`)."""

    @property
    def family(self) -> str: ...

    @property
    def cutoff(self) -> int | None: ...

    def param(self, name: str) -> float | str: ...


class Ranked(Protocol):
    """The credited ranks of a block of queries under one credit mode: all a kernel reads.

    Ranks are 0-based. ``n_targets`` is ``G`` per query (group credit) or ``|S|`` (set
    credit); ``first`` the rank of the first credited item (the depth or more when none);
    ``graded`` the per-rank gain matrix of graded targets (set credit), else None.
    """

    @property
    def depth(self) -> int: ...

    @property
    def n_targets(self) -> IntArray: ...

    @property
    def first(self) -> IntArray: ...

    @property
    def graded(self) -> FloatArray | None: ...

    def hits(self, k: int) -> IntArray:
        """Targets credited within the top ``k`` (group credit: matched groups)."""
        ...

    def count(self, k: int) -> IntArray:
        """Credited ranks within the top ``k``."""
        ...

    def dcg(self, k: int) -> FloatArray:
        """DCG of the credited ranks within the top ``k`` (log2 discount, binary gains)."""
        ...

    def rank_gains(self) -> FloatArray:
        """``[Q, depth]``: 1 at each credited rank, else 0."""
        ...

    def intents(self, alpha: float, k: int) -> tuple[FloatArray, FloatArray | None]:
        """(intent-aware gains ``[Q, depth]``, ideal gains ``[Q, k]`` or None: all ones)."""
        ...

    def graded_ideal(self, cutoff: int | None) -> FloatArray:
        """Ideal DCG of the graded targets, cut at ``cutoff``."""
        ...


Kernel = Callable[[Ranked, MeasureArgs, int], FloatArray]


@dataclass(frozen=True)
class Param:
    """One parameter of a family (``FAMILY(name=value)@k``): its default and what it takes,
    either a number from ``low`` to ``high`` or one of ``choices``."""

    name: str
    default: float | str
    meaning: str
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()

    def check(self, family: str, value: object) -> float | str:
        """``value`` as this parameter stores it; a :class:`TiapError` when out of range."""
        if self.choices:
            if value not in self.choices:
                raise TiapError(f"measure {family}: {self.name} must be one of "
                                f"{', '.join(map(repr, self.choices))}, got {value!r}",
                                code="invalid-value")
            return str(value)
        low, high = self.low, self.high
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or (low is not None and not value >= low) \
                or (high is not None and not value <= high):  # NaN is out of range too
            raise TiapError(f"measure {family}: {self.name} must be a number from "
                            f"{low:g} to {high:g}, got {value!r}", code="invalid-value")
        return float(value)


def _never(m: MeasureArgs) -> bool:
    return False


def _always(m: MeasureArgs) -> bool:
    return True


@dataclass(frozen=True)
class Family:
    """One measure family, declared once.

    ``aliases`` are the other accepted spellings (compared case-insensitively; the name in
    any case is always accepted, and so is ``-`` for ``_``); ``presets`` are spellings that
    also set parameters (``ndcg_any`` is ``nDCG(discount='jk')``). ``show_params``: the
    canonical name always shows the parameters (else only non-defaults). ``budget``: a
    token budget may replace the cutoff (``nDCG@tok2000``). ``dense(m)``: the kernel reads a
    per-rank gain matrix of the whole targets (scored in one block). ``range_bounded(m)``:
    where partial lineage leaves a query open, the value is bounded by its range [0, 1]
    only.
    """

    name: str
    meaning: str
    formula: str
    citation: str
    kernel: Kernel
    aliases: tuple[str, ...] = ()
    presets: Mapping[str, Mapping[str, float | str]] = field(default_factory=dict)
    params: tuple[Param, ...] = ()
    show_params: bool = False
    cutoff_optional: bool = True
    budget: bool = True
    dense: Callable[[MeasureArgs], bool] = _never
    range_bounded: Callable[[MeasureArgs], bool] = _never

    @property
    def defaults(self) -> dict[str, float | str]:
        """Parameter name -> default value."""
        return {p.name: p.default for p in self.params}

    def spellings(self) -> dict[str, dict[str, float | str]]:
        """Every accepted lower-case spelling -> the parameters it sets."""
        out: dict[str, dict[str, float | str]] = {self.name.lower(): {}}
        out.update((a, {}) for a in self.aliases)
        out.update((a, dict(p)) for a, p in self.presets.items())
        return out

    def usage(self) -> str:
        """How the family is written: ``nDCG@k (or nDCG; nDCG(discount='jk')@k)``."""
        shown = "".join(f"({p.name}={_value(p.default)})" for p in self.params
                        if self.show_params)
        more = [self.name] if self.cutoff_optional else []
        more += [f"{self.name}({p.name}={c!r})@k" for p in self.params if not self.show_params
                 for c in p.choices if c != p.default]
        return f"{self.name}{shown}@k" + (f" (or {'; '.join(more)})" if more else "")


def _value(v: float | str) -> str:
    return repr(v) if isinstance(v, str) else f"{v:g}"


# ----------------------------------------------------------------------------------------
# the kernels, one per family (NumPy errors of 0/0 are silenced by the caller)


def _n_ideal(r: Ranked, m: MeasureArgs) -> IntArray:
    return r.n_targets if m.cutoff is None else np.minimum(r.n_targets, m.cutoff)


def _ndcg(r: Ranked, m: MeasureArgs, k: int) -> FloatArray:
    n_ideal = _n_ideal(r, m)
    if m.param("discount") == "jk":
        if r.graded is not None:
            raise TiapError("graded relevance takes the log2 discount only: use nDCG")
        disc = jk_discounts(r.depth)
        table = np.r_[0.0, np.cumsum(jk_discounts(int(n_ideal.max(initial=0))))]
        return row_dot(r.rank_gains()[:, :k], disc[:k]) / table[n_ideal]
    if r.graded is not None:
        return row_dot(r.graded[:, :k], log2_discounts(k)) / r.graded_ideal(m.cutoff)
    return r.dcg(k) / ideal_dcg_table(int(n_ideal.max(initial=0)))[n_ideal]


def _recall(r: Ranked, m: MeasureArgs, k: int) -> FloatArray:
    return r.hits(k) / r.n_targets.astype(np.float64)


def _reciprocal_rank(r: Ranked, m: MeasureArgs, k: int) -> FloatArray:
    return np.where(r.first < k, 1.0 / (r.first + 1.0), 0.0)


def _success(r: Ranked, m: MeasureArgs, k: int) -> FloatArray:
    return (r.first < k).astype(np.float64)


def _precision(r: Ranked, m: MeasureArgs, k: int) -> FloatArray:
    assert m.cutoff is not None  # the family requires one
    return r.count(k) / float(m.cutoff)


def _recall_all(r: Ranked, m: MeasureArgs, k: int) -> FloatArray:
    return (r.hits(k) == r.n_targets).astype(np.float64)


def _intent_gains(r: Ranked, m: MeasureArgs) -> tuple[float, int, FloatArray, FloatArray | None]:
    if r.graded is not None:
        raise TiapError(f"{m.family} takes binary targets (no graded relevance)")
    assert m.cutoff is not None  # the family requires one
    alpha = float(m.param("alpha"))
    g, ideal = r.intents(alpha, m.cutoff)
    return alpha, m.cutoff, g, ideal


def _alpha_ndcg(r: Ranked, m: MeasureArgs, k: int) -> FloatArray:
    _, cutoff, g, ideal = _intent_gains(r, m)
    if ideal is None:  # set credit: every relevant item is its own intent
        idcg = ideal_dcg_table(cutoff)[np.minimum(r.n_targets, cutoff)]
    else:
        idcg = row_dot(ideal, log2_discounts(cutoff))
    return row_dot(g[:, :k], log2_discounts(r.depth)[:k]) / idcg


def _err_ia(r: Ranked, m: MeasureArgs, k: int) -> FloatArray:
    alpha, cutoff, g, _ = _intent_gains(r, m)
    inv = 1.0 / np.arange(1, r.depth + 1, dtype=np.float64)
    return row_dot(g[:, :k], inv[:k]) / err_ia_norm(r.n_targets, cutoff, alpha)


def _not_log2(m: MeasureArgs) -> bool:
    return m.param("discount") != "log2"


_ALPHA = Param("alpha", 0.5, "redundancy penalty: a group's later items gain (1 - alpha)^c "
               "(ndeval's default 0.5)", low=0, high=1)

#: Every family, in display order.
FAMILIES: Mapping[str, Family] = {f.name: f for f in (
    Family(
        "nDCG",
        meaning="normalised discounted cumulative gain, discount log2(i + 1)",
        formula="sum_{i<=k} g_i disc(i) / DCG_{min(G, k)} (set credit: rel_i, ideal over "
                "|S|); discount='jk': disc is 1 at ranks 1-2, then 1/log2(i)",
        citation="Järvelin and Kekäläinen (2002); trec_eval ndcg_cut.k (bare: ndcg); "
               "LongMemEval ndcg_any (jk)",
        kernel=_ndcg,
        aliases=("ndcg_cut",),
        presets={"ndcg_any": {"discount": "jk"}},
        params=(Param("discount", "log2", "log2 = 1/log2(i + 1); jk = 1 at ranks 1 and 2, "
                      "then 1/log2(i)", choices=("log2", "jk")),),
        dense=_not_log2,
        range_bounded=_not_log2,
    ),
    Family(
        "R",
        meaning="recall: targets credited in the top k / all targets",
        formula="hits@k / G (set credit: |top-k ∩ S| / |S|)",
        citation="trec_eval recall.k; ndeval subtopic recall (StRecall)",
        kernel=_recall,
        aliases=("recall", "strecall", "strec"),
    ),
    Family(
        "RR",
        meaning="reciprocal rank of the first credited item",
        formula="1 / rank of the first credited item if it is within k, else 0",
        citation="trec_eval recip_rank (the run cut at k)",
        kernel=_reciprocal_rank,
        aliases=("mrr", "recip_rank", "reciprocal_rank"),
    ),
    Family(
        "Success",
        meaning="1 if anything is credited in the top k, else 0",
        formula="[hits@k > 0]",
        citation="trec_eval success.k; LongMemEval recall_any",
        kernel=_success,
        aliases=("hit", "hits", "hitrate", "hit_rate", "recall_any"),
    ),
    Family(
        "P",
        meaning="precision: credited positions in the top k / k",
        formula="sum_{i<=k} g_i / k (set credit: |top-k ∩ S| / k)",
        citation="trec_eval P.k",
        kernel=_precision,
        aliases=("prec", "precision"),
        cutoff_optional=False,
        budget=False,
    ),
    Family(
        "Rall",
        meaning="all-evidence recall: 1 if every target (every evidence unit) is credited in "
                "the top k, else 0",
        formula="[hits@k = G] (set credit: [|top-k ∩ S| = |S|])",
        citation="LongMemEval recall_all",
        kernel=_recall_all,
        aliases=("recall_all",),
    ),
    Family(
        "alpha_nDCG",
        meaning="alpha-nDCG (Clarke et al. 2008) with the groups as intents: an item's gain "
                "is the sum of (1 - alpha)^c over the groups it is in, c = that group's "
                "items ranked above it; ideal list greedy, as ndeval",
        formula="sum_{i<=k} a_i disc(i) over the same sum for ndeval's greedy ideal list, "
                "a_i = sum_g J(i, g) (1 - alpha)^c_g(i)",
        citation="Clarke et al. (SIGIR 2008); ndeval",
        kernel=_alpha_ndcg,
        params=(_ALPHA,),
        show_params=True,
        cutoff_optional=False,
        budget=False,
        dense=_always,
        range_bounded=_always,
    ),
    Family(
        "ERR_IA",
        meaning="intent-aware ERR (Chapelle et al. 2009) as ndeval computes it: gains as "
                "alpha-nDCG's, discount 1/i, over the ideal of every intent at every rank",
        formula="sum_{i<=k} a_i / i over sum_{i<=k} G (1 - alpha)^(i - 1) / i",
        citation="Chapelle et al. (CIKM 2009); ndeval",
        kernel=_err_ia,
        params=(_ALPHA,),
        show_params=True,
        cutoff_optional=False,
        budget=False,
        dense=_always,
        range_bounded=_always,
    ),
)}


# ----------------------------------------------------------------------------------------
# renderings


def family_rows(max_cutoff: int) -> list[tuple[str, str, str, str]]:
    """One row per family for ``tiap measures``: (family, computes, cutoff, also spelled).

    >>> family_rows(100)[1]
    ('R', 'recall: targets credited in the top k / all targets', '@k, 1 to 100; bare = the whole list', 'recall, strec, strecall')
    """
    rows = []
    for f in FAMILIES.values():
        spelled = sorted(a for a in f.aliases if a != f.name.lower())
        spelled += [f"{a} (= {_preset_name(f, p)})" for a, p in f.presets.items()]
        spelled.sort()
        if "_" in f.name:  # alpha_nDCG is also alpha-nDCG
            spelled.append(f.name.replace("_", "-"))
        if f.show_params:
            spelled.append("parameter: " + ", ".join(f"{p.name}={p.default}" for p in f.params))
        cut = (f"@k, 1 to {max_cutoff:,}; bare = the whole list" if f.cutoff_optional
               else f"@k required, 1 to {max_cutoff:,}")
        rows.append((f.name, f.meaning, cut, ", ".join(spelled) or "-"))
    return rows


def _preset_name(f: Family, params: Mapping[str, float | str]) -> str:
    """The canonical name (no cutoff) of a preset, e.g. ``nDCG(discount='jk')``."""
    shown = [(p.name, params.get(p.name, p.default)) for p in f.params]
    shown = [(n, v) for n, v in shown if f.show_params or v != f.defaults[n]]
    return f.name + ("(" + ", ".join(f"{n}={_value(v)}" for n, v in shown) + ")" if shown else "")


def known_measures() -> str:
    """What parses, in one line (the error message of an unknown measure lists it)."""
    usage = ", ".join(f.usage() for f in FAMILIES.values())
    spelled = [f"{', '.join(f.aliases)} -> {f.name}" for f in FAMILIES.values() if f.aliases]
    spelled += [f"{f.name.replace('_', '-')} -> {f.name}" for f in FAMILIES.values()
                if "_" in f.name]
    spelled += [f"{a} -> {_preset_name(f, p)}" for f in FAMILIES.values()
                for a, p in f.presets.items()]
    return f"{usage}; aliases (any case): {'; '.join(spelled)}"


def families_markdown() -> str:
    """The table of measure families of docs/targets-and-scoring.md (between its
    ``<!-- measures:start -->`` and ``<!-- measures:end -->`` markers)."""
    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    lines = ["| family | computes | formula | parameters | cutoff | also spelled | citation |",
             "|---|---|---|---|---|---|---|"]
    for f in FAMILIES.values():
        params = "; ".join(f"`{p.name}` (default {_value(p.default)}): {p.meaning}"
                           for p in f.params) or "-"
        cut = "`@k`; bare = the whole list" if f.cutoff_optional else "`@k` required"
        if f.budget:
            cut += "; or a token budget `@tokN`"
        spelled = [f"`{a}`" for a in f.aliases]
        spelled += [f"`{a}` (= `{_preset_name(f, p)}`)" for a, p in f.presets.items()]
        if "_" in f.name:
            spelled.append(f"`{f.name.replace('_', '-')}`")
        lines.append(f"| `{f.name}` | {cell(f.meaning)} | {cell(f.formula)} | {cell(params)} "
                     f"| {cut} | {', '.join(spelled) or '-'} | {cell(f.citation)} |")
    return "\n".join(lines) + "\n"
