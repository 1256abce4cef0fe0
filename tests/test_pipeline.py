"""The main job (``tiap audit-run``) on a small real slice: one LoCoMo conversation."""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

from tiap.cli.main import main
from tiap.pipeline import load_config

ROOT = Path(__file__).resolve().parents[1]


def test_shipped_configs_load() -> None:
    for name in ("locomo", "longmemeval-s", "beam-100k"):
        cfg = load_config(ROOT / "configs" / f"{name}.toml")
        assert cfg.stores and cfg.retrievers == ("bm25",)
    cfg = load_config(ROOT / "configs" / "locomo.toml", retrievers=["bm25", "dense"])
    assert [s for s, _, _ in cfg.systems()][:2] == ["f1-bm25", "f1-dense"]
    assert cfg.design == {"density": ("f1", "f5", "f8")}
    assert (cfg.correction, cfg.min_effect, cfg.alpha) == ("holm", 0.0, 0.05)


def test_every_shipped_config_states_its_headline_threshold() -> None:
    """A headline flip's practical threshold is set in every shipped config, not left to a
    default (docs/sensitivity.md, "When a flip is a headline")."""
    import tomllib

    shipped = sorted((ROOT / "configs").glob("*.toml"))
    assert len(shipped) >= 4
    for path in shipped:
        with open(path, "rb") as fh:
            assert tomllib.load(fh).get("min_dz") == 0.2, path.name


# bad configs: tests/bad_input/test_config.py


def test_locomo_one_conversation_end_to_end(data_dir: Path, tmp_path: Path, capsys,
                                             monkeypatch) -> None:
    out = tmp_path / "out"
    args = ["audit-run", str(ROOT / "configs" / "locomo.toml"), "--out", str(out),
            "--collections", "conv-26", "--data", str(data_dir)]
    assert main(args) == 0
    printed = capsys.readouterr()
    assert "f1-bm25" in printed.out and "canonical" in printed.out
    root = out / "locomo"
    with open(root / "rescore" / "summary.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    systems = {r["system"] for r in rows}
    assert systems == {"f1-bm25", "f5-bm25", "f8-bm25", "native-bm25"}
    ndcg = {(r["system"], r["target"]): r for r in rows if r["measure"] == "nDCG@60"}
    # conv-26 has 199 QA items; 2 have no evidence (q30, q46 are zero-target everywhere)
    assert ndcg[("f1-bm25", "raw")]["n"] == "197"
    # Source credits a superset of Raw's items in every group; on this conversation its mean
    # is above Raw's for every store (per query it can be lower: one item may match two groups)
    for s in systems:
        assert float(ndcg[(s, "source")]["mean"]) >= float(ndcg[(s, "raw")]["mean"])
    # Stage III ran on what the pipeline held in memory (per-query values, queries, stores,
    # runs); read back from the files by a cold Stage III, every table is the same, byte for
    # byte
    from tiap.sensitivity import analyze, write_sensitivity

    cfg = load_config(ROOT / "configs" / "locomo.toml")
    cold = analyze([(cfg.name, root / "rescore")], seed=cfg.seed, resamples=cfg.resamples,
                   alpha=cfg.alpha, correction=cfg.correction, min_effect=cfg.min_effect,
                   min_dz=cfg.min_dz, configs={f"{d}-bm25": [f"{m}-bm25" for m in ms]
                            for d, ms in cfg.design.items()})
    write_sensitivity(cold, tmp_path / "cold")
    tables = sorted(p.name for p in (root / "sensitivity").glob("*.csv"))
    assert "winner_flips.csv" in tables and "answers.csv" in tables
    assert tables == sorted(p.name for p in (tmp_path / "cold").glob("*.csv"))
    for name in tables:
        assert (root / "sensitivity" / name).read_bytes() == (tmp_path / "cold" / name
                                                               ).read_bytes(), name
    # the report highlights exactly the flips significant after correction (conv-26 has
    # both kinds on nDCG@60, so this can fail either way)
    flips = [r for r in csv.DictReader((root / "sensitivity" / "winner_flips.csv").open())
             if r["measure"] == "nDCG@60"]
    assert {r["significant_flip"] for r in flips} == {"true", "false"}
    text = (root / "report" / "tables" / "locomo_winner_flips.md").read_text()
    assert "system gaps on nDCG@60 under" in text
    rows = [ln for ln in text.splitlines() if ln.startswith("| ")][1:]
    assert [ln.startswith("| **") for ln in rows] == [
        r["significant_flip"] == "true" for r in flips]
    # the audit's default measure is the headline one (nDCG@60 here, not the first nDCG@20)
    assert main(["audit", "cases", str(root / "rescore"), "--out",
                 str(tmp_path / "cases.jsonl")]) == 0
    cases = [json.loads(ln) for ln in (tmp_path / "cases.jsonl").read_text().splitlines()]
    assert cases and {(c["measure"], c["k"]) for c in cases} == {("nDCG@60", 60)}
    assert "21-60" in {c["rank_bucket"] for c in cases}
    capsys.readouterr()
    # the offline audit of every contested credit, and what survives it, in the report
    support = (root / "audit" / "graded" / "support_summary.csv").read_text()
    assert "Coverage@60" in support and "Sufficient@60" in support
    if (root / "report" / "index.html").exists():
        page = (root / "report" / "index.html").read_text()
        assert "Semantic audit: what survives checking (locomo)" in page
        assert "offline judge is a heuristic, not a language model" in page
    # the trace carries its provenance header
    first = json.loads((root / "runs" / "f1-bm25.jsonl").read_text().split("\n", 1)[0])
    assert first.get("tiap_trace") == 1
    # a rerun skips every finished step, rescoring, Stage III and the report included, and
    # prints the same tables (the summary read back from summary.csv)
    report_built = (root / "report" / "index.html").exists()
    assert main(args) == 0
    again = capsys.readouterr()
    # queries, 4 stores, 4 runs, rescore, the audit, Stage III (and the report)
    assert again.err.count("up to date, skipped") == 1 + 4 + 4 + 3 + report_built
    for name in ("rescore", "audit", "sensitivity"):
        assert f"  {name}: up to date, skipped" in again.err
    assert again.out == printed.out
    assert "every step was up to date, nothing was recomputed" in again.err
    # a run touched (a new mtime, the same bytes) is still up to date; a run edited by hand
    # is retrieved again (the retriever's own bytes), so its rescoring stands
    # (tests/bad_input/test_step_outputs.py: every step's outputs deleted or edited)
    run = root / "runs" / "f5-bm25.jsonl"
    clean = run.read_bytes()
    os.utime(run, ns=(run.stat().st_atime_ns, run.stat().st_mtime_ns + 10**9))
    assert main(args) == 0
    assert "every step was up to date" in capsys.readouterr().err
    head, first, rest = clean.split(b"\n", 2)
    run.write_bytes(b"\n".join([head, first.replace(b'"ranking":["', b'"ranking":["x", "'), rest]))
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "retrieve-f5-bm25: recomputed: runs/f5-bm25.jsonl changed since the step wrote it" in err
    assert err.count("up to date, skipped") == 1 + 4 + 3 + 3 + report_built
    assert run.read_bytes() == clean
    # changed code (a parser being developed) makes the steps run again
    from tiap import pipeline

    monkeypatch.setattr(pipeline, "_code_identity", lambda: "other code")
    assert main(args) == 0
    assert "up to date, skipped" not in capsys.readouterr().err
