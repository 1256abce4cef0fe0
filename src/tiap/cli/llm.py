"""``tiap llm``: the local models and the llama.cpp server TIAP starts itself."""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from tiap.cli.common import bounded, console, err_console
from tiap.errors import TiapError

if TYPE_CHECKING:
    from tiap.llm import LocalServer

app = typer.Typer(help="Real small LLMs served locally (llama.cpp on 127.0.0.1).",
                  no_args_is_help=True, rich_markup_mode="markdown")

ModelOption = Annotated[str, typer.Option(
    "--model", help="The local model (see `tiap llm models`).")]


@app.command("models")
def models_cmd(
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object per model.")
                       ] = False,
) -> None:
    """The pinned local models: size, sha256, licence, whether installed, how to install."""
    from tiap.llm import DEFAULT_MODEL, MODELS, installed

    rows = [{"name": m.name, "default": m.name == DEFAULT_MODEL, "title": m.title,
             "bytes": m.size, "sha256": m.sha256, "licence": m.licence,
             "installed": installed(m), "install": m.install} for m in MODELS.values()]
    if as_json:
        for r in rows:
            print(json.dumps(r, allow_nan=False))
        return
    table = Table(title="local models (pinned by size and sha256)")
    for col in ("name", "model", "size", "installed", "licence", "install"):
        table.add_column(col, overflow="fold")
    for r in rows:
        table.add_row(*map(escape, (f"{r['name']}{' (default)' if r['default'] else ''}",
                                    str(r["title"]), f"{int(r['bytes']) / 1e6:,.0f} MB",
                                    "yes" if r["installed"] else "no", str(r["licence"]),
                                    str(r["install"]))))
    console.print(table)


@app.command("serve")
def serve_cmd(
    model: ModelOption = "qwen2.5-coder-1.5b",
    port: Annotated[int, bounded(
        "serve_port", "--port", help="Port on 127.0.0.1 (0: a free one). Keep it fixed across "
         "runs: verdict "
        "and parser caches key requests by the endpoint.")] = 8089,
    ctx: Annotated[int, bounded(
        "ctx", "--ctx", help="Context per slot, in tokens: what the longest request needs (the "
        "judge and the parser about 1,000; `mem0-run --infer` 16,384), at most what the model "
        "was trained for.")] = 4096,
    threads: Annotated[int, bounded(
        "threads", "--threads", help="llama.cpp threads (on 2 cores keep 1: two collapse under "
         "load).")
    ] = 1,
    parallel: Annotated[int, bounded(
        "parallel", "--parallel", help="Slots: requests answered at once.")] = 1,
    check: Annotated[bool, typer.Option(
        "--check", help="Start, ask one question, print the reply and its time, stop.")
    ] = False,
) -> None:
    """Serve a local model on 127.0.0.1 until Ctrl-C, as an OpenAI-compatible endpoint.

    Prints the `--base-url` and `--model` to give the `openai` judge, the `llm` parser or
    `mem0-run`. The model file is checked against its pinned size and sha256 first (and
    assembled into the model cache when it ships in pieces).
    """
    from tiap.llm import LocalServer

    srv = LocalServer(model, port=port, ctx=ctx, threads=threads, parallel=parallel,
                      log=lambda s: err_console.print(escape(s)))
    t0 = time.monotonic()
    with srv:
        err_console.print(f"started in {time.monotonic() - t0:.1f} s")
        console.print(f"base_url = {srv.base_url}\nmodel = {srv.model}")
        if check:
            _check(srv)
            return
        err_console.print("serving until Ctrl-C")
        try:
            while srv.proc is not None and srv.proc.poll() is None:
                time.sleep(1.0)
        except KeyboardInterrupt:
            err_console.print("stopping")
            return
        raise TiapError("the local server stopped on its own", file=srv.log_file,
                        code="endpoint")


def _check(srv: LocalServer) -> None:
    """One question through TIAP's own client (:class:`tiap.llm.ChatClient`)."""
    from tiap.llm import ChatClient

    body = {"model": srv.model, "temperature": 0, "max_tokens": 32,
            "messages": [{"role": "user", "content": "Name the capital of France in one word."}]}
    client = ChatClient(srv.base_url, api_key_env=None, timeout=300, max_retries=0)
    t0 = time.monotonic()
    try:
        reply = client.post(body)
    finally:
        client.close()
    took = time.monotonic() - t0
    if not reply.ok:
        why = reply.error or f"HTTP {reply.status}"
        raise TiapError(f"the local server did not answer the check: {why}",
                        file=srv.log_file, code="endpoint")
    usage = (reply.data or {}).get("usage") or {}
    console.print(f"reply ({took:.1f} s, {usage.get('completion_tokens', '?')} tokens): "
                  f"{escape(str(reply.content).strip())}")
