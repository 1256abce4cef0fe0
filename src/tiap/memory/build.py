"""Build a memory store: one raw item per turn plus a parser's derived items, with lineage.

:func:`build_store` writes into ``out``:

- ``items.jsonl`` (:mod:`tiap.memory.store`), collection by collection in the dataset's
  order; within a collection, first the raw items in turn order, then the derived items in
  the parser's order (turn order, then fact order)::

      {"item_id":"conv-26:D1:3","kind":"raw","sources":["conv-26:D1:3"],"text":"I went ...",
       "collection":"conv-26","speaker":"Caroline","session_id":"session_1",
       "date":"1:56 pm on 8 May, 2023"}
      {"item_id":"conv-26:D1:3#f1","kind":"fact","sources":["conv-26:D1:3"],
       "text":"On 8 May 2023, Caroline went to ...","collection":"conv-26"}

- ``manifest.json``: schema version, the dataset (id and every file with its sha256), the
  parser's spec (name and every argument), the seed, counts (collections, turns, items per
  kind, how many derived items reach each turn), the parser's own counters, the sha256 of
  ``items.jsonl`` and package versions.

**Item ids.** A raw item's id is its turn's unit id; a fact's id is ``<unit_id>#f<j>``
(``j`` = 1, 2, ... in the order the parser gives the turn's facts); the ``native`` parser
keeps the dataset's ids (``conv-26:session_1:observation:1``). Ids are checked to be free of
whitespace and unique within their collection (every dataset's unit ids start with the
collection's id, so they are unique in the store); derived items must name turns of their
own collection as sources.

**One build per folder.** Everything is written into a temporary folder beside ``out`` and
swapped in whole only when complete (:func:`tiap.io.output_folder`): a failure or an
interruption leaves ``out`` as it was, and a rebuild leaves no file of the earlier build. A
folder that is not an earlier ``build-store`` output is refused before any work
(``error[stale-output]``) unless ``force``. A parser cache kept inside ``out`` (``--cache
OUT/parser-cache.sqlite``, with its ``-wal``/``-shm`` files) is used in place and kept.
Collections are streamed one at a time, so memory stays bounded by the largest collection
(LongMemEval-S's 245k turns never sit in memory together).

**Workers.** Parsers marked ``parallel`` (the heuristic parser) can run on several
collections at once in worker processes (``workers``), or on the engine in use
(:mod:`tiap.engine`: one task per collection); the output is byte-identical to a
single-process build because collections are written back in the dataset's order.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import itertools
import json
import multiprocessing
import os
import re
import time
from collections import Counter, deque
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tiap.datasets import DataSource, load
from tiap.datasets.base import Bundle, Dataset, SessionSlice
from tiap.datasets.files import FOLDERS, manifest
from tiap.datasets.records import Turn
from tiap.errors import Problem, TiapError
from tiap.io import check_output_folder, gc_paused, json_lines, output_folder, sha256_file
from tiap.memory.parsers import Parser, make_parser, parser_factory
from tiap.memory.store import RAW_KIND, Item, Store, StoreRows, check_store_name
from tiap.provenance import Manifest

__all__ = ["DEFAULT_SEED", "ITEMS_FILE", "MANIFEST_FILE", "PARALLEL_FROM",
           "BuildResult", "build_store", "raw_item"]

DEFAULT_SEED = 1337
ITEMS_FILE = "items.jsonl"
MANIFEST_FILE = "manifest.json"
MAX_PROBLEMS = 20
PARALLEL_FROM = 50  # collections
_SPACE = re.compile(r"\s")

ID_SCHEME = {
    "raw": "<unit_id> (the turn's source unit id)",
    "fact": "<unit_id>#f<j>, j = 1, 2, ... in the parser's order for that turn",
    "native": "the dataset's own ids (<collection>:<session>:<kind>[:<j>])",
}

ProgressFn = Callable[[Iterable[Any], str, "int | None"], Iterable[Any]]


@dataclass(frozen=True)
class BuildResult:
    """What :func:`build_store` wrote: the folder, the counts and the manifest as written.

    >>> from tiap.datasets import Bundle, Collection, InlineDataset, Session, Turn
    >>> turn = Turn("c1:D1:1", "c1", "s1", 1, "Ana", "I adopted a cat named Miso.")
    >>> ds = InlineDataset([Bundle(Collection("c1", 1, 1), (Session("c1", "s1", 1, None),),
    ...                            (turn,), ())])
    >>> result = build_store(ds, "heuristic", "stores/h5")
    >>> result.out, result.counts["items"], result.counts["by_kind"]
    (PosixPath('stores/h5'), 2, {'raw': 1, 'fact': 1})
    >>> result.manifest["store"], result.manifest["parser"]
    ('h5', {'name': 'heuristic', 'args': {'max_facts': 5}})
    >>> result.store is None  # build_store(..., in_memory=True) holds it
    True
    """

    out: Path
    counts: dict[str, Any]
    manifest: dict[str, Any]
    #: the store as :func:`~tiap.memory.store.read_store` reads ``items.jsonl`` back, built
    #: from the rows as they were written (``build_store(..., in_memory=True)``), else None
    store: Store | None = None


@dataclass
class _Chunk:
    """One collection's serialised rows (UTF-8, encoded where they were built, so a worker
    sends bytes back) and counts (built in the main or a worker process)."""

    collection: str
    data: bytes
    turns: int
    kinds: Counter[str] = field(default_factory=Counter)
    per_turn: Counter[int] = field(default_factory=Counter)  # derived items reaching a turn
    problems: list[Problem] = field(default_factory=list)
    memo: dict[Hashable, Any] = field(default_factory=dict)  # the worker's work to share


def raw_item(turn: Turn, date: str | None = None) -> Item:
    """The raw item of one turn: id and only source = the unit id; speaker, session, date kept.

    Its text is stored as the paper's memory service stores a raw turn,
    ``Speaker (session date): text``, so that a question naming a speaker can match the raw
    turn as it can match a derived fact (which names the speaker too).
    """
    meta: list[tuple[str, Any]] = [("speaker", turn.speaker), ("session_id", turn.session_id)]
    if date is not None:
        meta.append(("date", date))
    head = f"{turn.speaker} ({date})" if date else turn.speaker
    return Item(turn.unit_id, RAW_KIND, (turn.unit_id,), text=f"{head}: {turn.text}",
                collection=turn.collection_id, meta=tuple(meta))


def _dumps(row: dict[str, Any]) -> str:
    return json.dumps(row, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


# The row of an item written directly (the bytes of :func:`_dumps` of ``item.to_json``) when
# every field is a plain string: a million rows skip building a dict and walking it.
_quote = json.encoder.encode_basestring  # what json.dumps(ensure_ascii=False) writes a str as
_ROW_KEYS = frozenset({"item_id", "store", "kind", "sources", "parents", "serving", "text",
                       "collection", "uncertain", "placeholder", "inferred"})


def _plain_meta(meta: Sequence[tuple[str, Any]]) -> bool:
    keys = [k for k, _ in meta]
    return (all(type(k) is str and type(v) is str for k, v in meta)
            and _ROW_KEYS.isdisjoint(keys) and len(set(keys)) == len(keys))


def _row(item_id: str, store: str, kind: str, sources: Sequence[str], text: str,
         collection: str, meta: Sequence[tuple[str, str]]) -> str:
    parts = ['{"item_id":', _quote(item_id), ',"store":', _quote(store), ',"kind":',
             _quote(kind), ',"sources":[', ",".join(map(_quote, sources)), '],"text":',
             _quote(text), ',"collection":', _quote(collection)]
    for k, v in meta:
        parts += [",", _quote(k), ":", _quote(v)]
    parts.append("}")
    return "".join(parts)


def _item_row(item: Item, store: str) -> str:
    """``_dumps(item.to_json(store))``, written directly when the item has only plain
    string fields (no parents, serving flag, partial lineage or non-string metadata)."""
    st = store or item.store
    if (type(st) is str and st and type(item.item_id) is str and type(item.kind) is str
            and type(item.text) is str and type(item.collection) is str and not item.parents
            and item.serving is None and item.uncertain is None and item.placeholder is None
            and item.inferred is None and all(type(x) is str for x in item.sources)
            and (not item.meta or _plain_meta(item.meta))):
        return _row(item.item_id, st, item.kind, item.sources, item.text, item.collection,
                    item.meta)
    return _dumps(item.to_json(store))


def _collection_chunk(parser: Parser, bundle: Bundle, store: str) -> _Chunk:
    cid = bundle.collection.collection_id
    chunk = _Chunk(cid, b"", len(bundle.turns))
    dates = {s.session_id: s.date for s in bundle.sessions}
    seen: set[str] = set()
    lines: list[str] = []

    def check(item_id: str) -> None:
        if not item_id or _SPACE.search(item_id):
            chunk.problems.append(Problem("item id is empty or contains whitespace",
                                          record=repr(item_id)))
        elif item_id in seen:
            chunk.problems.append(Problem(f"duplicate item id in collection {cid}", record=item_id))
        seen.add(item_id)

    plain = type(store) is str and bool(store)
    for t in bundle.turns:
        date = dates.get(t.session_id)
        check(t.unit_id)
        if (plain and type(t.unit_id) is str and type(t.speaker) is str
                and type(t.text) is str and type(t.collection_id) is str
                and type(t.session_id) is str and (date is None or type(date) is str)):
            # raw_item(t, date), written directly (the same bytes)
            head = f"{t.speaker} ({date})" if date else t.speaker
            meta = [("speaker", t.speaker), ("session_id", t.session_id)]
            if date is not None:
                meta.append(("date", date))
            lines.append(_row(t.unit_id, store, RAW_KIND, (t.unit_id,), f"{head}: {t.text}",
                              t.collection_id, meta))
        else:
            lines.append(_dumps(raw_item(t, date).to_json(store)))
    chunk.kinds[RAW_KIND] = len(bundle.turns)
    units = seen.copy()
    reach: Counter[str] = Counter()
    for item in parser.derive(bundle):
        check(item.item_id)
        if item.kind == RAW_KIND:
            chunk.problems.append(Problem("a parser may not write raw items", record=item.item_id))
        stray = [s for s in item.sources if s not in units]
        if stray:
            chunk.problems.append(Problem(
                f"sources name turns that are not in collection {cid}: {', '.join(stray[:3])}",
                record=item.item_id))
        for s in set(item.sources):
            reach[s] += 1
        chunk.kinds[item.kind] += 1
        lines.append(_item_row(item, store))
    chunk.per_turn = Counter(reach.get(t.unit_id, 0) for t in bundle.turns)
    chunk.data = ("\n".join(lines) + "\n").encode("utf-8") if lines else b""
    return chunk


# -- worker processes ----------------------------------------------------------------------

_WORKER_PARSER: Parser | None = None
_WORKER_STORE = ""


def _init_worker(name: str, args: dict[str, Any], store: str) -> None:
    global _WORKER_PARSER, _WORKER_STORE
    _WORKER_PARSER = make_parser(name, **args)
    _WORKER_STORE = store


def _work(bundle: Bundle, given: dict[Hashable, Any] | None) -> _Chunk:
    """One collection's chunk; ``given``: work other workers did (:meth:`Parser.memo`)."""
    assert _WORKER_PARSER is not None
    if given is not None:
        _WORKER_PARSER.memo(given)
    chunk = _collection_chunk(_WORKER_PARSER, bundle, _WORKER_STORE)
    if given is not None:
        chunk.memo = _WORKER_PARSER.memo()
    return chunk


def _rebuildable(parser: Parser) -> bool:
    """Whether worker processes can rebuild this very parser from its spec."""
    try:
        return type(make_parser(parser.spec.name, **dict(parser.spec.args))) is type(parser)
    except TiapError:
        return False


#: Collections sent to an engine at once (their chunks are held until the slice is back).
ENGINE_SLICE = 32


def _engine_chunk(job: tuple[str, dict[str, Any], str, Bundle]) -> _Chunk:
    """One collection's chunk on an engine's worker (the parser rebuilt from its spec)."""
    name, args, store, bundle = job
    return _collection_chunk(make_parser(name, **args), bundle, store)


def _chunks(parser: Parser, bundles: Iterator[Bundle], workers: int,
            store: str) -> Iterator[_Chunk]:
    from tiap.engine import current_engine

    engine = current_engine()
    if engine.name != "local" and parser.parallel and _rebuildable(parser):
        # one task per collection, anywhere (tiap.engine); chunks come back in order, a
        # slice of collections at a time, so memory stays bounded as in a local build
        spec = (parser.spec.name, dict(parser.spec.args), store)
        rest = iter(bundles)
        while part := list(itertools.islice(rest, ENGINE_SLICE)):
            yield from engine.map(_engine_chunk, [(*spec, b) for b in part])
        return
    if workers <= 1 or not parser.parallel or not _rebuildable(parser):
        for b in bundles:
            yield _collection_chunk(parser, b, store)
        return
    ctx = multiprocessing.get_context("spawn")  # no fork: the parent may run threads
    with ProcessPoolExecutor(workers, mp_context=ctx, initializer=_init_worker,
                             initargs=(parser.spec.name, dict(parser.spec.args), store)
                             ) as pool:
        window: deque[Future[_Chunk]] = deque()
        known: dict[Hashable, Any] = {}  # the work workers did, by memo key (Parser.memo_keys)

        def done(f: Future[_Chunk]) -> _Chunk:
            chunk = f.result()
            known.update(chunk.memo)
            chunk.memo = {}
            return chunk

        try:
            for b in bundles:
                keys = parser.memo_keys(b)
                given = None if keys is None else {k: known[k] for k in keys if k in known}
                window.append(pool.submit(_work, b, given))
                if len(window) >= 2 * workers:
                    yield done(window.popleft())
            while window:
                yield done(window.popleft())
        except BrokenProcessPool:
            raise TiapError(
                "a worker process of the build stopped or could not start. A script "
                "that calls build_store with workers must run it under `if __name__ == "
                "'__main__':` (each worker imports the script again); else the worker ran "
                "out of memory or was killed: rerun with fewer workers (workers=1 runs in "
                "this process)") from None
        except BaseException:
            for f in window:
                f.cancel()
            raise


# -- the builder ---------------------------------------------------------------------------


def _dataset_inputs(ds: Dataset) -> list[dict[str, Any]]:
    """Every file of the dataset with its sha256: the pinned checksum when the file was
    verified against it, else the checksum of the file as read."""

    pinned = manifest(ds.folder) if ds.folder in FOLDERS else {}
    verified = bool(getattr(ds.source, "check", True))
    out = []
    for p in ds.file_paths():
        if verified and p in pinned:
            out.append({"path": f"{ds.folder}/{p}", "sha256": pinned[p].stored_sha256,
                        "verified": True})
        else:
            out.append({"path": f"{ds.folder}/{p}", "sha256": sha256_file(ds.path(p)),
                        "verified": False})
    return out


def build_store(
    dataset: Dataset,
    parser: Parser | str,
    out: str | Path,
    *,
    parser_args: dict[str, Any] | None = None,
    seed: int = DEFAULT_SEED,
    collections: Sequence[str] | None = None,
    workers: int | None = None,
    progress: ProgressFn | None = None,
    command: str = "build-store",
    store: str | None = None,
    force: bool = False,
    served: dict[str, Any] | None = None,
    in_memory: bool = False,
) -> BuildResult:
    """Write ``items.jsonl`` and ``manifest.json`` for ``dataset`` into ``out``, replacing it
    whole (module docstring).

    Args:
        dataset: a loaded dataset (:func:`tiap.datasets.load`).
        parser: a parser (:func:`~tiap.memory.parsers.make_parser`) or a registered name,
            built with ``parser_args`` (and ``seed``, when its factory takes one).
        out: output folder. An earlier output of ``command`` is replaced whole (a parser
            cache inside it is kept); any other non-empty folder is refused unless ``force``.
        seed: recorded in the manifest and given to parsers that take one (the LLM request's
            ``seed``); the heuristic and native parsers use no randomness.
        collections: only these collection ids (all by default); an id the dataset does not
            have is an error.
        workers: processes for parsers marked ``parallel`` (the output is the same for any
            value); ``None``: up to 4 CPUs for datasets of more than
            :data:`PARALLEL_FROM` collections, else 1 (process start-up would cost more).
            Workers import the calling script again: a script must call this under
            ``if __name__ == "__main__":`` (else the build stops with an error saying so).
        progress: wraps the per-collection iteration, ``progress(iterable, label, total)``
            (the CLI passes a rich progress bar).
        store: the store's name, written on every item (default: the name of ``out``).
        force: replace ``out`` even if it is not a store built by ``command`` (what it holds
            is deleted, except a parser cache).
        served: the local model server the parser talked to
            (:meth:`tiap.llm.local.LocalServer.settings`: model, pinned sha256, threads),
            recorded in the manifest as ``local_model``.
        in_memory: also hand back the store (:attr:`BuildResult.store`), the very
            :class:`~tiap.memory.store.Store` that ``read_store`` gives for the file, built
            from the rows as they are written (with ``read_store``'s checks), so a caller
            that goes on with it need not read the file back. On a large dataset with
            several workers this overlaps with the parsing.

    Example: a two-turn dataset built in code, with the offline ``heuristic`` parser; each
    turn is a raw item, each derived fact names its turn as its source:

    >>> import json
    >>> from pathlib import Path
    >>> from tiap.datasets import Bundle, Collection, InlineDataset, Session, Turn
    >>> turns = (Turn("c1:D1:1", "c1", "s1", 1, "Ana", "I adopted a cat named Miso last week."),
    ...          Turn("c1:D1:2", "c1", "s1", 2, "Ben", "That is great news."))
    >>> ds = InlineDataset([Bundle(Collection("c1", 1, 2, ("Ana", "Ben")),
    ...                            (Session("c1", "s1", 1, "8 May, 2023"),), turns, ())])
    >>> result = build_store(ds, "heuristic", "stores/h5", parser_args={"max_facts": 5})
    >>> result.counts["by_kind"], result.counts["turns_with_derived"]
    ({'raw': 2, 'fact': 1}, 1)
    >>> for line in Path("stores/h5/items.jsonl").read_text().splitlines():
    ...     row = json.loads(line)
    ...     print(row["item_id"], row["kind"], row["sources"], row["text"])
    c1:D1:1 raw ['c1:D1:1'] Ana (8 May, 2023): I adopted a cat named Miso last week.
    c1:D1:2 raw ['c1:D1:2'] Ben (8 May, 2023): That is great news.
    c1:D1:1#f1 fact ['c1:D1:1'] On 8 May 2023, Ana adopted a cat named Miso last week.
    >>> sorted(p.name for p in Path("stores/h5").iterdir())
    ['items.jsonl', 'manifest.json']
    """
    if isinstance(parser, str):
        args = dict(parser_args or {})
        if "seed" not in args and "seed" in inspect.signature(parser_factory(parser)).parameters:
            args["seed"] = seed
        parser = make_parser(parser, **args)
    elif parser_args:
        raise TiapError("parser_args are for a parser given by name")
    if workers is None:
        n = len(collections) if collections else dataset.expected_collections()
        workers = min(4, os.cpu_count() or 1) if n is None or n > PARALLEL_FROM else 1
    from tiap.limits import check

    check("workers", workers, "workers (--workers)")  # at most this machine's CPUs
    wanted = list(dict.fromkeys(collections)) if collections else None
    name = check_store_name(store if store is not None else Path(out).resolve().name,
                            "store name (pass one with --name)" if store is None
                            else "store name")
    keep = cache_entries(getattr(parser, "cache_path", None), out)
    check_output_folder(out, command, force=force, keep=keep)  # before any work
    started = time.monotonic()
    try:
        parser.prepare(dataset)
        with output_folder(out, command, force=force, keep=keep) as tmp:
            rows = StoreRows(Path(out) / ITEMS_FILE) if in_memory else None
            counts, digest, size = _write_items(dataset, parser, tmp / ITEMS_FILE, wanted,
                                                workers, progress, name, rows)
            parser.finish()
            manifest = _manifest(dataset, parser, seed, wanted, counts, digest, size, command,
                                 {"store": name,
                                  **({"local_model": served} if served is not None else {}),
                                  "elapsed_seconds": round(time.monotonic() - started, 3)})
            manifest.write(tmp / MANIFEST_FILE)
            man = json.loads(manifest.text())  # the result holds exactly what the file says
    finally:
        parser.close()
    return BuildResult(Path(out), counts, man, rows.store(name) if rows is not None else None)


def build_dataset_store(
    dataset: str,
    parser: str,
    out: str | Path,
    *,
    name: str | None = None,
    max_facts: int | None = None,
    seed: int = DEFAULT_SEED,
    collections: Sequence[str] | None = None,
    workers: int | None = None,
    base_url: str | None = None,
    model: str | None = None,
    api_key_env: str | None = None,
    concurrency: int | None = None,
    timeout: float | None = None,
    max_retries: int | None = None,
    cache: str | Path | None = None,
    max_invalid: float | None = None,
    response_format: str | None = None,
    max_tokens: int | None = None,
    local_model: str | None = None,
    local_port: int = 8089,
    local_threads: int = 1,
    sessions: int | None = None,
    engine: str = "local",
    data: str | Path | None = None,
    verify: bool = True,
    force: bool = False,
    progress: ProgressFn | None = None,
    log: Callable[[str], None] | None = None,
) -> BuildResult:
    """The memory store of a dataset by id, the whole ``tiap build-store`` step: the options
    checked together (the ``llm`` parser's options with another parser, ``max_facts`` with
    ``native``, a ``local_model`` that does not fit), the dataset loaded (``data``: its
    folder; ``verify``: check the pinned sha256; ``sessions``: the first N sessions of each
    collection), a ``local_model`` served on 127.0.0.1:``local_port`` while the store is
    built, and :func:`build_store` on ``engine``.

    ``parser`` is ``heuristic``, ``native`` or ``llm``; ``max_facts`` defaults to 5 for
    heuristic and llm; the endpoint options are the llm parser's (module docstring of
    :mod:`tiap.memory.llm_parser`). ``log`` gets the local model server's lines.

    Example (reads the LoCoMo file: a data folder, the cache or a download):

    >>> result = build_dataset_store("locomo", "heuristic", "stores/f5",
    ...                              max_facts=5)                # doctest: +SKIP
    >>> result.counts["by_kind"]                                # doctest: +SKIP
    {'raw': 5882, 'fact': ...}

    Options that do not go together are refused together, before any data is read:

    >>> build_dataset_store("locomo", "native", "stores/n", max_facts=3, model="m")
    Traceback (most recent call last):
    ...
    tiap.errors.TiapError: options for --parser llm only: --model
    --max-facts does not apply to --parser native (it stores the memories the dataset ships)
    """

    pname = parser.strip().lower()
    llm_opts: dict[str, Any] = {
        "base_url": base_url, "model": model, "api_key_env": api_key_env,
        "concurrency": concurrency, "timeout": timeout, "max_retries": max_retries,
        "cache": None if cache is None else str(cache), "max_invalid": max_invalid,
        "response_format": response_format, "max_tokens": max_tokens,
    }
    given = {k: v for k, v in llm_opts.items() if v is not None}
    problems: list[Problem] = []
    if pname != "llm" and given:
        flags = ", ".join("--" + k.replace("_", "-") for k in given)
        problems.append(Problem(f"options for --parser llm only: {flags}"))
    if local_model is not None:
        if pname != "llm":
            problems.append(Problem("--local-model serves the model of --parser llm only"))
        else:
            from tiap.llm.local import local_endpoint

            try:
                local_endpoint(local_model, local_port, base_url=base_url, model=model)
            except TiapError as exc:
                problems.extend(exc.problems)
    if pname == "native" and max_facts is not None:
        problems.append(Problem("--max-facts does not apply to --parser native "
                                "(it stores the memories the dataset ships)"))
    if problems:
        raise TiapError(problems=problems)
    args: dict[str, Any] = {}
    if pname in ("heuristic", "llm"):
        args["max_facts"] = 5 if max_facts is None else max_facts
    served: Any = None
    if pname == "llm":
        args.update(given)
        args["seed"] = seed
        if local_model is not None:
            from tiap.llm.local import CLIENT_DEFAULTS, LocalServer, local_endpoint

            args["base_url"], args["model"] = local_endpoint(local_model, local_port)
            for k, v in CLIENT_DEFAULTS.items():
                args.setdefault(k, v)
            served = LocalServer(args["model"], port=local_port, threads=local_threads,
                                 log=log or (lambda m: None))
    elif max_facts is not None and pname not in ("heuristic", "native"):
        args["max_facts"] = max_facts
    wanted = None if collections is None else list(collections)
    # a foreign out is refused before the parser opens its cache (which may lie in it)
    check_output_folder(out, "build-store", force=force, keep=cache_entries(cache, out))
    made = make_parser(pname, **args)  # checks the arguments before any data is read
    ds: Dataset = load(dataset, source=DataSource(data, verify=verify))
    if sessions is not None:
        ds = SessionSlice(ds, sessions)
    from tiap.engine import make_engine, use_engine

    with (served if served is not None else contextlib.nullcontext(),
          contextlib.closing(make_engine(engine)) as eng, use_engine(eng)):
        return build_store(ds, made, out, seed=seed, collections=wanted, workers=workers,
                           progress=progress, store=name, force=force,
                           served=None if served is None else served.settings())


def cache_entries(path: str | Path | None, out: str | Path) -> tuple[str, ...]:
    """The entries of ``out`` holding a cache ``path`` (a SQLite file and its ``-wal``,
    ``-shm`` and ``-journal`` files and the ``.shards`` folder of an engine's workers, or the
    folder holding it), when it lies inside ``out``: used in place and kept across the
    swap."""
    if path is None:
        return ()
    root = Path(out).resolve()
    try:
        rel = Path(path).resolve().relative_to(root)
    except ValueError:
        return ()
    top = rel.parts[0]
    if len(rel.parts) > 1:
        return (top,)
    return (top, *(f"{top}{suffix}" for suffix in ("-wal", "-shm", "-journal", ".shards")))


def _write_items(
    dataset: Dataset,
    parser: Parser,
    path: Path,
    wanted: list[str] | None,
    workers: int,
    progress: ProgressFn | None,
    store: str,
    rows: StoreRows | None = None,
) -> tuple[dict[str, Any], str, int]:
    want = set(wanted) if wanted else None
    found: set[str] = set()
    collection_ids: set[str] = set()
    problems: list[Problem] = []

    def bundles() -> Iterator[Bundle]:
        for b in dataset.bundles():
            cid = b.collection.collection_id
            if want is not None and cid not in want:
                continue
            found.add(cid)
            yield b

    total = len(wanted) if wanted else dataset.expected_collections()
    chunks: Iterable[_Chunk] = _chunks(parser, bundles(), workers, store)
    if progress is not None:
        chunks = progress(chunks, f"building {dataset.dataset_id} ({parser.spec.name})", total)
    kinds: Counter[str] = Counter()
    per_turn: Counter[int] = Counter()
    n_coll = n_turns = size = 0
    h = hashlib.sha256()
    line = 0
    with open(path, "wb") as fh, gc_paused() if rows is not None else contextlib.nullcontext():
        for chunk in chunks:
            if chunk.collection in collection_ids:
                problems.append(Problem("collection id occurs twice", record=chunk.collection))
            collection_ids.add(chunk.collection)
            problems.extend(chunk.problems)
            if len(problems) > MAX_PROBLEMS:
                break
            blob = chunk.data
            h.update(blob)
            fh.write(blob)
            if rows is not None:  # the rows as read_store reads them back (lines end at \n)
                lines = blob.decode("utf-8").split("\n")[:-1]
                for n, obj in json_lines(enumerate((x + "\n" for x in lines), line + 1),
                                         rows.problems):
                    rows.add(n, obj)
                line += len(lines)
            size += len(blob)
            n_coll += 1
            n_turns += chunk.turns
            kinds.update(chunk.kinds)
            per_turn.update(chunk.per_turn)
    if problems:
        shown = problems[:MAX_PROBLEMS]
        if len(problems) > MAX_PROBLEMS:
            shown.append(Problem("... stopped after this many problems"))
        raise TiapError(problems=shown)
    if want is not None and want - found:
        missing = [c for c in wanted or () if c not in found]
        raise TiapError(f"dataset {dataset.dataset_id!r} has no collection(s) "
                        f"{', '.join(missing[:10])}" + (" ..." if len(missing) > 10 else ""),
                        code="invalid-value")
    derived = sum(v for k, v in kinds.items() if k != RAW_KIND)
    counts = {
        "collections": n_coll,
        "turns": n_turns,
        "items": sum(kinds.values()),
        "by_kind": {RAW_KIND: kinds.get(RAW_KIND, 0),
                    **{k: kinds[k] for k in sorted(kinds) if k != RAW_KIND}},
        "derived": derived,
        "turns_with_derived": n_turns - per_turn.get(0, 0),
        "turns_without_derived": per_turn.get(0, 0),
        "derived_per_turn": {str(k): per_turn[k] for k in sorted(per_turn)},
    }
    return counts, h.hexdigest(), size


def _manifest(
    dataset: Dataset,
    parser: Parser,
    seed: int,
    wanted: list[str] | None,
    counts: dict[str, Any],
    digest: str,
    size: int,
    command: str,
    more: dict[str, Any],
) -> Manifest:
    warnings = getattr(parser, "warnings", None)  # the llm parser's invalid replies
    return Manifest.new(
        command,
        more_versions=parser.versions(),
        warnings=warnings() if callable(warnings) and warnings() else None,
        outputs={ITEMS_FILE: {"sha256": digest, "bytes": size, "rows": counts["items"]}},
        extra={
            "dataset": {
                "id": dataset.dataset_id,
                "description": dataset.description,
                "collections": wanted,  # null: all
                "sessions": dataset.n if isinstance(dataset, SessionSlice) else None,  # first N
                "files": _dataset_inputs(dataset),
            },
            "parser": parser.spec.to_json(),
            "seed": seed,
            "item_ids": ID_SCHEME,
            "counts": counts,
            "parser_stats": parser.stats(),
            **more,
        })
