"""Where TIAP's independent pieces of work run: here (``local``) or on a Ray cluster (``ray``).

An :class:`Engine` maps a module-level function over a list of independent work items and
returns the results in the order of the items, so the caller merges them exactly as it would
have computed them itself: a Ray run writes byte-identical outputs. The work items TIAP fans
out are the ones that grow with an audit's size:

- Stage III: the randomization test of every shared subset of queries (each family's sign
  vectors come from the seed and the subset alone, so no task depends on another or on the
  order tasks finish in; :func:`tiap.sensitivity.stats.evaluate_gaps`);
- rescoring: each run (system) against its store (:func:`tiap.scoring.rescore.rescore`);
- building a store: each collection (:func:`tiap.memory.build.build_store`), or, for the
  ``llm`` parser, its requests, a few turns per task, at most its ``concurrency`` tasks in
  flight (:class:`tiap.memory.llm.LlmParser`);
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

import contextlib
import contextvars
import importlib.util
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol, TypeVar

from tiap.errors import TiapError

__all__ = ["ENGINES", "Engine", "LocalEngine", "RayEngine", "current_engine",
           "endpoint_tasks", "make_engine", "use_engine"]

T = TypeVar("T")
R = TypeVar("R")

#: Engine names ``--engine`` takes (``ray`` also as ``ray://HOST:PORT`` or ``ray:auto``).
ENGINES = ("local", "ray")


class Engine(Protocol):
    name: str

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        """``[fn(x) for x in items]``, in the order of ``items``."""
        ...

    def imap_unordered(self, fn: Callable[[T], R], items: Sequence[T],
                       window: int) -> Iterator[tuple[int, R]]:
        """``(i, fn(items[i]))`` as each finishes, with at most ``window`` in flight (the
        bound on the requests an endpoint is sent at once)."""
        ...

    def close(self) -> None: ...

    def describe(self) -> dict[str, Any]: ...


class LocalEngine:
    """Everything in this process, in order."""

    name = "local"

    def map(self, fn: Callable[[T], R], items: Sequence[T]) -> list[R]:
        return [fn(x) for x in items]

    def imap_unordered(self, fn: Callable[[T], R], items: Sequence[T],
                       window: int) -> Iterator[tuple[int, R]]:
        for i, x in enumerate(items):
            yield i, fn(x)

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
                 chunk: int = 1, max_retries: int = 3) -> None:
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


def make_engine(spec: str | None = None, *, num_cpus: int | None = None) -> Engine:
    """``local`` (default), ``ray`` (a local Ray instance), ``ray://HOST:PORT`` or
    ``ray:auto`` (an existing cluster)."""
    if spec in (None, "", "local"):
        return LocalEngine()
    if spec == "ray":
        return RayEngine(num_cpus=num_cpus)
    if spec.startswith("ray://"):
        return RayEngine(spec)
    if spec == "ray:auto":
        return RayEngine("auto")
    raise TiapError(f"unknown engine {spec!r}: local, ray, ray://HOST:PORT or ray:auto",
                    code="invalid-value")


_CURRENT: contextvars.ContextVar[Engine | None] = contextvars.ContextVar("tiap_engine",
                                                                        default=None)


def current_engine() -> Engine:
    """The engine of the enclosing :func:`use_engine` block, else a :class:`LocalEngine`."""
    return _CURRENT.get() or LocalEngine()


@contextlib.contextmanager
def use_engine(engine: Engine) -> Iterator[Engine]:
    """Run the block's fanned-out work on ``engine``."""
    token = _CURRENT.set(engine)
    try:
        yield engine
    finally:
        _CURRENT.reset(token)
