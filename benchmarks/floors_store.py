"""Floors of the store step (``build_store``): the least work any build of the same data does.

Each function returns CPU seconds (``time.process_time``) of one pass in this process:

- :func:`json_floor`: read and decode every file of a dataset (gunzip + ``json.loads``), no
  checks and no records built;
- :func:`parser_floor`: one pass of the heuristic parser's cleaning, sentence splitting,
  word splitting and one search of each of its regex patterns over every turn's text, with no other work
  (no clause logic, no scoring, no selection, no rewriting);
- :func:`write_floor`: json-encoding and writing the rows of an existing ``items.jsonl``
  (the rows are decoded first, untimed), so the bytes written equal the file's.

Usage (the integrator's ``benchmarks/pipeline_bench.py`` imports the functions)::

    PYTHONPATH=src TIAP_DATA=/work/shared/data python benchmarks/floors_store.py \\
        longmemeval/s [STORE_FOLDER]
"""

from __future__ import annotations

import gzip
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from tiap.datasets import load
from tiap.memory import heuristic as h

# the parser's clause-level patterns: searched anywhere, or matched at the start (as the
# parser uses them)
_TEXT_PATTERNS = (h._CLAUSE_SPLIT, h._SEPARATOR, h._REACTION, h._BOILERPLATE, h._PRONOUN,
                  h._NAMED_RELATIVE, h._SUB_SPLIT, h._REL_SPLIT, h._VP_SPLIT, h._CAPS,
                  h._DIGIT_WORD)
_START_PATTERNS = (h._CLOSING, h._QUESTION_START, h._LEAD, h._THANKS, h._LEAD_NAME)


def json_floor(dataset: str = "longmemeval/s") -> float:
    """CPU seconds to read and decode every file of ``dataset`` (bytes, gunzip, json)."""
    ds = load(dataset)
    paths = [ds.path(p) for p in ds.file_paths()]
    t = time.process_time()
    for p in paths:
        raw = Path(p).read_bytes()
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        json.loads(raw)
    return time.process_time() - t


def _turn_texts(dataset: str):
    for b in load(dataset).bundles():
        yield [t.text for t in b.turns]


def parser_floor(dataset: str = "longmemeval/s") -> float:
    """CPU seconds of one pass of the parser's tokenizer and regex patterns over every turn.

    Per turn: the cleaning (:func:`tiap.memory.heuristic._clean`), the sentence split, the
    word split of each sentence and one ``search`` (``match`` for the patterns the parser
    anchors at a clause's start) of each of the parser's clause-level patterns over the
    turn's text. Reading the dataset is not timed.
    """
    total = 0.0
    pats = [p.search for p in _TEXT_PATTERNS] + [p.match for p in _START_PATTERNS]
    for texts in _turn_texts(dataset):
        t = time.process_time()
        for text in texts:
            for line in h._clean(text):
                for sent in h._sentences(line):
                    h._words(sent.lower())
            for s in pats:
                s(text)
        total += time.process_time() - t
    return total


def write_floor(items: str | Path) -> float:
    """CPU seconds to json-encode the rows of ``items`` (an ``items.jsonl``) and write them.

    The rows are decoded first (not timed); the bytes written are checked to equal the file.
    """
    items = Path(items)
    with items.open("rb") as fh:
        rows = [json.loads(line) for line in fh]
    dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
    fd, tmp = tempfile.mkstemp(suffix=".jsonl")
    os.close(fd)
    try:
        t = time.process_time()
        with open(tmp, "wb") as out:
            step = 4096
            out.writelines(("\n".join(map(dumps, rows[i:i + step])) + "\n").encode("utf-8")
                           for i in range(0, len(rows), step))
        took = time.process_time() - t
        if os.path.getsize(tmp) != items.stat().st_size:
            raise AssertionError("the rows written differ from the file")
    finally:
        os.unlink(tmp)
    return took


if __name__ == "__main__":
    name = sys.argv[1] if len(sys.argv) > 1 else "longmemeval/s"
    print(f"json decode floor: {json_floor(name):.2f} s")
    print(f"parser tokenizer+patterns floor: {parser_floor(name):.2f} s")
    if len(sys.argv) > 2:
        print(f"encode+write floor: {write_floor(Path(sys.argv[2]) / 'items.jsonl'):.2f} s")
