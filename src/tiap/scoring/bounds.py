"""What partial lineage proves about a query's values, and nothing more: exact or bounded.

When an import cannot determine an item's lineage (:class:`tiap.memory.store.Uncertainty`)
or whether an unseen item exists (:class:`tiap.memory.store.Placeholder`), a query's
groups under a target are not fully known. :func:`query_problem` reduces one (query,
target, ranking) to what matters for scoring it: the evidence units whose group certainly
or possibly exists, and for every ranked item that may be credited, the units it certainly
and possibly belongs to. :func:`group_bounds` and :func:`set_bounds` then give, per measure,
an interval ``[lower, upper]`` that holds the measure's value under **every lineage
consistent with what the store says** (``lower == upper``: the value is determined).

Group credit (the paper's scorer), with ``Y`` the units whose group certainly exists, ``M``
those whose group may exist, ``disc(i) = 1 / log2(i + 1)``:

- ``Success@k`` and ``RR@k`` depend only on whether a ranked item is credited at all (the
  first credited item always opens a group): lower from the first item certainly credited,
  upper from the first item possibly credited. A trace's membership flags make them exact.
- ``nDCG@k`` upper: for each number ``m`` of groups of ``M`` that exist, the largest DCG
  any assignment of ranked items to groups can reach (a greedy maximum-weight matching of
  items to groups in rank order, with at most ``m`` groups of ``M``: the weights fall with
  the rank, and the matchable sets form a matroid, so the greedy choice is optimal), over
  the ideal DCG of ``min(|Y| + m, k)`` ones; the largest over ``m``.
- ``nDCG@k`` lower: the smallest DCG over assignments, by dynamic programming over the set
  of matched groups (and the units held by exclusive items), over the ideal DCG with every
  possible group existing (both choices can only lower the value).
- ``R@k`` and ``P@k``: the same walk counting matched groups and gains.
- ``Rall@k`` (``[R@k = 1]``): 1 where R's lower bound is 1, 0 where its upper bound is
  below 1, else ``[0, 1]``.
- ``alpha_nDCG``, ``ERR_IA`` and nDCG with the ``jk`` discount: ``[0, 1]``, the measure's
  range (no tighter bound is derived for them; each family declares it, ``range_bounded``
  in :data:`tiap.scoring.families.FAMILIES`).

The intervals are sound; they can be wider than the tightest ones where constraints couple
items across queries (an item's lineage is one, but each query is bounded on its own) or
where the dynamic program falls back to its relaxed form (more than
:data:`MAX_STATES` states). Set credit (trec_eval's) uses the relevant set's size, so
unseen members (placeholders without a ``count``) leave its size open upward.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from tiap.memory.store import Item
from tiap.scoring.families import FAMILIES
from tiap.scoring.measures import Measure
from tiap.targets.lineage import Lineage
from tiap.targets.possible import PossibleIndex
from tiap.targets.targets import Target

__all__ = [
    "MAX_STATES",
    "Position",
    "QueryProblem",
    "group_bounds",
    "query_problem",
    "set_bounds",
]

#: States kept by the lower-bound dynamic program before it relaxes its constraints.
MAX_STATES = 20_000
_EPS = 1e-12

YES, MAYBE = 2, 1


@dataclass(frozen=True)
class Position:
    """A ranked item that may be credited, as unit bit masks over the query's units."""

    rank: int  # 1-based
    certain: int  # units the item certainly belongs to (group-wise: under the target)
    possible: int  # units it may belong to (certain included)
    credited: int  # YES or MAYBE
    requires: tuple[int, ...] = ()  # unit masks the membership must meet
    single: bool = False
    exclusive: bool = False


@dataclass(frozen=True)
class QueryProblem:
    """One (query, target, ranking) as far as partial lineage leaves it open."""

    units: tuple[str, ...]  # evidence units whose group certainly or possibly exists
    certain_groups: int  # mask of the units whose group certainly exists
    positions: tuple[Position, ...]
    depth: int  # ranked items (the walk's length)
    occupied: int = 0  # units held by exclusive items that are not among the positions
    # set credit: relevant-set size bounds (None: unbounded) and ranked relevance
    set_size: tuple[int, int | None] = (0, 0)
    set_relevance: tuple[tuple[int, int], ...] = ()  # (rank, YES/MAYBE)
    set_exact: bool = True
    group_exact: bool = True
    notes: tuple[str, ...] = field(default=())
    #: an item of the store the ranking does not show certainly belongs to some group of
    #: the query (its lineage meets a unit set inside the evidence), so the target is not
    #: empty; set only where nothing else proves it
    member_proven: bool = False

    @property
    def n_units(self) -> int:
        return len(self.units)

    @property
    def all_groups(self) -> int:
        return (1 << len(self.units)) - 1

    @property
    def surely_credited(self) -> bool:
        """A ranked item is certainly credited: it belongs to some group of the query (which
        one may be open, as for an item that reaches one of several gold turns), so that
        group exists and the target is not empty."""
        return any(p.credited == YES for p in self.positions)

    @property
    def proven_nonempty(self) -> bool:
        """An item, ranked or not, certainly belongs to some group (which one may be open)."""
        return self.surely_credited or self.member_proven

    @property
    def possibly_empty(self) -> bool:
        """No group certainly exists, and no item certainly belongs to one (the query may be
        a zero-target case)."""
        return self.certain_groups == 0 and not self.proven_nonempty


def _disc(rank: int) -> float:
    return 1.0 / math.log2(rank + 1)


def _ideal(n: int) -> float:
    return sum(_disc(i) for i in range(1, n + 1))


def _bits(mask: int) -> list[int]:
    out = []
    i = 0
    while mask:
        if mask & 1:
            out.append(i)
        mask >>= 1
        i += 1
    return out


# ------------------------------------------------------------------------------------------
# building the problem from a store


def query_problem(
    index: PossibleIndex,
    evidence: Sequence[str],
    ranking: Sequence[str],
    *,
    collection: str | None = None,
) -> QueryProblem:
    """The query's units, existence and ranked memberships under ``index``'s target."""
    lin, match = index.lineage, index.match
    items = lin.items
    units: list[str] = []
    exist: list[int] = []
    for u in dict.fromkeys(evidence):
        e = index.existence(u, collection)
        if e:
            units.append(u)
            exist.append(e)
    pos_of = {u: i for i, u in enumerate(units)}
    in_evidence = frozenset(evidence)
    certain_groups = sum(1 << i for i, e in enumerate(exist) if e == YES)
    positions: list[Position] = []
    group_exact = certain_groups == (1 << len(units)) - 1
    set_rel: list[tuple[int, int]] = []
    set_exact = group_exact
    ranked_exclusive: set[str] = set()
    for rank, iid in enumerate(ranking, start=1):
        it = items.get(iid)
        if it is None or not match[iid]:
            continue
        pl = lin.possible.get(iid)
        certain = 0
        for u in lin.sources[iid]:
            j = pos_of.get(u)
            if j is not None:
                certain |= 1 << j
        possible = certain
        requires: list[int] = []
        if pl is not None:
            for u, j in pos_of.items():
                if pl.may_reach(u) and _same_collection(it, collection):
                    possible |= 1 << j
            for r in pl.requires:
                mask = sum(1 << pos_of[u] for u in r if u in pos_of)
                if r <= in_evidence and mask:  # the lineage meets r, inside the evidence
                    requires.append(mask)
        if not possible:
            continue
        credited = YES if certain or requires else MAYBE
        if pl is not None and pl.exclusive:
            ranked_exclusive.add(iid)
        if possible != certain:
            group_exact = False
            set_exact = False
        positions.append(Position(rank, certain, possible, credited, tuple(requires),
                                  single=bool(pl and pl.single),
                                  exclusive=bool(pl and pl.exclusive)))
        set_rel.append((rank, credited if possible == certain else MAYBE))
    occupied = 0
    if any(p.exclusive for p in positions):
        for u, j in pos_of.items():
            for iid in lin.families.get(u, ()):
                pl = lin.possible.get(iid)
                if pl is not None and pl.exclusive and iid not in ranked_exclusive:
                    occupied |= 1 << j
    lo, hi, size_exact = _set_size(index, units, collection)
    set_exact = set_exact and size_exact
    proven = (not certain_groups and not any(p.credited == YES for p in positions)
              and _member_proven(index, units, in_evidence, collection))
    return QueryProblem(
        units=tuple(units), certain_groups=certain_groups, positions=tuple(positions),
        depth=len(ranking), occupied=occupied, set_size=(lo, hi),
        set_relevance=tuple(set_rel), set_exact=set_exact, group_exact=group_exact,
        member_proven=proven)


def _member_proven(index: PossibleIndex, units: Sequence[str], evidence: frozenset[str],
                   collection: str | None) -> bool:
    """Whether an existing item the target credits certainly belongs to some group of the
    units: its lineage meets a unit set (``requires``) that lies inside the evidence."""
    lin, match = index.lineage, index.match
    seen: set[str] = set()
    for iid in [*(i for u in units for i in lin.possible_families.get(u, ())),
                *index.open_items(collection)]:
        if iid in seen or not match[iid]:
            continue
        seen.add(iid)
        it = lin.items[iid]
        if it.placeholder is not None and not it.placeholder.certain:
            continue
        if _same_collection(it, collection) and any(
                r and r <= evidence for r in lin.possible[iid].requires):
            return True
    return False


def _same_collection(it: Item, collection: str | None) -> bool:
    return it.collection is None or collection is None or it.collection == collection


def _set_size(index: PossibleIndex, units: Sequence[str],
              collection: str | None) -> tuple[int, int | None, bool]:
    """``(lower, upper, exact)`` of the size of the union of the units' groups (set credit);
    ``upper`` is ``None`` when unseen members leave it open."""
    lin, match, items = index.lineage, index.match, index.lineage.items
    certain: set[str] = set()
    maybe: set[str] = set()
    for u in units:
        certain.update(i for i in lin.families.get(u, ()) if match[i])
        maybe.update(i for i in lin.possible_families.get(u, ()) if match[i])
        maybe.update(i for i in index.open_items(collection) if lin.possible[i].may_reach(u))
    maybe -= certain
    n_lo = n_hi = 0
    open_ended = False
    exact = not maybe
    for iid, sure in [(i, True) for i in certain] + [(i, False) for i in maybe]:
        ph = items[iid].placeholder
        if ph is None:
            n_lo += sure
            n_hi += 1
            continue
        if ph.certain and sure:
            n_lo += ph.count or 1
        if ph.count is None:
            open_ended = True
        else:
            n_hi += ph.count
        exact = exact and ph.certain and ph.count is not None
    if open_ended:
        return n_lo, None, False
    return n_lo, n_hi, exact and n_lo == n_hi


# ------------------------------------------------------------------------------------------
# group credit


def _first(positions: Iterable[Position], k: int, want: int) -> int | None:
    for p in positions:
        if p.rank > k:
            return None
        if p.credited >= want:
            return p.rank
    return None


def _first_credit(family: str, first_yes: int | None, first_any: int | None,
                  ) -> tuple[float, float]:
    """Success and RR from the ranks of the first item certainly and possibly credited."""
    if family == "Success":
        return float(first_yes is not None), float(first_any is not None)
    return (0.0 if first_yes is None else 1.0 / first_yes,
            0.0 if first_any is None else 1.0 / first_any)


def _greedy_gains(positions: Sequence[Position], free_certain: int, free_maybe: int,
                  budget: int) -> list[int]:
    """Ranks that gain in a maximum-weight assignment of items to groups (one group per
    gaining item), using every certain group and at most ``budget`` maybe groups."""
    owner: dict[int, int] = {}  # unit bit -> index into chosen
    chosen: list[Position] = []
    used_maybe = 0

    def augment(i: int, seen: set[int], allow_maybe: bool) -> int | None:
        """Find a free unit for chosen[i] (possibly moving others); returns the unit."""
        for u in _bits(chosen[i].possible):
            bit = 1 << u
            if u in seen or not bit & (free_certain | free_maybe):
                continue
            seen.add(u)
            if u not in owner:
                if bit & free_maybe and not allow_maybe:
                    continue
                owner[u] = i
                return u
            j = owner[u]
            got = augment(j, seen, allow_maybe)
            if got is not None:
                owner[u] = i
                return got
        return None

    gains: list[int] = []
    for p in positions:
        chosen.append(p)
        i = len(chosen) - 1
        end = augment(i, set(), allow_maybe=False)  # changes nothing when it fails
        if end is None and used_maybe < budget:
            end = augment(i, set(), allow_maybe=True)
            if end is not None:
                used_maybe += 1
        if end is None:
            chosen.pop()
        else:
            gains.append(p.rank)
    return gains


def _options(p: Position, matched: int, held: int, *, relaxed: bool,
             ) -> tuple[bool, list[tuple[int, int]]]:
    """(may stay without gain, gain options as (new matched, new held))."""
    keep = False
    gains: list[tuple[int, int]] = []
    req = () if relaxed else p.requires
    single = p.single and not relaxed
    exclusive = p.exclusive and not relaxed
    if p.credited == MAYBE and not p.certain:
        keep = True  # not a member at all
    if single:
        for u in _bits(p.possible):
            bit = 1 << u
            if p.certain and p.certain != bit:
                continue
            if any(not r & bit for r in req):
                continue
            if exclusive and held & bit:
                continue
            if matched & bit:
                keep = keep or not exclusive
                if exclusive:
                    gains.append((matched, held | bit))  # no gain, holds the unit
            else:
                gains.append((matched | bit, held | bit if exclusive else held))
        return keep, gains
    # several sources possible: as a member, take every possible unit (the most a gain can
    # match); without a gain, the units already matched
    if (not p.certain & ~matched and p.possible & matched
            and all(r & matched & p.possible for r in req)):
        keep = True
    if p.possible & ~matched:
        gains.append((matched | p.possible, held))
    return keep, gains


def _min_walk(problem: QueryProblem, cutoffs: Sequence[int], weight: str,
              ) -> dict[int, float]:
    """The smallest sum of weights of gaining ranks within each cutoff, over assignments."""
    for relaxed in (False, True):
        got = _dp(problem, cutoffs, weight, relaxed)
        if got is not None:
            return got
    raise AssertionError("the relaxed walk always has a way")  # pragma: no cover


def _dp(problem: QueryProblem, cutoffs: Sequence[int], weight: str, relaxed: bool,
        ) -> dict[int, float] | None:
    states: dict[tuple[int, int], float] = {(0, 0 if relaxed else problem.occupied): 0.0}
    out: dict[int, float] = {}
    todo = sorted(set(cutoffs))
    ci = 0
    for p in problem.positions:
        while ci < len(todo) and todo[ci] < p.rank:
            out[todo[ci]] = min(states.values())
            ci += 1
        w = _disc(p.rank) if weight == "dcg" else 1.0
        nxt: dict[tuple[int, int], float] = {}
        for (matched, held), cost in states.items():
            keep, gains = _options(p, matched, held, relaxed=relaxed)
            if keep:
                key = (matched, held)
                if cost < nxt.get(key, math.inf):
                    nxt[key] = cost
            for m2, h2 in gains:
                c2 = cost + (w if m2 != matched else 0.0)
                key = (m2, h2)
                if c2 < nxt.get(key, math.inf):
                    nxt[key] = c2
        if not nxt:
            return None  # no lineage fits the constraints: relax them
        if len(nxt) > MAX_STATES:
            if relaxed:  # pragma: no cover - the relaxed walk keeps at most 2^units states
                raise AssertionError("relaxed walk too large")
            return None
        states = nxt
    while ci < len(todo):
        out[todo[ci]] = min(states.values())
        ci += 1
    return out


def _rall(r_bounds: tuple[float, float], family: str) -> tuple[float, float]:
    """R's bounds, or, for Rall (= [R = 1]), 1 where R's lower bound is 1 and 0 where its
    upper bound is below 1."""
    if family == "R":
        return r_bounds
    lo, hi = r_bounds
    return (1.0 if lo >= 1.0 else 0.0, 1.0 if hi >= 1.0 else 0.0)


def group_bounds(problem: QueryProblem, measures: Sequence[Measure],
                 ) -> dict[Measure, tuple[float, float]]:
    """``[lower, upper]`` of every measure under group credit (module docstring)."""
    depth = max(problem.depth, 1)
    ks = {m: (m.cutoff or depth) for m in measures}
    n_y = (problem.certain_groups).bit_count()
    n_m = problem.n_units - n_y
    g_max = n_y + n_m
    pos = problem.positions
    budgets = range(0 if n_y else 1, n_m + 1)
    free_c, free_m = problem.certain_groups, problem.all_groups & ~problem.certain_groups
    gains_by_budget = {b: _greedy_gains(pos, free_c, free_m, b) for b in budgets}
    cut = sorted(set(ks.values()))
    min_dcg = _min_walk(problem, cut, "dcg")
    min_gains = _min_walk(problem, cut, "count")
    out: dict[Measure, tuple[float, float]] = {}
    for m, k in ks.items():
        within = [p for p in pos if p.rank <= k]
        fam = m.family
        if fam in ("Success", "RR"):
            out[m] = _first_credit(fam, _first(pos, k, YES), _first(pos, k, MAYBE))
            continue
        if g_max == 0:  # no group can exist: the caller treats the query as undefined
            out[m] = (math.nan, math.nan)
            continue
        if FAMILIES[fam].range_bounded(m):
            out[m] = (0.0, 1.0)  # bounded by the measure's range only
            continue
        if fam == "nDCG":
            lo_ideal = _ideal(min(g_max, k) if m.cutoff else g_max)
            lo = min_dcg[k] / lo_ideal
            hi = 0.0
            for b, gains in gains_by_budget.items():
                g = n_y + b
                dcg = sum(_disc(r) for r in gains if r <= k)
                hi = max(hi, dcg / _ideal(min(g, k) if m.cutoff else g))
            out[m] = (lo, min(hi, 1.0))
        elif fam == "P":
            most = max(sum(1 for r in g if r <= k) for g in gains_by_budget.values())
            out[m] = (min_gains[k] / k, most / k)
        elif fam in ("R", "Rall"):
            sure = 0
            for p in within:
                if p.credited == YES:
                    sure |= p.certain
            hits_lo = max(min_gains[k], (sure).bit_count())
            reach_all = 0
            reach_y = 0
            multi = 0
            singles = 0
            for p in within:
                reach_all |= p.possible
                reach_y |= p.possible & problem.certain_groups
                if p.single:
                    singles += 1
                else:
                    multi |= p.possible
            h_all = min((reach_all).bit_count(), (multi).bit_count() + singles)
            h_y = min((reach_y).bit_count(),
                      (multi & problem.certain_groups).bit_count() + singles)
            hi = 0.0
            for b in budgets:
                g = n_y + b
                hi = max(hi, min(g, h_y + b, h_all) / g)
            out[m] = _rall((hits_lo / g_max, min(hi, 1.0)), fam)
        else:  # pragma: no cover - every family is handled above
            raise AssertionError(fam)
    return out


# ------------------------------------------------------------------------------------------
# set credit


def set_bounds(problem: QueryProblem, measures: Sequence[Measure],
               ) -> dict[Measure, tuple[float, float]]:
    """``[lower, upper]`` of every measure under set credit (trec_eval's: every member of the
    union of the groups is relevant; nDCG's ideal and recall use the union's size)."""
    depth = max(problem.depth, 1)
    n_lo, n_hi = problem.set_size
    rel = problem.set_relevance
    out: dict[Measure, tuple[float, float]] = {}
    for m in measures:
        k = m.cutoff or depth
        yes = [r for r, c in rel if c == YES and r <= k]
        maybe = [r for r, c in rel if c == MAYBE and r <= k]
        fam = m.family
        if fam in ("Success", "RR"):
            out[m] = _first_credit(fam, min(yes, default=None), min(yes + maybe, default=None))
            continue
        lo_size = max(n_lo, len(yes))
        if n_hi is not None and n_hi == 0 and not maybe:
            out[m] = (math.nan, math.nan)
            continue
        if fam == "P":
            out[m] = (len(yes) / k, (len(yes) + len(maybe)) / k)
            continue
        if FAMILIES[fam].range_bounded(m):
            out[m] = (0.0, 1.0)  # bounded by the measure's range only
            continue
        base = sum(_disc(r) for r in yes)
        hi = 0.0
        best_r = 0.0
        for j in range(len(maybe) + 1):
            size = max(lo_size + j, 1)
            dcg = base + sum(_disc(r) for r in maybe[:j])
            ideal = _ideal(min(size, k) if m.cutoff else size)
            hi = max(hi, dcg / ideal)
            best_r = max(best_r, (len(yes) + j) / size)
        if fam == "nDCG":
            if n_hi is None:
                lo_ideal = _ideal(k) if m.cutoff else math.inf
            else:
                big = max(n_hi, 1)
                lo_ideal = _ideal(min(big, k) if m.cutoff else big)
            out[m] = (base / lo_ideal if lo_ideal != math.inf else 0.0, min(hi, 1.0))
        elif fam in ("R", "Rall"):
            lo = 0.0 if n_hi is None else len(yes) / max(n_hi, 1)
            out[m] = _rall((lo, min(best_r, 1.0)), fam)
        else:  # pragma: no cover
            raise AssertionError(fam)
    return out


def bounds_index(lineage: Lineage, target: Target) -> PossibleIndex:
    """The per-(store, target) index :func:`query_problem` reads."""
    return PossibleIndex(lineage, target)


def exact_problem(problem: QueryProblem, credit: str) -> bool:
    """Whether the lineage determines every value of the query under ``credit``."""
    return problem.group_exact if credit == "group" else problem.set_exact


Bounds = Mapping[Measure, tuple[float, float]]
