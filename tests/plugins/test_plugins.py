"""The plug-ins (tiap.plugins) against TIAP's own values, on real stores.

The demo's stores of one LoCoMo conversation (conv-26): the heuristic parser at densities 1
and 5 (``f1``, ``f5``; each fact comes from one turn) and LoCoMo's own observations and
session summaries (``native``: a summary spans many turns, so one item is in several groups
and group credit differs from set credit), each ranked by BM25 to depth 60, and ``tiap
targets`` of the three. TIAP's per-query values (``tiap.rescore``, group credit) are the
reference: the group-credit measures of ir_measures, the ir_datasets datasets and the
PyTerrier provider must reproduce them to 1e-12 on every query, over the same queries.
"""

from __future__ import annotations

import math
import shutil
import tomllib
from pathlib import Path
from typing import Any

import pytest

import tiap
from tiap.datasets import load
from tiap.datasets.queryfile import read_queries, write_queries
from tiap.errors import TiapError
from tiap.memory import build_store
from tiap.memory.store import read_store
from tiap.retrieval import make_retriever, retrieve
from tiap.targets import write_targets

ir_measures = pytest.importorskip("ir_measures", reason="the plugins extra is not installed")

from tiap.plugins.ir_measures import (
    GroupNDCG,
    GroupP,
    GroupR,
    GroupRall,
    GroupRR,
    GroupSuccess,
    group_qrels,
)

ROOT = Path(__file__).resolve().parents[2]
STORES = {"f1": ("heuristic", {"max_facts": 1}), "f5": ("heuristic", {"max_facts": 5}),
          "native": ("native", {})}
TARGETS = ("raw", "source", "canonical")
#: TIAP's measure -> the plug-in's (bare GroupNDCG: the whole ranking, ideal over G)
MEASURES = {"nDCG@10": GroupNDCG@10, "nDCG@60": GroupNDCG@60, "nDCG": GroupNDCG,
            "R@20": GroupR@20, "RR@60": GroupRR@60, "P@10": GroupP@10,
            "Success@1": GroupSuccess@1, "Rall@60": GroupRall@60}


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory, data_dir: Path) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("plugins")
    ds = load("locomo", data_dir)
    for name, (parser, args) in STORES.items():
        build_store(ds, parser, root / "stores" / name, parser_args=args,
                    collections=["conv-26"], store=name)
    write_queries(root / "queries.jsonl",
                  (q for q in ds.queries_iter() if q.collection_id == "conv-26"))
    for name in STORES:
        retrieve(root / "stores" / name, root / "queries.jsonl", make_retriever("bm25"),
                 root / "runs" / f"{name}.jsonl", depth=60, system=name)
    stores = {s: read_store(root / "stores" / s / "items.jsonl") for s in STORES}
    write_targets(root / "targets", list(stores.values()), read_queries(root / "queries.jsonl"),
                  input_files={"queries": root / "queries.jsonl"})
    scores = tiap.rescore([root / "runs" / f"{s}.jsonl" for s in STORES],
                          root / "queries.jsonl", stores, measures=",".join(MEASURES),
                          credit="group", tokenizer="none")
    ref: dict[tuple[str, str, str], dict[str, float]] = {}
    for system, target, qid, measure, value in scores.per_query_rows():
        if value is not None:
            ref.setdefault((system, target, measure), {})[qid] = value
    return {"root": root, "ref": ref, "stores": stores}


def _per_query(measure: Any, qrels: Any, run: Any) -> dict[str, float]:
    return {m.query_id: m.value for m in ir_measures.iter_calc([measure], qrels, run)}


def _close(got: dict[str, float], want: dict[str, float]) -> None:
    assert got.keys() == want.keys()  # the same queries: zero-target ones left out by both
    worst = max(abs(got[q] - want[q]) for q in want)
    assert worst <= 1e-12, worst


def test_group_measures_equal_tiap_on_every_query(demo: dict[str, Any]) -> None:
    root, ref = demo["root"], demo["ref"]
    differs_from_set = 0
    for store in STORES:
        run = list(ir_measures.read_trec_run(str(root / "runs" / f"{store}.trec")))
        for target in TARGETS:
            qrels = group_qrels(root / "targets", store, target)
            for name, measure in MEASURES.items():
                _close(_per_query(measure, qrels, run), ref[store, target, name])
            # the same file read by trec_eval is set credit: on the native store (summaries
            # in several groups) it differs, so the group measures above are not set credit
            set_values = _per_query(ir_measures.nDCG@60, qrels, run)
            differs_from_set += sum(abs(set_values[q] - v) > 1e-9
                                    for q, v in ref[store, target, "nDCG@60"].items())
    assert differs_from_set > 0


def test_the_mean_is_tiaps_mean(demo: dict[str, Any]) -> None:
    root = demo["root"]
    run = list(ir_measures.read_trec_run(str(root / "runs" / "native.trec")))
    qrels = group_qrels(root / "targets", "native", "canonical")
    got = ir_measures.calc_aggregate([GroupNDCG@60], qrels, run)[GroupNDCG@60]
    want = demo["ref"]["native", "canonical", "nDCG@60"]
    assert math.isclose(got, sum(want.values()) / len(want), rel_tol=0, abs_tol=1e-12)


def test_by_hand_ties_and_an_item_in_two_groups() -> None:
    # groups u1 = {a, b}, u2 = {b}, u3 = {c}; scores x 3, b 2, a 2, c 1: the tie between b
    # and a goes to the larger id, as in trec_eval, so the order is x, b, a, c. b (rank 2)
    # fills u1 and u2, a (rank 3) fills nothing, c (rank 4) fills u3:
    # nDCG@4 = (1/log2 3 + 1/log2 5) / (1 + 1/log2 3 + 1/log2 4) = 1.06152 / 2.13093
    qrels = [ir_measures.Qrel("q", d, 1, g) for g, d in
             (("u1", "a"), ("u1", "b"), ("u2", "b"), ("u3", "c"))]
    run = [ir_measures.ScoredDoc("q", d, s) for d, s in (("x", 3), ("a", 2), ("b", 2), ("c", 1))]
    want = (1 / math.log2(3) + 1 / math.log2(5)) / (1 + 1 / math.log2(3) + 1 / math.log2(4))
    got = ir_measures.calc_aggregate([GroupNDCG@4, GroupR@2, GroupRR, GroupP@4], qrels, run)
    assert math.isclose(got[GroupNDCG@4], want, abs_tol=1e-15)
    assert got[GroupR@2] == 2 / 3 and got[GroupRR] == 1 / 2 and got[GroupP@4] == 2 / 4


def test_set_qrels_are_refused(demo: dict[str, Any]) -> None:
    # the plain qrels (column 2 is 0) hold no groups: one group per query would be another
    # measure, so it is an error, not a number
    root = demo["root"]
    qrels = list(ir_measures.read_trec_qrels(str(root / "targets/qrels/native.source.qrels")))
    run = list(ir_measures.read_trec_run(str(root / "runs" / "native.trec")))
    with pytest.raises(ValueError, match="needs group qrels"):
        ir_measures.calc_aggregate([GroupNDCG@60], qrels, run)


def test_an_edited_qrels_file_is_not_read(demo: dict[str, Any], tmp_path: Path) -> None:
    folder = tmp_path / "targets"
    shutil.copytree(demo["root"] / "targets", folder)
    path = folder / "subtopic_qrels" / "f1.raw.qrels"
    path.write_text(path.read_text()[: -20])
    with pytest.raises(TiapError, match="changed since"):
        group_qrels(folder, "f1", "raw")


# ------------------------------------------------------------------------------------------
# ir_datasets


def test_ir_datasets_gives_the_folders_docs_queries_and_qrels(demo: dict[str, Any],
                                                              tmp_path: Path) -> None:
    ir_datasets = pytest.importorskip("ir_datasets", reason="the plugins extra is not installed")
    from tiap.plugins.ir_datasets import register

    root = demo["root"]
    ids = register(root / "targets", "plugins-test", queries=root / "queries.jsonl")
    assert ids[:2] == ["tiap/plugins-test/f1", "tiap/plugins-test/f1/raw"]
    assert len(ids) == len(STORES) * (1 + len(TARGETS))
    n_queries = len(read_queries(root / "queries.jsonl"))
    for store, st in demo["stores"].items():
        run = list(ir_measures.read_trec_run(str(root / "runs" / f"{store}.trec")))
        for target in TARGETS:
            ds = ir_datasets.load(f"tiap/plugins-test/{store}/{target}")
            assert ds.docs_count() == len(st.items)
            assert [d.doc_id for d in ds.docs_iter()] == [it.item_id for it in st.items]
            assert len(list(ds.queries_iter())) == n_queries
            lines = (root / "targets" / "subtopic_qrels" / f"{store}.{target}.qrels").read_text()
            assert [f"{r.query_id} {r.iteration} {r.doc_id} {r.relevance}"
                    for r in ds.qrels_iter()] == lines.splitlines()
            plain = (root / "targets" / "qrels" / f"{store}.{target}.qrels").read_text()
            assert {(r.query_id, r.doc_id) for r in ds.qrels_iter()} == {
                tuple(ln.split()[::2]) for ln in plain.splitlines()}
            _close(_per_query(GroupNDCG@60, ds.qrels_iter(), run),
                   demo["ref"][store, target, "nDCG@60"])
    assert ds.docs_store().get(st.items[0].item_id).text == (st.items[0].text or "")
    # the same folder again is a no-op; its name for another folder is an error
    assert register(root / "targets", "plugins-test") == ids
    other = tmp_path / "elsewhere"
    shutil.copytree(root / "targets", other / "targets")
    with pytest.raises(TiapError, match="registered already"):
        register(other / "targets", "plugins-test")


# ------------------------------------------------------------------------------------------
# PyTerrier


def test_the_entry_point_is_declared() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["entry-points"]["pyterrier.dataset_provider"] == {
        "tiap": "tiap.plugins.pyterrier:DatasetProvider"}
    assert {"ir-measures>=0.3.1", "ir-datasets>=0.5"} <= set(
        project["optional-dependencies"]["plugins"])


@pytest.fixture
def entry_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """TIAP's entry point as pyproject declares it, visible to importlib.metadata from a
    dist-info folder on sys.path (an editable install made before the entry point was
    declared does not have it)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    info = tmp_path / "site" / "tiap_plugins_test-0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tiap-plugins-test\n"
                                   "Version: 0\n")
    lines = [f"{k} = {v}" for k, v in project["entry-points"]["pyterrier.dataset_provider"].items()]
    (info / "entry_points.txt").write_text("[pyterrier.dataset_provider]\n" + "\n".join(lines)
                                           + "\n")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))


def test_pyterrier_reproduces_tiap(demo: dict[str, Any], entry_point: None) -> None:
    pt = pytest.importorskip("pyterrier", reason="the plugins extra is not installed")
    root = demo["root"]
    n_queries = len(read_queries(root / "queries.jsonl"))
    for store, st in demo["stores"].items():
        run = pt.io.read_results(str(root / "runs" / f"{store}.trec"))
        for target in TARGETS:
            ds = pt.get_dataset(f"tiap:{root / 'targets'}/{store}/{target}")
            topics, qrels = ds.get_topics(), ds.get_qrels()
            assert len(topics) == n_queries and list(topics.columns) == ["qid", "query"]
            assert list(qrels.columns) == ["qid", "docno", "label", "iteration"]
            assert sum(1 for _ in ds.get_corpus_iter()) == len(st.items)
            res = pt.Experiment([run], topics, qrels, eval_metrics=[GroupNDCG@60],
                                perquery=True)
            # PyTerrier lists a topic without qrels (a zero-target query) as NaN, "not to
            # contribute to averages": TIAP's undefined value
            got = {r.qid: r.value for r in res.itertuples() if not math.isnan(r.value)}
            _close(got, demo["ref"][store, target, "nDCG@60"])
            mean = pt.Experiment([run], topics, qrels, eval_metrics=[GroupNDCG@60])
            want = demo["ref"][store, target, "nDCG@60"]
            assert math.isclose(mean["GroupNDCG@60"][0], sum(want.values()) / len(want),
                                rel_tol=0, abs_tol=1e-12)
    with pytest.raises(KeyError, match="not found in provider 'tiap'") as caught:
        pt.get_dataset("tiap:targets/f9/raw")
    assert "give <folder>/<store>/<target>" in str(caught.value.__cause__)  # ours, beneath


def test_the_provider_names_what_a_folder_holds(demo: dict[str, Any]) -> None:
    from tiap.plugins.pyterrier import DatasetProvider

    with pytest.raises(KeyError, match="holds stores f1, f5, native and targets raw, source"):
        DatasetProvider().get_dataset(f"{demo['root'] / 'targets'}/f1/nosuch")


def test_a_changed_items_file_is_not_read(demo: dict[str, Any], tmp_path: Path) -> None:
    # the docs are the items `tiap targets` read: an items file given (or found) whose sha256
    # is not the manifest's is an error naming it, never read as the store
    from tiap.plugins import TargetsFolder

    changed = tmp_path / "items.jsonl"
    lines = (demo["root"] / "stores/f1/items.jsonl").read_text().splitlines(keepends=True)
    changed.write_text("".join(lines[:-1]))
    folder = TargetsFolder(demo["root"] / "targets", items={"f1": changed})
    with pytest.raises(TiapError, match="not the file `tiap targets` read") as caught:
        folder.store("f1")
    assert str(changed) in str(caught.value)
    assert len(TargetsFolder(demo["root"] / "targets").store("f1").items) == len(
        demo["stores"]["f1"].items)  # the recorded file, unchanged, is read
