"""A real Mem0 (mem0ai, embedded Qdrant, local MiniLM) fed through ``tiap mem0-run``, offline.

Expected values come from the data files and the fixtures, never from the harness: the turns
and queries of the LoCoMo slice are read from ``locomo10.json`` directly, and the derived
memories' lineage follows from how the turns were grouped into ``add()`` calls: a memory of a
call over several turns comes from one or more of them (partial lineage), a memory of a call
over one turn from that turn (exact).
"""

from __future__ import annotations

import csv
import importlib.util
import json
import math
import re
from collections import Counter
from pathlib import Path

import pytest

# Not imported here: the harness imports mem0 itself, after switching its telemetry off.
if importlib.util.find_spec("mem0") is None:
    pytest.skip("needs the mem0 extra (pip install -e '.[mem0]')", allow_module_level=True)

from mem0_fixtures import Mem0StandIn, inline_dataset, new_messages, no_network

from tiap.cli.main import main
from tiap.datasets.queryfile import read_queries
from tiap.errors import TiapError
from tiap.importers.mem0_harness import Mem0RunConfig, run_mem0
from tiap.memory.store import Uncertainty, read_items, read_store
from tiap.runs import read_run
from tiap.scoring.rescore import rescore

SESSIONS = ("session_1", "session_2")


def _locomo_slice(data_dir: Path) -> tuple[dict[str, str], set[str], int]:
    """conv-26's first two sessions straight from the file: unit id -> "Speaker: text", the
    ids of the questions whose evidence (plain D<s>:<t> ids) all lies there, and how many
    questions conv-26 has."""
    raw = json.loads((data_dir / "locomo" / "locomo10.json").read_text(encoding="utf-8"))
    conv = next(c for c in raw if c["sample_id"] == "conv-26")
    turns = {f"conv-26:{t['dia_id']}": f"{t['speaker']}: {t['text']}"
             for s in SESSIONS for t in conv["conversation"][s]}
    queries = set()
    for i, q in enumerate(conv["qa"]):
        ev = q.get("evidence") or []
        if ev and all(re.fullmatch(r"D[12]:\d+", e) and f"conv-26:{e}" in turns for e in ev):
            queries.add(f"conv-26:q{i}")
    return turns, queries, len(conv["qa"])


def test_locomo_slice_no_infer_then_rescore(data_dir: Path, tmp_path: Path, capsys) -> None:
    turns, query_ids, n_questions = _locomo_slice(data_dir)
    out = tmp_path / "mem0"
    with no_network() as attempts:
        rc = main(["mem0-run", "locomo", "--collections", "conv-26", "--sessions", "2",
                   "--out", str(out), "--data", str(data_dir)])
    assert rc == 0
    assert attempts == []  # Mem0 tried to reach nothing outside this machine
    # the questions the slice cannot answer are counted, not silently left out
    assert (f"conv-26: {n_questions - len(query_ids):,} queries not searched: their evidence "
            "lies beyond the first 2 session(s)") in " ".join(capsys.readouterr().err.split())

    items = read_items(out / "items.jsonl")
    # every turn fed became exactly one raw memory whose lineage is that turn
    assert len(items) == len(turns)
    assert all(i.kind == "raw" and len(i.sources) == 1 for i in items)
    assert {i.sources[0] for i in items} == set(turns)
    assert all(i.text == turns[i.sources[0]] for i in items)
    assert all(i.collection == "conv-26" for i in items)

    queries = read_queries(out / "queries.jsonl")
    assert {q.query_id for q in queries} == query_ids
    [run] = read_run(out / "run.jsonl")
    assert set(run.query_ids) == query_ids
    ids = {i.item_id for i in items}
    for r in run.rankings:
        assert set(r.item_ids) <= ids and 0 < r.depth <= 60
        assert r.scores is not None and list(r.scores) == sorted(r.scores, reverse=True)
    man = json.loads((out / "manifest.json").read_text())
    assert man["harness"]["mem0"]["telemetry"] is False
    assert man["harness"]["config"]["infer"] is False
    assert [Path(f["path"]).name for f in man["harness"]["dataset_files"]] == ["locomo10.json"]

    assert main(["rescore", "--items", str(out / "items.jsonl"), "--queries",
                 str(out / "queries.jsonl"), "--run", str(out / "run.jsonl"),
                 "--out", str(tmp_path / "rescore"), "--measures", "nDCG@60"]) == 0
    with open(tmp_path / "rescore" / "per_query.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    by = {(r["target"], r["query_id"]): r["value"] for r in rows}
    # a store of raw turns only: each family is the turn's raw memory, so Source = Raw for
    # every query, and no query has a Canonical group (undefined, never 0)
    for q in query_ids:
        assert by[("source", q)] == by[("raw", q)] != ""
        assert by.get(("canonical", q), "") == ""
    assert sum(float(by[("raw", q)]) > 0 for q in query_ids) > 0


# Five turns, windows of two: add() calls [1, 2], [3, 4], [5]; turn 3 yields no fact.
TURNS = [
    ("Caroline", "I went to a LGBTQ support group yesterday."),
    ("Melanie", "I ran a charity race for mental health last Saturday."),
    ("Caroline", "Hmm, okay. [nofact]"),
    ("Melanie", "I painted a sunrise over the lake."),
    ("Caroline", "I am researching adoption agencies."),
]
QUERIES = [("c1:q0", "What did Melanie run?", ("c1:D1:2",)),
           ("c1:q1", "What did Melanie paint?", ("c1:D1:4",))]


def _window(*units: str) -> Uncertainty:
    """A memory of an add() call over these turns: one or more of them."""
    return Uncertainty(possible=units, requires=(units,))


def test_infer_against_a_local_openai_stand_in(tmp_path: Path) -> None:
    ds = inline_dataset(TURNS, QUERIES)
    with Mem0StandIn() as server, no_network() as attempts:
        res = run_mem0(ds, tmp_path / "out", Mem0RunConfig(
            infer=True, window=2, llm_base_url=server.base_url, llm_model="stand-in",
            system="mem0-infer"))
    assert attempts == []
    assert len(server.requests) == 3  # one extraction request per add() call
    assert all(r["model"] == "stand-in" for r in server.requests)
    items = read_items(tmp_path / "out" / "items.jsonl")
    got = {i.text: (i.kind, i.sources, i.uncertain) for i in items}
    # the stand-in draws each fact from one turn, but Mem0 records only the call: a fact
    # of the call over D1:1 and D1:2 comes from one or both, and not from D1:3..5; the
    # call over D1:5 alone proves its fact's turn
    assert got == {
        "Noted: Caroline: I went to a LGBTQ support group yesterday.":
            ("mem0_fact", (), _window("c1:D1:1", "c1:D1:2")),
        "Noted: Melanie: I ran a charity race for mental health last Saturday.":
            ("mem0_fact", (), _window("c1:D1:1", "c1:D1:2")),
        "Noted: Melanie: I painted a sunrise over the lake.":
            ("mem0_fact", (), _window("c1:D1:3", "c1:D1:4")),
        "Noted: Caroline: I am researching adoption agencies.":
            ("mem0_fact", ("c1:D1:5",), None),
    }
    # what the harness put into Mem0's metadata, read back from the store's own listing
    metas = {m["memory"]: m["metadata"] for m in map(json.loads, (
        tmp_path / "out" / "mem0_memories.jsonl").read_text().splitlines())}
    assert metas["Noted: Melanie: I painted a sunrise over the lake."]["source_window"] == [
        "c1:D1:3", "c1:D1:4"]
    assert metas["Noted: Caroline: I am researching adoption agencies."]["source_ids"] == [
        "c1:D1:5"]
    assert res.imported.report.items_without_source == ()
    assert len(res.imported.report.partial_lineage_items) == 3
    [run] = read_run(tmp_path / "out" / "run.jsonl")
    assert run.system == "mem0-infer"
    # each search() call is timed: its latency reaches the run (cost.csv reads it)
    assert all(r.latency_ms is not None and r.latency_ms > 0 for r in run.rankings)
    # four memories in the store, all with a positive cosine to these questions? not assumed:
    # every ranked id must be a stored memory, and no id twice
    ids = {i.item_id for i in items}
    for r in run.rankings:
        assert set(r.item_ids) <= ids and len(set(r.item_ids)) == r.depth
    man = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert man["harness"]["config"]["window"] == 2
    assert "stand-in" in man["harness"]["mem0"]["llm"]

    # c1:q0, evidence D1:2 (Melanie's race). No memory certainly derives from D1:2: the two
    # facts of the (D1:1, D1:2) call may. Without them the query has no Source group (a
    # zero-target case); with them its group may exist, and its value is at most what the
    # first of them earns at its rank r, 1/log2(r + 1), and at least 0 (neither from D1:2).
    # c1:q1 (D1:4) likewise, with the painting fact of the (D1:3, D1:4) call.
    store = read_store(tmp_path / "out" / "items.jsonl")
    by_text = {i.text: i.item_id for i in store}
    first = {
        "c1:q0": {by_text["Noted: Caroline: I went to a LGBTQ support group yesterday."],
                  by_text["Noted: Melanie: I ran a charity race for mental health last "
                          "Saturday."]},
        "c1:q1": {by_text["Noted: Melanie: I painted a sunrise over the lake."]},
    }
    rs = rescore([run], read_queries(tmp_path / "out" / "queries.jsonl"), {None: store},
                 targets=["source"], measures="nDCG@60")
    lo, hi = rs.interval(run.system, "source", "nDCG@60")
    for i, qid in enumerate(rs.query_ids[run.system]):
        ranks = [k for k, x in enumerate(run.ranking(qid).item_ids, start=1) if x in first[qid]]
        assert lo[i] == 0.0
        assert hi[i] == pytest.approx(1 / math.log2(min(ranks) + 1) if ranks else 0.0)
    assert rs.possibly_empty[(run.system, "source")].all()


def test_infer_window_1_is_exact(tmp_path: Path) -> None:
    """--window 1: one add() per turn, so each fact's lineage is its call's one turn."""
    ds = inline_dataset(TURNS[:2], QUERIES[:1])
    with Mem0StandIn() as server, no_network() as attempts:
        res = run_mem0(ds, tmp_path / "out", Mem0RunConfig(
            infer=True, window=1, llm_base_url=server.base_url, llm_model="stand-in"))
    assert attempts == [] and len(server.requests) == 2
    got = {i.text: (i.sources, i.uncertain) for i in res.imported.items}
    assert got == {
        "Noted: Caroline: I went to a LGBTQ support group yesterday.": (("c1:D1:1",), None),
        "Noted: Melanie: I ran a charity race for mental health last Saturday.":
            (("c1:D1:2",), None),
    }
    assert res.imported.report.partial_lineage_items == ()


def test_a_reply_cut_by_the_cap_is_counted_not_taken_for_no_facts(tmp_path: Path) -> None:
    """Mem0 stores nothing when it cannot parse the reply, and returns as if the turn held
    no fact; the run tells the two apart and names the turn."""
    turns = [TURNS[0], ("Melanie", "I ran a charity race. [cut]"), TURNS[2]]
    ds = inline_dataset(turns, QUERIES[:1])
    with Mem0StandIn() as server, no_network():
        res = run_mem0(ds, tmp_path / "out", Mem0RunConfig(
            infer=True, window=1, llm_base_url=server.base_url, llm_model="stand-in",
            max_tokens=200))
    assert [r["max_tokens"] for r in server.requests] == [200, 200, 200]
    [done] = res.collections
    # turn 2's reply was cut; turn 3 truly has no fact and is not counted
    assert done["adds_unparsed"] == [["c1:D1:2"]]
    assert {i.sources for i in res.imported.items} == {("c1:D1:1",)}
    adds = [json.loads(line) for line in (tmp_path / "out" / "mem0_store" / "tiap_c1" /
                                          "adds.jsonl").read_text().splitlines()]
    assert [bool(a.get("unparsed")) for a in adds] == [False, True, False]
    assert "Error parsing extraction response" in adds[1]["unparsed"][0]


def test_rerun_skips_finished_and_rebuilds_unfinished_without_duplicates(tmp_path: Path) -> None:
    ds = inline_dataset(TURNS[:3], QUERIES[:1])
    out = tmp_path / "out"
    first = run_mem0(ds, out)
    assert first.skipped == () and len(first.imported.items) == 3
    again = run_mem0(ds, out)  # finished: nothing is fed again
    assert again.skipped == ("c1",)
    assert [i.item_id for i in again.imported.items] == [i.item_id for i in first.imported.items]
    # an interrupted collection (no done marker; the old Mem0 store still on disk) is
    # rebuilt from an empty store: still one memory per turn
    (out / "mem0_store" / "tiap_c1" / "done.json").unlink()
    rebuilt = run_mem0(ds, out)
    assert rebuilt.skipped == ()
    items = read_items(out / "items.jsonl")
    assert Counter(i.sources for i in items) == {("c1:D1:1",): 1, ("c1:D1:2",): 1,
                                                 ("c1:D1:3",): 1}
    assert not {i.item_id for i in items} & {i.item_id for i in first.imported.items}
    with pytest.raises(TiapError, match="made with other settings"):
        run_mem0(ds, out, Mem0RunConfig(limit=5))


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"infer": True}, "key llm_base_url: missing: infer=True needs an LLM"),
    ({"llm_model": "x"}, "key llm_model: applies with infer=True only"),
    ({"limit": 0}, "key limit: expected an integer from 1 to 1,000,000, got 0 (an integer)"),
    ({"threshold": 2.0}, "key threshold: expected a number from 0 to 1, got 2.0 (a float)"),
])
def test_bad_settings(tmp_path: Path, kwargs: dict, message: str) -> None:
    # the settings are a declared schema: refused when built, before run_mem0 reads anything
    with pytest.raises(TiapError) as exc:
        run_mem0(inline_dataset(TURNS, QUERIES), tmp_path / "out", Mem0RunConfig(**kwargs))
    assert message in str(exc.value) and exc.value.code == "config"
    assert not (tmp_path / "out").exists()


def test_unknown_collection(tmp_path: Path) -> None:
    with pytest.raises(TiapError, match="unknown collection"):
        run_mem0(inline_dataset(TURNS, QUERIES), tmp_path / "out", collections=["nope"])


class _StopAt:
    """A progress wrapper that raises KeyboardInterrupt (Ctrl-C) before the add() call with
    0-based index ``call`` of this attempt, i.e. after ``call`` calls finished."""

    def __init__(self, call: int) -> None:
        self.call = call

    def __call__(self, items, description, total=None):
        for i, x in enumerate(items):
            if description.endswith(": add") and i == self.call:
                raise KeyboardInterrupt
            yield x


def _facts(out: Path) -> Counter:
    return Counter((i.text, i.sources) for i in read_items(out / "items.jsonl"))


def test_an_interrupted_infer_run_resumes_after_its_last_finished_call(tmp_path: Path) -> None:
    """Ctrl-C after 3 of 5 calls: the rerun sends only the 2 calls left and ends with the
    memories of a run never interrupted, each once."""
    ds = inline_dataset(TURNS, QUERIES)
    cfg = dict(infer=True, window=1, llm_model="stand-in")
    with Mem0StandIn() as server, no_network():
        whole = run_mem0(ds, tmp_path / "whole", Mem0RunConfig(
            llm_base_url=server.base_url, **cfg))
        assert len(server.requests) == 5
        out = tmp_path / "out"
        with pytest.raises(KeyboardInterrupt):
            run_mem0(ds, out, Mem0RunConfig(llm_base_url=server.base_url, **cfg),
                     progress=_StopAt(3))
        assert len(server.requests) == 5 + 3
        work = out / "mem0_store" / "tiap_c1"
        assert [p.name for p in work.glob("checkpoint-*")] == ["checkpoint-000003"]
        # the run's fingerprint names the endpoint, so the same server resumes it
        res = run_mem0(ds, out, Mem0RunConfig(llm_base_url=server.base_url, **cfg))
    assert len(server.requests) == 5 + 3 + 2
    # only the last 2 turns were sent again
    assert [new_messages(r) for r in server.requests[-2:]] == [
        [f"user: {s}: {t}"] for s, t in TURNS[3:]]
    assert _facts(out) == _facts(tmp_path / "whole")
    assert max(_facts(out).values()) == 1 and len(_facts(out)) == 4  # TURNS[2] has no fact
    [done] = res.collections
    assert done["resumed_after_calls"] == [3] and done["add_calls"] == 5
    assert whole.collections[0]["resumed_after_calls"] == []
    assert not list(work.glob("checkpoint-*"))  # finished: dropped


def test_a_call_interrupted_after_mem0_stored_its_memories_is_rolled_back(
        tmp_path: Path, monkeypatch) -> None:
    """Mem0 wrote call 4's memories (and saved its messages), then the run stopped before the
    checkpoint: the rerun drops them with the state past checkpoint 3, and calls again."""
    from tiap.importers import mem0_harness

    ds = inline_dataset(TURNS, QUERIES)
    save = mem0_harness._save_checkpoint

    def save_or_stop(work: Path, adds: list, meta: dict) -> None:
        if len(adds) == 4:
            raise KeyboardInterrupt
        save(work, adds, meta)

    with Mem0StandIn() as server, no_network():
        cfg = Mem0RunConfig(infer=True, window=1, llm_base_url=server.base_url,
                            llm_model="stand-in")
        monkeypatch.setattr(mem0_harness, "_save_checkpoint", save_or_stop)
        with pytest.raises(KeyboardInterrupt):
            run_mem0(ds, tmp_path / "out", cfg)
        monkeypatch.setattr(mem0_harness, "_save_checkpoint", save)
        res = run_mem0(ds, tmp_path / "out", cfg)
        # calls 1-4, then calls 4-5
        assert [new_messages(r)[0].split(": ", 1)[1] for r in server.requests] == [
            f"{s}: {t}" for s, t in TURNS[:4] + TURNS[3:]]
        # the repeated call was shown the same earlier messages as the first time: the
        # messages Mem0 saved for the rolled-back call are gone
        assert server.requests[3]["messages"] == server.requests[4]["messages"]
    got = Counter(i.sources for i in res.imported.items)
    assert got == {("c1:D1:1",): 1, ("c1:D1:2",): 1, ("c1:D1:4",): 1, ("c1:D1:5",): 1}
    assert res.collections[0]["resumed_after_calls"] == [3]


def test_an_unfinished_run_with_other_settings_is_refused_not_discarded(tmp_path: Path) -> None:
    ds = inline_dataset(TURNS, QUERIES)
    with Mem0StandIn() as server, no_network():
        with pytest.raises(KeyboardInterrupt):
            run_mem0(ds, tmp_path / "out", Mem0RunConfig(
                infer=True, window=1, llm_base_url=server.base_url, llm_model="stand-in"),
                progress=_StopAt(2))
        with pytest.raises(TiapError, match=r"unfinished Mem0 run of c1 \(2 add\(\) calls "
                                            "saved\\) made with other settings") as exc:
            run_mem0(ds, tmp_path / "out", Mem0RunConfig(
                infer=True, window=1, llm_base_url=server.base_url, llm_model="other"))
    assert exc.value.problems[0].file.endswith("checkpoint-000002/meta.json")
    assert (tmp_path / "out" / "mem0_store" / "tiap_c1" / "checkpoint-000002").is_dir()


def test_without_infer_the_state_is_saved_by_time(tmp_path: Path, monkeypatch) -> None:
    """infer=False saves at most every CHECKPOINT_SECONDS (0 here: after every call)."""
    from tiap.importers import mem0_harness

    monkeypatch.setattr(mem0_harness, "CHECKPOINT_SECONDS", 0.0)
    ds = inline_dataset(TURNS, QUERIES)
    with pytest.raises(KeyboardInterrupt):
        run_mem0(ds, tmp_path / "out", progress=_StopAt(4))
    res = run_mem0(ds, tmp_path / "out")
    assert res.collections[0]["resumed_after_calls"] == [4]
    assert Counter(i.sources for i in res.imported.items) == {
        (f"c1:D1:{k}",): 1 for k in range(1, 6)}
