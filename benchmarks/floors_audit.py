"""Floors of the offline audit step (``tiap audit-run``'s ``audit``: contested cases, the
lexical judge, graded rescoring): the least work any audit of the same rescoring does.

Each function returns CPU seconds (``time.process_time``) of one pass in this process:

- :func:`judge_floor`: the lexical judge's scoring (answer coverage and its thresholds) of
  every case of ``cases.jsonl``, each case scored, none shared (the cases are decoded first,
  untimed);
- :func:`read_floor`: read and decode every input the audit reads: each line of the
  rescoring's stores, runs and queries (``json.loads``) and every row of its
  ``per_query.csv`` (``csv.reader``), no checks and no records built;
- :func:`write_floor`: json-encode and write the rows of the audit's ``cases.jsonl`` and
  ``judged/labels.jsonl`` (decoded first, untimed) and write the bytes of its graded files,
  so the bytes written equal the outputs';
- :func:`audit_time` and :func:`shared_audit_time`: the step itself, as ``tiap.pipeline``
  runs it (``_offline_audit``), and with the inputs read once and shared
  (:class:`tiap.audit.cases.RescoreInputs`, each step given the previous one's result).

The audit reads its inputs at the paths the rescoring's manifest records; run it where they
are (``/work/run37.sh`` binds the demo's outputs at the recorded path). Usage::

    PYTHONPATH=src TIAP_DATA=/work/shared/data python benchmarks/floors_audit.py \\
        RESCORE_FOLDER AUDIT_FOLDER
"""

from __future__ import annotations

import csv
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from tiap.audit.judges import LexicalJudge


def _recorded(rescore: Path) -> list[Path]:
    """The stores, runs and queries the rescoring's manifest records (found beside the
    rescoring when the recorded path is elsewhere: the longest tail of it that exists)."""
    man = json.loads((rescore / "manifest.json").read_text())
    out = []
    for entry in man["inputs"].values():
        p = Path(entry["path"])
        if not p.exists():
            tails = [rescore.parent / Path(*p.parts[i:]) for i in range(1, len(p.parts))]
            p = next(t for t in tails if t.exists())
        out.append(p)
    return out


def judge_floor(audit: str | Path) -> float:
    """CPU seconds of the lexical judge's scoring of every case of ``AUDIT/cases.jsonl``."""
    judge = LexicalJudge()
    with open(Path(audit) / "cases.jsonl", encoding="utf-8") as fh:
        cases = [json.loads(line) for line in fh]
    t = time.process_time()
    for c in cases:
        judge.ask({"answer": c["answer"] or "", "item_text": c["item_text"] or "",
                   "thresholds": {"supports": judge.supports, "partial": judge.partial}})
    return time.process_time() - t


def read_floor(rescore: str | Path) -> float:
    """CPU seconds to read and decode the rescoring's inputs and its ``per_query.csv``."""
    rescore = Path(rescore)
    paths = _recorded(rescore)
    t = time.process_time()
    for p in paths:
        with open(p, encoding="utf-8") as fh:
            for line in fh:
                json.loads(line)
    with open(rescore / "per_query.csv", newline="", encoding="utf-8") as fh:
        for _ in csv.reader(fh):
            pass
    return time.process_time() - t


def write_floor(audit: str | Path) -> float:
    """CPU seconds to encode and write the audit's JSON lines and write its graded files."""
    audit = Path(audit)
    rows = {}
    for rel in ("cases.jsonl", "judged/labels.jsonl"):
        with open(audit / rel, encoding="utf-8") as fh:
            rows[rel] = [json.loads(line) for line in fh]
    blobs = {p.relative_to(audit): p.read_bytes() for p in (audit / "graded").rglob("*")
             if p.is_file()}
    with tempfile.TemporaryDirectory() as tmp:
        t = time.process_time()
        for rel, rs in rows.items():
            with open(Path(tmp) / rel.replace("/", "_"), "w", encoding="utf-8") as fh:
                for r in rs:
                    fh.write(json.dumps(r, ensure_ascii=False, separators=(",", ":"),
                                        allow_nan=False))
                    fh.write("\n")
        for rel, data in blobs.items():
            (Path(tmp) / str(rel).replace("/", "_")).write_bytes(data)
        return time.process_time() - t


def audit_time(rescore: str | Path, out: str | Path) -> float:
    """CPU seconds of the step as ``tiap.pipeline`` runs it, into ``out`` (replaced)."""
    from tiap.pipeline import _offline_audit

    out = Path(out)
    shutil.rmtree(out, ignore_errors=True)
    t = time.process_time()
    _offline_audit(Path(rescore), out, ["lexical"], lambda m: None)
    return time.process_time() - t


def shared_audit_time(rescore: str | Path, out: str | Path) -> float:
    """CPU seconds of the same step with the inputs read once and shared, into ``out``."""
    from tiap.audit.cases import RescoreInputs
    from tiap.audit.steps import find_cases, graded_audit, judge_cases

    rescore, out = Path(rescore), Path(out)
    shutil.rmtree(out, ignore_errors=True)
    t = time.process_time()
    out.mkdir(parents=True)
    shared = RescoreInputs.load(rescore)
    found = find_cases(rescore, out / "cases.jsonl", each=True, preloaded=shared)
    judged = judge_cases(found, out / "judged", ["lexical"], cache=out / "verdicts.sqlite")
    graded_audit(rescore, [judged], out / "graded", preloaded=shared)
    return time.process_time() - t


def main(rescore: str, audit: str) -> None:
    floors = {"judge": judge_floor(audit), "read": read_floor(rescore),
              "write": write_floor(audit)}
    floor = sum(floors.values())
    for name, s in floors.items():
        print(f"{name} floor: {s:.3f} s CPU")
    print(f"floor: {floor:.3f} s CPU")
    with tempfile.TemporaryDirectory() as tmp:
        for name, fn in (("step (pipeline)", audit_time), ("step (shared)", shared_audit_time)):
            w = time.perf_counter()
            s = fn(rescore, Path(tmp) / "audit")
            print(f"{name}: {s:.3f} s CPU, {time.perf_counter() - w:.3f} s wall, "
                  f"{s / floor:.1f} x the floor")


if __name__ == "__main__":
    main(*sys.argv[1:3])
