"""The cost of what a system retrieves: context tokens of its top k, measures at a token
budget, and latency where a trace records it.

**Tokens.** An item's cost is the number of tokens of its text under a *named* tokenizer:
``cl100k_base`` (GPT-4's; the default) or ``o200k_base`` (GPT-4o's), the byte-pair encodings
OpenAI publishes, read from the ``bpe-openai`` package, which ships their rank files and needs
no network (``pip install -e '.[cost]'``; the tests check its counts against tiktoken on the
same rank file). The context a system hands a reader at cutoff k is the sum over its top k
items.

**Token budgets.** ``nDCG@tok2000`` is nDCG at the rank where the ranking stops fitting
2,000 tokens: items are taken in rank order while their running total stays within the
budget, and the first item that would pass it ends the context (nothing after it is read,
as a reader filling its prompt in rank order would do). The measure is then computed at
that many ranks, numerator and ideal alike (``R``, ``RR``, ``Success``, ``Rall`` the same
way). A ranked item without text has no known size: a budget measure over it is an error,
never a guess.

**Latency.** A run whose rankings carry ``latency_ms`` (the time the system took to answer
the query, as the Mem0 harness records around each ``search``) gets its mean, median and
95th percentile in ``cost.csv``; a run that records none has no latency, not zero.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import sys
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from tiap.errors import TiapError

__all__ = ["DEFAULT_TOKENIZER", "TOKENIZERS", "budget_cutoffs", "cost_rows", "get_tokenizer",
           "token_counts"]

#: The tokenizers TIAP can name (``--tokenizer``), all offline.
TOKENIZERS = ("cl100k_base", "o200k_base")
DEFAULT_TOKENIZER = "cl100k_base"

COST_COLUMNS = ("system", "cutoff", "tokenizer", "queries", "mean_tokens", "median_tokens",
                "max_tokens", "latency_queries", "mean_latency_ms", "median_latency_ms",
                "p95_latency_ms")


class Tokenizer(Protocol):
    name: str
    version: str

    def count(self, text: str) -> int: ...


#: bpe-openai's encodings' token limit (its ``chunk_limit`` for cl100k_base and o200k_base)
_CHUNK_LIMIT = 200_000


def _bpe_backend(name: str) -> Any:
    """bpe-openai's Rust tokenizer of encoding ``name``, loaded without the package's
    ``__init__``: importing ``bpe_openai`` decodes the rank files of three encodings into
    Python dicts (about 2 s) that counting never reads, since the Rust backend carries its
    own. ``None`` where the package's layout is not the one this expects."""
    spec = importlib.util.find_spec("bpe_openai")
    if spec is None or not spec.submodule_search_locations:
        return None
    if "bpe_openai._bindings" in sys.modules:
        mod = sys.modules["bpe_openai._bindings"]
    else:
        found = sorted(p for d in spec.submodule_search_locations
                       for p in Path(d).glob("_bindings*") if p.suffix in (".so", ".pyd"))
        if not found:
            return None
        got = importlib.util.spec_from_file_location("bpe_openai._bindings", found[0])
        if got is None or got.loader is None:
            return None
        mod = importlib.util.module_from_spec(got)
        got.loader.exec_module(mod)
    make = getattr(mod, "tokenizer_for_encoding", None)
    return None if make is None else make(name)


class _Bpe:
    def __init__(self, name: str) -> None:
        self.name = name
        try:
            self._backend = _bpe_backend(name)
        except Exception:  # noqa: BLE001 (another layout: the package's own API below)
            self._backend = None
        if self._backend is None:
            import bpe_openai

            self._enc: Any = bpe_openai.get_encoding(name)
        self.version = f"bpe-openai {importlib.metadata.version('bpe-openai')}"
        self._seen: dict[str, int] = {}  # stores share texts (the raw turns): count once

    def count(self, text: str) -> int:
        n = self._seen.get(text)
        if n is None:  # ordinary: text that looks like a special token is text
            if self._backend is None:
                n = len(self._enc.encode_ordinary(text))
            else:  # what encode_ordinary does: lone surrogates replaced, the limit checked
                try:
                    text.encode("utf-8")
                    clean = text
                except UnicodeEncodeError:
                    clean = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
                n = len(self._backend.encode(clean)) if clean else 0
                if n > _CHUNK_LIMIT:
                    raise TiapError(f"a text of {n:,} tokens is over the tokenizer's limit "
                                    f"of {_CHUNK_LIMIT:,}", code="invalid-value")
            self._seen[text] = n
        return n


@lru_cache(maxsize=4)
def get_tokenizer(name: str = DEFAULT_TOKENIZER) -> Tokenizer:
    """The tokenizer ``name`` (:data:`TOKENIZERS`)."""
    if name not in TOKENIZERS:
        raise TiapError(f"unknown tokenizer {name!r}; known: {', '.join(TOKENIZERS)}",
                        code="invalid-value")
    if importlib.util.find_spec("bpe_openai") is None:
        raise TiapError("token counts need the cost extra: pip install -e '.[cost]' "
                        "(bpe-openai, which ships the tokenizers' files)",
                        code="missing-extra")
    return _Bpe(name)


def token_counts(texts: Mapping[str, str | None], ids: Iterable[str],
                 tokenizer: Tokenizer) -> dict[str, int | None]:
    """Tokens of each id's text (``None``: the item has no text; unknown ids likewise)."""
    out: dict[str, int | None] = dict.fromkeys(ids)  # each id once, first seen first
    for i in out:
        t = texts.get(i)
        if t is not None:
            out[i] = tokenizer.count(t)
    return out


def budget_cutoffs(rankings: Sequence[Sequence[str]], tokens: Mapping[str, int | None],
                   budget: int, *, system: str, query_ids: Sequence[str],
                   ) -> NDArray[np.int64]:
    """Per ranking, how many leading items fit ``budget`` tokens (module docstring); an item
    of unknown size that would be read is an error naming the system and query."""
    out = np.zeros(len(rankings), np.int64)
    for q, ranking in enumerate(rankings):
        used = 0
        n = 0
        for item in ranking:
            t = tokens.get(item)
            if t is None:
                raise TiapError(f"{system}: item {item!r} has no text, so its tokens are not "
                                f"known: a token budget cannot be applied (use rank cutoffs, "
                                "or a store whose items carry their text)",
                                query_id=query_ids[q], code="input")
            if used + t > budget:
                break
            used += t
            n += 1
        out[q] = n
    return out


def cost_rows(system: str, rankings: Sequence[Sequence[str]], tokens: Mapping[str, int | None],
              cutoffs: Iterable[int | None], latency_ms: Sequence[float | None],
              tokenizer: str) -> list[dict[str, Any]]:
    """``cost.csv`` rows of one system: context tokens of the top k per cutoff (``None``:
    the whole ranking; queries whose top k holds an item of unknown size are left out and
    the count says so) and the latency its rankings record."""
    lat = np.array([x for x in latency_ms if x is not None], np.float64)
    # every ranking's items end to end: running token totals and running counts of items of
    # unknown size, read at each ranking's start and at its k-th item
    lengths = np.fromiter(map(len, rankings), np.int64, len(rankings))
    starts = np.zeros(len(rankings), np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    sizes = [tokens.get(i) for r in rankings for i in r]
    unknown = np.zeros(len(sizes) + 1, np.int64)
    np.cumsum(np.fromiter((x is None for x in sizes), bool, len(sizes)), out=unknown[1:])
    totals = np.zeros(len(sizes) + 1, np.int64)
    np.cumsum(np.fromiter((0 if x is None else x for x in sizes), np.int64, len(sizes)),
              out=totals[1:])
    rows = []
    for k in cutoffs:
        ends = starts + (lengths if k is None else np.minimum(lengths, k))
        # a ranking whose top k holds an item of unknown size is left out
        known = unknown[ends] == unknown[starts]
        arr = (totals[ends] - totals[starts])[known].astype(np.float64)
        rows.append({
            "system": system, "cutoff": "all" if k is None else k, "tokenizer": tokenizer,
            "queries": int(arr.size),
            "mean_tokens": float(arr.mean()) if arr.size else None,
            "median_tokens": float(np.median(arr)) if arr.size else None,
            "max_tokens": int(arr.max()) if arr.size else None,
            "latency_queries": int(lat.size),
            "mean_latency_ms": float(lat.mean()) if lat.size else None,
            "median_latency_ms": float(np.median(lat)) if lat.size else None,
            "p95_latency_ms": float(np.percentile(lat, 95)) if lat.size else None,
        })
    return rows
