"""Answer judging throughput against the local llama.cpp server: TIAP against a bare client.

TIAP: :func:`tiap.answers.judge_answers` with an :class:`~tiap.answers.llm_judge.LLMAnswerJudge`
(the verdict cache in a fresh file, so every request is asked). Bare: an ``httpx.Client``
posting the very same request bodies (TIAP's own, taken from the judge's requests) at the
same concurrency, reading nothing but the reply. The answers are LoCoMo's first N
questions with, in turn, the reference answer and another question's reference answer as the
system's answer. Rounds alternate which of the two goes first (the server's prompt cache
then favours neither); each figure is the wall time of one pass over the N requests.

    .venv/bin/python benchmarks/judge_bench.py --n 20 --json benchmarks/judge_bench_results.json
    .venv/bin/python benchmarks/judge_bench.py --instant --n 500 --rounds 4

``--instant`` replaces the model by a stand-in endpoint that answers at once, so a pass
times the client alone: TIAP's own cost per request, in milliseconds.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Self

import httpx
from machine import machine_facts

from tiap.answers.judges import judge_answers
from tiap.answers.llm_judge import LLMAnswerJudge, parse_reply
from tiap.answers.records import Answer, AnswerSet
from tiap.datasets.files import default_data_dir
from tiap.llm.local import LocalServer


def answers(n: int) -> AnswerSet:
    data = default_data_dir()
    convs = json.loads((data / "locomo" / "locomo10.json").read_text())
    qa = [q for conv in convs for q in conv["qa"] if "answer" in q][: n + 1]
    out = []
    for i in range(n):
        given = qa[i]["answer"] if i % 2 == 0 else qa[i + 1]["answer"]
        out.append(Answer("locomo", "bench", f"q{i}", str(given),
                          question=qa[i]["question"], reference=str(qa[i]["answer"])))
    return AnswerSet(tuple(out))


def tiap_pass(s: AnswerSet, judge: LLMAnswerJudge) -> tuple[float, list[str | None]]:
    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        out = judge_answers(s, judge, cache=Path(tmp) / "verdicts.sqlite")
        wall = time.perf_counter() - t
    return wall, [a.verdict(judge.name).label for a in out]


def bare_pass(bodies: list[dict], url: str, concurrency: int) -> tuple[float, list[str | None]]:
    client = httpx.Client(timeout=600)

    def post(body: dict) -> str | None:
        r = client.post(url, json=body)
        r.raise_for_status()
        v = parse_reply(r.json()["choices"][0]["message"]["content"])
        return None if v.label == "unscored" else v.label

    t = time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency) as ex:
        labels = list(ex.map(post, bodies))
    wall = time.perf_counter() - t
    client.close()
    return wall, labels


class _Instant:
    """A stand-in endpoint answering every request at once with one JSON label: what is
    left of a pass is the client's own time (TIAP's request building, cache, threads)."""

    def __init__(self) -> None:
        reply = json.dumps({"model": "instant", "choices": [{
            "index": 0, "finish_reason": "stop", "message": {
                "role": "assistant", "content": '{"label": "CORRECT", "reason": "same"}'}}]}
        ).encode()

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # no 40 ms delayed-ACK wait per reply
            wbufsize = -1  # headers and body leave in one write

            def log_message(self, *a: object) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["Content-Length"]))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.model = "instant"

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20, help="answers (requests) per pass")
    ap.add_argument("--rounds", type=int, default=1, help="pairs of passes, order alternating")
    ap.add_argument("--model", default="qwen2.5-coder-1.5b")
    ap.add_argument("--concurrency", type=int, default=1)
    ap.add_argument("--instant", action="store_true",
                    help="a stand-in endpoint that answers at once, not the local model")
    ap.add_argument("--json", type=Path, help="write the figures here")
    args = ap.parse_args(argv)
    s = answers(args.n)
    facts = machine_facts(("httpx", "xllamacpp"))
    server = (_Instant() if args.instant else
              LocalServer(args.model, ctx=2048, log=lambda m: print(m, file=sys.stderr)))
    with server as srv:
        judge = LLMAnswerJudge(model=srv.model, base_url=srv.base_url,
                               concurrency=args.concurrency, timeout=600, max_invalid=1.0)
        # the bodies TIAP posts (the server takes json_schema: the mode asked for is sent)
        bodies = [judge.request(a)["body"] for a in s]
        url = f"{srv.base_url}/chat/completions"
        bare_pass(bodies[:1], url, 1)  # warm the server: the model's first load
        rows = []
        for r in range(args.rounds):
            order = ("tiap", "bare") if r % 2 == 0 else ("bare", "tiap")
            for which in order:
                wall, labels = (tiap_pass(s, judge) if which == "tiap"
                                else bare_pass(bodies, url, args.concurrency))
                rows.append({"round": r, "path": which, "seconds": round(wall, 3),
                             "labels": labels})
                print(f"round {r} {which}: {wall:.2f} s for {args.n} requests", flush=True)
        judge.close()
    tiap = sum(x["seconds"] for x in rows if x["path"] == "tiap")
    bare = sum(x["seconds"] for x in rows if x["path"] == "bare")
    same = all(a == b for x, y in zip(rows[::2], rows[1::2], strict=True)
               for a, b in zip(x["labels"], y["labels"], strict=True))
    result = {"n": args.n, "rounds": args.rounds,
              "model": "instant stand-in" if args.instant else args.model,
              "concurrency": args.concurrency, "tiap_seconds": round(tiap, 3),
              "bare_seconds": round(bare, 3),
              "tiap_ms_per_request": round(1000 * tiap / (args.n * args.rounds), 2),
              "bare_ms_per_request": round(1000 * bare / (args.n * args.rounds), 2),
              "tiap_extra_ms_per_request": round(1000 * (tiap - bare) / (args.n * args.rounds),
                                                 2),
              "overhead_percent": round(100 * (tiap - bare) / bare, 2),
              "same_labels": same, "passes": rows, "machine": facts,
              "load_avg_after": list(os.getloadavg())}
    print(json.dumps({k: v for k, v in result.items() if k != "passes"}, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
