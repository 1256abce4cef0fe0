"""Dense encoding of real LoCoMo texts: the local engine against Ray on this machine's workers.

    .venv/bin/python benchmarks/encode_bench.py [--collections 2] [--workers 2] \
        [--batch-size 64] [--json PATH]

Not collected by pytest; needs the ``dense`` and ``ray`` extras and the LoCoMo data
(``TIAP_DATA`` or ``../shared/data``). Results and the machine are recorded in
``benchmarks/README.md``.

Workload. The raw turns (as a store holds them, ``Speaker (date): text``), the dataset's own
memories and the questions of the first ``--collections`` LoCoMo conversations, encoded
with all-MiniLM-L6-v2 into an empty in-memory cache by ``DenseRetriever.prepare``: locally
(torch on this process's threads) and with ``--engine ray`` on a local Ray instance of
``--workers`` CPUs (eight batches a task). Ray's start-up is apart; the first Ray run
includes each worker's loading of the model (cold), the second reuses the workers' loaded
model (warm). The script fails unless every vector of the Ray runs equals the local run's,
byte for byte.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def texts(collections: int) -> list[str]:
    from tiap.datasets import load
    from tiap.memory.build import raw_item

    out: list[str] = []
    for i, b in enumerate(load("locomo").bundles()):
        if i == collections:
            break
        dates = {s.session_id: s.date for s in b.sessions}
        out += [raw_item(t, dates.get(t.session_id)).text or "" for t in b.turns]
        out += [m.text for m in b.memories]
        out += [q.question for q in b.queries]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--collections", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--json", type=Path)
    a = ap.parse_args()

    from tiap.engine import RayEngine, use_engine
    from tiap.retrieval import DenseRetriever, EmbeddingCache, SentenceTransformerEncoder
    from tiap.retrieval.cache import text_key

    corpus = texts(a.collections)
    keys = list(dict.fromkeys(text_key(t) for t in corpus))

    def run(warm: bool = False) -> tuple[float, DenseRetriever]:
        enc = SentenceTransformerEncoder(batch_size=a.batch_size)
        if warm:  # the model loaded before the clock starts
            enc.encode(["warm up"])
        d = DenseRetriever(enc, EmbeddingCache(None))
        t0 = time.perf_counter()
        d.prepare(corpus)
        return time.perf_counter() - t0, d

    local_s, local = run(warm=True)
    want = local.cache.get(local.encoder.cache_id, keys).tobytes()
    t0 = time.perf_counter()
    engine = RayEngine(num_cpus=a.workers)
    ray_start = time.perf_counter() - t0
    same = True
    ray_s: list[float] = []
    try:
        with use_engine(engine):
            for _ in range(2):  # cold (each worker loads the model), then warm
                s, d = run()
                ray_s.append(s)
                same &= d.cache.get(d.encoder.cache_id, keys).tobytes() == want
    finally:
        engine.close()
    res = {"collections": a.collections, "texts": len(keys), "batch_size": a.batch_size,
           "workers": a.workers, "local_s": round(local_s, 2),
           "ray_start_s": round(ray_start, 2), "ray_cold_s": round(ray_s[0], 2),
           "ray_warm_s": round(ray_s[1], 2),
           "texts_per_s_local": round(len(keys) / local_s, 1),
           "texts_per_s_ray_warm": round(len(keys) / ray_s[1], 1),
           "ratio_local_over_ray_warm": round(local_s / ray_s[1], 2),
           "vectors_identical": same}
    print(json.dumps(res, indent=2))
    if a.json:
        a.json.write_text(json.dumps(res, indent=2) + "\n")
    if not same:
        sys.exit("the Ray run's vectors differ from the local run's")


if __name__ == "__main__":
    main()
