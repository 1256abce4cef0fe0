"""The LLM paths against a real model: SmolLM2-135M on llama.cpp (the ``local_llm`` fixture),
the ``openai`` judge on real audit cases of the paper and the ``llm`` parser on real LoCoMo
turns. A small slice, run every time; the full runs are documented in docs/local-llm.md."""

from __future__ import annotations

import csv
import json
from dataclasses import replace
from pathlib import Path

from tiap.audit import make_judge
from tiap.audit.labels import SEMANTIC_LABELS, UNSCORED
from tiap.audit.paper import read_paper_cases
from tiap.audit.run import VerdictCache, run_judges
from tiap.datasets import load
from tiap.datasets.base import Bundle, InlineDataset
from tiap.llm.local import MODELS
from tiap.memory import build_store
from tiap.memory.store import read_store


def test_the_openai_judge_on_real_cases(local_llm, data_dir: Path, tmp_path: Path) -> None:
    cases = read_paper_cases(data_dir / "mtel-mem" / "semantic_audit" / "judged_cases.csv")
    cases = [c for c in cases if c.target == "source"][:4]
    judge = make_judge(("openai", {"model": local_llm.model, "base_url": local_llm.base_url,
                                   "concurrency": 1, "timeout": 300, "max_invalid": 1.0}))
    run = run_judges(cases, [judge], VerdictCache(tmp_path / "cache.sqlite"))
    assert [r.case_id for r in run.records] == [c.case_id for c in cases]
    for r in run.records:
        assert r.label in (*SEMANTIC_LABELS, UNSCORED)
        assert r.response is not None and r.response["model"] == "smollm2-135m"
        if r.label == UNSCORED:  # only a reply cut by the token cap may go unscored here
            assert r.reason == f"cut at max_tokens={judge.max_tokens}", r.reason
        else:  # the schema made the reply one JSON object of the rubric's shape
            obj = json.loads(r.raw_response)
            assert obj["semantic_support_label"] == r.label
    # the server took the JSON schema: nothing was refused, the mode used is json_schema
    (st,) = run.stats
    assert st.response_format == {"asked": "json_schema", "used": "json_schema",
                                  "refusals": []}
    assert sum(r.label != UNSCORED for r in run.records) >= 3


def test_the_llm_parser_on_real_turns(local_llm, data_dir: Path, tmp_path: Path) -> None:
    conv = next(iter(load("locomo", data_dir).bundles()))
    turns = conv.turns[:4]
    bundle = Bundle(collection=replace(conv.collection, n_turns=len(turns)),
                    sessions=conv.sessions[:1], turns=turns, queries=(), memories=())
    res = build_store(InlineDataset([bundle]), "llm", tmp_path / "store",
                      parser_args={"base_url": local_llm.base_url, "model": local_llm.model,
                                   "max_facts": 3, "concurrency": 1, "timeout": 300,
                                   "max_invalid": 1.0, "cache": tmp_path / "llm.sqlite",
                                   # SmolLM2 repeats itself on one of the 4 turns until
                                   # the cap (twice: a JSON retry): 256 rather than the
                                   # default 512 takes half the time (47 s, not 99 s, here);
                                   # tests/memory/test_llm.py checks the default 512
                                   "max_tokens": 256})
    store = read_store(tmp_path / "store" / "items.jsonl")
    raw = [i for i in store.items if i.kind == "raw"]
    facts = [i for i in store.items if i.kind != "raw"]
    assert [i.item_id for i in raw] == [t.unit_id for t in turns]
    # every fact is a non-empty text tied to the one turn it was parsed from
    by_turn = {t.unit_id for t in turns}
    for f in facts:
        assert f.text and f.text.strip()
        assert len(f.sources) == 1 and f.sources[0] in by_turn
        assert f.item_id.startswith(f.sources[0] + "#f")
    assert len({f.sources[0] for f in facts}) <= 4
    stats = res.manifest["parser_stats"]
    assert stats["response_format"] == {"asked": "json_schema", "used": "json_schema",
                                        "refusals": []}
    assert stats["max_tokens"] == 256 and stats["turns"] == 4
    assert stats["requests"] >= 4 and stats["turns_invalid"] <= 1
    # the cache given from Python as a Path is recorded as text
    assert res.manifest["parser"]["args"]["cache"] == str(tmp_path / "llm.sqlite")


def test_audit_judge_serves_a_local_model_itself(data_dir: Path, tmp_path: Path, capsys) -> None:
    import socket

    from tiap.audit.cases import write_cases
    from tiap.cli.main import main

    cases = read_paper_cases(data_dir / "mtel-mem" / "semantic_audit" / "judged_cases.csv")[:2]
    write_cases(tmp_path / "cases.jsonl", cases)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    args = ["audit", "judge", str(tmp_path / "cases.jsonl"), "--judge", "openai",
            "--local-model", "smollm2-135m", "--local-port", str(port), "--out",
            str(tmp_path / "judged")]
    assert main(args) == 0
    man = json.loads((tmp_path / "judged" / "manifest.json").read_text())
    assert man["options"]["local_model"]["model"] == "smollm2-135m"
    (judge,) = man["judges"]
    assert judge["model"] == "smollm2-135m"
    assert judge["base_url"] == f"http://127.0.0.1:{port}/v1"
    labels = [json.loads(line) for line in
              (tmp_path / "judged" / "labels.jsonl").read_text().splitlines() if line.strip()]
    scored = sum(1 for r in labels if r["label"] != "unscored")
    capsys.readouterr()
    # a rerun asks only for what was not scored (unscored verdicts are never cached): the
    # fixed port keeps the verdict cache's keys, which name the endpoint
    assert main(args) == 0
    man2 = json.loads((tmp_path / "judged" / "manifest.json").read_text())
    assert man2["counts"][0]["asked"] == 2 - scored
    assert man2["counts"][0]["from_cache"] == scored
    # --local-model and --base-url are two endpoints
    assert main([*args[:-2], "--base-url", "http://127.0.0.1:9/v1", "--out",
                 str(tmp_path / "x")]) == 2
    assert "give --base-url or --local-model, not both" in capsys.readouterr().err
    # a local model for judges that call no endpoint is refused before any server starts
    assert main(["audit", "judge", str(tmp_path / "cases.jsonl"), "--judge", "lexical",
                 "--local-model", "smollm2-135m", "--out", str(tmp_path / "y")]) == 2
    assert "--local-model is for openai judges" in capsys.readouterr().err
    # an openai judge aimed at another endpoint or model would not judge with the local one
    base = ["audit", "judge", str(tmp_path / "cases.jsonl"), "--local-model", "smollm2-135m",
            "--out", str(tmp_path / "z")]
    for extra, says in (
            (["--judge", 'openai(base_url="http://127.0.0.1:9/v1")'],
             "names its own base_url, so it would not use the --local-model server"),
            (["--judge", 'openai(model="gpt-4o")'],
             "asks for model 'gpt-4o', but --local-model serves 'smollm2-135m'"),
            (["--judge", "openai", "--model", "qwen2.5-coder-1.5b"],
             "--model 'qwen2.5-coder-1.5b' is not the model --local-model serves")):
        assert main([*base, *extra]) == 2
        assert says in " ".join(capsys.readouterr().err.split())
    assert not (tmp_path / "z").exists()


def test_mem0_run_local_model_usage_errors(tmp_path: Path, capsys) -> None:
    from tiap.cli.main import main

    base = ["mem0-run", "locomo", "--out", str(tmp_path / "m"), "--local-model", "smollm2-135m"]
    assert main(base) == 2  # no --infer: nothing would call the model
    assert "--local-model serves the LLM of --infer; add --infer" in capsys.readouterr().err
    assert main([*base, "--infer", "--llm-base-url", "http://127.0.0.1:9/v1"]) == 2
    assert "give --llm-base-url or --local-model, not both" in capsys.readouterr().err
    assert main([*base, "--infer", "--llm-model", "qwen2.5-coder-1.5b"]) == 2
    assert ("--llm-model 'qwen2.5-coder-1.5b' is not the model --local-model serves "
            "('smollm2-135m')") in " ".join(capsys.readouterr().err.split())
    assert main([*base[:-1], "smol", "--infer"]) == 2  # an unknown model, before any data
    assert "unknown local model 'smol'" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()


def test_audit_run_builds_an_llm_store_with_the_local_model(data_dir: Path, tmp_path: Path,
                                                            capsys) -> None:
    """The main job with a real model: audit-run serves SmolLM2 itself for the llm store of
    conv-26's first session (18 turns), retrieves, rescores under all three targets, and
    stops the server; a rerun starts no server."""
    import socket

    from tiap.cli.main import main

    with socket.socket() as sock:  # a free port (the default one may be serving already)
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    cfg = tmp_path / "llm-slice.toml"
    cfg.write_text(
        'name = "llm-slice"\ndataset = "locomo"\ncollections = ["conv-26"]\nsessions = 1\n'
        f'local_model = "smollm2-135m"\nlocal_port = {port}\nretrievers = ["bm25"]\nk = 20\n'
        'targets = ["raw", "source", "canonical"]\nmeasures = ["nDCG@20"]\n'
        '[[stores]]\nname = "h5"\nparser = "heuristic"\nmax_facts = 5\n'
        '[[stores]]\nname = "s5"\nparser = "llm"\nmax_facts = 5\nmax_tokens = 64\n'
        f'max_invalid = 1.0\ncache = "{tmp_path / "llm.sqlite"}"\n', encoding="utf-8")
    args = ["audit-run", str(cfg), "--out", str(tmp_path / "out"), "--data", str(data_dir)]
    assert main(args) == 0
    err = " ".join(capsys.readouterr().err.split())
    assert "local model smollm2-135m served at http://127.0.0.1:" in err
    root = tmp_path / "out" / "llm-slice"
    man = json.loads((root / "stores" / "s5" / "manifest.json").read_text())
    stats = man["parser_stats"]
    assert stats["turns"] == 18 and stats["max_tokens"] == 64
    assert man["local_model"]["sha256"] == MODELS["smollm2-135m"].sha256
    assert man["dataset"]["sessions"] == 1
    items = read_store(root / "stores" / "s5" / "items.jsonl").items
    raw = {i.item_id for i in items if i.kind == "raw"}
    assert len(raw) == 18 and all(u.startswith("conv-26:D1:") for u in raw)
    # every fact the model produced is tied to one turn of the slice
    assert all(len(i.sources) == 1 and i.sources[0] in raw for i in items if i.kind != "raw")
    with open(root / "rescore" / "summary.csv", newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["measure"] == "nDCG@20"]
    assert {(r["system"], r["target"]) for r in rows} == {
        (s, t) for s in ("h5-bm25", "s5-bm25") for t in ("raw", "source", "canonical")}
    n = {r["n"] for r in rows if r["target"] == "raw"}
    assert len(n) == 1 and int(n.pop()) > 0
    # a rerun: every step is up to date, so no server is started
    assert main(args) == 0
    assert "served at" not in capsys.readouterr().err


def _first_turns(data_dir: Path, folder: Path, n: int) -> Path:
    """A data folder whose locomo10.json holds conv-26's first ``n`` turns (of session 1) and
    the QA items whose evidence lies in them."""
    conv = json.loads((data_dir / "locomo" / "locomo10.json").read_text(encoding="utf-8"))[0]
    assert conv["sample_id"] == "conv-26"
    body = conv["conversation"]
    turns = body["session_1"][:n]
    kept = {t["dia_id"] for t in turns}
    small = {"sample_id": "conv-26",
             "conversation": {"speaker_a": body["speaker_a"], "speaker_b": body["speaker_b"],
                              "session_1_date_time": body["session_1_date_time"],
                              "session_1": turns},
             "qa": [q for q in conv["qa"] if q.get("evidence") and set(q["evidence"]) <= kept]}
    (folder / "locomo").mkdir(parents=True)
    (folder / "locomo" / "locomo10.json").write_text(json.dumps([small]), encoding="utf-8")
    return folder


def test_build_store_serves_a_local_model_for_a_session_slice(data_dir: Path, tmp_path: Path,
                                                              capsys) -> None:
    import socket

    from tiap.cli.main import main

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # the first 4 turns of conv-26 (its first session has 18; the model's time grows with
    # each turn): a LoCoMo file of its own, read with --no-verify (its checksum is not the
    # pinned one); test_audit_run_builds_an_llm_store_with_the_local_model parses all 18
    data = _first_turns(data_dir, tmp_path / "data", 4)
    out = tmp_path / "store"
    base = ["build-store", "locomo", "--parser", "llm", "--out", str(out), "--data",
            str(data), "--no-verify", "--collections", "conv-26", "--sessions", "1"]
    assert main([*base, "--local-model", "smollm2-135m", "--local-port", str(port),
                 "--max-facts", "3", "--max-tokens", "64", "--max-invalid", "1",
                 "--cache", str(tmp_path / "llm.sqlite")]) == 0
    assert "local model smollm2-135m served at" in capsys.readouterr().err
    man = json.loads((out / "manifest.json").read_text())
    assert man["dataset"]["sessions"] == 1 and man["parser_stats"]["turns"] == 4
    assert man["local_model"]["model"] == "smollm2-135m"
    assert man["local_model"]["sha256"] == MODELS["smollm2-135m"].sha256
    args = man["parser"]["args"]
    assert args["base_url"] == f"http://127.0.0.1:{port}/v1"
    assert (args["model"], args["concurrency"], args["timeout"]) == ("smollm2-135m", 1, 600.0)
    raw = [i for i in read_store(out / "items.jsonl").items if i.kind == "raw"]
    assert [i.item_id for i in raw] == [f"conv-26:D1:{n}" for n in range(1, 5)]
    # usage errors, before any server starts or any data is read
    for extra, says in (
            (["--local-model", "smollm2-135m", "--model", "x"],
             "--model 'x' is not the model --local-model serves ('smollm2-135m')"),
            (["--local-model", "smollm2-135m", "--base-url", "http://127.0.0.1:9/v1"],
             "give --base-url or --local-model, not both"),
            (["--local-model", "smollm2"], "unknown local model 'smollm2'")):
        assert main(["build-store", "locomo", "--parser", "llm", "--out", str(tmp_path / "x"),
                     *extra]) == 2
        assert says in " ".join(capsys.readouterr().err.split())
    assert main(["build-store", "locomo", "--parser", "heuristic", "--out",
                 str(tmp_path / "h"), "--local-model", "smollm2-135m"]) == 2
    assert "--local-model serves the model of --parser llm only" in capsys.readouterr().err
    assert not (tmp_path / "x").exists() and not (tmp_path / "h").exists()
