"""Encode Python rankings and groups of string ids into the kernels' integer arrays.

Ids are coded once per call by one :class:`Vocabulary` shared by the rankings and all the
targets, so that one ranking matrix can be scored against several targets::

    enc = encode(rankings, raw_groups, source_groups)
    index = RankingIndex(enc.rankings)
    raw = index.score(enc.targets[0], "nDCG@10")

``rankings[q]`` is the ranked list of ids of query ``q`` (best first); ``groups[q]`` is the
list of groups of query ``q``, each group a collection of ids (a set, list or tuple) or a
mapping ``{id: relevance}`` for graded set credit. Ids that occur only in targets, or only
in rankings, are fine: they are simply never matched.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from tiap.errors import TiapError
from tiap.ids import MAX_CODE, Vocabulary
from tiap.scoring.kernels import Targets, repeated_rows

__all__ = ["Encoded", "Vocabulary", "encode", "encode_rankings", "encode_targets"]

Group = Iterable[Hashable] | Mapping[Hashable, float]
Duplicates = Literal["error", "first"]


def _error(message: str, index: int, query_ids: Sequence[str] | None) -> TiapError:
    """A :class:`TiapError` naming query ``index`` by its id when known."""
    if query_ids is not None and index < len(query_ids):
        return TiapError(message, query_id=str(query_ids[index]))
    return TiapError(message, record=f"query #{index}")


def _check_size(vocabulary: Vocabulary) -> None:
    if len(vocabulary) > MAX_CODE + 1:
        raise TiapError(f"too many distinct ids ({len(vocabulary)}); at most {MAX_CODE + 1}")


def encode_rankings(
    rankings: Sequence[Iterable[Hashable] | None],
    vocabulary: Vocabulary,
    *,
    depth: int | None = None,
    duplicates: Duplicates = "error",
    query_ids: Sequence[str] | None = None,
) -> NDArray[np.int32]:
    """Code ranked id lists into a ``[Q, depth]`` int32 matrix padded with ``-1``.

    ``depth`` defaults to the longest list; longer lists are cut to their top ``depth``.
    A list that repeats an id is an error (``duplicates="error"``, trec_eval's rule) or keeps
    the id's first, best-ranked occurrence (``duplicates="first"``). ``None`` is an empty list.
    """
    if duplicates not in ("error", "first"):
        raise TiapError(f"duplicates must be 'error' or 'first', got {duplicates!r}")
    if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int) or depth < 0):
        raise TiapError(f"depth must be a non-negative integer, got {depth!r}")
    position = -1

    def rows() -> Iterator[Iterable[Hashable]]:
        nonlocal position
        for position, row in enumerate(rankings):  # noqa: B007 - read after an error
            if row is None:
                yield ()
            elif isinstance(row, (str, bytes)):
                raise _error("a ranking must be a list of ids, not a string", position,
                             query_ids)
            else:
                yield dict.fromkeys(row) if duplicates == "first" else row

    try:
        matrix = vocabulary.code_rows(rows())
    except TypeError as exc:
        raise _error(f"unusable id in ranking: {exc}", position, query_ids) from None
    except ValueError as exc:
        raise TiapError(str(exc)) from None
    width = matrix.shape[1]
    if duplicates == "error" and width > 1:
        bad = repeated_rows(matrix)
        if bad.size:
            raise _error(
                f"the ranking repeats an id ({bad.size} ranking(s) affected); deduplicate it "
                "or pass duplicates='first'",
                int(bad[0]),
                query_ids,
            )
    if depth is not None:
        if depth > width:
            matrix = np.pad(matrix, ((0, 0), (0, depth - width)), constant_values=-1)
        matrix = np.ascontiguousarray(matrix[:, :depth])
    return matrix


def encode_targets(
    groups: Sequence[Iterable[Group] | None],
    vocabulary: Vocabulary,
    *,
    query_ids: Sequence[str] | None = None,
) -> Targets:
    """Code per-query groups of ids into :class:`Targets`.

    ``groups[q]`` lists the groups of query ``q``; a group is a collection of ids (repeats
    inside a group are dropped) or a mapping ``{id: relevance}`` (graded: relevance values
    must be positive; plain groups get relevance 1). Empty groups are kept but do not count
    in ``G``; ``None`` or ``[]`` makes a zero-target query.
    """
    codes = vocabulary._codes
    flat: list[int] = []
    rel: list[float] = []
    graded = False
    group_sizes: list[int] = []
    query_sizes: list[int] = []
    for q, query_groups in enumerate(groups):
        if query_groups is None:
            query_sizes.append(0)
            continue
        if isinstance(query_groups, (str, bytes, Mapping)):
            raise _error(
                "the targets of a query must be a list of groups (collections of ids)", q, query_ids
            )
        n = 0
        for group in query_groups:
            if isinstance(group, (str, bytes)):
                raise _error(
                    f"a group must be a collection of ids, not the string {group!r}", q, query_ids
                )
            try:
                if isinstance(group, Mapping):
                    graded = True
                    members = [
                        (codes.setdefault(k, len(codes)), float(v)) for k, v in group.items()
                    ]
                    flat.extend(c for c, _ in members)
                    rel.extend(v for _, v in members)
                    size = len(members)
                else:
                    unique = dict.fromkeys(group)
                    flat.extend([codes.setdefault(x, len(codes)) for x in unique])
                    rel.extend([1.0] * len(unique))
                    size = len(unique)
            except (TypeError, ValueError) as exc:
                raise _error(f"unusable group: {exc}", q, query_ids) from None
            group_sizes.append(size)
            n += 1
        query_sizes.append(n)
    _check_size(vocabulary)
    relevance = np.asarray(rel, dtype=np.float64) if graded else None
    if (
        relevance is not None
        and relevance.size
        and not (np.all(np.isfinite(relevance)) and relevance.min() > 0)
    ):
        bad_member = int(np.flatnonzero(~(np.isfinite(relevance) & (relevance > 0)))[0])
        group_of = int(np.searchsorted(np.cumsum(group_sizes), bad_member, side="right"))
        query_of = int(np.searchsorted(np.cumsum(query_sizes), group_of, side="right"))
        raise _error(
            "relevance values must be finite and positive (leave non-relevant ids out)",
            query_of,
            query_ids,
        )
    return Targets(
        group_ptr=np.concatenate([[0], np.cumsum(query_sizes, dtype=np.int64)]),
        member_ptr=np.concatenate([[0], np.cumsum(group_sizes, dtype=np.int64)]),
        items=np.asarray(flat, dtype=np.int64),
        relevance=relevance,
    )


@dataclass(frozen=True, eq=False)
class Encoded:
    """A coded ranking matrix, its targets (in the order given) and the shared vocabulary.

    >>> enc = encode([["m1", "t1"], ["t2"]], [[{"t1"}], [{"t2"}]])
    >>> enc.rankings.tolist()  # m1 is code 0, t1 code 1, t2 code 2; -1 pads
    [[0, 1], [2, -1]]
    >>> len(enc.targets), enc.targets[0].items.tolist(), len(enc.vocabulary)
    (1, [1, 2], 3)
    """

    rankings: NDArray[np.int32]
    targets: tuple[Targets, ...]
    vocabulary: Vocabulary


def encode(
    rankings: Sequence[Iterable[Hashable] | None],
    *targets: Sequence[Iterable[Group] | None],
    depth: int | None = None,
    duplicates: Duplicates = "error",
    query_ids: Sequence[str] | None = None,
) -> Encoded:
    """Code ``rankings`` and any number of per-query target groups with one vocabulary.

    Every target must list the same number of queries as ``rankings`` (aligned by index).
    ``query_ids`` (optional) only serves to name queries in error messages.

    Two queries. q1 ranks a fact ``m1`` derived from both its evidence turns, then the
    turns ``t1`` and ``t2``; q2 ranks its one turn ``t3``. Under Raw the groups are the
    turns; under Canonical both of q1's groups are ``{m1}`` and q2 has none:

    >>> from tiap.scoring import score
    >>> enc = encode([["m1", "t1", "t2"], ["t3"]],
    ...              [[{"t1"}, {"t2"}], [{"t3"}]],  # raw
    ...              [[{"m1"}, {"m1"}], []])        # canonical
    >>> raw, canonical = enc.targets
    >>> {str(m): v.round(4).tolist() for m, v in score(enc.rankings, raw, "nDCG@3").items()}
    {'nDCG@3': [0.6934, 1.0]}
    >>> {str(m): v.round(4).tolist() for m, v in score(enc.rankings, canonical, "nDCG@3").items()}
    {'nDCG@3': [0.6131, nan]}

    By hand, for q1 with ``disc(i) = 1 / log2(i + 1)``: under Raw, ranks 2 and 3 earn
    credit, ``(0.6309 + 0.5) / (1 + 0.6309) = 0.6934``; under Canonical, rank 1 fills both
    groups, ``1 / (1 + 0.6309) = 0.6131``. q2 has no Canonical group: NaN, not 0.
    """
    vocabulary = Vocabulary()
    matrix = encode_rankings(
        rankings, vocabulary, depth=depth, duplicates=duplicates, query_ids=query_ids
    )
    coded = []
    for t, groups in enumerate(targets):
        if len(groups) != matrix.shape[0]:
            raise TiapError(
                f"target #{t} lists {len(groups)} queries but there are {matrix.shape[0]} rankings"
            )
        coded.append(encode_targets(groups, vocabulary, query_ids=query_ids))
    return Encoded(rankings=matrix, targets=tuple(coded), vocabulary=vocabulary)
