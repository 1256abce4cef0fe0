"""TREC qrels, read and written in one place (docs/rescore.md, docs/exports.md).

A qrels line is ``qid iter docid rel``, whitespace separated; ``iter`` is ignored on
reading; ``rel`` is an integer (``rel > 0``: relevant, with that gain; ``rel <= 0``: judged
non-relevant); an id judged twice for one query is an error.

- :func:`read_qrels` -> :class:`Qrels`: the judgments as arrays (query index, item code,
  relevance), one entry per line. pyarrow reads the file when it is there and the file is
  clean (:func:`tiap.runs.columnar.fast_qrels`); otherwise the plain reader here reads it and
  reports every problem with its file, line and query.
- :func:`qrels_line` and :func:`write_qrels_lines`: the line TIAP writes
  (``tiap targets``, :func:`tiap.targets.folder.write_qrels`) and its atomic writer.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from tiap.errors import Problems, TiapError
from tiap.ids import IdIndex
from tiap.io import atomic_write, numbered_lines, open_text
from tiap.runs.columnar import fast_qrels
from tiap.runs.formats import parse_int

__all__ = [
    "QRELS_LAYOUT",
    "Qrels",
    "qrels_line",
    "read_qrels",
    "write_qrels_lines",
]

#: The columns of a TREC qrels line.
QRELS_LAYOUT = "qid iter docid rel"


@dataclass(frozen=True, eq=False)
class Qrels:
    """One TREC qrels file as arrays, one entry per judgment line (file order).

    ``query_ids`` holds every judged query (first appearance); judgment ``j`` is item
    ``items[item[j]]`` for query ``query_ids[query[j]]`` with relevance ``relevance[j]``.
    Relevant means ``relevance > 0``; a query judged only with ``relevance <= 0`` has no
    relevant item.

    >>> _ = Path("raw.qrels").write_text("q1 0 d1 1\\nq1 0 d2 2\\nq2 0 d3 0\\n")
    >>> qrels = read_qrels("raw.qrels")
    >>> qrels.n_judgments, qrels.graded
    (3, True)
    >>> qrels.as_dict()
    {'q1': {'d1': 1, 'd2': 2}, 'q2': {'d3': 0}}
    """

    query_ids: IdIndex
    items: IdIndex
    query: NDArray[np.int32]
    item: NDArray[np.int32]
    relevance: NDArray[np.signedinteger]  # int8, int16 or int32: the smallest that fits
    source: Path | None = None

    @property
    def n_judgments(self) -> int:
        return int(self.query.size)

    @property
    def graded(self) -> bool:
        """Whether some relevance is above 1 (then nDCG uses the relevance as gain)."""
        return bool(self.relevance.size and self.relevance.max() > 1)

    def as_dict(self) -> dict[str, dict[str, int]]:
        """``{query_id: {item_id: relevance}}`` (pytrec_eval's qrels form), every line."""
        ids, qids = self.items.to_list(), self.query_ids.to_list()
        out: dict[str, dict[str, int]] = {q: {} for q in qids}
        for q, i, r in zip(self.query.tolist(), self.item.tolist(), self.relevance.tolist(),
                           strict=True):
            out[qids[q]][ids[i]] = r
        return out


def _narrow(relevance: NDArray[np.int64]) -> NDArray[np.signedinteger]:
    """Relevance in the smallest signed integer type that holds it (most qrels: int8)."""
    low, high = (int(relevance.min()), int(relevance.max())) if relevance.size else (0, 0)
    for dtype in (np.int8, np.int16, np.int32):
        info = np.iinfo(dtype)
        if info.min <= low and high <= info.max:
            return relevance.astype(dtype)
    return relevance


def _python_qrels(path: Path) -> Qrels:
    """The reference qrels reader: every problem collected, with file, line and query."""
    probs = Problems(path)
    query_codes: dict[str, int] = {}
    item_codes: dict[str, int] = {}
    seen: dict[tuple[int, int], int] = {}
    query: list[int] = []
    item: list[int] = []
    relevance: list[int] = []
    with open_text(path) as fh:
        for lineno, line in numbered_lines(fh):
            toks = line.split()
            if not toks:
                continue
            if len(toks) != 4:
                probs.add(f"expected 4 whitespace-separated columns ({QRELS_LAYOUT}), "
                          f"found {len(toks)}", lineno, toks[0])
                continue
            qid, _iter, doc, rel_text = toks
            rel = parse_int(rel_text)
            if rel is None:
                probs.add(f"relevance {rel_text!r} is not an integer", lineno, qid)
                continue
            if not -(2**31) <= rel < 2**31:
                probs.add(f"relevance {rel_text!r} is out of range (32-bit integers)", lineno,
                          qid)
                continue
            q = query_codes.setdefault(qid, len(query_codes))
            d = item_codes.setdefault(doc, len(item_codes))
            first = seen.setdefault((q, d), lineno)
            if first != lineno:
                probs.add(f"item {doc!r} is judged twice for this query (first on line {first})",
                          lineno, qid)
                continue
            query.append(q)
            item.append(d)
            relevance.append(rel)
    probs.raise_if_any()
    if not query:
        raise TiapError("empty qrels file: it holds no judgments", file=path)
    return Qrels(query_ids=IdIndex(list(query_codes)), items=IdIndex(list(item_codes)),
                 query=np.asarray(query, np.int32), item=np.asarray(item, np.int32),
                 relevance=_narrow(np.asarray(relevance, np.int64)), source=path)


def read_qrels(path: str | Path) -> Qrels:
    """Read a TREC qrels file (``qid iter docid rel``, whitespace separated; gzip ok).

    Raises:
        TiapError: a missing or empty file, text that is not UTF-8, or bad lines, collected
            over the whole file, each naming file, line and query: a wrong column count, a
            relevance that is not an integer, an item judged twice for one query.

    >>> _ = Path("raw.qrels").write_text("q1 0 d1 1\\nq1 0 d2 1\\nq2 0 d1 1\\n")
    >>> read_qrels("raw.qrels").as_dict()
    {'q1': {'d1': 1, 'd2': 1}, 'q2': {'d1': 1}}
    >>> _ = Path("bad.qrels").write_text("q1 0 d1 yes\\nq1 0 d1\\n")
    >>> read_qrels("bad.qrels")
    Traceback (most recent call last):
    ...
    tiap.errors.TiapError: bad.qrels:1, query q1: relevance 'yes' is not an integer
    bad.qrels:2, query q1: expected 4 whitespace-separated columns (qid iter docid rel), found 3
    """
    path = Path(path)
    fast = fast_qrels(path)
    if fast is None:
        return _python_qrels(path)
    q_ids, d_ids, query, item, relevance = fast
    return Qrels(query_ids=IdIndex(q_ids), items=IdIndex(d_ids), query=query,
                 item=item, relevance=_narrow(relevance), source=path)


def qrels_line(query_id: str, iteration: str, item: str, relevance: int) -> str:
    """One TREC qrels line, newline-terminated: ``qid iter docid rel``, single spaces."""
    return f"{query_id} {iteration} {item} {relevance}\n"


def write_qrels_lines(path: str | Path, lines: Iterable[str]) -> int:
    """Atomically write qrels lines (:func:`qrels_line`); returns the number written. On
    any failure, the file is left as it was."""
    n = 0
    with atomic_write(path) as fh:
        for line in lines:
            fh.write(line)
            n += 1
    return n
