"""``tiap build-store``: a memory store (raw items + derived items with lineage) for a dataset."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from tiap.cli.common import (
    DataOption,
    ForceOption,
    NoVerifyOption,
    bounded,
    console,
    err_console,
    print_warnings,
    split_names,
    track,
)

LLM_ONLY = "Only with --parser llm."


def build_store_cmd(
    dataset: Annotated[str, typer.Argument(help="Dataset id (see `tiap datasets list`).")],
    parser: Annotated[str, typer.Option(
        "--parser", help="heuristic (extractive facts), native (the dataset's own memories) "
        "or llm (an OpenAI-compatible endpoint).")],
    out: Annotated[Path, typer.Option("--out", help="Output folder: items.jsonl, manifest.json.")],
    name: Annotated[str | None, typer.Option(
        "--name", help="The store's name, written on every item (an item is identified by "
        "store and id); default: the name of the --out folder.", show_default=False)] = None,
    max_facts: Annotated[int | None, bounded(
        "max_facts", "--max-facts", help="At most N facts per turn (heuristic, llm; default 5). "
        "The paper's densities are 1, 5 and 8.", show_default=False)] = None,
    seed: Annotated[int, bounded("seed", "--seed", help="Recorded; sent to LLM endpoints.")
    ] = 1337,
    collections: Annotated[str | None, typer.Option(
        "--collections", help="Comma-separated collection ids to build (default: all).",
        show_default=False)] = None,
    workers: Annotated[int | None, bounded(
        "workers", "--workers", help="Processes for the heuristic parser (default: up to 4 CPUs "
         "for "
        "datasets of more than 50 collections, else 1). The output is the same for any value.",
        show_default=False)] = None,
    base_url: Annotated[str | None, typer.Option(
        "--base-url", help="Endpoint base URL, e.g. http://127.0.0.1:11434/v1. " + LLM_ONLY,
        show_default=False)] = None,
    model: Annotated[str | None, typer.Option(
        "--model", help="Model name at the endpoint. " + LLM_ONLY, show_default=False)] = None,
    api_key_env: Annotated[str | None, typer.Option(
        "--api-key-env", help="Environment variable holding the API key (default "
        "OPENAI_API_KEY; sent only when set, never written). " + LLM_ONLY,
        show_default=False)] = None,
    concurrency: Annotated[int | None, bounded(
        "concurrency", "--concurrency", help="Requests in flight (default 4). " + LLM_ONLY,
        show_default=False)] = None,
    timeout: Annotated[float | None, bounded(
        "timeout", "--timeout", help="Seconds per request (default 60). " + LLM_ONLY,
        show_default=False)] = None,
    max_retries: Annotated[int | None, bounded(
        "retries", "--max-retries", help="Retries on 429/5xx/timeouts (default 5). " + LLM_ONLY,
        show_default=False)] = None,
    cache: Annotated[Path | None, typer.Option(
        "--cache", help="SQLite cache of finished turns, for resuming "
        "(default $TIAP_CACHE/llm/parser-cache.sqlite). " + LLM_ONLY,
        show_default=False)] = None,
    max_invalid: Annotated[float | None, bounded(
        "share", "--max-invalid", help="Stop (error[endpoint]) when more than this share of "
        "the endpoint's replies are invalid (default 0.5; 1: never). Invalid replies are never "
        "cached. " + LLM_ONLY, show_default=False)] = None,
    response_format: Annotated[str | None, typer.Option(
        "--response-format", help="Structured output asked of the endpoint: json_schema (the "
        "default: the server holds the reply to the facts' JSON schema), json_object (any "
        "JSON object) or none (the prompt alone). A server that refuses one is asked with the "
        "next, and the manifest records what was used. " + LLM_ONLY,
        show_default=False)] = None,
    max_tokens: Annotated[int | None, bounded(
        "max_tokens", "--max-tokens", help="Longest reply, in tokens (default 512): a reply cut "
        "there is invalid, so a model that loops on a turn stops. " + LLM_ONLY,
        show_default=False)] = None,
    local_model: Annotated[str | None, typer.Option(
        "--local-model", help="Serve this local model (see `tiap llm models`) on 127.0.0.1 "
        "while the store is built, instead of --base-url and --model; defaults then fit a "
        "one-slot CPU server: --concurrency 1, --timeout 600. " + LLM_ONLY,
        show_default=False)] = None,
    local_port: Annotated[int, bounded(
        "port", "--local-port", help="Port of the --local-model server (fixed, so "
        "that the cache's keys, which name the endpoint, hold across runs).")] = 8089,
    local_threads: Annotated[int, bounded(
        "threads", "--local-threads", help="llama.cpp threads of the --local-model server (on 2 "
        "cores keep 1 when anything else runs).")] = 1,
    sessions: Annotated[int | None, bounded(
        "count", "--sessions", help="Only the first N sessions of each collection (by "
        "position), for a quick real slice.", show_default=False)] = None,
    engine: Annotated[str, typer.Option(
        "--engine", help="Where the work runs: local (this process), ray (a local Ray "
        "instance), ray://HOST:PORT or ray:auto (a Ray cluster; pip install -e '.[ray]'). "
        "heuristic: one collection per task; llm: the endpoint's requests as tasks, at most "
        "--concurrency in flight, each reply written to a shard beside the cache so a killed "
        "worker or driver repeats no finished turn. The store is the same.")] = "local",
    data: DataOption = None,
    no_verify: NoVerifyOption = False,
    force: ForceOption = False,
) -> None:
    """Build a memory store: one raw item per turn plus derived items with lineage. --out is
    replaced whole by the new store (a --cache inside it is kept)."""
    from tiap.config import command_options
    from tiap.memory import build_dataset_store

    wanted = None if collections is None else split_names(collections, "--collections",
                                                          what="collection ids")
    llm = {"base_url": base_url, "model": model, "api_key_env": api_key_env,
           "concurrency": concurrency, "timeout": timeout, "max_retries": max_retries,
           "cache": cache, "max_invalid": max_invalid, "response_format": response_format,
           "max_tokens": max_tokens}
    # a parser's problem with a value given here names the option; a missing one the key
    given = ["max_facts", "seed", *(k for k, v in llm.items() if v is not None)]
    with command_options({k: "--" + k.replace("_", "-") for k in given}):
        result = build_dataset_store(
            dataset, parser, out, name=name, max_facts=max_facts, seed=seed,
            collections=wanted, workers=workers, **llm, local_model=local_model,
            local_port=local_port, local_threads=local_threads, sessions=sessions,
            engine=engine, data=data, verify=not no_verify, force=force, progress=track,
            log=lambda m: err_console.print(escape(m)))
    _print_summary(result.counts, result.manifest, out)
    print_warnings(result.manifest.get("warnings"), out / "manifest.json")


def _print_summary(counts: dict[str, Any], manifest: dict[str, Any], out: Path) -> None:
    spec = manifest["parser"]
    args = ", ".join(f"{k}={v}" for k, v in spec["args"].items() if k != "cache")
    t = Table(title=f"{manifest['dataset']['id']}: {spec['name']}({args})", show_header=False,
              title_justify="left")
    t.add_row("collections", f"{counts['collections']:,}")
    t.add_row("turns", f"{counts['turns']:,}")
    for kind, n in counts["by_kind"].items():
        t.add_row(f"items: {kind}", f"{n:,}")
    t.add_row("turns with a derived item", f"{counts['turns_with_derived']:,}")
    t.add_row("turns without", f"{counts['turns_without_derived']:,}")
    stats = manifest.get("parser_stats") or {}
    for k, v in stats.items():
        if isinstance(v, int) and k not in ("turns",):
            t.add_row(k.replace("_", " "), f"{v:,}")
    t.add_row("seconds", f"{manifest.get('elapsed_seconds', 0):.1f}")
    console.print(t)
    err_console.print(f"wrote {out / 'items.jsonl'} and {out / 'manifest.json'}")
