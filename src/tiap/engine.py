"""Where TIAP's independent pieces of work run: here (``local``) or on a Ray cluster (``ray``).

An :class:`Engine` maps a module-level function over a list of independent work items and
returns the results in the order of the items, so the caller merges them exactly as it would
have computed them itself: a Ray run writes byte-identical outputs. The work items TIAP fans
out are the ones that grow with an audit's size:

- Stage III: the randomization test of every shared subset of queries (each family's sign
  vectors come from the seed and the subset alone, so no task depends on another or on the
  order tasks finish in; :func:`tiap.sensitivity.stats.evaluate_gaps`);
- rescoring: each run (system) against its store, in query shards of ``query_shard``
  queries (default: one shard per run) whose per-query values are concatenated in query
  order (:func:`tiap.scoring.rescore.rescore`; a query's value depends on its own ranking
  and targets alone, so the shards' bits are the whole run's);
- building a store: each collection (:func:`tiap.memory.build.build_store`), or, for the
  ``llm`` parser, its requests, a few turns per task, at most its ``concurrency`` tasks in
  flight (:class:`tiap.memory.llm_parser.LlmParser`);
- judging: the requests of a judge, a few per task for a judge that calls an endpoint (at
  most its ``concurrency`` tasks in flight), a batch per task for an offline one
  (:func:`tiap.audit.run.run_judges`).

``--engine local`` (the default) runs them in this process. ``--engine ray`` starts a local
Ray instance on this machine's cores, ``--engine ray://HOST:PORT`` (or ``ray:auto``)
connects to an existing cluster (``ray.init(address=...)``); the ``ray`` extra installs
Ray (``pip install -e '.[ray]'``). A task that fails raises its error here; Ray retries a
task whose worker died (``max_retries``), and a retried task computes the same result.

The engine in use is set for a block of code with :func:`use_engine` (a context variable,
so concurrent callers do not see each other's) and read with :func:`current_engine`.
"""

from __future__ import annotations

import collections
import contextlib
import contextvars
import importlib.util
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Generic, Protocol, TypeVar, cast

from tiap.errors import TiapError

__all__ = ["ENGINES", "Engine", "current_engine", "make_engine", "use_engine"]

T = TypeVar("T")
R = TypeVar("R")

#: Engine names ``--engine`` takes (``ray`` also as ``ray://HOST:PORT`` or ``ray:auto``).
ENGINES = ("local", "ray")


class Shared(Generic[T]):
    """A value many tasks read (a store's lineage): :meth:`Engine.share` sends it once (to
    Ray's object store), the tasks carry this handle and :meth:`get` it where they run. A
    worker process keeps the last few values it got, so its next tasks on the same value do
    not read and unpickle it again (tasks only read it)."""

    def __init__(self, value: T | None = None, ref: Any = None) -> None:
        self._value = value
        self._ref = ref

    def get(self) -> T:
        if self._ref is None:
            return cast(T, self._value)
        key = self._ref.hex()
        if key in _GOT:
            _GOT.move_to_end(key)
            return cast(T, _GOT[key])
        import ray

        value = ray.get(self._ref)
        _GOT[key] = value
        while len(_GOT) > _GOT_KEEP:
            _GOT.popitem(last=False)
        return cast(T, value)


#: Per process: the shared values its tasks got, by object id (most recent last).
_GOT: collections.OrderedDict[str, Any] = collections.OrderedDict()
_GOT_KEEP = 4


class Engine(Protocol):
    """What an engine does: map a function over independent items, results in item order.

    :func:`make_engine` makes one; :func:`use_engine` sets it for a block of code.

    Example:
        >>> engine = make_engine("local")
        >>> engine.map(len, ["ab", "c", ""])
        [2, 1, 0]
        >>> engine.describe()
        {'engine': 'local'}
    """

    name: str
    #: queries per rescoring task (None: one task per run)
    query_shard: int | None

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        """``[fn(x) for x in items]``, in the order of ``items``."""
        ...

    def imap_unordered(self, fn: Callable[[T], R], items: Sequence[T],
                       window: int) -> Iterator[tuple[int, R]]:
        """``(i, fn(items[i]))`` as each finishes, with at most ``window`` in flight (the
        bound on the requests an endpoint is sent at once)."""
        ...

    def share(self, value: T) -> Shared[T]:
        """A handle on ``value`` for the tasks of :meth:`map` to read."""
        ...

    def close(self) -> None: ...

    def describe(self) -> dict[str, Any]: ...


class LocalEngine:
    """Everything in this process, in order."""

    name = "local"

    def __init__(self, *, query_shard: int | None = None) -> None:
        self.query_shard = _query_shard(query_shard)

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        return [fn(x) for x in items]

    def imap_unordered(self, fn: Callable[[T], R], items: Sequence[T],
                       window: int) -> Iterator[tuple[int, R]]:
        for i, x in enumerate(items):
            yield i, fn(x)

    def share(self, value: T) -> Shared[T]:
        return Shared(value)

    def close(self) -> None:
        pass

    def describe(self) -> dict[str, Any]:
        return {"engine": "local"}


class RayEngine:
    """Tasks on Ray: a local instance (``address=None``, ``num_cpus`` cores) or a cluster.

    ``map`` sends one task per item (items of a few milliseconds of work are batched into
    chunks of ``chunk`` items, so that scheduling does not dominate) and gathers the results
    in item order. A worker that dies mid-task has its task retried (``max_retries``)."""

    name = "ray"

    def __init__(self, address: str | None = None, *, num_cpus: int | None = None,
                 chunk: int = 1, max_retries: int = 3,
                 query_shard: int | None = None) -> None:
        if importlib.util.find_spec("ray") is None:
            raise TiapError("--engine ray needs Ray: pip install -e '.[ray]'",
                            code="missing-extra")
        import ray

        self._ray = ray
        self._owned = False
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                                      "configure_logging": False}
            if address is None:
                kwargs["num_cpus"] = num_cpus
            else:
                kwargs["address"] = address
            # ray.init installs its own SIGTERM and SIGINT handlers in this process: keep
            # the command's (a SIGTERM unwinds it as Ctrl-C does, closing this engine too)
            handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}
            ray.init(**kwargs)
            if threading.current_thread() is threading.main_thread():
                for sig, handler in handlers.items():
                    signal.signal(sig, handler)
            self._owned = True
        self.address = address
        self.chunk = max(1, chunk)
        self.max_retries = max_retries
        self.query_shard = _query_shard(query_shard)

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        if not items:
            return []
        ray = self._ray
        task = ray.remote(max_retries=self.max_retries)(_run_chunk)
        fn_ref = ray.put(fn)
        chunks = [list(items[i:i + self.chunk]) for i in range(0, len(items), self.chunk)]
        out: list[R] = []
        for part in ray.get([task.remote(fn_ref, c) for c in chunks]):
            out.extend(part)
        return out

    def imap_unordered(self, fn: Callable[[T], R], items: Sequence[T],
                       window: int) -> Iterator[tuple[int, R]]:
        ray = self._ray
        task = ray.remote(max_retries=self.max_retries)(fn)
        queue = iter(enumerate(items))
        in_flight: dict[Any, int] = {}
        try:
            while True:
                while len(in_flight) < max(1, window):
                    nxt = next(queue, None)
                    if nxt is None:
                        break
                    in_flight[task.remote(nxt[1])] = nxt[0]
                if not in_flight:
                    return
                ready, _ = ray.wait(list(in_flight), num_returns=1)
                for ref in ready:
                    yield in_flight.pop(ref), ray.get(ref)
        finally:  # the caller stopped (an error, Ctrl-C): what was not started is dropped
            for ref in in_flight:
                ray.cancel(ref)

    def share(self, value: T) -> Shared[T]:
        return Shared(ref=self._ray.put(value))

    def close(self) -> None:
        if self._owned:
            self._ray.shutdown()

    def describe(self) -> dict[str, Any]:
        res = self._ray.cluster_resources()
        return {"engine": "ray", "address": self.address or "local",
                "ray": self._ray.__version__, "cpus": res.get("CPU")}


#: Requests an endpoint task asks one after another, at most.
ENDPOINT_TASK = 8


def endpoint_tasks(items: Sequence[T], concurrency: int) -> list[Sequence[T]]:
    """``items`` (an endpoint's requests) in tasks of up to :data:`ENDPOINT_TASK`, asked
    one after another, small enough that ``concurrency`` tasks in flight (the bound on what
    the endpoint is sent at once) keep every slot busy."""
    size = max(1, min(ENDPOINT_TASK, -(-len(items) // max(1, concurrency))))
    return [items[i:i + size] for i in range(0, len(items), size)]


def _run_chunk(fn: Callable[[T], R], items: list[T]) -> list[R]:
    return [fn(x) for x in items]


def _query_shard(n: int | None) -> int | None:
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        raise TiapError(f"query_shard must be a positive integer, got {n!r}",
                        code="invalid-value")
    return n


def make_engine(spec: str | None = None, *, num_cpus: int | None = None,
                query_shard: int | None = None) -> Engine:
    """``local`` (default), ``ray`` (a local Ray instance), ``ray://HOST:PORT`` or
    ``ray:auto`` (an existing cluster). ``query_shard``: queries per rescoring task
    (default: a task per run). An unknown name is ``error[invalid-value]``.

    Example:
        >>> engine = make_engine("local", query_shard=100)
        >>> engine.name, engine.query_shard
        ('local', 100)
        >>> make_engine("spark")
        Traceback (most recent call last):
        ...
        tiap.errors.TiapError: unknown engine 'spark': local, ray, ray://HOST:PORT or ray:auto
    """
    if spec in (None, "", "local"):
        return LocalEngine(query_shard=query_shard)
    if spec == "ray":
        return RayEngine(num_cpus=num_cpus, query_shard=query_shard)
    if spec.startswith("ray://"):
        return RayEngine(spec, query_shard=query_shard)
    if spec == "ray:auto":
        return RayEngine("auto", query_shard=query_shard)
    raise TiapError(f"unknown engine {spec!r}: local, ray, ray://HOST:PORT or ray:auto",
                    code="invalid-value")


_CURRENT: contextvars.ContextVar[Engine | None] = contextvars.ContextVar("tiap_engine",
                                                                        default=None)


def current_engine() -> Engine:
    """The engine of the enclosing :func:`use_engine` block, else a local engine.

    Example:
        >>> current_engine().name
        'local'
    """
    return _CURRENT.get() or LocalEngine()


@contextlib.contextmanager
def use_engine(engine: Engine) -> Iterator[Engine]:
    """Run the block's fanned-out work on ``engine``; the engine before it is back after.

    Example:
        >>> with use_engine(make_engine("local", query_shard=50)):
        ...     current_engine().query_shard
        50
        >>> current_engine().query_shard is None
        True
    """
    token = _CURRENT.set(engine)
    try:
        yield engine
    finally:
        _CURRENT.reset(token)
