"""TIAP's group credit, the paper's scorer, as ir_measures measures (docs/plugins.md).

``GroupNDCG``, ``GroupR``, ``GroupRR``, ``GroupP``, ``GroupSuccess`` and ``GroupRall`` are
ir_measures measures (cutoffs as usual: ``GroupNDCG@60``), computed by ir_measures' runtime
provider, so ``ir_measures.calc_aggregate``, ``iter_calc``, ``evaluator`` and PyTerrier's
``pt.Experiment`` take them beside any other measure. They equal ``tiap rescore --credit
group`` (``nDCG``, ``R``, ``RR``, ``P``, ``Success``, ``Rall``) to 1e-12 per query
(tests/plugins/).

**The qrels carry the groups.** Group credit needs to know which evidence unit (group)
each relevant item answers; a TREC qrels line has a column for it, the second (the
"iteration", ``iteration`` in ir_measures' ``Qrel``). ``tiap targets`` writes these *group
qrels* for every store and target, ``subtopic_qrels/<store>.<target>.qrels``, one line
``qid group docid 1`` per (group, member); :func:`group_qrels` reads one, checked against
the folder's manifest, and ``ir_measures.read_trec_qrels`` reads it as well. Every other
tool reads the same file as set-credit qrels. Qrels whose column 2 is ``0`` on every line
(plain set qrels, or a dict of dicts, which has no column 2) are refused: read as one group
per query, group credit would be a different measure without a word.

Group credit, for one query with G non-empty groups: walk the ranking (by decreasing score,
ties by decreasing doc id, as trec_eval) down to rank k; the item at rank i gains
``g_i = 1`` when it belongs to at least one group not yet matched, and then every group it
belongs to is matched. hits = the groups matched.

- ``GroupNDCG@k`` = sum_{i<=k} g_i / log2(i + 1), over the same sum for min(G, k) ones
  (bare ``GroupNDCG``: the whole ranking, the ideal over G ones);
- ``GroupR@k`` = hits / G; ``GroupRall@k`` = [hits = G]; ``GroupSuccess@k`` = [hits > 0];
- ``GroupRR@k`` = 1 / the first rank with g_i = 1 (0 if none within k);
- ``GroupP@k`` = sum_{i<=k} g_i / k (cutoff required).

A query without a group has no qrels line and no value; a query of the qrels that the run
does not rank gets ir_measures' default, 0 (``tiap rescore --missing zero``). The measures
are built on first use (importing this module does not import ir_measures) and registered
in ir_measures' measure registry, so ``ir_measures.parse_measure("GroupNDCG@60")`` works
once one of them has been read.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tiap.errors import require
from tiap.plugins.folder import TargetsFolder

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd
    from ir_measures import Measure

    GroupNDCG: Measure
    GroupR: Measure
    GroupRR: Measure
    GroupP: Measure
    GroupSuccess: Measure
    GroupRall: Measure

__all__ = [
    "GroupNDCG",
    "GroupP",
    "GroupR",
    "GroupRR",
    "GroupRall",
    "GroupSuccess",
    "group_credit",
    "group_qrels",
]

_EXTRA = "plugins"
_NAMES = ("GroupNDCG", "GroupR", "GroupRR", "GroupP", "GroupSuccess", "GroupRall")
_DESCRIPTIONS = {
    "GroupNDCG": "nDCG under group credit (TIAP's scorer): an item gains 1 when it fills a "
                 "group (evidence unit) not yet filled; ideal over min(G, k) ones",
    "GroupR": "recall under group credit: the groups filled in the top k over all groups",
    "GroupRR": "reciprocal rank of the first item that fills a group",
    "GroupP": "precision under group credit: items that fill a group in the top k, over k",
    "GroupSuccess": "1 if the top k fills any group, else 0",
    "GroupRall": "1 if the top k fills every group, else 0",
}
_BUILT: dict[str, Any] = {}


def group_credit(ranking: Sequence[str], groups: Mapping[str, Sequence[str] | set[str]],
                 measure: str, cutoff: int | None = None) -> float:
    """One query's value of ``measure`` (``"GroupNDCG"``, ``"GroupR"``, ...) under group
    credit: ``ranking`` the doc ids in rank order, ``groups`` group -> its members (the
    module's docstring has the formulas). Needs no ir_measures; the measures call it.

    One ranking d3, d0, d1 and two groups, {d0} and {d1, d2}: ranks 2 and 3 each fill a group,
    so nDCG@3 = (1/log2(3) + 1/log2(4)) / (1 + 1/log2(3)) = 1.1309 / 1.6309 = 0.6934:

    >>> groups = {"u1": ["d0"], "u2": ["d1", "d2"]}
    >>> round(group_credit(["d3", "d0", "d1"], groups, "GroupNDCG", 3), 4)
    0.6934
    >>> [group_credit(["d3", "d0", "d1"], groups, m, 2) for m in ("GroupR", "GroupRR", "GroupP")]
    [0.5, 0.5, 0.5]
    >>> group_credit(["d1", "d2"], groups, "GroupRall", 2)  # d2 fills no new group
    0.0
    """
    if measure not in _NAMES:
        raise ValueError(f"unknown group-credit measure {measure!r} (one of {', '.join(_NAMES)})")
    member_of: dict[str, list[str]] = {}
    for g, members in groups.items():
        for d in members:
            member_of.setdefault(d, []).append(g)
    n_groups = sum(1 for members in groups.values() if members)
    if measure == "GroupP" and cutoff is None:
        raise ValueError("GroupP needs a cutoff (GroupP@k)")
    k = len(ranking) if cutoff is None else cutoff
    matched: set[str] = set()
    gain_ranks: list[int] = []
    for i, doc in enumerate(ranking[:k], 1):
        new = [g for g in member_of.get(doc, ()) if g not in matched]
        if new:
            gain_ranks.append(i)
            matched.update(new)
    if measure == "GroupNDCG":
        ideal_n = n_groups if cutoff is None else min(n_groups, cutoff)
        ideal = sum(1.0 / math.log2(i + 1) for i in range(1, ideal_n + 1))
        return sum(1.0 / math.log2(i + 1) for i in gain_ranks) / ideal
    if measure == "GroupR":
        return len(matched) / n_groups
    if measure == "GroupRR":
        return 1.0 / gain_ranks[0] if gain_ranks else 0.0
    if measure == "GroupP":
        return len(gain_ranks) / k
    if measure == "GroupSuccess":
        return 1.0 if matched else 0.0
    return 1.0 if len(matched) == n_groups else 0.0  # GroupRall


def _groups_by_query(qrels: pd.DataFrame, name: str) -> dict[str, dict[str, set[str]]]:
    """query -> group -> members (relevance > 0) of qrels with an ``iteration`` column."""
    if len(qrels) and "iteration" in qrels.columns:
        grouped = (qrels["iteration"].astype(str) != "0").any()
    else:
        grouped = len(qrels) == 0
    if not grouped:
        raise ValueError(
            f"{name} needs group qrels: column 2 (ir_measures' `iteration`) names each "
            "item's group; these qrels have none (0 on every line, as plain set qrels or a "
            "dict of dicts). Read the folder's subtopic_qrels/<store>.<target>.qrels "
            "(tiap.plugins.ir_measures.group_qrels)")
    out: dict[str, dict[str, set[str]]] = {}
    for q, g, d, r in zip(*(qrels[c].tolist() for c in ("query_id", "iteration", "doc_id",
                                                          "relevance")), strict=True):
        if r > 0:
            out.setdefault(str(q), {}).setdefault(str(g), set()).add(str(d))
    return out


def _rankings(run: pd.DataFrame) -> dict[str, list[str]]:
    """query -> doc ids by decreasing score, ties by decreasing doc id (trec_eval's order),
    each doc once (its first place)."""
    scored: dict[str, list[tuple[float, str]]] = {}
    for q, d, s in zip(*(run[c].tolist() for c in ("query_id", "doc_id", "score")), strict=True):
        scored.setdefault(str(q), []).append((float(s), str(d)))
    out: dict[str, list[str]] = {}
    for q, rows in scored.items():
        seen: set[str] = set()
        out[q] = [d for _, d in sorted(rows, reverse=True) if not (d in seen or seen.add(d))]
    return out


_LAST: dict[str, tuple[Any, Any]] = {}


def _cached(kind: str, frame: Any, compute: Any) -> Any:
    """``compute()`` for ``frame``, kept while ``frame`` is the last one of its kind: the
    runtime provider passes one qrels frame and one run frame to every measure of a call."""
    last = _LAST.get(kind)
    if last is None or last[0] is not frame:
        _LAST[kind] = (frame, compute())
    return _LAST[kind][1]


def _build() -> dict[str, Any]:
    """The measures, made once: ir_measures ``Measure`` subclasses that its runtime provider
    computes (it takes any measure with a ``runtime_impl``, the hook of
    ``ir_measures.define``), registered in its measure registry."""
    if _BUILT:
        return _BUILT
    irm = require("ir_measures", _EXTRA)
    base, param_info = irm.measures.Measure, irm.measures.ParamInfo

    def make(name: str) -> Any:
        def runtime_impl(self: Any, qrels: pd.DataFrame, run: pd.DataFrame) -> Iterator[Any]:
            groups = _cached("qrels", qrels, lambda: _groups_by_query(qrels, name))
            cutoff = self.params.get("cutoff")
            for qid, ranking in _cached("run", run, lambda: _rankings(run)).items():
                if qid in groups:
                    yield irm.Metric(qid, self, group_credit(ranking, groups[qid], name, cutoff))

        cls = type(f"_{name}", (base,), {
            "__name__": name, "NAME": name, "__doc__": _DESCRIPTIONS[name],
            "SHORT_DESC": _DESCRIPTIONS[name], "PRETTY_NAME": name,
            "SUPPORTED_PARAMS": {"cutoff": param_info(dtype=int, required=name == "GroupP",
                                                      desc="ranking cutoff threshold")},
            "RUN_INPUTS": ["query_id", "doc_id", "score"],
            "QREL_INPUTS": ["query_id", "doc_id", "relevance", "iteration"],
            "runtime_impl": runtime_impl,
        })
        return cls()

    built = {name: make(name) for name in _NAMES}
    for name, measure in built.items():
        irm.measures.registry.setdefault(name, measure)
    _BUILT.update(built)
    return _BUILT


def __getattr__(name: str) -> Any:
    if name in _NAMES:
        value = _build()[name]
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_NAMES})


def group_qrels(folder: str | Path | TargetsFolder, store: str, target: str) -> list[Any]:
    """The group qrels of ``target`` of ``store`` in a ``tiap targets`` folder, as
    ir_measures ``Qrel`` rows (``iteration``: the group), checked against its manifest.

    >>> import ir_measures
    >>> from tiap.plugins.ir_measures import GroupNDCG
    >>> from tiap.datasets.queryfile import query_from_json
    >>> from tiap.memory.store import Item, Store
    >>> from tiap.targets import write_targets
    >>> store = Store("f1", (Item("t1", "raw", ("d1:1",)), Item("t2", "raw", ("d1:2",)),
    ...                      Item("m1", "fact", ("d1:1", "d1:2"))))
    >>> _ = write_targets("targets", [store],
    ...                   [query_from_json({"query_id": "q1", "evidence": ["d1:1", "d1:2"]})])
    >>> qrels = group_qrels("targets", "f1", "source")
    >>> qrels[0]
    Qrel(query_id='q1', doc_id='m1', relevance=1, iteration='d1:1')

    The fact m1 at rank 1 fills both groups: group credit gives nDCG@2 = 1 / (1 + 1/log2(3))
    = 0.6131 (t1 at rank 2 fills nothing new); set credit counts m1 and t1, 1.0:

    >>> run = [ir_measures.ScoredDoc("q1", "m1", 2.0), ir_measures.ScoredDoc("q1", "t1", 1.0)]
    >>> round(ir_measures.calc_aggregate([GroupNDCG@2], qrels, run)[GroupNDCG@2], 4)
    0.6131
    >>> ir_measures.calc_aggregate([ir_measures.nDCG@2], qrels, run)[ir_measures.nDCG@2]
    1.0
    """
    irm = require("ir_measures", _EXTRA)
    tf = folder if isinstance(folder, TargetsFolder) else TargetsFolder(folder)
    return [irm.Qrel(r.query_id, r.doc_id, r.relevance, r.group)
            for r in tf.group_qrels(store, target)]
