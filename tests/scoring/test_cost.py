"""The cost axis: token counts against tiktoken, measures at a token budget by hand, cost.csv,
and latency carried from a run that records it."""

from __future__ import annotations

import gzip
import hashlib
import importlib.resources
import importlib.util
import json
import math
from pathlib import Path

import pytest

from tiap.cli.main import main
from tiap.errors import TiapError
from tiap.memory.store import Item
from tiap.runs import Ranking, Run, read_run
from tiap.scoring.cost import get_tokenizer
from tiap.scoring.rescore import rescore

# find_spec, not importorskip: importing bpe_openai takes seconds, and every test
# worker collects this module (a test that needs it imports it)
if importlib.util.find_spec("bpe_openai") is None:
    pytest.skip("bpe_openai is not installed (the cost extra)", allow_module_level=True)

LOG3 = math.log2(3)


def test_counts_equal_tiktoken_on_real_turns(data_dir: Path, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """tiktoken's own cl100k_base, built from the rank file bpe-openai ships (tiktoken checks
    it against the sha256 of OpenAI's published file), encodes 500 real LoCoMo turns
    exactly as TIAP's tokenizer does."""
    tiktoken = pytest.importorskip("tiktoken")
    url = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
    ranks = importlib.resources.files("bpe_openai").joinpath("data/cl100k_base.tiktoken.gz")
    (tmp_path / hashlib.sha1(url.encode()).hexdigest()).write_bytes(
        gzip.decompress(ranks.read_bytes()))
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    ref = tiktoken.get_encoding("cl100k_base")  # raises if the file's sha256 differs
    convs = json.loads((data_dir / "locomo" / "locomo10.json").read_text())[:2]
    texts = [f"{t['speaker']}: {t['text']}" for c in convs
             for k, v in c["conversation"].items()
             if k.startswith("session_") and isinstance(v, list) for t in v][:500]
    tok = get_tokenizer("cl100k_base")
    assert len(texts) == 500
    assert [tok.count(t) for t in texts] == [len(ref.encode_ordinary(t)) for t in texts]


class _Sized:
    """A tokenizer whose count is the text's number of words (for hand-worked cases)."""

    name = "words"
    version = "test"

    def count(self, text: str) -> int:
        return len(text.split())


STORE = [Item("a", "raw", ("u1",), text="one two three"),       # 3 tokens
         Item("b", "raw", ("u2",), text="one two three four"),  # 4
         Item("c", "fact", ("u1",), text="one"),                # 1
         Item("x", "raw", ("u9",), text="one two")]             # 2


def _values(monkeypatch: pytest.MonkeyPatch, ranking: list[str], measures: str,
            store: list[Item] = STORE) -> dict[str, float]:
    monkeypatch.setattr("tiap.scoring.rescore.get_tokenizer", lambda name="": _Sized())
    q = type("Q", (), {"query_id": "q", "evidence": ("u1", "u2"), "abstention": False,
                       "collection_id": None})()
    run = Run("s", (Ranking("q", "s", tuple(ranking)),))
    res = rescore([run], [q], {None: store}, targets=["source"], measures=measures)
    return {m: float(res.value("s", "source", m)[0]) for m in measures.split(",")}


def test_budget_cutoffs_by_hand(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ranking x (2 tokens), a (3), c (1), b (4); groups u1 = {a, c}, u2 = {b}.
    Budget 5: x + a = 5 fit, c would make 6: read 2 ranks -> a at rank 2 opens u1:
    nDCG = (1/log2 3) / (1 + 1/log2 3) (ideal of min(G = 2, 2) ones), R = 1/2.
    Budget 6: x, a, c fit (6); c's group is matched: still one hit, nDCG over the ideal of
    min(2, 3) ones. Budget 1: x does not fit: nothing is read, 0. Budget 10: all 4 (10):
    b at rank 4 opens u2, Rall = 1."""
    v = _values(monkeypatch, ["x", "a", "c", "b"],
                "nDCG@tok5,R@tok5,nDCG@tok6,nDCG@tok1,Rall@tok6,Rall@tok10,Success@tok1")
    assert v["nDCG@tok5"] == pytest.approx((1 / LOG3) / (1 + 1 / LOG3))
    assert v["R@tok5"] == 0.5
    assert v["nDCG@tok6"] == pytest.approx((1 / LOG3) / (1 + 1 / LOG3))
    assert v["nDCG@tok1"] == 0.0 and v["Success@tok1"] == 0.0
    assert v["Rall@tok6"] == 0.0 and v["Rall@tok10"] == 1.0


def test_an_item_without_text_cannot_be_budgeted(monkeypatch: pytest.MonkeyPatch) -> None:
    store = [*STORE[:3], Item("x", "raw", ("u9",))]
    with pytest.raises(TiapError, match="'x' has no text") as err:
        _values(monkeypatch, ["x", "a"], "nDCG@tok5", store)
    assert err.value.problems[0].query_id == "q"


def test_cost_csv_and_latency(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two queries ranking a, b (3 + 4 words) and x, c (2 + 1) with latencies 10 and 30 ms:
    top 1 = 3 and 2 tokens (mean 2.5), top 2 = 7 and 3 (mean 5); latency mean 20, median 20,
    p95 = 10 + 0.95 * 20 = 29 (linear interpolation)."""
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps(it.to_json()) + "\n" for it in STORE))
    queries = tmp_path / "queries.jsonl"
    queries.write_text("".join(json.dumps({"query_id": q, "evidence": ["u1"], "question": "?",
                                           "category": "c"}) + "\n" for q in ("q1", "q2")))
    run = tmp_path / "run.jsonl"
    run.write_text('{"query_id": "q1", "system": "s", "ranking": ["a", "b"], "latency_ms": 10}\n'
                   '{"query_id": "q2", "system": "s", "ranking": ["x", "c"], "latency_ms": 30}\n')
    [r] = read_run(run)
    assert [x.latency_ms for x in r.rankings] == [10.0, 30.0]
    monkeypatch.setattr("tiap.scoring.rescore.get_tokenizer", lambda name="": _Sized())
    assert main(["rescore", "--items", str(items), "--queries", str(queries), "--run", str(run),
                 "--measures", "nDCG@1,nDCG@2", "--out", str(tmp_path / "r")]) == 0
    rows = (tmp_path / "r" / "cost.csv").read_text().splitlines()
    assert rows[1:] == ["s,1,words,2,2.5,2.5,3,2,20.0,20.0,29.0",
                        "s,2,words,2,5.0,5.0,7,2,20.0,20.0,29.0"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query_id": "q1", "ranking": ["a"], "latency_ms": -1}\n')
    with pytest.raises(TiapError, match="latency_ms") as err:
        read_run(bad)
    assert err.value.problems[0].line == 1


def test_counts_equal_the_packages_own_encoder() -> None:
    """TIAP counts with bpe-openai's Rust backend, loaded without the package's import (which
    decodes three rank files it never reads): the counts are the package's own
    ``encode_ordinary`` lengths, on text that looks like a special token, non-ASCII text,
    a lone surrogate (replaced, as the package does) and the empty string."""
    import bpe_openai

    texts = ["hello world", "<|endoftext|> and <|fim_prefix|>", "ünïcödé 日本語 😀",
             "a \ud800 b", "", "  spaces\n\nand\tlines  "]
    for name in ("cl100k_base", "o200k_base"):
        ref = bpe_openai.get_encoding(name)
        tok = get_tokenizer(name)
        assert getattr(tok, "_backend", None) is not None  # the fast path is the one tested
        assert [tok.count(t) for t in texts] == [len(ref.encode_ordinary(t)) for t in texts]
