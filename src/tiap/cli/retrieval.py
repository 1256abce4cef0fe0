"""``tiap retrieve``: rank a store's items for each query (BM25, dense or hybrid) into a trace."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from tiap.cli.common import bounded, err_console
from tiap.scoring import DEFAULT_K


def _system_name(value: str | None) -> str | None:
    """``--system``: a TREC tag, so non-empty and without whitespace (an empty one would
    silently become the retriever's name)."""
    if value is not None and (not value or any(c.isspace() for c in value)):
        raise typer.BadParameter(f"{value!r} is not a system name: it is the TREC tag, "
                                 "non-empty and without whitespace")
    return value


def retrieve_cmd(
    store: Annotated[Path, typer.Option(
        "--store", help="The store folder (items.jsonl, optional manifest.json).")],
    queries: Annotated[Path, typer.Option("--queries", help="queries.jsonl (gzip ok).")],
    retriever: Annotated[str, typer.Option(
        "--retriever", help="bm25, dense, or hybrid (reciprocal-rank fusion of the two).")],
    out: Annotated[Path, typer.Option(
        "--out", help="The trace to write (e.g. runs/bm25.jsonl; .jsonl.gz compresses); a "
        "TREC run is written next to it (runs/bm25.trec).")],
    k: Annotated[int, bounded("cutoff", "--k", help="Ranking depth: items per query.")
                 ] = DEFAULT_K,
    model: Annotated[str | None, typer.Option(
        "--model", help="Embedding model (dense, hybrid): all-MiniLM-L6-v2 (bundled, the "
        "default), a local sentence-transformers folder, or ollama:NAME.",
        show_default=False)] = None,
    ollama_url: Annotated[str | None, typer.Option(
        "--ollama-url", help="Ollama server for ollama:NAME models (default $OLLAMA_HOST, else "
        "http://127.0.0.1:11434).", show_default=False)] = None,
    rrf_k: Annotated[int, bounded(
        "rrf_k", "--rrf-k", help="Hybrid: the RRF constant in 1/(rrf_k + rank).")] = 60,
    system: Annotated[str | None, typer.Option(
        "--system", help="System name in the trace and TREC tag (default: the retriever's "
        "name).", show_default=False, callback=_system_name)] = None,
    batch_size: Annotated[int | None, bounded(
        "batch_size", "--batch-size", help="Texts per encoding batch (default 64 local, 32 "
         "Ollama).",
        show_default=False)] = None,
    cache_dir: Annotated[Path | None, typer.Option(
        "--cache-dir", help="Embedding cache folder (default $TIAP_CACHE/embeddings, else "
        "~/.cache/tiap/embeddings).", show_default=False)] = None,
    no_cache: Annotated[bool, typer.Option(
        "--no-cache", help="Keep embeddings in memory only.")] = False,
    bm25_k1: Annotated[float, bounded("bm25_k1", "--bm25-k1", help="BM25 k1.")] = 1.5,
    bm25_b: Annotated[float, bounded("unit", "--bm25-b", help="BM25 b.")] = 0.75,
    work: Annotated[Path | None, typer.Option(
        "--work", help="Folder for partial results, to resume an interrupted run (default "
        "<out>.work).", show_default=False)] = None,
    engine: Annotated[str, typer.Option(
        "--engine", help="Where collections are ranked: local (this process), ray (a local "
        "Ray instance), ray://HOST:PORT or ray:auto (a Ray cluster; pip install -e "
        "'.[ray]'): bm25 ranks one collection per task; dense (and hybrid) encode the texts "
        "the embedding cache lacks eight batches per task, each worker loading the model "
        "once, and rank here. The trace is the same.")] = "local",
) -> None:
    """Rank each query's collection with BM25, dense embeddings or their RRF fusion; write a
    trace (header line + one ranking a line) and a TREC run. Reruns resume."""
    from tiap.config import command_options
    from tiap.retrieval import default_work_dir

    start = time.perf_counter()
    try:
        with command_options({"model": "--model", "ollama_url": "--ollama-url",
                              "batch_size": "--batch-size", "cache_dir": "--cache-dir",
                              "use_cache": "--no-cache", "rrf_k": "--rrf-k", "k1": "--bm25-k1",
                              "b": "--bm25-b", "name": "--retriever"}):
            done = _run_with_progress(store, queries, retriever, out, depth=k, system=system,
                                      work_dir=work, engine=engine, model=model,
                                      ollama_url=ollama_url, batch_size=batch_size,
                                      cache_dir=cache_dir, use_cache=not no_cache,
                                      rrf_k=rrf_k, k1=bm25_k1, b=bm25_b)
    except KeyboardInterrupt:
        err_console.print(f"finished collections are kept in {work or default_work_dir(out)}; "
                          "rerun the same command to resume", highlight=False)
        raise
    result = done.result
    seconds = time.perf_counter() - start
    n = len(result.run.rankings)
    note = f" ({result.resumed} resumed from the work folder)" if result.resumed else ""
    err_console.print(
        f"ranked {n:,} queries over {result.collections:,} collections in {seconds:.1f}s{note}",
        highlight=False,
    )
    if result.discarded:
        err_console.print(f"[yellow]note[/]: discarded {result.discarded} partial results of "
                          "another configuration", highlight=False)
    encoded = done.encoded
    if encoded:
        err_console.print(f"encoded {encoded:,} texts (the rest came from the embedding cache)",
                          highlight=False)
    elif encoded is not None:
        err_console.print("every vector came from the embedding cache", highlight=False)
    differing = done.shard_differing
    if differing:
        err_console.print(f"[yellow]warning[/]: {differing:,} vectors an interrupted run's "
                          "workers left in shards differ from the embedding cache's; the "
                          "cache's were kept", highlight=False)
    if result.empty:
        err_console.print(
            f"[yellow]warning[/]: {len(result.empty):,} queries have an empty ranking (no "
            f"query term matches any item; first: {result.empty[0]}); they are in the trace "
            "but left out of the TREC run", highlight=False)
    elif result.short:
        err_console.print(f"{result.short:,} queries have fewer than {k} ranked items",
                          highlight=False)
    err_console.print(f"wrote {result.trace_path} and {result.trec_path}", highlight=False)


def _run_with_progress(*args: Any, **kwargs: Any) -> Any:
    """retrieve_files() with progress bars (collections, encoding) on stderr."""

    from tiap.retrieval import retrieve_files

    with Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err_console,
        transient=True,
        disable=not err_console.is_terminal,
    ) as progress:
        return retrieve_files(*args, progress=progress, **kwargs)
