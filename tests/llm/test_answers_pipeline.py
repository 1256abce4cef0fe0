"""``audit-run`` with its optional answer stage, against a real model (SmolLM2-135M served by
the pipeline itself): answers for a sample of one conversation's queries, judged offline and
by the model, tied to retrieval, analysed, and in the report and card; a rerun asks nothing."""

from __future__ import annotations

import csv
import json
import socket
from pathlib import Path

from tiap.answers import load_answers
from tiap.cli.main import main


def _free_port() -> int:
    with socket.socket() as sock:  # the default port may be serving already
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_audit_run_answers_judges_and_reports(data_dir: Path, tmp_path: Path, capsys) -> None:
    cfg = tmp_path / "answers-slice.toml"
    cfg.write_text(
        'name = "slice"\ndataset = "locomo"\ncollections = ["conv-26"]\nsessions = 2\n'
        'retrievers = ["bm25"]\nk = 20\ntargets = ["raw", "source", "canonical"]\n'
        'measures = ["nDCG@20"]\nresamples = 200\nmin_dz = 0.2\n'
        '[[stores]]\nname = "f1"\nparser = "heuristic"\nmax_facts = 1\n'
        '[[stores]]\nname = "native"\nparser = "native"\n'
        '[answers]\nsample = 3\nseed = 1\nk = 5\nmax_tokens = 24\n'
        'judges = ["locomo-f1", "llm(max_tokens=48, max_invalid=1.0)"]\n'
        f'local_model = "smollm2-135m"\nlocal_port = {_free_port()}\n', encoding="utf-8")
    args = ["audit-run", str(cfg), "--out", str(tmp_path / "out"), "--data", str(data_dir)]
    assert main(args) == 0
    assert "answers: 2 systems x 3 queries with smollm2-135m" in capsys.readouterr().err
    root = tmp_path / "out" / "slice" / "answers"
    judged = load_answers(root / "judged")
    # both systems answered the same 3 sampled questions, each answer with its context
    assert sorted(judged.systems) == ["f1-bm25", "native-bm25"] and len(judged) == 6
    assert len({a.query_id for a in judged}) == 3
    assert all(a.context is not None and 1 <= len(a.context.items) <= 5 for a in judged)
    assert {a.context.store for a in judged if a.system == "f1-bm25"} == {"f1"}
    # the offline judge scored every answer; the model's configuration is named in full
    assert all(a.verdict("locomo-f1") is not None for a in judged)
    llm = [j for j in judged.configs if j.startswith("smollm2-135m|")]
    assert llm == ["smollm2-135m|tiap_judge|r0"]
    gen = json.loads((root / "generated" / "manifest.json").read_text())
    assert gen["generation"]["model"] == "smollm2-135m" and gen["generation"]["k"] == 5
    # the 2x2 tables: per system x target x judge, every judged answer in one cell
    with open(root / "evidence" / "evidence.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert {(r["system"], r["target"]) for r in rows} >= {
        (s, t) for s in ("f1-bm25", "native-bm25") for t in ("raw", "source", "canonical")}
    for r in rows:
        cells = sum(int(r[c]) for c in ("hit_correct", "hit_wrong", "miss_correct",
                                        "miss_wrong", "undetermined_correct",
                                        "undetermined_wrong"))
        assert cells + int(r["no_verdict"]) + int(r["no_target"]) == 3, r
    # the analysis and the report's section, and the card names the configurations
    assert (root / "analysis" / "accuracy.csv").is_file()
    report = tmp_path / "out" / "slice" / "report"
    assert "Answers and judges (analysis)" in (report / "index.html").read_text()
    card = (report / "target_card.md").read_text()
    assert "## Answers and judges" in card and "smollm2-135m\\|tiap_judge\\|r0" in card
    # a rerun: the answer stage is up to date, nothing is asked or served again
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "answers: 2 systems" not in err
