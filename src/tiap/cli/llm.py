"""``tiap llm``: the local models and the llama.cpp server TIAP starts itself."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from tiap.cli.common import bounded, console, err_console

app = typer.Typer(help="Real small LLMs served locally (llama.cpp on 127.0.0.1).",
                  no_args_is_help=True, rich_markup_mode=None)

ModelOption = Annotated[str, typer.Option(
    "--model", help="The local model (see `tiap llm models`).")]


@app.command("models")
def models_cmd(
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object per model.")
                       ] = False,
) -> None:
    """The pinned local models: size, sha256, licence, whether installed, how to install."""
    from tiap.llm import model_rows

    rows = model_rows()
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
    from tiap.llm import serve_model

    reply = serve_model(model, port=port, ctx=ctx, threads=threads, parallel=parallel,
                        check=check, log=lambda s: err_console.print(escape(s)),
                        ready=lambda srv: console.print(f"base_url = {srv.base_url}\n"
                                                       f"model = {srv.model}"))
    if reply is not None:
        console.print(f"reply ({reply.seconds:.1f} s, "
                      f"{'?' if reply.tokens is None else reply.tokens} tokens): "
                      f"{escape(reply.content)}")
