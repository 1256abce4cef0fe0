"""Running judges over cases with a crash-safe verdict cache.

:func:`run_judges` asks every judge about every case and returns one
:class:`~tiap.audit.labels.LabelRecord` per (judge, case). Each finished verdict is committed
to a :class:`VerdictCache` (SQLite in WAL mode, ``synchronous=FULL``: a committed verdict
survives the process being killed at any moment, ``kill -9`` included) before the next is
recorded. A run started again with the same cache asks only for what is not in it:

- the cache key is (judge key, case key): the hash of the judge's settings and the hash of
  the case fields the judge reads (:meth:`Case.judged_fields`). Changing the model, the
  template or a threshold, or the case's text, asks again; renaming a case does not;
- two cases with identical judged fields are asked once per judge and share the verdict
  (the second one's ``timing.reused_from`` names the first);
- ``unscored`` verdicts are finished verdicts too (an unparseable reply at temperature 0
  would come back the same); ``retry_unscored=True`` asks for them again.

Network judges run ``judge.concurrency`` cases at once in threads; only the calling thread
writes to the cache. Offline judges get lists of ``judge.batch_size`` cases.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tiap.audit.cases import Case
from tiap.audit.judges import Judge
from tiap.audit.labels import UNSCORED, LabelRecord, Verdict, canonical_json
from tiap.errors import TiapError

__all__ = ["JudgeRun", "VerdictCache", "case_key", "run_judges"]

Progress = Callable[[str, int, int], None]


def case_key(case: Case) -> str:
    """Hash of the fields a judge reads (the case half of a verdict's cache key)."""
    return hashlib.sha256(canonical_json(case.judged_fields()).encode()).hexdigest()[:16]


class VerdictCache:
    """Finished verdicts by (judge key, case key), in SQLite (WAL, one commit per verdict)."""

    SCHEMA = 1

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS verdicts (judge_key TEXT NOT NULL, case_key TEXT "
                "NOT NULL, judge TEXT NOT NULL, case_id TEXT NOT NULL, label TEXT NOT NULL, "
                "verdict TEXT NOT NULL, timing TEXT NOT NULL, created TEXT NOT NULL, "
                "PRIMARY KEY (judge_key, case_key))")
        except sqlite3.DatabaseError as exc:
            raise TiapError(f"cannot open the verdict cache ({exc})", file=self.path) from None

    def get(self, judge_key: str, ckey: str) -> tuple[Verdict, dict[str, Any], str] | None:
        """(verdict, timing, case id it was asked for) or ``None``."""
        row = self._db.execute(
            "SELECT verdict, timing, case_id FROM verdicts WHERE judge_key=? AND case_key=?",
            (judge_key, ckey)).fetchone()
        if row is None:
            return None
        return _verdict_from_json(json.loads(row[0])), json.loads(row[1]), row[2]

    def put(self, judge_key: str, ckey: str, *, judge: str, case_id: str, verdict: Verdict,
            timing: dict[str, Any]) -> None:
        """Commit one verdict (durable when this returns)."""
        self._db.execute(
            "INSERT OR REPLACE INTO verdicts VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (judge_key, ckey, judge, case_id, verdict.label,
             json.dumps(_verdict_to_json(verdict), ensure_ascii=False),
             json.dumps(timing), datetime.now(UTC).isoformat(timespec="seconds")))

    def put_many(self, rows: Sequence[tuple[str, str, str, str, Verdict, dict[str, Any]]]) -> None:
        """Commit several verdicts in one transaction."""
        now = datetime.now(UTC).isoformat(timespec="seconds")
        with self._db:
            self._db.execute("BEGIN")
            self._db.executemany(
                "INSERT OR REPLACE INTO verdicts VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [(jk, ck, j, cid, v.label, json.dumps(_verdict_to_json(v), ensure_ascii=False),
                  json.dumps(t), now) for jk, ck, j, cid, v, t in rows])

    def case_ids(self, judge: str | None = None) -> set[str]:
        """Case ids with a committed verdict (of one judge, or of any)."""
        if judge is None:
            rows = self._db.execute("SELECT case_id FROM verdicts")
        else:
            rows = self._db.execute("SELECT case_id FROM verdicts WHERE judge=?", (judge,))
        return {r[0] for r in rows}

    def __len__(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM verdicts").fetchone()[0])

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> VerdictCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


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
    cached: int = 0
    asked: int = 0
    reused: int = 0
    scored: int = 0
    unscored: int = 0
    seconds: float = 0.0
    unscored_reasons: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"judge": self.judge, "cases": self.cases, "from_cache": self.cached,
                "asked": self.asked, "reused_within_run": self.reused,
                "scored": self.scored, "unscored": self.unscored,
                "unscored_reasons": dict(sorted(self.unscored_reasons.items())),
                "seconds": round(self.seconds, 3)}


@dataclass(frozen=True)
class JudgeRun:
    """Every (judge, case) label of a run, judges in the order given, cases in input order."""

    records: tuple[LabelRecord, ...]
    stats: tuple[JudgeStats, ...]
    judges: tuple[dict[str, Any], ...]  # settings of each judge


def _record(case: Case, judge: Judge, jkey: str, ckey: str, v: Verdict,
            timing: dict[str, Any]) -> LabelRecord:
    return LabelRecord(
        case_id=case.case_id, judge=judge.name, label=v.label, serving_label=v.serving_label,
        reason=v.reason, notes=v.notes, raw_response=v.raw_response, score=v.score,
        dataset=case.dataset, system=case.system, query_id=case.query_id, target=case.target,
        item_id=case.item_id, judge_key=jkey, case_key=ckey, settings=judge.settings(),
        timing=timing, response=v.response)


def _chunks(seq: Sequence[Any], n: int) -> Iterator[Sequence[Any]]:
    for i in range(0, len(seq), n):
        yield seq[i:i + n]


def run_judges(
    cases: Sequence[Case],
    judges: Sequence[Judge],
    cache: VerdictCache,
    *,
    retry_unscored: bool = False,
    progress: Progress | None = None,
) -> JudgeRun:
    """Judge every case with every judge, reusing and filling ``cache`` (module docstring)."""
    names = [j.name for j in judges]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise TiapError(f"two judges are named {', '.join(map(repr, dupes))}; give one of "
                        "them another name, e.g. openai(model=\"...\", name=\"...\")")
    ids = [c.case_id for c in cases]
    if len(set(ids)) != len(ids):
        raise TiapError("case ids must be unique")
    records: list[LabelRecord] = []
    all_stats: list[JudgeStats] = []
    for judge in judges:
        recs, st = _run_one(judge, cases, cache, retry_unscored, progress)
        records.extend(recs)
        all_stats.append(st)
    return JudgeRun(records=tuple(records), stats=tuple(all_stats),
                    judges=tuple(j.settings() for j in judges))


def _run_one(judge: Judge, cases: Sequence[Case], cache: VerdictCache, retry_unscored: bool,
             progress: Progress | None) -> tuple[list[LabelRecord], JudgeStats]:
    """One judge over every case: cached verdicts reused, the others asked and committed."""
    jkey = judge.key
    st = JudgeStats(judge.name, cases=len(cases))
    t0 = time.monotonic()
    ckeys = [case_key(c) for c in cases]
    done: dict[str, tuple[Verdict, dict[str, Any], str]] = {}
    pending: dict[str, Case] = {}  # case key -> the first case asking for it
    for c, ck in zip(cases, ckeys, strict=True):
        if ck in done or ck in pending:
            continue
        hit = cache.get(jkey, ck)
        if hit is not None and not (retry_unscored and hit[0].label == UNSCORED):
            done[ck] = hit
        else:
            pending[ck] = c
    total = len(pending)
    if progress:
        progress(judge.name, 0, total)
    items = list(pending.items())
    if judge.batch_size:
        n_done = 0
        for chunk in _chunks(items, judge.batch_size):
            started = datetime.now(UTC).isoformat(timespec="milliseconds")
            t = time.monotonic()
            verdicts = judge.judge_many([c for _, c in chunk])
            each = (time.monotonic() - t) / max(len(chunk), 1)
            rows = []
            for (ck, c), v in zip(chunk, verdicts, strict=True):
                timing = {"started": started, "seconds": round(each, 6),
                          "attempts": v.attempts, "batch": len(chunk)}
                rows.append((jkey, ck, judge.name, c.case_id, v, timing))
                done[ck] = (v, timing, c.case_id)
            cache.put_many(rows)
            n_done += len(chunk)
            if progress:
                progress(judge.name, n_done, total)
    else:
        for n_done, (ck, c, v, started, seconds) in enumerate(_run_threaded(judge, items), 1):
            timing = {"started": started, "seconds": round(seconds, 4), "attempts": v.attempts}
            cache.put(jkey, ck, judge=judge.name, case_id=c.case_id, verdict=v, timing=timing)
            done[ck] = (v, timing, c.case_id)
            if progress:
                progress(judge.name, n_done, total)
    st.asked = total

    records: list[LabelRecord] = []
    for c, ck in zip(cases, ckeys, strict=True):
        v, timing, first_id = done[ck]
        timing = dict(timing)
        if ck not in pending:
            st.cached += 1
            timing["from_cache"] = True
        elif first_id != c.case_id:
            timing["reused_from"] = first_id
            st.reused += 1
        rec = _record(c, judge, jkey, ck, v, timing)
        records.append(rec)
        if rec.scored:
            st.scored += 1
        else:
            st.unscored += 1
            reason = (v.reason or "").split(":")[0][:80]
            st.unscored_reasons[reason] = st.unscored_reasons.get(reason, 0) + 1
    st.seconds = time.monotonic() - t0
    return records, st


def _run_threaded(judge: Judge, items: list[tuple[str, Case]],
                  ) -> Iterator[tuple[str, Case, Verdict, str, float]]:
    """Judge ``items`` with up to ``judge.concurrency`` in flight; yields each result as it
    finishes, in this (the caller's) thread, so the caller alone writes the cache. A judge
    that raises (a configuration error) stops the run: the requests not yet started are
    cancelled."""
    def call(c: Case) -> tuple[Verdict, str, float]:
        started = datetime.now(UTC).isoformat(timespec="milliseconds")
        t = time.monotonic()
        v = judge.judge(c)
        return v, started, time.monotonic() - t

    width = max(1, judge.concurrency)
    queue = iter(items)
    in_flight: dict[Future[tuple[Verdict, str, float]], tuple[str, Case]] = {}
    with ThreadPoolExecutor(max_workers=width, thread_name_prefix=f"judge-{judge.name}") as ex:
        try:
            while True:
                while len(in_flight) < width:
                    nxt = next(queue, None)
                    if nxt is None:
                        break
                    in_flight[ex.submit(call, nxt[1])] = nxt
                if not in_flight:
                    break
                finished, _ = wait(in_flight, return_when=FIRST_COMPLETED)
                for fut in finished:
                    ck, c = in_flight.pop(fut)
                    v, started, seconds = fut.result()
                    yield ck, c, v, started, seconds
        except BaseException:
            for fut in in_flight:
                fut.cancel()
            raise
