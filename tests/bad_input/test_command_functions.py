"""Commands that are one API call (issue 34, "the CLI is a shell"): the function a command
calls writes the folder the command writes and makes the same checks, an error naming the
Python parameter (the command's names the option). Every input is built here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tiap.cli.main import main
from tiap.errors import TiapError
from tiap.targets import targets_files

ITEMS = [{"item_id": "t1", "kind": "raw", "sources": ["d1:1"]},
         {"item_id": "t2", "kind": "raw", "sources": ["d1:2"]},
         {"item_id": "m1", "kind": "fact", "sources": ["d1:1", "d1:2"]}]
QUERIES = [{"query_id": "q1", "evidence": ["d1:1", "d1:2"]},
           {"query_id": "q2", "evidence": ["d1:2"]}]


def _jsonl(path: Path, rows: list[dict]) -> Path:  # type: ignore[type-arg]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _tree(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` but the manifest (which holds times and paths)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != "manifest.json"}


@pytest.fixture()
def f(tmp_path: Path) -> dict[str, Path]:
    return {"items": _jsonl(tmp_path / "f5" / "items.jsonl", ITEMS),
            "queries": _jsonl(tmp_path / "queries.jsonl", QUERIES),
            "overlay": _jsonl(tmp_path / "overlay.jsonl",
                              [{"query_id": "q2", "evidence": ["d1:1"]}])}


def test_targets_files_writes_what_tiap_targets_writes(f, tmp_path, capsys) -> None:
    res = targets_files([f["items"]], f["queries"], tmp_path / "py",
                        ["raw", "canonical", "raw~fix"], overlays=[f"fix={f['overlay']}"])
    assert main(["targets", "--items", str(f["items"]), "--queries", str(f["queries"]),
                 "--targets", "raw,canonical,raw~fix", "--overlay", f"fix={f['overlay']}",
                 "--out", str(tmp_path / "cli")]) == 0
    assert _tree(tmp_path / "py") == _tree(tmp_path / "cli")
    # the store is named by its folder (f5); Raw: each evidence turn is a group (q1: t1, t2;
    # q2: t2); Canonical: the fact m1 derives from both turns; raw~fix: q2's evidence is
    # d1:1 under the overlay, so its raw group is t1
    qrels = tmp_path / "py" / "qrels"
    assert (qrels / "f5.raw.qrels").read_text() == "q1 0 t1 1\nq1 0 t2 1\nq2 0 t2 1\n"
    assert (qrels / "f5.canonical.qrels").read_text() == "q1 0 m1 1\nq2 0 m1 1\n"
    assert (qrels / "f5.raw~fix.qrels").read_text() == "q1 0 t1 1\nq1 0 t2 1\nq2 0 t1 1\n"
    man = json.loads((tmp_path / "py" / "manifest.json").read_text())
    assert {"queries", "overlay:fix"} <= set(man["inputs"])
    assert res.stores == ("f5",)


def test_targets_files_checks_name_the_parameter(f, tmp_path, capsys) -> None:
    named = f"f5={f['items']}"  # a store is named by its rows or folder, never NAME=PATH
    with pytest.raises(TiapError, match="file not found; items takes a path only"):
        targets_files([named], f["queries"], tmp_path / "py")
    assert main(["targets", "--items", named, "--queries", str(f["queries"]),
                 "--out", str(tmp_path / "cli")]) == 2
    assert "file not found; --items takes a path only" in capsys.readouterr().err
    with pytest.raises(TiapError, match="overlays 'fix': give NAME=PATH"):
        targets_files([f["items"]], f["queries"], tmp_path / "py", overlays=["fix"])
    assert not (tmp_path / "py").exists() and not (tmp_path / "cli").exists()


RUNS = [{"query_id": "q1", "system": "A", "ranking": ["m1", "t1"]},
        {"query_id": "q2", "system": "A", "ranking": ["t2"]},
        {"query_id": "q1", "system": "B", "ranking": ["t2", "t1"]},
        {"query_id": "q2", "system": "B", "ranking": ["m1", "t2"]}]


@pytest.fixture()
def rescored(f, tmp_path) -> Path:
    from tiap.scoring import rescore_files

    run = _jsonl(tmp_path / "runs.jsonl", RUNS)
    return rescore_files([run], tmp_path / "rescored", items=[f["items"]],
                         queries=f["queries"], measures="RR@2").out


def test_sensitivity_files_writes_what_tiap_sensitivity_writes(rescored, tmp_path,
                                                                capsys) -> None:
    from tiap.sensitivity import sensitivity_files

    res = sensitivity_files([str(rescored)], tmp_path / "py", resamples=50, seed=3,
                            configs=["pair=A,B"], pairs=["raw:canonical"])
    assert main(["sensitivity", str(rescored), "--out", str(tmp_path / "cli"),
                 "--resamples", "50", "--seed", "3", "--configs", "pair=A,B",
                 "--pairs", "raw:canonical"]) == 0
    # both folders hold the same tables (the manifest, without times, too)
    assert _tree(tmp_path / "py") == _tree(tmp_path / "cli")
    assert json.loads((tmp_path / "py" / "manifest.json").read_text())["options"] == \
        json.loads((tmp_path / "cli" / "manifest.json").read_text())["options"]
    # RR@2 under Raw: A ranks t1 second for q1 (1/2) and t2 first for q2 (1): mean 0.75
    means = {(r["system"], r["target"]): r["mean"] for r in res.table("system_means")}
    assert means["A", "raw"] == 0.75


def test_sensitivity_files_checks_name_the_parameter(rescored, tmp_path, capsys) -> None:
    from tiap.sensitivity import sensitivity_files

    with pytest.raises(TiapError, match="^items '=x': no such file, and not NAME=PATH"):
        sensitivity_files([str(rescored)], tmp_path / "py", items=["=x"])
    assert main(["sensitivity", str(rescored), "--out", str(tmp_path / "cli"),
                 "--items", "=x"]) == 2
    assert "--items '=x': no such file, and not NAME=PATH" in capsys.readouterr().err
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("x")
    with pytest.raises(TiapError) as exc:  # the folder is checked before anything is read
        sensitivity_files([str(tmp_path / "absent")], tmp_path / "mine")
    assert exc.value.code == "stale-output"
    assert not (tmp_path / "py").exists() and not (tmp_path / "cli").exists()


def test_retrieve_files_writes_what_tiap_retrieve_writes(tmp_path, capsys) -> None:
    from tiap.retrieval import retrieve_files

    items = _jsonl(tmp_path / "store" / "items.jsonl", [
        {"item_id": "t1", "kind": "raw", "sources": ["c1:D1:1"], "text": "I adopted a cat",
         "collection": "c1"},
        {"item_id": "t2", "kind": "raw", "sources": ["c1:D1:2"], "text": "the dog barks",
         "collection": "c1"}])
    queries = _jsonl(tmp_path / "queries.jsonl", [
        {"query_id": "q1", "question": "who has a cat?", "evidence": ["c1:D1:1"],
         "collection": "c1"}])
    done = retrieve_files(items.parent, queries, "bm25", tmp_path / "py" / "bm25.jsonl",
                          depth=5, system="lex")
    assert main(["retrieve", "--store", str(items.parent), "--queries", str(queries),
                 "--retriever", "bm25", "--k", "5", "--system", "lex", "--out",
                 str(tmp_path / "cli" / "bm25.jsonl")]) == 0
    assert (tmp_path / "py" / "bm25.trec").read_bytes() == \
        (tmp_path / "cli" / "bm25.trec").read_bytes()
    # only t1 shares a term ("cat") with the question: one ranked item, BM25 scores none else
    assert done.result.run.ranking("q1").item_ids == ("t1",)
    assert (done.encoded, done.shard_differing) == (None, 0)
    with pytest.raises(TiapError, match="^cache_dir and use_cache=False exclude each other"):
        retrieve_files(items.parent, queries, "dense", tmp_path / "x.jsonl", cache_dir="c",
                       use_cache=False)
    assert not (tmp_path / "x.jsonl").exists()


def test_merge_caches_merges_what_tiap_cache_merge_merges(tmp_path, capsys) -> None:
    import numpy as np

    from tiap.audit import VerdictCache
    from tiap.audit.labels import Verdict
    from tiap.cache import merge_caches
    from tiap.retrieval import EmbeddingCache

    for name in ("py", "cli"):
        with VerdictCache(tmp_path / name / "into.sqlite") as c:  # k1 only, "supports"
            c.put("k1", judge="j", case_id="c1", request={"k": 1},
                  verdict=Verdict(label="supports"), timing={})
    with VerdictCache(tmp_path / "src.sqlite") as c:  # k1 answered otherwise, and k2
        for key, label in (("k1", "partial"), ("k2", "supports")):
            c.put(key, judge="j", case_id=key, request={"k": key},
                  verdict=Verdict(label=label), timing={})
    res = merge_caches([tmp_path / "src.sqlite"], tmp_path / "py" / "into.sqlite",
                       (VerdictCache, EmbeddingCache))
    assert main(["cache", "merge", str(tmp_path / "src.sqlite"), "--into",
                 str(tmp_path / "cli" / "into.sqlite")]) == 0
    err = capsys.readouterr().err
    # k2 is new, k1 is on both sides with another label: 1 added, 0 same, 1 differing; 2 held
    assert res.kind is VerdictCache and res.total == 2
    assert res.merged == ((tmp_path / "src.sqlite", {"added": 1, "same": 0, "differing": 1}),)
    assert "1 added, 0 already there, 1 differing" in err and "holds 2 verdicts" in err
    with EmbeddingCache(tmp_path / "emb") as e:
        e.put("m", ["x"], np.zeros((1, 2)))
    with pytest.raises(TiapError, match="^the sources mix verdict and embedding caches; "
                       "merge each kind into its own into"):
        merge_caches([tmp_path / "src.sqlite", tmp_path / "emb"], tmp_path / "new.sqlite",
                     (VerdictCache, EmbeddingCache))
    with pytest.raises(TiapError, match="into is not a verdict cache"):
        merge_caches([tmp_path / "src.sqlite"], tmp_path / "emb",
                     (VerdictCache, EmbeddingCache))
    assert main(["cache", "merge", str(tmp_path / "src.sqlite"), "--into",
                 str(tmp_path / "emb")]) == 2
    assert "--into is not a verdict cache" in capsys.readouterr().err
    assert not (tmp_path / "new.sqlite").exists()


def test_dataset_functions_give_what_tiap_datasets_prints(tmp_path, capsys) -> None:
    from tiap.datasets import DataSource, dataset_stats, list_datasets

    conv = {"sample_id": "conv-1",
            "conversation": {"speaker_a": "Ann", "speaker_b": "Bob",
                             "session_1_date_time": "1 May 2023",
                             "session_1": [{"speaker": "Ann", "dia_id": "D1:1", "text": "hi"},
                                           {"speaker": "Bob", "dia_id": "D1:2",
                                            "text": "hello"}]},
            "qa": [{"question": "who?", "answer": "Ann", "evidence": ["D1:1"], "category": 4},
                   {"question": "when?", "answer": "May", "evidence": [], "category": 2}],
            "observation": {"session_1_observation": {"Ann": [["Ann says hi", "D1:1"]]}},
            "session_summary": {"session_1_summary": "they greet"},
            "event_summary": {"events_session_1": {"Ann": ["greets Bob"],
                                                   "date": "1 May 2023"}}}
    (tmp_path / "data" / "locomo").mkdir(parents=True)
    (tmp_path / "data" / "locomo" / "locomo10.json").write_text(json.dumps([conv]))
    source = DataSource(tmp_path / "data", verify=False, allow_download=False)
    rows = {r.dataset_id: (r.here, r.files) for r in list_datasets(source)}
    assert rows["locomo"] == (1, 1)  # the one file written here
    assert main(["datasets", "list", "--data", str(tmp_path / "data")]) == 0
    assert "locomo" in capsys.readouterr().out
    # one conversation, one session, two turns, two queries (one with evidence)
    stats = list(dataset_stats("locomo", source))
    assert [(s.collections, s.sessions, s.turns, s.queries, s.queries_with_evidence)
            for s in stats] == [(1, 1, 2, 2, 1)]
    assert main(["datasets", "stats", "locomo", "--json", "--data", str(tmp_path / "data"),
                 "--no-verify"]) == 0
    assert json.loads(capsys.readouterr().out) == stats[0].to_json()
    with pytest.raises(TiapError, match="^unknown dataset 'nope'"):
        list(dataset_stats("nope", source))


def test_run_mem0_files_checks_what_tiap_mem0_run_checks(tmp_path, capsys) -> None:
    from tiap.importers import run_mem0_files

    out = tmp_path / "m0"
    cases = [  # (Python keywords, command options, the message with the names of each)
        ({"local_model": "smollm2-135m"}, ["--local-model", "smollm2-135m"],
         ("local_model serves the LLM of infer; add infer",
          "--local-model serves the LLM of --infer; add --infer")),
        ({"local_model": "smollm2-135m", "infer": True, "llm_base_url": "http://x/v1"},
         ["--local-model", "smollm2-135m", "--infer", "--llm-base-url", "http://x/v1"],
         ("give llm_base_url or --local-model, not both",
          "give --llm-base-url or --local-model, not both")),
        ({"window": 0}, ["--window", "0"], ("window", "option --window: expected an integer")),
    ]
    for kwargs, options, (py, cli) in cases:
        with pytest.raises(TiapError) as exc:
            run_mem0_files("locomo", out, **kwargs)
        assert py in str(exc.value)
        assert main(["mem0-run", "locomo", "--out", str(out), *options]) == 2
        assert cli in capsys.readouterr().err
    with pytest.raises(TiapError, match="^unknown dataset 'nope'"):
        run_mem0_files("nope", out)
    assert not out.exists()  # every check before anything is written


def test_llm_functions_give_what_tiap_llm_prints(tmp_path, capsys) -> None:
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from types import SimpleNamespace

    from tiap.llm import check_server, model_rows

    assert main(["llm", "models", "--json"]) == 0
    assert [json.loads(line) for line in capsys.readouterr().out.splitlines()] == model_rows()

    asked: list[dict] = []  # type: ignore[type-arg]

    class StandIn(BaseHTTPRequestHandler):  # answers every chat request "Paris", 2 tokens
        def do_POST(self) -> None:
            asked.append(json.loads(self.rfile.read(int(self.headers["Content-Length"]))))
            body = json.dumps({"choices": [{"message": {"role": "assistant",
                                                        "content": " Paris\n"}}],
                               "usage": {"completion_tokens": 2}}).encode()
            self.send_response(200 if len(asked) == 1 else 500)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    http = ThreadingHTTPServer(("127.0.0.1", 0), StandIn)
    threading.Thread(target=http.serve_forever, daemon=True).start()
    try:
        srv = SimpleNamespace(base_url=f"http://127.0.0.1:{http.server_port}/v1",
                              model="m", log_file=tmp_path / "server.log")
        reply = check_server(srv)  # type: ignore[arg-type]
        assert (reply.content, reply.tokens) == ("Paris", 2)  # stripped, as printed
        assert asked[0]["model"] == "m" and asked[0]["max_tokens"] == 32
        with pytest.raises(TiapError) as exc:  # the second request gets HTTP 500
            check_server(srv)  # type: ignore[arg-type]
        assert exc.value.code == "endpoint" and "did not answer the check" in str(exc.value)
    finally:
        http.shutdown()


def test_flip_summary_is_what_tiap_audit_run_prints(f, tmp_path, capsys) -> None:
    from tiap.cli.pipeline import print_flips
    from tiap.report import flip_summary
    from tiap.scoring import rescore_files
    from tiap.sensitivity import sensitivity_files

    # A ranks the turns, B the fact m1 (RR@2). Raw (relevant: q1 t1,t2; q2 t2): A 1 and 1,
    # B 0 and 0 (B ranks m1 only, no turn) -> gap A-B +1.
    # Canonical (relevant: m1 for both): A 0 and 0, B 1 and 1 -> gap -1: a winner flip.
    run = _jsonl(tmp_path / "flip.jsonl", [
        {"query_id": "q1", "system": "A", "ranking": ["t1"]},
        {"query_id": "q2", "system": "A", "ranking": ["t2"]},
        {"query_id": "q1", "system": "B", "ranking": ["m1"]},
        {"query_id": "q2", "system": "B", "ranking": ["m1"]}])
    rdir = rescore_files([run], tmp_path / "r", items=[f["items"]], queries=f["queries"],
                         measures="RR@2").out
    sdir = tmp_path / "s"
    sensitivity_files([str(rdir)], sdir, resamples=50, seed=3, pairs=["raw:canonical"])
    s = flip_summary(sdir)
    assert s is not None and (s.total, s.headline, len(s.rows)) == (1, "RR@2", 1)
    assert (s.cells[0]["gap_1"], s.cells[0]["gap_2"]) == ("+1.0000", "-1.0000")
    # two queries: of the 4 sign vectors, 2 are as extreme as the observed one (p about 1/2)
    assert (s.significant, s.headlines, s.verdicts) == (0, 0, ("not significant",))
    assert s.resamples == 50 and s.path == sdir / "winner_flips.csv"
    print_flips(s)
    out = capsys.readouterr().out
    assert "winner flips on RR@2 (1; 0 significant" in out and "not significant" in out
    assert flip_summary(tmp_path / "r") is None  # no winner_flips.csv: nothing to print
