"""build_store: items.jsonl layout, ids, lineage, densities, determinism, manifest, atomicity."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from memory_fixtures import InlineDataset, make_bundle, read_rows

from tiap.datasets import load
from tiap.datasets.base import Bundle
from tiap.errors import TiapError
from tiap.io import sha256_file
from tiap.memory import build_store, make_parser, read_items
from tiap.memory.heuristic import HeuristicParser
from tiap.memory.store import Item

CONV = "conv-26"


@pytest.fixture(scope="module")
def locomo(data_dir: Path):  # type: ignore[no-untyped-def]
    return load("locomo", data_dir)


def build(ds, out: Path, n: int = 5, **kw):  # type: ignore[no-untyped-def]
    return build_store(ds, make_parser("heuristic", max_facts=n), out, collections=[CONV], **kw)


def test_raw_items_then_facts_with_lineage(locomo, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    res = build(locomo, tmp_path / "s")
    rows = read_rows(tmp_path / "s" / "items.jsonl")
    turns = [t for t in locomo.turns_iter() if t.collection_id == CONV]
    assert len(turns) == 419
    raw = [r for r in rows if r["kind"] == "raw"]
    facts = [r for r in rows if r["kind"] == "fact"]
    # one raw item per turn, in turn order, first; its id and only source are the unit id
    assert [r["item_id"] for r in rows[:419]] == [t.unit_id for t in turns]
    assert all(r["sources"] == [r["item_id"]] and r["collection"] == CONV for r in raw)
    first = rows[2]
    assert first == {"item_id": "conv-26:D1:3", "store": "s", "kind": "raw", "sources": ["conv-26:D1:3"],
                     "text": "Caroline (1:56 pm on 8 May, 2023): I went to a LGBTQ support "
                             "group yesterday and it was so powerful.",
                     "collection": CONV, "speaker": "Caroline", "session_id": "session_1",
                     "date": "1:56 pm on 8 May, 2023"}
    # facts: id <unit_id>#f<j>, one source (their turn), j counting from 1 per turn
    assert len(facts) == res.counts["by_kind"]["fact"] > 0
    per_turn: dict[str, list[int]] = {}
    for f in facts:
        uid, j = f["item_id"].rsplit("#f", 1)
        assert f["sources"] == [uid] and " " not in f["item_id"]
        per_turn.setdefault(uid, []).append(int(j))
    assert all(js == list(range(1, len(js) + 1)) for js in per_turn.values())
    support = next(f for f in facts if f["item_id"] == "conv-26:D1:3#f1")
    assert support["text"].startswith("On 8 May 2023, Caroline went to a LGBTQ support group")
    # the store reads back with TIAP's own reader (no duplicate ids, no whitespace)
    assert len(read_items(tmp_path / "s" / "items.jsonl")) == len(rows)


def test_density_caps(locomo, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    counts = {}
    for n in (1, 5, 8):
        res = build(locomo, tmp_path / f"d{n}", n)
        rows = read_rows(tmp_path / f"d{n}" / "items.jsonl")
        per_turn = Counter(r["sources"][0] for r in rows if r["kind"] == "fact")
        assert max(per_turn.values()) <= n
        assert res.counts["turns_with_derived"] == len(per_turn)
        assert sum(int(k) * v for k, v in res.counts["derived_per_turn"].items()) == len(
            [r for r in rows if r["kind"] == "fact"])
        counts[n] = res.counts["by_kind"]["fact"]
    # density 1 gives one fact to every turn that has any; denser caps never give fewer
    assert counts[1] < counts[5] <= counts[8]
    d1 = {r["item_id"] for r in read_rows(tmp_path / "d1" / "items.jsonl")}
    d5 = {r["item_id"] for r in read_rows(tmp_path / "d5" / "items.jsonl")}
    assert d1 <= d5  # every turn with a fact has a "#f1" at any density


def test_two_builds_are_byte_identical_and_workers_do_not_matter(locomo, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    build(locomo, tmp_path / "a", store="f5")
    build(locomo, tmp_path / "b", store="f5")
    build(locomo, tmp_path / "c", workers=2, store="f5")
    a = (tmp_path / "a" / "items.jsonl").read_bytes()
    assert a == (tmp_path / "b" / "items.jsonl").read_bytes()
    assert a == (tmp_path / "c" / "items.jsonl").read_bytes()


def test_manifest(locomo, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    res = build(locomo, tmp_path / "s", 8, seed=7)
    man = json.loads((tmp_path / "s" / "manifest.json").read_text())
    assert man == res.manifest
    assert man["schema_version"] == 1 and man["command"] == "build-store"
    assert man["dataset"]["id"] == "locomo" and man["dataset"]["collections"] == [CONV]
    (f,) = man["dataset"]["files"]
    assert f["path"] == "locomo/locomo10.json" and f["verified"] is True
    assert f["sha256"] == sha256_file(locomo.path("locomo10.json"))
    assert man["parser"] == {"name": "heuristic", "args": {"max_facts": 8}}
    assert man["seed"] == 7
    c = man["counts"]
    assert c["collections"] == 1 and c["turns"] == 419
    assert c["items"] == c["by_kind"]["raw"] + c["by_kind"]["fact"] == c["turns"] + c["derived"]
    assert c["turns_with_derived"] + c["turns_without_derived"] == 419
    out = man["outputs"]["items.jsonl"]
    assert out["sha256"] == sha256_file(tmp_path / "s" / "items.jsonl")
    assert out["rows"] == c["items"]
    assert {"tiap", "python"} <= man["versions"].keys()
    assert set(man["item_ids"]) == {"raw", "fact", "native"}


def test_inline_dataset_all_collections(inline_dataset: InlineDataset, tmp_path: Path) -> None:
    res = build_store(inline_dataset, "heuristic", tmp_path / "s", parser_args={"max_facts": 2})
    rows = read_rows(tmp_path / "s" / "items.jsonl")
    assert res.counts["collections"] == 2 and res.counts["turns"] == 5
    by_id = {r["item_id"]: r for r in rows}
    assert by_id["c1:D1:3#f1"]["text"] == (
        "On 8 May 2023, Caroline went to a LGBTQ support group yesterday and it was so powerful.")
    assert by_id["c2:D1:1#f1"]["text"] == (
        "On 20 May 2023, the user adopted a beagle named Max in March 2023.")
    assert "c1:D1:1#f1" not in by_id  # a greeting and a question: no fact
    assert res.manifest["dataset"]["files"] == []


class Exploding(HeuristicParser):
    """Fails in the second collection, after the first one was written."""

    def derive(self, bundle: Bundle) -> Iterator[Item]:
        if bundle.collection.collection_id == "c2":
            raise RuntimeError("boom")
        yield from super().derive(bundle)


def test_failure_leaves_nothing_half_written(inline_dataset: InlineDataset, tmp_path: Path) -> None:
    out = tmp_path / "store"
    build_store(inline_dataset, "heuristic", out)  # an earlier build, replaced by a rebuild
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    parser = Exploding(5)
    with pytest.raises(RuntimeError, match="boom"):
        build_store(inline_dataset, parser, out)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # untouched
    assert [p.name for p in tmp_path.iterdir()] == ["store"]  # no temporary folder left


class BadIds(HeuristicParser):
    def derive(self, bundle: Bundle) -> Iterator[Item]:
        t = bundle.turns[0]
        yield Item(f"{t.unit_id} #x", "fact", (t.unit_id,), text="x")
        yield Item(t.unit_id, "fact", (t.unit_id,), text="clash with the raw item")
        yield Item(f"{t.unit_id}#y", "fact", ("other:D9:9",), text="foreign source")


def test_bad_derived_items_are_reported_together(inline_dataset: InlineDataset,
                                                  tmp_path: Path) -> None:
    with pytest.raises(TiapError) as exc:
        build_store(inline_dataset, BadIds(5), tmp_path / "s")
    msgs = [p.message for p in exc.value.problems]
    assert any("whitespace" in m for m in msgs)
    assert any("duplicate item id" in m for m in msgs)
    assert any("not in collection" in m for m in msgs)
    assert not (tmp_path / "s").exists()


def test_bad_input(inline_dataset: InlineDataset, locomo, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(TiapError, match="unknown parser 'magic'"):
        make_parser("magic")
    with pytest.raises(TiapError, match="takes"):
        make_parser("heuristic", density=3)
    with pytest.raises(TiapError, match="key max_facts: expected an integer from 1 to 1,000, got "
     "0"):
        build_store(inline_dataset, "heuristic", tmp_path / "x", parser_args={"max_facts": 0})
    with pytest.raises(TiapError, match="no collection"):
        build_store(locomo, "heuristic", tmp_path / "y", collections=["conv-999"])
    with pytest.raises(TiapError, match="workers"):
        build_store(inline_dataset, "heuristic", tmp_path / "z", workers=0)
    assert not any(tmp_path.iterdir())


def test_ids_with_whitespace_in_the_dataset_are_refused(tmp_path: Path) -> None:
    b = make_bundle("bad id", [("Caroline", "I moved to Sweden in 2019.")])
    with pytest.raises(TiapError, match="whitespace"):
        build_store(InlineDataset([b]), "heuristic", tmp_path / "s")


def test_a_parser_object_workers_cannot_rebuild_runs_in_process(
        inline_dataset: InlineDataset, tmp_path: Path) -> None:
    class Custom(HeuristicParser):  # parallel, but not registered: no worker can rebuild it
        pass

    res = build_store(inline_dataset, Custom(2), tmp_path / "s", workers=2)
    ref = build_store(inline_dataset, "heuristic", tmp_path / "r", parser_args={"max_facts": 2})
    assert res.counts == ref.counts


def test_rows_written_directly_are_the_json_encoders_bytes() -> None:
    # A row of plain string fields is written without a dict (build._item_row); the
    # reference is the dict of Item.to_json through json.dumps, for texts with quotes,
    # backslashes, control characters, non-ASCII, and for items the direct path must not
    # take (parents, a serving flag, a non-string or clashing meta key, no store).
    from tiap.memory import build as b
    from tiap.memory.store import Placeholder

    odd = 'a "q" \\ back\tslash\n\x01 caf\u00e9 \u2019 \U0001f600 \u2028'
    items = [
        Item("c1:D1:1#f1", "fact", ("c1:D1:1",), text=odd, collection="c1"),
        Item("c1:D1:1", "raw", ("c1:D1:1",), text=odd, collection="c1",
             meta=(("speaker", odd), ("session_id", "s1"), ("date", "8 May, 2023"))),
        Item("c1:D1:1#f2", "fact", ("c1:D1:1", "c1:D1:2"), text="t", collection="c1",
             parents=("c1:D1:1#f1",)),
        Item("c1:D1:1#f3", "fact", (), text="t", collection="c1", serving=False),
        Item("c1:D1:1#f4", "fact", ("c1:D1:1",), text="t", collection="c1",
             meta=(("turn", 3),)),
        Item("c1:D1:1#f5", "fact", ("c1:D1:1",), text="t", collection="c1",
             meta=(("text", "meta text"),)),
        Item("c1:D1:1#f6", "fact", ("c1:D1:1",), text="t", collection="c1",
             meta=(("a", "1"), ("a", "2"))),
        Item("c1:D1:1#f7", "fact", ("c1:D1:1",), text=None, collection="c1"),
        Item("c1:D1:1#f8", "fact", ("c1:D1:1",), text="t", collection="c1",
             placeholder=Placeholder()),
    ]
    for item in items:
        for store in ("f5", ""):
            want = json.dumps(item.to_json(store), ensure_ascii=False, separators=(",", ":"),
                              allow_nan=False)
            assert b._item_row(item, store) == want


def test_raw_rows_written_directly_equal_raw_item_rows(tmp_path: Path) -> None:
    # The raw rows of a build are raw_item(turn, date).to_json(store) through json.dumps,
    # with and without a session date, for a speaker and text needing escapes.
    from tiap.datasets import Collection, Session, Turn
    from tiap.memory.build import raw_item

    odd = 'She said "hi" \\ \u00e9\u2028'
    turns = (Turn("c1:D1:1", "c1", "s1", 1, odd, odd),
             Turn("c1:D2:1", "c1", "s2", 1, "Ben", "I adopted a cat named Miso."))
    bundle = Bundle(Collection("c1", 2, 2, (odd, "Ben")),
                    (Session("c1", "s1", 1, "8 May, 2023"), Session("c1", "s2", 2, None)),
                    turns, ())
    build_store(InlineDataset([bundle]), make_parser("heuristic", max_facts=1),
                tmp_path / "s", store="f5")
    lines = (tmp_path / "s" / "items.jsonl").read_text("utf-8").split("\n")
    dates = {s.session_id: s.date for s in bundle.sessions}
    want = [json.dumps(raw_item(t, dates[t.session_id]).to_json("f5"), ensure_ascii=False,
                       separators=(",", ":"), allow_nan=False) for t in bundle.turns]
    assert lines[:len(want)] == want


class OddItems(HeuristicParser):
    """Derived items of every shape a row can take (the full checks read them back)."""

    def derive(self, bundle: Bundle) -> Iterator[Item]:
        from tiap.memory.store import Placeholder, Uncertainty

        for t in bundle.turns:
            u = t.unit_id
            yield Item(f"{u}#a", "fact", (u,), text=f"x\u2028y\x85z {t.text}", collection="c1",
                       meta=(("turn", 3), ("speaker", t.speaker)))
            yield Item(f"{u}#b", "summary", (), parents=(f"{u}#a",), serving=False)
            yield Item(f"{u}#c", "fact", (u,), text="t", placeholder=Placeholder())
            yield Item(f"{u}#d", "fact", (), text="t",
                       uncertain=Uncertainty(possible=(u,)))


@pytest.mark.parametrize("workers", [1, 2])
def test_the_store_held_in_memory_is_the_store_read_back(locomo, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                          workers: int) -> None:
    # build_store(in_memory=True) builds the store from the rows as it writes them: it must
    # be exactly what read_store gives for the file (name, path, every field of every item)
    from tiap.memory.store import read_store

    res = build(locomo, tmp_path / "f5", workers=workers, in_memory=True)
    back = read_store(tmp_path / "f5" / "items.jsonl")
    assert res.store is not None and len(res.store) == res.counts["items"] > 900
    assert (res.store.name, res.store.path, res.store.items) == (back.name, back.path,
                                                                 back.items)
    assert build(locomo, tmp_path / "g", workers=workers).store is None  # only when asked


def test_odd_rows_held_in_memory_equal_the_rows_read_back(inline_dataset: InlineDataset,
                                                          tmp_path: Path) -> None:
    from tiap.memory.store import read_store

    res = build_store(inline_dataset, OddItems(1), tmp_path / "s", in_memory=True, store="odd")
    back = read_store(tmp_path / "s" / "items.jsonl")
    assert res.store is not None
    kinds = Counter(it.kind for it in res.store)
    assert kinds["summary"] > 0 and any(it.placeholder for it in res.store)
    assert any(it.uncertain for it in res.store)
    assert (res.store.name, res.store.path, res.store.items) == (back.name, back.path,
                                                                 back.items)
