"""Writers: groups JSONL, target-mapping rows, per-store qrels, coverage, the manifest,
qrels_store, and atomicity."""

from __future__ import annotations

import csv
import json
from dataclasses import replace
from pathlib import Path

import pytest
from fixtures_targets import item, queries, query, store

from tiap.cli.main import main
from tiap.datasets.records import Query
from tiap.errors import TiapError
from tiap.io import sha256_file
from tiap.memory.store import Store, read_store, write_items
from tiap.targets import build_groups
from tiap.targets import folder as export
from tiap.targets.folder import qrels_name, qrels_store, write_qrels, write_targets


def read_jsonl(path: Path) -> list[dict]:  # type: ignore[type-arg]
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def files(out: Path) -> list[str]:
    return sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())


def store_a() -> Store:
    return Store("a", tuple(store()))


def store_b() -> Store:
    """Store a's ids, other items: f2 is a raw-derived observation, s1 is gone, f1 serves
    no more; so Source and Canonical differ from a's while Raw stays the same."""
    items = [it for it in store() if it.item_id != "s1"]
    items = [replace(it, kind="observation") if it.item_id == "f2" else
             replace(it, serving=False) if it.item_id == "f1" else it for it in items]
    return Store("b.v2", tuple(items))


def test_write_targets_files(tmp_path: Path) -> None:
    out = tmp_path / "out"
    res = write_targets(out, [store_a()], queries(), ["raw", "canonical", "facts=kind in {fact}"])
    assert files(out) == [
        "coverage.csv", "coverage.json", "groups.jsonl", "manifest.json",
        "qrels/a.canonical.qrels", "qrels/a.facts.qrels", "qrels/a.raw.qrels",
        "subtopic_qrels/a.canonical.qrels", "subtopic_qrels/a.facts.qrels",
        "subtopic_qrels/a.raw.qrels", "target_mapping.jsonl", "undetermined.csv",
    ]
    assert res.stores == ("a",) and res.removed == ()
    assert res.qrels[("a", "raw")] == out / "qrels" / "a.raw.qrels"
    rows = read_jsonl(out / "groups.jsonl")
    assert len(rows) == 6 * 3  # 6 queries x 3 targets, query order then target order
    assert rows[0] == {"store": "a", "query_id": "q1", "target": "raw",
                       "groups": [["t1"], ["t2"]], "units": ["u1", "u2"], "n_groups": 2,
                       "zero_target_reason": None, "determined": True, "open_units": []}
    assert rows[1]["groups"] == [["f1", "f2", "f3", "s1"], ["f3", "s1"]]
    assert rows[3 * 5 + 1] == {
        "store": "a", "query_id": "q6", "target": "canonical", "groups": [], "units": [],
        "n_groups": 0,
        "zero_target_reason": "no members under target 'canonical' (evidence units: u4)",
        "determined": True, "open_units": [],
    }
    # the mapping always has the three built-ins, even though 'source' was not requested
    mapping = read_jsonl(out / "target_mapping.jsonl")
    assert mapping[0] == {
        "store": "a", "query_id": "q1", "raw_ids": ["t1", "t2"],
        "source_ids": ["f1", "f2", "f3", "o1", "s1", "t1", "t2"],
        "canonical_ids": ["f1", "f2", "f3", "s1"],
    }
    assert mapping[1] == {"store": "a", "query_id": "q2", "raw_ids": [], "source_ids": [],
                          "canonical_ids": []}
    assert [t.target for t in res.coverage["a"].targets] == ["raw", "canonical", "facts"]
    summary = json.loads((out / "coverage.json").read_text())
    assert [s["store"] for s in summary["stores"]] == ["a"]
    assert summary["stores"][0]["coverage"]["targets"][1]["zero_target_by_reason"] == {
        "no_evidence": 1, "unknown_evidence": 1, "no_members": 1,
    }
    with open(out / "coverage.csv", newline="") as fh:
        csv_rows = list(csv.DictReader(fh))
    assert [(r["store"], r["target"]) for r in csv_rows] == [
        ("a", "raw"), ("a", "canonical"), ("a", "facts")]
    assert csv_rows[1]["defined"] == "3" and csv_rows[1]["zero_no_members"] == "1"
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["command"] == "targets" and manifest["schema_version"] == 2
    assert manifest["targets"][2] == {"name": "facts", "spec": "kind in {fact}"}
    assert manifest["stores"][0]["name"] == "a"
    assert manifest["stores"][0]["items"]["records"] == 10
    assert summary["stores"][0]["items_sha256"] == \
        manifest["stores"][0]["items"]["sha256_as_jsonl"]  # no file: the items as TIAP writes them
    assert manifest["outputs"]["qrels/a.raw.qrels"] == {
        "sha256": sha256_file(out / "qrels" / "a.raw.qrels"), "lines": 5,
        "store": "a", "target": "raw"}


def test_several_stores_side_by_side(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_items(tmp_path / "a" / "items.jsonl", store(), store="a")
    write_items(tmp_path / "b" / "items.jsonl", store_b().items)  # rows name no store: "b"
    stores = [read_store(tmp_path / "a" / "items.jsonl"), store_b(),
              read_store(tmp_path / "b" / "items.jsonl")]
    res = write_targets(out, stores, queries(), ["source", "canonical"],
                        input_files={"queries_file": tmp_path / "a" / "items.jsonl"})
    assert res.stores == ("a", "b.v2", "b")
    assert [f for f in files(out) if f.startswith("qrels/")] == [
        "qrels/a.canonical.qrels", "qrels/a.source.qrels", "qrels/b.canonical.qrels",
        "qrels/b.source.qrels", "qrels/b.v2.canonical.qrels", "qrels/b.v2.source.qrels",
    ]
    # one query, three stores, three different Source sets from the same ids
    src = {s: [ln.split()[2] for ln in (out / qrels_name(s, "source")).read_text().splitlines()
               if ln.startswith("q1 ")] for s in res.stores}
    assert src["a"] == ["f1", "f2", "f3", "o1", "s1", "t1", "t2"]
    assert src["b"] == src["b.v2"] == ["f1", "f2", "f3", "o1", "t1", "t2"]
    can = (out / qrels_name("b", "canonical")).read_text().splitlines()
    assert [ln for ln in can if ln.startswith("q1 ")] == ["q1 0 f2 1", "q1 0 f3 1"]
    rows = read_jsonl(out / "groups.jsonl")
    assert [r["store"] for r in rows] == ["a"] * 12 + ["b.v2"] * 12 + ["b"] * 12
    mapping = read_jsonl(out / "target_mapping.jsonl")
    assert [(r["store"], r["query_id"]) for r in mapping[5:7]] == [("a", "q6"), ("b.v2", "q1")]
    manifest = json.loads((out / "manifest.json").read_text())
    entries = {e["name"]: e["items"] for e in manifest["stores"]}
    assert entries["a"]["path"] == str(tmp_path / "a" / "items.jsonl")
    assert entries["a"]["sha256"] == sha256_file(tmp_path / "a" / "items.jsonl")
    assert "path" not in entries["b.v2"] and entries["b.v2"]["records"] == 9
    qrels = {rel: (e["store"], e["target"]) for rel, e in manifest["outputs"].items()
             if rel.startswith("qrels/")}
    assert qrels == {qrels_name(s, t): (s, t) for s in res.stores for t in ("source", "canonical")}
    assert manifest["inputs"]["queries"]["records"] == 6
    assert "sha256" in manifest["inputs"]["queries_file"]
    cov = json.loads((out / "coverage.json").read_text())
    assert [s["store"] for s in cov["stores"]] == ["a", "b.v2", "b"]
    assert cov["stores"][0]["items_sha256"] == entries["a"]["sha256"]
    for s in res.stores:
        for t in ("source", "canonical"):
            assert qrels_store(out / qrels_name(s, t)) == s


def test_qrels_have_no_lines_for_zero_target_queries(tmp_path: Path) -> None:
    write_targets(tmp_path, [store_a()], queries(), ["canonical", "raw"])
    lines = (tmp_path / "qrels" / "a.canonical.qrels").read_text().splitlines()
    # canonical defines q1 {f1 f2 f3 s1}, q4 {s1}, q5 {f1 f2 f3 s1}; q2, q3, q6 are zero-target
    assert lines == [
        "q1 0 f1 1", "q1 0 f2 1", "q1 0 f3 1", "q1 0 s1 1",
        "q4 0 s1 1",
        "q5 0 f1 1", "q5 0 f2 1", "q5 0 f3 1", "q5 0 s1 1",
    ]
    raw = (tmp_path / "qrels" / "a.raw.qrels").read_text().splitlines()
    assert raw == ["q1 0 t1 1", "q1 0 t2 1", "q4 0 t3 1", "q5 0 t1 1", "q6 0 t4 1"]


def test_qrels_store(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_targets(out, [store_a(), store_b()], queries(), ["source"])
    a, b = out / "qrels" / "a.source.qrels", out / "qrels" / "b.v2.source.qrels"
    assert (qrels_store(a), qrels_store(str(b))) == ("a", "b.v2")
    link = tmp_path / "link.qrels"
    link.symlink_to(a)
    assert qrels_store(link) == "a"  # the file itself is TIAP's
    # an edited file is no longer trusted
    b.write_text(b.read_text() + "q9 0 t1 1\n")
    assert qrels_store(b) is None
    # a copy without its manifest, and a file the manifest does not list, are foreign
    (tmp_path / "qrels").mkdir()
    copy = tmp_path / "qrels" / "a.source.qrels"
    copy.write_bytes(a.read_bytes())
    assert qrels_store(copy) is None
    extra = out / "qrels" / "a.raw.qrels"
    extra.write_text("q1 0 t1 1\n")
    assert qrels_store(extra) is None
    (tmp_path / "manifest.json").write_text("{not json")
    assert qrels_store(copy) is None
    (tmp_path / "manifest.json").write_text(json.dumps({"command": "rescore", "outputs": {
        "qrels/a.source.qrels": {"sha256": sha256_file(copy), "store": "a"}}}))
    assert qrels_store(copy) is None  # another command's manifest vouches for nothing
    with pytest.raises(TiapError, match="qrels file not found"):
        qrels_store(out / "qrels" / "nope.qrels")
    with pytest.raises(TiapError, match="not a qrels file"):
        qrels_store(out / "qrels")


def test_a_later_run_replaces_an_earlier_one(tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_targets(out, [store_a(), store_b()], queries(), ["raw", "source"])
    edited = out / "qrels" / "b.v2.raw.qrels"
    edited.write_text("q1 0 t1 1\n")
    (out / "notes.txt").write_text("mine\n")
    before = files(out)
    # a file the earlier run did not write may be the user's: refused, nothing changes
    with pytest.raises(TiapError, match="does not list \\('notes.txt'\\)") as err:
        write_targets(out, [store_a()], queries(), ["source"])
    assert err.value.problems[0].code == "stale-output"
    assert files(out) == before and (out / "notes.txt").read_text() == "mine\n"
    (out / "notes.txt").unlink()
    res = write_targets(out, [store_a()], queries(), ["source"])
    # the folder is replaced whole: no file of the earlier run survives, edited or not
    assert res.removed == ("qrels/a.raw.qrels", "qrels/b.v2.raw.qrels", "qrels/b.v2.source.qrels",
                           "subtopic_qrels/a.raw.qrels", "subtopic_qrels/b.v2.raw.qrels",
                           "subtopic_qrels/b.v2.source.qrels")
    assert files(out) == [
        "coverage.csv", "coverage.json", "groups.jsonl", "manifest.json",
        "qrels/a.source.qrels", "subtopic_qrels/a.source.qrels", "target_mapping.jsonl",
        "undetermined.csv",
    ]
    assert not edited.exists() and qrels_store(out / "qrels" / "a.source.qrels") == "a"
    assert {r["store"] for r in read_jsonl(out / "groups.jsonl")} == {"a"}


def test_files_of_an_older_layout_are_removed(tmp_path: Path) -> None:
    """A folder written before qrels were named by store (qrels/<target>.qrels) keeps no
    store-less qrels file once rewritten."""
    out = tmp_path / "out"
    (out / "qrels").mkdir(parents=True)
    old = out / "qrels" / "source.qrels"
    old.write_text("q1 0 t1 1\n")
    (out / "manifest.json").write_text(json.dumps({
        "schema_version": 1, "command": "targets",
        "outputs": {"qrels/source.qrels": {"sha256": sha256_file(old), "lines": 1},
                    "../outside.txt": {"sha256": "0"}, "/etc/passwd": {"sha256": "0"}}}))
    res = write_targets(out, [store_a()], queries(), ["source"])
    assert res.removed == ("qrels/source.qrels",) and not old.exists()
    assert [f for f in files(out) if f.startswith("qrels/")] == ["qrels/a.source.qrels"]


def test_a_folder_of_another_command_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "manifest.json").write_text(json.dumps({"command": "rescore"}))
    with pytest.raises(TiapError, match="holds the output of `tiap rescore`"):
        write_targets(out, [store_a()], queries())
    assert files(out) == ["manifest.json"]


def _leftovers(d: Path) -> list[str]:
    return sorted(p.name for p in d.rglob("*") if p.name.startswith("."))


def test_writer_leaves_no_partial_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sets = build_groups(store(), queries())

    def broken(tg, items=None):  # type: ignore[no-untyped-def]
        yield "q1 0 t1 1\n"
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(export, "qrels_lines", broken)
    target = tmp_path / "raw.qrels"
    with pytest.raises(RuntimeError):
        write_qrels(target, sets["raw"])
    assert not target.exists()
    assert _leftovers(tmp_path) == []


def test_bad_ids_fail_before_writing(tmp_path: Path) -> None:
    sets = build_groups([item("t 1", "raw", ("u1",))], [query("q", ("u1",))])
    with pytest.raises(TiapError, match="whitespace"):
        write_qrels(tmp_path / "raw.qrels", sets["raw"])
    assert list(tmp_path.iterdir()) == []


def test_write_targets_is_all_or_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    write_targets(out, [store_a()], queries(), ["raw"])  # the earlier run, kept whole
    before = {f: (out / f).read_bytes() for f in files(out)}

    def broken(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise RuntimeError("failure after groups, mapping and qrels were written")

    monkeypatch.setattr(export, "write_coverage", broken)
    with pytest.raises(RuntimeError):
        write_targets(out, [store_a(), store_b()], queries())
    assert {f: (out / f).read_bytes() for f in files(out)} == before
    assert _leftovers(tmp_path) == []


def test_write_targets_input_errors_write_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with pytest.raises(TiapError, match=r"dangling parent.*\(store 'g'\)"):
        write_targets(out, [store_a(), Store("g", (item("f", "fact", parents=("ghost",)),))],
                      queries())
    with pytest.raises(TiapError, match="unknown target"):
        write_targets(out, [store_a()], queries(), ["raw", "nope"])
    with pytest.raises(TiapError, match="two different stores are both named 'a'"):
        write_targets(out, [store_a(), Store("a", store_b().items)], queries())
    with pytest.raises(TiapError, match="the item names store 'x', but it is in store 'a'"):
        write_targets(out, [Store("a", (replace(store()[0], store="x"),))], queries())
    with pytest.raises(TiapError, match="no store given"):
        write_targets(out, [], queries())
    with pytest.raises(TypeError, match=r"pass \[store\]"):
        write_targets(out, store_a(), queries())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Store objects"):
        write_targets(out, store(), queries())  # type: ignore[arg-type]
    sets = [Store("w", (item("t 1", "raw", ("u1",)),))]
    with pytest.raises(TiapError, match="whitespace"):
        write_targets(out, sets, [query("q", ("u1",))])
    assert not out.exists()
    # the same store given twice is written once
    named = tuple(replace(it, store="a") for it in store())
    res = write_targets(out, [store_a(), store_a(), Store("a", named)], queries())
    assert res.stores == ("a",)


def test_targets_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name, st in (("a", store_a()), ("b", store_b())):
        write_items(tmp_path / name / "items.jsonl", st.items, store=st.name)
    qfile = tmp_path / "queries.jsonl"
    qfile.write_text("".join(json.dumps(q.to_json()) + "\n" for q in queries()))
    out = tmp_path / "t"
    one = ["targets", "--queries", str(qfile), "--out", str(out), "--targets", "raw,source"]
    assert main([*one, "--items", str(tmp_path / "a" / "items.jsonl")]) == 0
    assert [f for f in files(out) if f.startswith("qrels/")] == [
        "qrels/a.raw.qrels", "qrels/a.source.qrels"]
    capsys.readouterr()
    assert main([*one, "--items", str(tmp_path / "a" / "items.jsonl"),
                 "--items", str(tmp_path / "b" / "items.jsonl")]) == 0
    captured = capsys.readouterr()
    assert "b.v2" in captured.out and "against its own qrels" in captured.err
    assert qrels_store(out / "qrels" / "b.v2.source.qrels") == "b.v2"
    manifest = json.loads((out / "manifest.json").read_text())
    assert [s["items"]["path"] for s in manifest["stores"]] == [
        str(tmp_path / "a" / "items.jsonl"), str(tmp_path / "b" / "items.jsonl")]
    assert manifest["inputs"]["queries"]["path"] == str(qfile)
    # two different stores under one name: an error, nothing written
    write_items(tmp_path / "c" / "items.jsonl", store_b().items, store="a")
    out2 = tmp_path / "t2"
    rc = main(["targets", "--queries", str(qfile), "--out", str(out2),
               "--items", str(tmp_path / "a" / "items.jsonl"),
               "--items", str(tmp_path / "c" / "items.jsonl")])
    err = capsys.readouterr().err
    assert rc == 2 and "two different stores are both named 'a'" in err
    assert str(tmp_path / "c" / "items.jsonl") in err and not out2.exists()
    rc = main(["targets", "--queries", str(qfile), "--out", str(out2),
               "--items", f"a={tmp_path / 'a' / 'items.jsonl'}"])
    assert rc == 2 and "--items takes a path only" in capsys.readouterr().err


def test_qrels_read_by_reference_tools(tmp_path: Path) -> None:
    ir_measures = pytest.importorskip("ir_measures")
    pytrec_eval = pytest.importorskip("pytrec_eval")
    write_targets(tmp_path, [store_a()], queries(), ["canonical"])
    path = tmp_path / "qrels" / "a.canonical.qrels"
    qrels = list(ir_measures.read_trec_qrels(str(path)))
    assert {q.query_id for q in qrels} == {"q1", "q4", "q5"}
    # a run that retrieves s1 first for every query: trec_eval averages only q1, q4, q5
    run = {q: {"s1": 2.0, "t1": 1.0} for q in ("q1", "q2", "q3", "q4", "q5", "q6")}
    sets = build_groups(store(), queries(), ["canonical"])
    res = pytrec_eval.RelevanceEvaluator(sets["canonical"].qrels(), {"recip_rank"}).evaluate(run)
    assert sorted(res) == ["q1", "q4", "q5"]
    assert all(v["recip_rank"] == 1.0 for v in res.values())


def test_partial_lineage_is_not_exported_as_a_fact(tmp_path: Path) -> None:
    """A query whose group partial lineage leaves open gets no qrels line (a qrels file
    cannot say "maybe"); undetermined.csv says why. A placeholder standing for 3 unseen
    items is 3 qrels lines, so trec_eval's |R| is the family's size."""
    from tiap.memory.store import Item, Placeholder, Uncertainty

    items = (
        Item("t1", "raw", ("u1",)), Item("t2", "raw", ("u2",)),
        # m: one of u1 / u2, which is not known
        Item("m", "fact", (), uncertain=Uncertainty(possible=("u1", "u2"), max_sources=1)),
        Item("p", "fact", ("u2",), placeholder=Placeholder("certain", 3)),
    )
    qs = [Query("q1", "c", "?", "a", "1", ("u1",)), Query("q2", "c", "?", "a", "1", ("u2",)),
          Query("q3", "c", "?", "a", "1", ("u3",))]
    out = tmp_path / "out"
    write_targets(out, [Store("s", items)], qs, ["raw", "source"])
    src = (out / "qrels" / "s.source.qrels").read_text().splitlines()
    raw = (out / "qrels" / "s.raw.qrels").read_text().splitlines()
    # raw: m is a fact, so Raw is known exactly for q1 and q2
    assert raw == ["q1 0 t1 1", "q2 0 t2 1"]
    # source: m may be in u1's or u2's family: both queries are open, no line is guessed
    assert src == []
    with open(out / "undetermined.csv", newline="") as fh:
        und = list(csv.DictReader(fh))
    assert [(r["target"], r["query_id"]) for r in und] == [("source", "q1"), ("source", "q2")]
    assert und[0]["reason"] == "possible members for u1"
    rows = {(r["target"], r["query_id"]): r for r in read_jsonl(out / "groups.jsonl")}
    assert rows[("source", "q2")]["determined"] is False
    assert rows[("source", "q2")]["groups"] == [["p", "t2"]]  # the certain members
    assert rows[("source", "q2")]["open_units"] == ["u2"]
    # without m, the placeholder's count reaches the qrels as 3 lines
    write_targets(out, [Store("s", tuple(i for i in items if i.item_id != "m"))], qs, ["source"])
    src = (out / "qrels" / "s.source.qrels").read_text().splitlines()
    assert src == ["q1 0 t1 1", "q2 0 p#1 1", "q2 0 p#2 1", "q2 0 p#3 1", "q2 0 t2 1"]
