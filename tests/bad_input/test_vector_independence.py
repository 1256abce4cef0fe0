"""A text's vector depends on the text alone: not on the batch it is encoded in, the number
of threads, or the process (an engine's worker runs one thread in a process of its own).

Before the encoder padded each text to a width of its own and kept MKL in its strict mode, 58
of 100 LoCoMo turns changed in the last bits between a batch of 8 and one text at a time, and 20
between one thread and two: a test on Ray failed on one CPU and passed on another.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

# find_spec, not importorskip: importing sentence_transformers takes seconds, and every test
# worker collects this module (a test that needs it imports it)
if importlib.util.find_spec("sentence_transformers") is None:
    pytest.skip("sentence_transformers is not installed (the dense extra)",
                allow_module_level=True)

_CHILD = r"""
import sys, numpy as np, torch
torch.set_num_threads(1)
from tiap.retrieval.encoders import SentenceTransformerEncoder
texts = open(sys.argv[1], encoding="utf-8").read().split("\n\x00\n")
enc = SentenceTransformerEncoder(batch_size=int(sys.argv[3]))
np.save(sys.argv[2], enc.encode(texts[::-1])[::-1])
"""


@pytest.fixture(scope="module")
def texts() -> list[str]:
    """48 texts of 3 to 60 words, built here: lengths vary, so batches mix widths."""
    words = ["we", "went", "to", "the", "lake", "on", "saturday", "and", "my", "sister",
             "brought", "her", "new", "dog", "because", "the", "weather", "was", "warm",
             "enough", "for", "a", "swim", "after", "lunch"]
    return [f"Speaker {i % 3}: " + " ".join(words[(i * 7 + j) % len(words)]
                                           for j in range(3 + (i * 13) % 58))
            for i in range(48)]


def test_a_vector_depends_on_its_text_alone(texts: list[str], tmp_path: Path) -> None:
    import torch

    from tiap.retrieval.encoders import SentenceTransformerEncoder

    enc = SentenceTransformerEncoder(batch_size=8)
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        whole = enc.encode(texts)  # mixed lengths, batches of 8
        alone = np.vstack([enc.encode([t]) for t in texts])
        torch.set_num_threads(1)
        one_thread = SentenceTransformerEncoder(batch_size=64).encode(texts[::-1])[::-1]
    finally:
        torch.set_num_threads(threads)
    assert whole.shape == (len(texts), 384)
    differing = {
        "alone": int((whole != alone).any(axis=1).sum()),
        "one thread, batches of 64, reversed": int((whole != one_thread).any(axis=1).sum()),
    }
    # another process, one thread, batches of 3 (as an engine's worker)
    (tmp_path / "texts.txt").write_text("\n\x00\n".join(texts), encoding="utf-8")
    subprocess.run([sys.executable, "-c", _CHILD, str(tmp_path / "texts.txt"),
                    str(tmp_path / "v.npy"), "3"], check=True, capture_output=True)
    differing["another process"] = int(
        (whole != np.load(tmp_path / "v.npy")).any(axis=1).sum())
    assert differing == {k: 0 for k in differing}
    assert enc.spec()["blas"] == "mkl strict"
    assert np.allclose(np.linalg.norm(whole, axis=1), 1.0, atol=1e-6)


def test_vectors_computed_the_old_way_are_never_read(tmp_path: Path) -> None:
    # the cache key names the rule: vectors a padded, thread-dependent encoding cached under
    # the bare model id are not served to this encoder
    from tiap.retrieval import DenseRetriever, EmbeddingCache
    from tiap.retrieval.encoders import SentenceTransformerEncoder

    enc = SentenceTransformerEncoder()
    assert enc.cache_id != enc.model_id and enc.cache_id.startswith(enc.model_id)
    with EmbeddingCache(tmp_path / "c") as cache:
        from tiap.retrieval.cache import text_key

        cache.put(enc.model_id, [text_key("hello")], np.ones((1, 384), dtype=np.float32))
        dense = DenseRetriever(enc, cache)
        v = dense.embed(["hello"])
        assert dense.encoded == 1 and not np.allclose(v, np.ones((1, 384)) / np.sqrt(384))
