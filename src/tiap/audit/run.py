"""Running judges over cases with a crash-safe verdict cache.

:func:`run_judges` asks every judge about every case and returns one
:class:`~tiap.audit.labels.LabelRecord` per (judge, case). Each finished verdict is committed
to a :class:`VerdictCache` (SQLite in WAL mode, ``synchronous=FULL``: a committed verdict
survives the process being killed at any moment, ``kill -9`` included): a network judge's
before the next is recorded, an offline judge's :data:`OFFLINE_COMMIT` at a time (or a batch
at a time: a killed run computes at most those again). A run started again with the same
cache asks only for what is not in it:

- a verdict's key is its *request key*: the sha256 of the request the judge makes for the
  case (:meth:`Judge.request <tiap.audit.judges.Judge.request>`: for the ``openai`` judge
  the endpoint and the exact body it POSTs, for an offline judge the inputs it reads and the
  settings that change its answer). Changing the model, the template, a threshold or a text
  the judge sends asks again; renaming a case or a judge, or changing a case field the
  judge does not send, does not;
- cases with identical requests are asked once and share the verdict (within a run the
  later ones' ``timing.reused_from`` names the first case; in a later run, or for another
  judge making the same requests, they come ``from_cache``);
- only what the judge calls :meth:`reusable <tiap.audit.judges.Judge.reusable>` is cached
  and served: every verdict of an offline judge (``unscored`` ones too: the same request
  gives the same answer; ``retry_unscored=True`` asks for them again), but only the scored
  verdicts of a network judge. An endpoint's invalid reply (an HTML page answered with HTTP
  200, a wrong schema, an error status after the retries) gives an ``unscored`` record in
  this run, counted in :attr:`JudgeStats.warnings` (``invalid_reply``), and is asked again
  by the next run; an unscored verdict such a judge finds in a cache written by an older
  TIAP is not served either (it is asked again);
- a network judge (one with an ``endpoint``) stops the run with ``error[endpoint]`` when
  more than ``judge.max_invalid`` of its replies are invalid
  (:class:`tiap.llm.client.InvalidReplies`: checked from the 10th reply on, and at the end
  with the verdicts reused from the cache counted as valid); the valid verdicts are in the
  cache, no label is written;
- a judge asking for structured output (``judge.structured``) records what it asked for,
  what it used and what the server refused (:meth:`tiap.llm.client.StructuredOutput.report`) in
  :attr:`JudgeStats.response_format`, and the refusals in :attr:`JudgeStats.warnings`
  (``response_format``);
- every row written to the cache is redacted (:func:`tiap.llm.client.redact`).

Network judges run ``judge.concurrency`` cases at once in threads; only the calling thread
writes to the cache. Offline judges get lists of ``judge.batch_size`` cases.

**On an engine** (:mod:`tiap.engine`, ``--engine ray``) the requests go out as tasks: for a
network judge up to 8 requests per task, asked one after another, with at most
``judge.concurrency`` tasks in flight (the bound on what its endpoint is sent at once,
wherever the workers are); for an offline judge one batch per task. A worker builds the judge from the spec it was made from
(:attr:`Judge.spec <tiap.audit.judges.Judge.spec>`) and appends each verdict it may cache to
its task's *shard* (``<cache>.shards/<sha256 of the task's request keys>.jsonl``, flushed and
fsynced line by line) before returning it; the driver commits the task's verdicts to the
cache and removes the shard. A worker killed mid-task has its task run again (Ray's retries),
and the new attempt reads the shard and asks only what is not in it, so every request is
asked once and every verdict recorded once. A killed driver leaves the shards of the tasks it
had not committed; the next run (on any engine) merges them into the cache first
(:meth:`VerdictCache.merge_shards`), so no finished verdict is asked for again. On a cluster
the shard folder must be on a file system the workers and the driver share for this; without
one the results still reach the cache through the driver, and a retried task asks again what
its killed predecessor had not returned.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from tiap.audit.cases import Case  # noqa: F401 - the examples build cases
from tiap.audit.judges import Judge, Request, make_judge, request_key
from tiap.audit.labels import UNSCORED, LabelRecord, Verdict, canonical_json, redactor
from tiap.cache import KeyedCache, Table
from tiap.engine import current_engine, endpoint_tasks
from tiap.errors import TiapError
from tiap.io import append_shard, read_shard, shard_path
from tiap.llm.client import InvalidReplies, redact

__all__ = ["JudgeRun", "Judged", "VerdictCache", "run_judges"]

Progress = Callable[[str, int, int], None]
#: How many verdicts of an offline judge asked one at a time are committed together.
OFFLINE_COMMIT = 2048


class Judged(Protocol):
    """What :func:`run_judges` reads of a case besides what its judge's request holds: the
    fields of its label row (:class:`~tiap.audit.cases.Case` has them all)."""

    case_id: str
    dataset: str
    system: str
    store: str
    query_id: str
    target: str
    item_id: str


#: One verdict to commit: (request key, judge name, case id, request, verdict, timing).
CacheRow = tuple[str, str, str, Request, Verdict, dict[str, Any]]


class VerdictCache(KeyedCache):
    """Finished verdicts by request key, in SQLite (:class:`tiap.cache.KeyedCache`: WAL,
    ``synchronous=FULL``; a network judge's verdicts one commit each, an offline judge's
    in batches).

    Each row holds the request itself (the exact body sent, never a key), the verdict, its
    timing, and the judge and case it was first asked for; table ``failures`` notes the
    requests whose reply was invalid (never served: see :func:`run_judges`). The schema is
    versioned (``PRAGMA user_version``): a cache of another schema is refused with an error,
    never mixed in; schema 1 (TIAP before request keys) keyed verdicts by judge settings and
    case fields, which cannot be matched to requests, so its verdicts are not reused.

    Example: a second run over the same cases asks the judge nothing; every verdict comes
    from the cache file.

    >>> from tiap.audit.judges import make_judge
    >>> case = Case("A:q1:canonical", "A", "q1", "canonical", "m1", "Caroline visited the park.",
    ...             "Where did Caroline go?", "the park", credited_rank=1)
    >>> with VerdictCache("cache.sqlite") as cache:
    ...     first = run_judges([case], [make_judge("lexical")], cache)
    ...     again = run_judges([case], [make_judge("lexical")], cache)
    ...     stored = len(cache)
    >>> stored, first.stats[0].asked, again.stats[0].asked, again.stats[0].cached
    (1, 1, 0, 1)
    >>> again.records[0].label
    'supports'
    """

    KIND = "verdict cache"
    SCHEMA = 2
    TABLES = (
        Table("verdicts", ("request_key TEXT PRIMARY KEY", "judge TEXT NOT NULL",
                           "case_id TEXT NOT NULL", "label TEXT NOT NULL",
                           "request TEXT NOT NULL", "verdict TEXT NOT NULL",
                           "timing TEXT NOT NULL", "created TEXT NOT NULL"),
              ("request_key",)),
        Table("failures", ("request_key TEXT PRIMARY KEY", "judge TEXT NOT NULL",
                           "case_id TEXT NOT NULL", "reason TEXT NOT NULL",
                           "created TEXT NOT NULL"), ("request_key",)),
    )
    OLDER = ("it keys verdicts by judge settings and case fields, and TIAP now keys them by "
             "the request a judge makes, so its verdicts cannot be reused. ")
    ELSEWHERE = "pass --cache with another file"
    AGAIN = "the judges are then asked again"
    NOUN, COMPARE, FOLDER = "verdicts", "label", "a folder of verdict shards"

    @classmethod
    def holds(cls, path: str | Path) -> bool:
        """A verdict cache file, or a folder of an engine's verdict shards (``*.jsonl``)."""
        path = Path(path)
        return any(path.glob("*.jsonl")) if path.is_dir() else super().holds(path)

    def __init__(self, path: str | Path) -> None:
        super().__init__(path)
        self.path: Path = Path(path)

    def get(self, key: str) -> tuple[Verdict, dict[str, Any], str] | None:
        """(verdict, timing, case id it was first asked for) or ``None``."""
        row = self.lookup("verdicts", (key,), ("verdict", "timing", "case_id"))
        if row is None:
            return None
        return _verdict_from_json(json.loads(row[0])), json.loads(row[1]), row[2]

    def request(self, key: str) -> Request | None:
        """The request a cached verdict answers, or ``None``."""
        row = self.lookup("verdicts", (key,), ("request",))
        return None if row is None else dict(json.loads(row[0]))

    def put(self, key: str, *, judge: str, case_id: str, request: Request, verdict: Verdict,
            timing: dict[str, Any]) -> None:
        """Commit one verdict (durable when this returns)."""
        self.put_many([(key, judge, case_id, request, verdict, timing)])

    def failed(self, key: str) -> bool:
        """Whether an earlier run recorded an invalid reply to this request."""
        return self.lookup("failures", (key,), ("1",)) is not None

    def put_failure(self, key: str, *, judge: str, case_id: str, reason: str) -> None:
        """Note that a network judge's reply to this request was invalid (never a verdict
        served again; only a ``repeat`` for :class:`tiap.llm.client.InvalidReplies`)."""
        self.store("failures", [(key, judge, case_id, redact(reason),
                                 datetime.now(UTC).isoformat(timespec="seconds"))])

    def put_many(self, rows: Sequence[CacheRow]) -> None:
        """Commit several verdicts in one transaction (none: nothing is written)."""
        if not rows:
            return
        now = datetime.now(UTC).isoformat(timespec="seconds")
        red = redactor()
        with self.transaction():
            self.store("verdicts", [_row(*r, now, red) for r in rows])
            self.remove("failures", [(r[0],) for r in rows])

    @property
    def shard_dir(self) -> Path:
        """Where an engine's workers write their shards: ``<cache>.shards/``."""
        return self.path.with_name(self.path.name + ".shards")

    def merge_shards(self) -> int:
        """Commit the verdicts of every shard left in :attr:`shard_dir` (a driver killed
        before it committed them; :meth:`merge_from`) and remove the shards; returns how
        many verdicts were read. A line cut by the kill (the last of a shard) is skipped:
        that request is asked again."""
        if not self.shard_dir.is_dir():
            return 0
        n = sum(self.merge_from(self.shard_dir).values())
        for shard in self.shard_dir.glob("*.jsonl"):
            shard.unlink()
        return n

    def merge_from(self, other: str | Path) -> dict[str, int]:
        """Add the verdicts of another cache file (another machine's, or a worker's) that
        this one lacks, keyed by request key as always; a folder of shards (``*.jsonl``)
        is merged as :meth:`merge_shards` does, its files left in place. Returns
        ``{"added", "same", "differing"}``: verdicts new here, present with the same label,
        and present with another label (this cache's are kept: a network judge asked twice
        may answer twice differently, and the first answer is the one already served)."""
        path = Path(other)
        if path.is_dir():
            rows = [_row_from_shard(d) for shard in sorted(path.glob("*.jsonl"))
                    for d in _read_shard(shard).values()]
            out = {"added": 0, "same": 0, "differing": 0}
            fresh: dict[str, CacheRow] = {}
            for row in rows:
                hit = self.get(row[0])
                if hit is None:
                    fresh.setdefault(row[0], row)
                else:
                    out["same" if hit[0].label == row[4].label else "differing"] += 1
            self.put_many(list(fresh.values()))
            out["added"] = len(fresh)
            return out
        return self.merge_file(path, "verdicts", "label")

    def case_ids(self, judge: str | None = None) -> set[str]:
        """Case ids with a committed verdict (of one judge, or of any)."""
        if judge is None:
            return {r[0] for r in self.scan("verdicts", ("case_id",))}
        return {r[0] for r in self.scan("verdicts", ("case_id",), judge=judge)}

    def __len__(self) -> int:
        return self.count_rows("verdicts")


def _row(key: str, judge: str, case_id: str, request: Request, verdict: Verdict,
         timing: dict[str, Any], created: str,
         red: Callable[[Any], Any] = redact) -> tuple[str, ...]:
    return (key, judge, case_id, verdict.label, canonical_json(red(request)),
            json.dumps(red(_verdict_to_json(verdict)), ensure_ascii=False, allow_nan=False),
            json.dumps(timing, allow_nan=False), created)


def _read_shard(path: Path) -> dict[str, dict[str, Any]]:
    """The verdict lines of a shard by request key (:func:`tiap.io.read_shard`)."""
    return read_shard(path, _SHARD_KEYS, "verdict")


_SHARD_KEYS = frozenset({"key", "judge", "case_id", "request", "verdict", "timing"})


def _row_from_shard(d: dict[str, Any]) -> CacheRow:
    return (d["key"], d["judge"], d["case_id"], d["request"],
            _verdict_from_json(d["verdict"]), d["timing"])


def _verdict_to_json(v: Verdict) -> dict[str, Any]:
    return {"label": v.label, "serving_label": v.serving_label, "reason": v.reason,
            "notes": v.notes, "raw_response": v.raw_response, "score": v.score,
            "attempts": v.attempts, "response": None if v.response is None else dict(v.response)}


def _verdict_from_json(d: dict[str, Any]) -> Verdict:
    return Verdict(label=d["label"], serving_label=d.get("serving_label"),
                   reason=d.get("reason"), notes=d.get("notes"),
                   raw_response=d.get("raw_response"), score=d.get("score"),
                   attempts=int(d.get("attempts") or 1), response=d.get("response"))


@dataclass
class JudgeStats:
    """What one judge did in a run."""

    judge: str
    cases: int = 0
    requests: int = 0  # distinct requests among the cases
    cached: int = 0
    asked: int = 0
    reused: int = 0
    scored: int = 0
    unscored: int = 0
    seconds: float = 0.0
    unscored_reasons: dict[str, int] = field(default_factory=dict)
    #: counted warnings by code (``invalid_reply``: the endpoint's unusable replies;
    #: ``response_format``: the structured output modes the endpoint refused)
    warnings: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: the judge's structured output: ``{asked, used, refusals}``
    #: (:meth:`tiap.llm.client.StructuredOutput.report`); ``None`` for a judge that asks for none
    response_format: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        out = {"judge": self.judge, "cases": self.cases, "requests": self.requests,
               "from_cache": self.cached,
               "asked": self.asked, "reused_within_run": self.reused,
               "scored": self.scored, "unscored": self.unscored,
               "unscored_reasons": dict(sorted(self.unscored_reasons.items())),
               "warnings": redact(self.warnings),
               "seconds": round(self.seconds, 3)}
        if self.response_format is not None:
            out["response_format"] = redact(self.response_format)
        return out


@dataclass(frozen=True)
class JudgeRun:
    """Every (judge, case) label of a run, judges in the order given, cases in input order."""

    records: tuple[LabelRecord, ...]
    stats: tuple[JudgeStats, ...]
    judges: tuple[dict[str, Any], ...]  # settings of each judge


def _record(case: Judged, judge: Judge, settings: dict[str, Any], key: str, v: Verdict,
            timing: dict[str, Any]) -> LabelRecord:
    return LabelRecord(
        case_id=case.case_id, judge=judge.name, label=v.label, serving_label=v.serving_label,
        reason=v.reason, notes=v.notes, raw_response=v.raw_response, score=v.score,
        dataset=case.dataset, system=case.system, store=case.store, query_id=case.query_id,
        target=case.target, item_id=case.item_id, request_key=key, settings=settings,
        timing=timing, response=v.response)


def _chunks(seq: Sequence[Any], n: int) -> Iterator[Sequence[Any]]:
    for i in range(0, len(seq), n):
        yield seq[i:i + n]


def run_judges(
    cases: Sequence[Judged],
    judges: Sequence[Judge],
    cache: VerdictCache,
    *,
    retry_unscored: bool = False,
    progress: Progress | None = None,
) -> JudgeRun:
    """Judge every case with every judge, reusing and filling ``cache`` (module docstring).

    Returns the labels (``records``, judges in the order given, cases in input order), each
    judge's counts (``stats``) and settings (``judges``). A case is a
    :class:`~tiap.audit.cases.Case`, or any object with the fields a label row names
    (:class:`Judged`: an answer judge's answers, :mod:`tiap.answers.judges`).

    Example: the lexical judge on two cases. The answer ``the park`` is covered by the
    first memory; ``Max`` is not in the second (coverage 0 < 0.1: ``does_not_support``).

    >>> from tiap.audit.judges import make_judge
    >>> cases = [Case("A:q1:canonical", "A", "q1", "canonical", "m1",
    ...               "Caroline visited the park.", "Where did Caroline go?", "the park",
    ...               credited_rank=1),
    ...          Case("A:q2:canonical", "A", "q2", "canonical", "m2", "Melanie has a dog.",
    ...               "What is the dog called?", "Max", credited_rank=1)]
    >>> with VerdictCache("cache.sqlite") as cache:
    ...     run = run_judges(cases, [make_judge("lexical")], cache)
    >>> [(r.case_id, r.judge, r.label, r.score) for r in run.records]
    [('A:q1:canonical', 'lexical', 'supports', 1.0),
     ('A:q2:canonical', 'lexical', 'does_not_support', 0.0)]
    >>> run.stats[0].scored, run.stats[0].unscored
    (2, 0)
    """
    names = [j.name for j in judges]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise TiapError(f"two judges are named {', '.join(map(repr, dupes))}; give one of "
                        "them another name, e.g. openai(model=\"...\", name=\"...\")")
    ids = [c.case_id for c in cases]
    if len(set(ids)) != len(ids):
        raise TiapError("case ids must be unique")
    cache.merge_shards()  # what a killed driver's workers finished is not asked again
    records: list[LabelRecord] = []
    all_stats: list[JudgeStats] = []
    for judge in judges:
        recs, st = _run_one(judge, cases, cache, retry_unscored, progress)
        records.extend(recs)
        all_stats.append(st)
    with contextlib.suppress(OSError):  # an engine's shard folder, once every shard is in
        cache.shard_dir.rmdir()
    return JudgeRun(records=tuple(records), stats=tuple(all_stats),
                    judges=tuple(j.settings() for j in judges))


def _run_one(judge: Judge, cases: Sequence[Judged], cache: VerdictCache, retry_unscored: bool,
             progress: Progress | None) -> tuple[list[LabelRecord], JudgeStats]:
    """One judge over every case: each distinct request asked once (unless cached), its
    verdict committed, and shared by every case making that request."""
    st = JudgeStats(judge.name, cases=len(cases))
    t0 = time.monotonic()
    settings = judge.settings()
    requests = [judge.request(c) for c in cases]
    keys = [request_key(r) for r in requests]
    done: dict[str, tuple[Verdict, dict[str, Any], str]] = {}
    pending: dict[str, tuple[Judged, Request]] = {}  # key -> the first case making it
    for c, r, k in zip(cases, requests, keys, strict=True):
        if k in done or k in pending:
            continue
        hit = cache.get(k)
        if (hit is not None and judge.reusable(hit[0])
                and not (retry_unscored and hit[0].label == UNSCORED)):
            done[k] = hit
        else:
            pending[k] = (c, r)
    total = len(pending)
    reused = len(done)
    guard = (InvalidReplies(judge.endpoint, judge.max_invalid, what="case")
             if judge.endpoint else None)
    if progress:
        progress(judge.name, 0, total)
    items = [(k, c, r) for k, (c, r) in pending.items()]

    def commit(k: str, c: Judged, r: Request, v: Verdict, timing: dict[str, Any],
               rows: list[CacheRow] | None = None) -> None:
        """One reply of an endpoint judge (or an offline one on an engine): a reusable
        verdict is committed now (or joins ``rows``, committed together); an invalid reply
        is not cached, only noted, and the next run asks again."""
        repeat = False
        if judge.reusable(v):
            if rows is None:
                cache.put(k, judge=judge.name, case_id=c.case_id, request=r, verdict=v,
                          timing=timing)
            else:
                rows.append((k, judge.name, c.case_id, r, v, timing))
        else:
            repeat = cache.failed(k)
            cache.put_failure(k, judge=judge.name, case_id=c.case_id,
                              reason=v.reason or "invalid reply")
        done[k] = (v, timing, c.case_id)
        if guard is not None:
            _watch(guard, judge, c, v, repeat)

    engine = current_engine()
    if engine.name != "local" and items:
        n_done = 0
        for batch in _ask_on_engine(engine, judge, items, cache.shard_dir):
            rows: list[CacheRow] = []
            for k, c, r, v, timing in batch:
                commit(k, c, r, v, timing, rows)
            cache.put_many(rows)
            shard_path(cache.shard_dir, [k for k, *_ in batch]).unlink(missing_ok=True)
            n_done += len(batch)
            if progress:
                progress(judge.name, n_done, total)
    elif judge.batch_size:
        n_done = 0
        for chunk in _chunks(items, judge.batch_size):
            started = datetime.now(UTC).isoformat(timespec="milliseconds")
            t = time.monotonic()
            verdicts = judge.ask_many([r for _, _, r in chunk])
            each = (time.monotonic() - t) / max(len(chunk), 1)
            rows: list[CacheRow] = []
            for (k, c, r), v in zip(chunk, verdicts, strict=True):
                timing = {"started": started, "seconds": round(each, 6),
                          "attempts": v.attempts, "batch": len(chunk)}
                if judge.reusable(v):
                    rows.append((k, judge.name, c.case_id, r, v, timing))
                done[k] = (v, timing, c.case_id)
                if guard is not None:
                    _watch(guard, judge, c, v)
            cache.put_many(rows)
            n_done += len(chunk)
            if progress:
                progress(judge.name, n_done, total)
    elif not judge.endpoint:
        # an offline judge asked one request at a time: in this thread, its verdicts
        # committed OFFLINE_COMMIT at a time (a verdict lost to a kill is cheap to compute
        # again; one transaction per verdict made the disk's syncs the whole cost)
        rows = []
        for n_done, (k, c, r) in enumerate(items, 1):
            started = datetime.now(UTC).isoformat(timespec="milliseconds")
            t = time.monotonic()
            v = judge.ask(r)
            timing = {"started": started, "seconds": round(time.monotonic() - t, 4),
                      "attempts": v.attempts}
            commit(k, c, r, v, timing, rows)
            if len(rows) >= OFFLINE_COMMIT:
                cache.put_many(rows)
                rows = []
            if progress:
                progress(judge.name, n_done, total)
        cache.put_many(rows)
    else:
        for n_done, (k, c, r, v, started, seconds) in enumerate(_run_threaded(judge, items),
                                                                1):
            timing = {"started": started, "seconds": round(seconds, 4), "attempts": v.attempts}
            commit(k, c, r, v, timing)  # committed before the next is recorded
            if progress:
                progress(judge.name, n_done, total)
    if guard is not None:
        guard.finish(reused=reused)
        w = guard.warning()
        if w is not None:
            st.warnings["invalid_reply"] = w
    if judge.structured is not None:
        st.response_format = judge.structured.report()
        w = judge.structured.warning()
        if w is not None:
            st.warnings["response_format"] = w
    st.asked = total
    st.requests = len(done)

    records: list[LabelRecord] = []
    for c, k in zip(cases, keys, strict=True):
        v, timing, first_id = done[k]
        timing = dict(timing)
        if k not in pending:
            st.cached += 1
            timing["from_cache"] = True
        elif first_id != c.case_id:
            timing["reused_from"] = first_id
            st.reused += 1
        rec = _record(c, judge, settings, k, v, timing)
        records.append(rec)
        if v.scored:
            st.scored += 1
        else:
            st.unscored += 1
            reason = (v.reason or "").split(":")[0][:80]
            st.unscored_reasons[reason] = st.unscored_reasons.get(reason, 0) + 1
    st.seconds = time.monotonic() - t0
    return records, st


def _watch(guard: InvalidReplies, judge: Judge, case: Judged, v: Verdict,
           repeat: bool = False) -> None:
    """Count one reply of a network judge (raises ``error[endpoint]`` past the limit)."""
    if judge.reusable(v):
        guard.add(True)
    else:
        guard.add(False, where=case.case_id, reason=v.reason or "invalid reply",
                  body=v.raw_response, query_id=case.query_id or None, repeat=repeat)


@dataclass(frozen=True)
class _Task:
    """One engine task: a judge (its spec, or the judge itself when it has none) and the
    requests to ask, as (request key, case id, request)."""

    judge: Any
    name: str
    items: tuple[tuple[str, str, Request], ...]
    shard: str


_WORKER_JUDGES: dict[str, Judge] = {}


def _worker_judge(judge: Any) -> Judge:
    """The judge of a task, built once per worker process from its spec."""
    if isinstance(judge, Judge):
        return judge

    key = json.dumps(judge, sort_keys=True, default=str, allow_nan=False)
    if key not in _WORKER_JUDGES:
        _WORKER_JUDGES[key] = make_judge(judge)
    return _WORKER_JUDGES[key]


def _judge_task(task: _Task) -> tuple[list[tuple[Verdict, dict[str, Any]]],
                                      dict[str, Any] | None]:
    """Ask a task's requests on a worker: what its shard holds is not asked again, each
    new verdict that may be cached is appended to the shard (fsynced) before the next.
    Returns (verdict, timing) per request, in order, and the structured-output modes the
    worker's judge settled on and was refused (its report, refusals of this task only)."""
    judge = _worker_judge(task.judge)
    shard = Path(task.shard)
    have = _read_shard(shard)
    before = len(judge.structured.refusals) if judge.structured is not None else 0
    out: dict[str, tuple[Verdict, dict[str, Any]]] = {
        k: (_verdict_from_json(have[k]["verdict"]), have[k]["timing"])
        for k, _, _ in task.items if k in have}
    todo = [x for x in task.items if x[0] not in out]

    def keep(fh: Any, k: str, cid: str, r: Request, v: Verdict, timing: dict[str, Any]) -> None:
        out[k] = (v, timing)
        if judge.reusable(v):
            append_shard(fh, {"key": k, "judge": task.name, "case_id": cid,
                              "request": redact(r), "verdict": redact(_verdict_to_json(v)),
                              "timing": timing})

    if todo:
        shard.parent.mkdir(parents=True, exist_ok=True)
        with open(shard, "a", encoding="utf-8") as fh:
            if judge.batch_size:
                started = datetime.now(UTC).isoformat(timespec="milliseconds")
                t = time.monotonic()
                verdicts = judge.ask_many([r for _, _, r in todo])
                each = (time.monotonic() - t) / len(todo)
                for (k, cid, r), v in zip(todo, verdicts, strict=True):
                    keep(fh, k, cid, r, v, {"started": started, "seconds": round(each, 6),
                                            "attempts": v.attempts, "batch": len(todo)})
            else:
                for k, cid, r in todo:
                    started = datetime.now(UTC).isoformat(timespec="milliseconds")
                    t = time.monotonic()
                    v = judge.ask(r)
                    keep(fh, k, cid, r, v, {"started": started,
                                            "seconds": round(time.monotonic() - t, 4),
                                            "attempts": v.attempts})
    report = None
    if judge.structured is not None:
        report = judge.structured.report()
        report["refusals"] = report["refusals"][before:]
    return [out[k] for k, _, _ in task.items], report


def _ask_on_engine(engine: Any, judge: Judge, items: list[tuple[str, Judged, Request]],
                   shard_dir: Path,
                   ) -> Iterator[list[tuple[str, Judged, Request, Verdict, dict[str, Any]]]]:
    """The requests of ``items`` as engine tasks (module docstring); yields each finished
    task's (key, case, request, verdict, timing) in the caller's thread."""
    # a network judge: at most its concurrency in flight, each task asking up to 8 requests
    # one after another (enough tasks to keep every slot busy); an offline judge: batches of
    # its batch size (or single requests), every task at once
    if judge.endpoint:
        window = max(1, judge.concurrency)
        groups = endpoint_tasks(items, window)
    else:
        window, size = len(items), judge.batch_size or 1
        groups = [items[i:i + size] for i in range(0, len(items), size)]
    tasks = [_Task(judge.spec if judge.spec is not None else judge, judge.name,
                   tuple((k, c.case_id, r) for k, c, r in g),
                   str(shard_path(shard_dir, [k for k, _, _ in g]))) for g in groups]
    for i, (answers, report) in engine.imap_unordered(_judge_task, tasks, window):
        if report is not None and judge.structured is not None:
            judge.structured.absorb(report)
        yield [(k, c, r, v, timing)
               for (k, c, r), (v, timing) in zip(groups[i], answers, strict=True)]


def _run_threaded(judge: Judge, items: list[tuple[str, Judged, Request]],
                  ) -> Iterator[tuple[str, Judged, Request, Verdict, str, float]]:
    """Ask the requests of ``items`` with up to ``judge.concurrency`` in flight; yields each
    result as it finishes, in this (the caller's) thread, so the caller alone writes the
    cache. A judge that raises (a configuration error) stops the run: the requests not yet
    started are cancelled."""
    def call(r: Request) -> tuple[Verdict, str, float]:
        started = datetime.now(UTC).isoformat(timespec="milliseconds")
        t = time.monotonic()
        v = judge.ask(r)
        return v, started, time.monotonic() - t

    width = max(1, judge.concurrency)
    queue = iter(items)
    in_flight: dict[Future[tuple[Verdict, str, float]], tuple[str, Judged, Request]] = {}
    with ThreadPoolExecutor(max_workers=width, thread_name_prefix=f"judge-{judge.name}") as ex:
        try:
            while True:
                while len(in_flight) < width:
                    nxt = next(queue, None)
                    if nxt is None:
                        break
                    in_flight[ex.submit(call, nxt[2])] = nxt
                if not in_flight:
                    break
                finished, _ = wait(in_flight, return_when=FIRST_COMPLETED)
                for fut in finished:
                    k, c, r = in_flight.pop(fut)
                    v, started, seconds = fut.result()
                    yield k, c, r, v, started, seconds
        except BaseException:
            for fut in in_flight:
                fut.cancel()
            raise
