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
from tiap.errors import Problem, TiapError

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
    import contextlib

    from tiap.datasets import DataSource, SessionSlice, load
    from tiap.io import check_output_folder
    from tiap.memory import build_store, make_parser
    from tiap.memory.build import cache_entries

    pname = parser.strip().lower()
    llm_opts: dict[str, Any] = {
        "base_url": base_url, "model": model, "api_key_env": api_key_env,
        "concurrency": concurrency, "timeout": timeout, "max_retries": max_retries,
        "cache": None if cache is None else str(cache), "max_invalid": max_invalid,
        "response_format": response_format, "max_tokens": max_tokens,
    }
    given = {k: v for k, v in llm_opts.items() if v is not None}
    problems: list[Problem] = []
    if pname != "llm" and given:
        flags = ", ".join("--" + k.replace("_", "-") for k in given)
        problems.append(Problem(f"options for --parser llm only: {flags}"))
    if local_model is not None:
        if pname != "llm":
            problems.append(Problem("--local-model serves the model of --parser llm only"))
        else:
            from tiap.llm.local import local_endpoint

            try:
                local_endpoint(local_model, local_port, base_url=base_url, model=model)
            except TiapError as exc:
                problems.extend(exc.problems)
    if pname == "native" and max_facts is not None:
        problems.append(Problem("--max-facts does not apply to --parser native "
                                "(it stores the memories the dataset ships)"))
    if problems:
        raise TiapError(problems=problems)
    args: dict[str, Any] = {}
    if pname in ("heuristic", "llm"):
        args["max_facts"] = 5 if max_facts is None else max_facts
    served: Any = None
    if pname == "llm":
        args.update(given)
        args["seed"] = seed
        if local_model is not None:
            from tiap.llm.local import CLIENT_DEFAULTS, LocalServer, local_endpoint

            args["base_url"], args["model"] = local_endpoint(local_model, local_port)
            for k, v in CLIENT_DEFAULTS.items():
                args.setdefault(k, v)
            served = LocalServer(args["model"], port=local_port, threads=local_threads,
                                 log=lambda m: err_console.print(escape(m)))
    elif max_facts is not None and pname not in ("heuristic", "native"):
        args["max_facts"] = max_facts
    wanted = None if collections is None else split_names(collections, "--collections",
                                                          what="collection ids")
    # a foreign --out is refused before the parser opens its cache (which may lie in it)
    check_output_folder(out, "build-store", force=force, keep=cache_entries(cache, out))
    from tiap.config import command_options

    with command_options({k: "--" + k.replace("_", "-") for k in args}):
        made = make_parser(pname, **args)  # checks the arguments before any data is read
    ds = load(dataset, source=DataSource(data, verify=not no_verify))
    if sessions is not None:
        ds = SessionSlice(ds, sessions)
    from tiap.engine import make_engine, use_engine

    with (served if served is not None else contextlib.nullcontext(),
          contextlib.closing(make_engine(engine)) as eng, use_engine(eng)):
        result = build_store(ds, made, out, seed=seed, collections=wanted, workers=workers,
                             progress=track, store=name, force=force,
                             served=None if served is None else served.settings())
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
