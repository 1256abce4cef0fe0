"""Merging caches filled on several workers or machines (``tiap cache merge``): verdicts by
request key and vectors by (model, text sha256); a key on both sides keeps the receiving
cache's value and a differing one is counted."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tiap.audit.judges import LexicalJudge, request_key
from tiap.audit.labels import Verdict
from tiap.audit.run import VerdictCache, _judge_task, _Task
from tiap.cli.main import main
from tiap.io import shard_path
from tiap.retrieval.cache import EmbeddingCache, text_key


def _put(cache: VerdictCache, key: str, label: str) -> None:
    cache.put(key, judge="j", case_id=f"c-{key}", request={"k": key},
              verdict=Verdict(label=label), timing={})


def test_verdict_caches_merge_by_request_key(tmp_path: Path, capsys) -> None:
    a, b = VerdictCache(tmp_path / "a.sqlite"), VerdictCache(tmp_path / "b.sqlite")
    _put(a, "k1", "supports")
    _put(a, "k2", "partial")
    _put(b, "k2", "partial")  # the same verdict on both
    _put(b, "k3", "supports")  # only in b
    _put(b, "k1", "does_not_support")  # another answer to the same request
    a.close(), b.close()
    assert main(["cache", "merge", str(tmp_path / "b.sqlite"), "--into",
                 str(tmp_path / "a.sqlite")]) == 0
    err = capsys.readouterr().err
    assert "1 added, 1 already there, 1 differing" in err
    with VerdictCache(tmp_path / "a.sqlite") as merged:
        assert len(merged) == 3
        assert merged.get("k1")[0].label == "supports"  # the receiving cache's is kept
        assert merged.get("k3")[0].label == "supports"


def test_a_folder_of_worker_shards_merges_into_a_cache(tmp_path: Path) -> None:
    judge = LexicalJudge(name="lexical")
    reqs = [{"factory": "lexical", "version": 1, "thresholds": {"supports": 0.75,
                                                                "partial": 0.1},
             "answer": f"answer {i}", "item_text": f"the answer is {i}"} for i in range(4)]
    items = tuple((request_key(r), f"c{i}", r) for i, r in enumerate(reqs))
    shards = tmp_path / "shards"
    for part in (items[:2], items[2:]):
        _judge_task(_Task(judge, "lexical", part, str(shard_path(shards, [k for k, _, _ in part]))))
    assert len(list(shards.glob("*.jsonl"))) == 2
    with VerdictCache(tmp_path / "c.sqlite") as c:
        assert c.merge_from(shards) == {"added": 4, "same": 0, "differing": 0}
        assert c.merge_from(shards) == {"added": 0, "same": 4, "differing": 0}
        # every token of "answer i" is in "the answer is i": coverage 1
        assert {c.get(k)[0].label for k, _, _ in items} == {"supports"}


def test_embedding_caches_merge_by_content_address(tmp_path: Path, capsys) -> None:
    v = np.arange(6, dtype=np.float32).reshape(2, 3)
    with EmbeddingCache(tmp_path / "a") as a:
        a.put("m", [text_key("x"), text_key("y")], v)
    with EmbeddingCache(tmp_path / "b") as b:
        b.put("m", [text_key("y"), text_key("z")], np.stack([v[1] + 0.5, v[0]]))
    assert main(["cache", "merge", str(tmp_path / "b"), "--into", str(tmp_path / "a")]) == 0
    err = capsys.readouterr().err
    assert "1 added, 0 already there, 1 differing" in err and "warning" in err
    with EmbeddingCache(tmp_path / "a") as a:
        assert a.count("m") == 3
        np.testing.assert_array_equal(a.get("m", [text_key("y"), text_key("z")]),
                                      np.stack([v[1], v[0]]))  # y: a's vector is kept


def test_merge_refuses_mixed_kinds_and_itself(tmp_path: Path, capsys) -> None:
    VerdictCache(tmp_path / "v.sqlite").close()
    EmbeddingCache(tmp_path / "e").close()
    assert main(["cache", "merge", str(tmp_path / "v.sqlite"), str(tmp_path / "e"),
                 "--into", str(tmp_path / "x.sqlite")]) == 2
    assert "mix verdict and embedding caches" in capsys.readouterr().err
    assert main(["cache", "merge", str(tmp_path / "v.sqlite"), "--into",
                 str(tmp_path / "v.sqlite")]) == 2
    assert "the --into cache itself" in capsys.readouterr().err
    (tmp_path / "junk.sqlite").write_text("not sqlite at all, just text" * 10)
    assert main(["cache", "merge", str(tmp_path / "junk.sqlite"), "--into",
                 str(tmp_path / "v.sqlite")]) != 0
    assert "junk.sqlite" in capsys.readouterr().err


def test_a_corrupt_shard_line_is_a_located_error(tmp_path: Path) -> None:
    """Only a last line without its newline is a kill's cut line (skipped); a broken line
    before it, or a line that is not a verdict, names the shard and the line."""
    from tiap.errors import TiapError

    shards = tmp_path / "shards"
    shards.mkdir()
    (shards / "a.jsonl").write_text('{"key": "k1", "judge"\n{"key": "k2"}\n')
    with VerdictCache(tmp_path / "c.sqlite") as c, pytest.raises(TiapError) as err:
        c.merge_from(shards)
    assert "a.jsonl:1: " in str(err.value) and "not JSON" in str(err.value)
    (shards / "a.jsonl").write_text('{"key": "k2"}\n')
    with VerdictCache(tmp_path / "c.sqlite") as c, pytest.raises(TiapError) as err:
        c.merge_from(shards)
    assert "a.jsonl:1: " in str(err.value) and "lacks" in str(err.value)
    (shards / "a.jsonl").write_text('{"key": "k2", "jud')  # a kill's cut line alone
    with VerdictCache(tmp_path / "c.sqlite") as c:
        assert c.merge_from(shards) == {"added": 0, "same": 0, "differing": 0}


def test_a_killed_drivers_embedding_shards_are_merged_and_differences_counted(
        tmp_path: Path) -> None:
    """Shards an interrupted dense run's workers left (``<cache>/shards/<sha>/``): the next
    run puts their vectors in the cache before encoding, encodes only the rest, keeps the
    cache's vector where a shard's differs, counts that, and removes the shards."""
    from tiap.retrieval import DenseRetriever
    from tiap.retrieval.encoders import Encoder

    class Unit(Encoder):  # one-hot vectors by text length: enough to tell them apart
        model_id, batch_size = "unit-test", 2

        def __init__(self) -> None:
            self.asked: list[str] = []

        def encode(self, texts):  # type: ignore[no-untyped-def]
            self.asked.extend(texts)
            return np.eye(8, dtype=np.float32)[[len(t) % 8 for t in texts]]

        def spec(self):  # type: ignore[no-untyped-def]
            return {"model": self.model_id}

    texts = ["a", "bb", "ccc", "dddd"]
    cache = EmbeddingCache(tmp_path / "emb")
    cache.put("unit-test", [text_key("a")], np.eye(8, dtype=np.float32)[[1]])
    shard = EmbeddingCache(shard_path(tmp_path / "emb" / "shards", ["x"], ""))
    shard.put("unit-test", [text_key("a"), text_key("bb")],  # "a" differs from the cache's
              np.eye(8, dtype=np.float32)[[5, 2]])
    shard.close()
    enc = Unit()
    d = DenseRetriever(enc, cache)
    d.prepare(texts)
    assert d.shard_differing == 1
    assert sorted(enc.asked) == ["ccc", "dddd"]  # "a" cached, "bb" from the shard
    assert cache.get("unit-test", [text_key("a")]).argmax() == 1  # the cache's kept
    assert not (tmp_path / "emb" / "shards").exists()
