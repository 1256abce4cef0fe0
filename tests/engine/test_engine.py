"""The engines: a Ray run of Stage III writes the same bytes as a local one, and a Ray worker
that dies mid-task has its task retried, every item computed once in the results. Ray runs
on a local instance this test starts (two CPUs), no cluster."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tiap.audit.judges import LexicalJudge
from tiap.cli.main import main
from tiap.engine import LocalEngine, RayEngine, make_engine, use_engine
from tiap.errors import TiapError

ray = pytest.importorskip("ray")
# this module's functions travel by value: Ray's workers cannot import a test module
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


@pytest.fixture(scope="module")
def engine() -> RayEngine:
    eng = RayEngine(num_cpus=2)
    yield eng
    eng.close()


def _square(x: int) -> int:
    return x * x


def _dies_once(args: tuple[int, str]) -> int:
    """Kill this worker the first time item 3 is seen (a marker file says it was)."""
    x, marker = args
    if x == 3 and not os.path.exists(marker):
        Path(marker).write_text("died\n")
        os._exit(1)
    with open(marker + ".log", "a") as fh:  # every completed item, in completion order
        fh.write(f"{x}\n")
    return x * 10


def test_map_keeps_order_and_survives_a_dead_worker(engine: RayEngine, tmp_path: Path) -> None:
    assert engine.map(_square, list(range(20))) == [x * x for x in range(20)]
    assert LocalEngine().map(_square, [3, 1]) == [9, 1]
    marker = str(tmp_path / "marker")
    got = engine.map(_dies_once, [(x, marker) for x in range(6)])
    assert got == [0, 10, 20, 30, 40, 50]  # item 3's worker died; its task ran again
    assert Path(marker).read_text() == "died\n"
    done = sorted(int(x) for x in Path(marker + ".log").read_text().split())
    assert done == [0, 1, 2, 3, 4, 5]  # every item completed exactly once


def test_unknown_engine_is_an_error() -> None:
    with pytest.raises(TiapError, match="unknown engine 'spark'"):
        make_engine("spark")


def test_sensitivity_on_ray_writes_the_same_bytes(engine: RayEngine, tmp_path: Path) -> None:
    """Three systems, three targets, 40 queries with varied per-query values (rescored from
    a made-up store): Stage III locally and on Ray, every CSV byte for byte."""
    items, queries, runs = [], [], {}
    for q in range(40):
        queries.append({"query_id": f"q{q}", "question": "?", "category": f"c{q % 3}",
                        "evidence": [f"u{q}", f"v{q}"]})
        for u in (f"u{q}", f"v{q}"):
            items.append({"item_id": f"t-{u}", "kind": "raw", "sources": [u]})
            items.append({"item_id": f"f-{u}", "kind": "fact", "sources": [u]})
    for s in range(3):
        runs[f"s{s}"] = [{"query_id": f"q{q}", "ranking": [
            i["item_id"] for j, i in enumerate(items) if (j + q * (s + 1)) % 7 < 2][:12]}
            for q in range(40)]
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items))
    (tmp_path / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    args = ["rescore", "--items", str(tmp_path / "items.jsonl"), "--queries",
            str(tmp_path / "queries.jsonl"), "--measures", "nDCG@10,R@10,Success@5",
            "--out", str(tmp_path / "r")]
    for s, rows in runs.items():
        (tmp_path / f"{s}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        args += ["--run", f"{s}={tmp_path / f'{s}.jsonl'}"]
    assert main(args) == 0
    common = ["sensitivity", str(tmp_path / "r"), "--resamples", "2000",
              "--configs", "g=s0,s1,s2"]
    assert main([*common, "--out", str(tmp_path / "local")]) == 0
    with use_engine(engine):  # the command makes its own engine: Ray is already up
        assert main([*common, "--out", str(tmp_path / "ray"), "--engine", "ray"]) == 0
    local = sorted(p.name for p in (tmp_path / "local").glob("*.csv"))
    assert len(local) > 10
    for name in local:
        assert (tmp_path / "ray" / name).read_bytes() == (tmp_path / "local" / name).read_bytes(), name


def test_audit_run_on_ray_writes_the_same_bytes(engine: RayEngine, data_dir: Path,
                                                tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The main job on LoCoMo conv-26 with --engine ray, rescoring in query shards of 50
    (each run's queries in several tasks): its stores, its traces and TREC runs, and
    every CSV of its rescoring, audit and Stage III are byte-identical to the local
    engine's, which scores each run whole."""
    base = ["audit-run", "configs/locomo.toml", "--collections", "conv-26", "--resamples",
            "2000", "--data", str(data_dir)]
    root = Path(__file__).resolve().parents[2]
    monkeypatch.chdir(root)  # the config path is relative to the checkout
    assert main([*base, "--out", str(tmp_path / "local")]) == 0
    with use_engine(engine):
        assert main([*base, "--out", str(tmp_path / "ray"), "--engine", "ray",
                     "--query-shard", "50"]) == 0
    local = sorted(p.relative_to(tmp_path / "local")
                   for p in (tmp_path / "local").rglob("*")
                   if p.suffix in (".csv", ".trec") or p.name == "items.jsonl"
                   or p.parent.name == "runs")  # (not labels.jsonl: it holds timings)
    assert len(local) > 20
    assert Path("locomo/stores/f5/items.jsonl") in local  # built one task per collection
    assert Path("locomo/runs/f5-bm25.jsonl") in local  # ranked one task per collection
    for rel in local:
        a, b = ((tmp_path / side / rel).read_bytes() for side in ("ray", "local"))
        if rel.parent.name == "runs" and rel.suffix == ".jsonl":
            # a trace's header names its input paths (two output folders here): its rankings
            a, b = a.split(b"\n", 1)[1], b.split(b"\n", 1)[1]
        assert a == b, rel


def test_qrels_rescoring_in_query_shards_on_ray_writes_the_same_bytes(
        engine: RayEngine, tmp_path: Path) -> None:
    """`tiap rescore --qrels` of two runs: a task per run on Ray, shards of 7 queries on Ray
    (12 tasks), and whole here: every CSV byte for byte."""
    import random

    rng = random.Random(3)
    args = ["rescore", "--measures", "nDCG@10,R@10,RR@10,Success@1,P@5", "--credit", "set"]
    for name in ("a", "b"):
        lines = []
        for q in range(40):
            docs = rng.sample(range(200), rng.choice([1, 5, 30, 70]))
            lines += [f"q{q} Q0 d{d} {r} {len(docs) - r} {name}\n"
                      for r, d in enumerate(docs, 1)]
        (tmp_path / f"{name}.trec").write_text("".join(lines))
        args += ["--run", f"{name}={tmp_path / f'{name}.trec'}"]
    for t in ("t0", "t1"):
        rows = [f"q{q} 0 d{d} {rng.randint(0, 3)}\n" for q in range(40) if rng.random() > 0.1
                for d in rng.sample(range(200), rng.randint(1, 12))]
        (tmp_path / f"{t}.qrels").write_text("".join(rows))
        args += ["--qrels", f"{t}={tmp_path / f'{t}.qrels'}"]
    assert main([*args, "--out", str(tmp_path / "local")]) == 0
    with use_engine(engine):
        assert main([*args, "--out", str(tmp_path / "ray"), "--engine", "ray"]) == 0
        assert main([*args, "--out", str(tmp_path / "shards"), "--engine", "ray",
                     "--query-shard", "7"]) == 0
    local = sorted(p.name for p in (tmp_path / "local").glob("*.csv"))
    assert "per_query.csv" in local and "summary.csv" in local
    for side in ("ray", "shards"):
        for name in local:
            assert (tmp_path / side / name).read_bytes() == (tmp_path / "local" / name).read_bytes(), (side, name)


def test_ray_keeps_the_commands_signal_handlers() -> None:
    """ray.init installs SIGTERM and SIGINT handlers: the engine puts the previous back (the
    engine above is up already, so a second instance is not started: checked on a fresh
    init in a subprocess)."""
    import subprocess

    # (what SIGINT was depends on the parent: a pytest-xdist worker's children ignore it)
    code = ("import signal; from tiap.engine import RayEngine; "
            "term, intr = signal.getsignal(signal.SIGTERM), signal.getsignal(signal.SIGINT); "
            "signal.signal(signal.SIGTERM, lambda *a: None); "
            "term = signal.getsignal(signal.SIGTERM); e = RayEngine(num_cpus=1); "
            "assert signal.getsignal(signal.SIGTERM) is term, signal.getsignal(signal.SIGTERM); "
            "assert signal.getsignal(signal.SIGINT) is intr, signal.getsignal(signal.SIGINT); "
            "e.close()")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]


# -- judging on an engine ------------------------------------------------------------------

class _DyingJudge(LexicalJudge):
    """The lexical judge asked one request at a time, as an endpoint judge is (two tasks in
    flight), logging every request it answers; the worker about to ask ``victim`` dies, once
    (a marker file says it did)."""

    batch_size = None
    endpoint = "test://dying-judge"
    concurrency = 2

    def __init__(self, log: str, victim: str) -> None:
        super().__init__(name="lexical")
        self.log, self.victim = log, victim

    def ask(self, request: dict) -> Any:
        from tiap.audit.judges import request_key

        key = request_key(request)
        if key == self.victim and not os.path.exists(self.log + ".died"):
            Path(self.log + ".died").write_text("died\n")
            os._exit(1)
        with open(self.log, "a") as fh:
            fh.write(key + "\n")
        return super().ask(request)


def _paper_cases(data_dir: Path, n: int) -> list:
    from tiap.audit.paper import read_paper_cases

    cases = read_paper_cases(data_dir / "mtel-mem" / "semantic_audit" / "judged_cases.csv")
    seen, out = set(), []
    for c in cases:  # distinct requests, so that each is asked
        key = (c.answer, c.item_text)
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out[:n]


def test_judge_on_ray_a_killed_worker_repeats_no_request(engine: RayEngine, data_dir: Path,
                                                         tmp_path: Path) -> None:
    """12 real cases of the paper, two tasks of six requests, two in flight: the worker of
    one dies before its third answer; Ray runs the task again, which reads the two verdicts
    its shard holds and asks the other four. Every request is asked once, every verdict is
    in the cache once, no shard is left, and the labels are the local run's."""
    from tiap.audit.judges import request_key
    from tiap.audit.run import VerdictCache, run_judges

    cases = _paper_cases(data_dir, 12)
    local = run_judges(cases, [LexicalJudge(name="lexical")],
                       VerdictCache(tmp_path / "local.sqlite"))
    keys = [request_key(LexicalJudge().request(c)) for c in cases]
    assert len(set(keys)) == 12
    log = str(tmp_path / "asked.log")
    judge = _DyingJudge(log, keys[2])  # the third request of the first task
    cache = VerdictCache(tmp_path / "ray.sqlite")
    with use_engine(engine):
        run = run_judges(cases, [judge], cache)
    assert Path(log + ".died").read_text() == "died\n"  # a worker did die
    asked = Path(log).read_text().split()
    # the victim's first two requests were asked before it died, and not again
    assert sorted(asked) == sorted(keys)
    assert len(cache) == 12 and cache.case_ids() == {c.case_id for c in cases}
    assert not list(cache.shard_dir.glob("*.jsonl"))
    assert [(r.case_id, r.label) for r in run.records] == [
        (r.case_id, r.label) for r in local.records]
    assert run.stats[0].asked == 12 and run.stats[0].cached == 0


def test_a_killed_drivers_shards_are_merged_not_asked_again(data_dir: Path,
                                                            tmp_path: Path) -> None:
    """The shard a task wrote before its driver was killed: the next run (here local) puts
    its verdicts in the cache and asks only for the rest."""
    from tiap.audit.judges import request_key
    from tiap.audit.run import VerdictCache, _judge_task, _Task, run_judges
    from tiap.io import shard_path

    cases = _paper_cases(data_dir, 5)
    judge = LexicalJudge(name="lexical")
    items = [(request_key(judge.request(c)), c.case_id, judge.request(c)) for c in cases[:3]]
    cache = VerdictCache(tmp_path / "cache.sqlite")
    shard = shard_path(cache.shard_dir, [k for k, _, _ in items])
    answers, _ = _judge_task(_Task(judge, "lexical", tuple(items), str(shard)))
    assert len(shard.read_text().splitlines()) == 3
    with open(shard, "a") as fh:  # the line being written when the driver died
        fh.write('{"key": "cut')
    run = run_judges(cases, [judge], cache)
    assert not shard.exists()
    (st,) = run.stats
    assert (st.cached, st.asked) == (3, 2)
    assert [r.label for r in run.records[:3]] == [v.label for v, _ in answers]


# -- the llm parser on an engine -------------------------------------------------------------

def _dying_parser_class() -> type:
    from tiap.memory.llm_parser import LlmParser

    class DyingParser(LlmParser):
        """The llm parser logging every turn it asks (request key and reply status); the
        worker about to ask ``victim`` dies, once (a marker file says it did)."""

        def __init__(self, *, log: str, victim: str, **kw: Any) -> None:
            super().__init__(**kw)
            self._args = {**self._args, "log": log, "victim": victim}
            self.log, self.victim = log, victim

        def _ask(self, messages: list) -> Any:
            key = self.key(messages)
            if key == self.victim and not os.path.exists(self.log + ".died"):
                Path(self.log + ".died").write_text("died\n")
                os._exit(1)
            res = super()._ask(messages)
            with open(self.log, "a") as fh:
                fh.write(f"{key} {res.status}\n")
            return res

    return DyingParser


def _first_turns(data_dir: Path, n: int) -> Any:
    from dataclasses import replace

    from tiap.datasets import load
    from tiap.datasets.base import Bundle, InlineDataset

    conv = next(iter(load("locomo", data_dir).bundles()))
    turns = conv.turns[:n]
    return InlineDataset([Bundle(collection=replace(conv.collection, n_turns=n),
                                 sessions=conv.sessions[:1], turns=turns, queries=(),
                                 memories=())])


def _llm_args(local_llm: Any, cache: Path) -> dict[str, Any]:
    return {"base_url": local_llm.base_url, "model": local_llm.model, "max_facts": 3,
            "api_key_env": "OPENAI_API_KEY", "temperature": 0.0, "seed": 1337,
            "timeout": 300.0, "max_retries": 2, "json_retries": 0, "backoff": 0.1,
            "concurrency": 2, "context_turns": 3, "context_chars": 400,
            "max_turn_chars": 6000, "cache": cache, "max_invalid": 1.0,
            "max_tokens": 128}


def test_llm_parser_on_ray_a_killed_worker_repeats_no_turn(
        engine: RayEngine, local_llm: Any, data_dir: Path, tmp_path: Path) -> None:
    """Six real LoCoMo turns parsed by SmolLM2 on llama.cpp through two Ray tasks of three
    (two in flight): the worker of the first dies before its second turn; Ray runs the task
    again, which takes the reply its shard holds and asks the other two. Every turn is
    asked once (a second time only if its first reply was invalid, which is never cached),
    the cache holds every valid turn, no shard is left, and a local build from that cache
    asks only the invalid turns again and writes the same items for every other turn."""
    from tiap.memory import build_store
    from tiap.memory.build import ITEMS_FILE
    from tiap.memory.llm_parser import build_messages
    from tiap.memory.parsers import turn_contexts

    ds = _first_turns(data_dir, 6)
    cache = tmp_path / "llm.sqlite"
    log = str(tmp_path / "asked.log")
    cls = _dying_parser_class()
    probe = cls(log=log, victim="", **_llm_args(local_llm, cache))
    (bundle,) = list(ds.bundles())
    keys = [probe.key(build_messages(c, 3)) for c in turn_contexts(bundle, 3)]
    probe.close()
    assert len(set(keys)) == 6
    parser = cls(log=log, victim=keys[1], **_llm_args(local_llm, cache))
    with use_engine(engine):
        ray_run = build_store(ds, parser, tmp_path / "ray", store="s")
    assert Path(log + ".died").read_text() == "died\n"  # a worker did die
    asked = [line.split() for line in Path(log).read_text().splitlines()]
    times = {k: sum(a == k for a, _ in asked) for k in keys}
    first = {}
    for k, status in asked:
        first.setdefault(k, status)
    for k in keys:  # asked once; twice only after an invalid reply, which is not cached
        assert times[k] == 1 or (times[k] == 2 and first[k] == "invalid"), (k, times[k])
    stats = ray_run.manifest["parser_stats"]
    assert stats["turns"] == 6 and stats["cache_hits"] == 0
    assert stats["requests"] == len(asked) - 1  # the turn already in the shard: not again
    assert stats["tasks_retried"] == 1  # the killed worker's task
    assert stats["response_format"]["used"] == "json_schema"
    shards = cache.with_name(cache.name + ".shards")
    assert not shards.exists()  # every shard committed, the folder removed
    local = build_store(ds, "llm", tmp_path / "local", parser_args=_llm_args(local_llm, cache),
                        store="s")
    lstats = local.manifest["parser_stats"]
    invalid = {k for k, status in asked if status == "invalid"} - {
        k for k, status in asked if status == "ok"}
    assert stats["turns_invalid"] == len(invalid)
    assert lstats["cache_hits"] == 6 - len(invalid)  # every valid turn was committed
    assert lstats["requests"] == len(invalid)  # and is not asked again
    bad = {uid for k, uid in zip(keys, [t.unit_id for t in bundle.turns], strict=True)
           if k in invalid}

    def rows(side: str) -> list[str]:  # the items of the turns with a valid reply
        lines = (tmp_path / side / ITEMS_FILE).read_text().splitlines()
        return [x for x in lines if json.loads(x)["sources"][0] not in bad]

    assert len(invalid) < 6 and rows("ray") == rows("local")


def test_a_killed_drivers_parser_shard_is_merged_not_asked_again(
        local_llm: Any, data_dir: Path, tmp_path: Path) -> None:
    """The shard a parsing task wrote before its driver was killed (its last line cut mid-
    write): the next build puts its turns in the cache before asking anything."""
    from tiap.io import shard_path
    from tiap.memory import build_store
    from tiap.memory.llm_parser import LlmParser, _parse_task, _ParseTask, build_messages
    from tiap.memory.parsers import turn_contexts

    ds = _first_turns(data_dir, 2)
    cache = tmp_path / "llm.sqlite"
    args = _llm_args(local_llm, cache)
    parser = LlmParser(**args)
    (bundle,) = list(ds.bundles())
    items = []
    for c in turn_contexts(bundle, 3):
        m = build_messages(c, 3)
        items.append((parser.key(m), c.turn.unit_id, m))
    shard = shard_path(parser.shard_dir, [k for k, _, _ in items])
    results, report, retried = _parse_task(_ParseTask((LlmParser, args), None, tuple(items),
                                                      str(shard)))
    assert not retried
    parser.close()
    assert report["used"] == "json_schema"
    valid = sum(r.status == "ok" for r in results)
    assert len(shard.read_text().splitlines()) == valid >= 1
    with open(shard, "a") as fh:  # the line being written when the driver died
        fh.write('{"key": "cut')
    res = build_store(ds, "llm", tmp_path / "store", parser_args=args)
    stats = res.manifest["parser_stats"]
    assert stats["cache_hits"] == valid and stats["requests"] == 2 - valid
    assert stats["tasks_retried"] == 0  # the shard was merged before any task ran
    assert not shard.exists() and not parser.shard_dir.exists()


# -- dense retrieval on an engine ------------------------------------------------------------

def _dying_encoder_class() -> type:
    from tiap.retrieval.encoders import SentenceTransformerEncoder

    class DyingEncoder(SentenceTransformerEncoder):
        """all-MiniLM-L6-v2 logging the first text of every batch it encodes; the worker
        about to encode a batch starting with ``victim`` dies, once (a marker says it did)."""

        def __init__(self, log: str, victim: str, **kw: Any) -> None:
            super().__init__(**kw)
            self.log, self.victim = log, victim

        def encode(self, texts: Any) -> Any:
            if texts[0] == self.victim and not os.path.exists(self.log + ".died"):
                Path(self.log + ".died").write_text("died\n")
                os._exit(1)
            with open(self.log, "a") as fh:
                fh.write(json.dumps(texts[0]) + "\n")
            return super().encode(texts)

    return DyingEncoder


def test_dense_retrieval_on_ray_is_the_local_run_and_a_killed_worker_repeats_no_batch(
        engine: RayEngine, data_dir: Path, tmp_path: Path) -> None:
    """The first 48 turns of LoCoMo conv-26 and their questions, dense retrieval with
    all-MiniLM-L6-v2 in batches of 8: locally, and on Ray (batches encoded by the workers,
    eight a task) with one worker killed before its second batch. The trace's rankings,
    the TREC run and every cached vector are the local run's, byte for byte; every batch was
    encoded once (the killed task's first batch came from its shard); no shard is left."""
    from tiap.datasets import load
    from tiap.memory.store import Item, write_items
    from tiap.retrieval import DenseRetriever, EmbeddingCache, retrieve
    from tiap.retrieval.cache import text_key
    from tiap.retrieval.encoders import SentenceTransformerEncoder

    bundle = next(load("locomo", data_dir).bundles())
    turns = bundle.turns[:48]
    units = {t.unit_id for t in turns}
    items = [Item(t.unit_id, "raw", (t.unit_id,), text=f"{t.speaker}: {t.text}",
                  collection=t.collection_id) for t in turns]
    items += [Item(m.item_id, m.kind, m.sources, text=m.text, collection=m.collection_id)
              for m in bundle.memories if m.sources and set(m.sources) <= units]
    queries = [q for q in bundle.queries if q.evidence and set(q.evidence) <= units]
    assert len(queries) >= 5
    (tmp_path / "store").mkdir()
    write_items(tmp_path / "store" / "items.jsonl", items)
    qpath = tmp_path / "queries.jsonl"
    qpath.write_text("".join(json.dumps(q.to_json()) + "\n" for q in queries))

    with EmbeddingCache(tmp_path / "local-cache") as cache:
        local = DenseRetriever(SentenceTransformerEncoder(batch_size=8), cache)
        retrieve(tmp_path / "store", qpath, local, tmp_path / "local.jsonl", depth=20)
    n_batches = -(-local.encoded // 8)
    assert n_batches > 8  # more than one task
    # the batch a local run encodes second: on Ray, the first task's second batch
    texts = {it.text for it in items} | {q.question for q in queries}
    order = sorted(texts, key=lambda t: (-len(t), text_key(t)))
    victim = order[8]
    log = str(tmp_path / "encoded.log")
    with EmbeddingCache(tmp_path / "ray-cache") as cache, use_engine(engine):
        ray_run = DenseRetriever(_dying_encoder_class()(log, victim, batch_size=8), cache)
        retrieve(tmp_path / "store", qpath, ray_run, tmp_path / "ray.jsonl", depth=20)
        assert ray_run.encoded == local.encoded
        assert cache.merge_from(tmp_path / "local-cache") == {
            "added": 0, "same": local.encoded, "differing": 0}
    assert Path(log + ".died").read_text() == "died\n"  # a worker did die
    firsts = [json.loads(x) for x in Path(log).read_text().splitlines()]
    assert sorted(firsts) == sorted(order[i] for i in range(0, len(order), 8))  # once each
    assert not (tmp_path / "ray-cache" / "shards").exists()
    for a, b in (("local.jsonl", "ray.jsonl"), ("local.trec", "ray.trec")):
        la, lb = ((tmp_path / x).read_text().split("\n") for x in (a, b))
        if a.endswith(".jsonl"):  # the header names the cache folder: the rankings
            la, lb = la[1:], lb[1:]
        assert la == lb, a
