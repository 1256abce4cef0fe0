"""TIAP's own answers: a system's top k items as context, one chat request per query.

:func:`generate_answers` turns fixed rankings into an answer set (:mod:`tiap.answers.records`):
for each query and system,

1. the system's ranking (a :class:`tiap.runs.Run`), its top ``k`` items in rank order, read
   from the store the run names (``stores``: store name -> items);
2. cut to ``token_budget`` tokens by the rule of :func:`count_tokens` (a token is a run of
   letters and digits, or one other visible character: a stated count, not the model's
   tokenizer, which usually counts more): items are taken in rank order while the total
   stays within the budget; the first that does not fit ends the context (no later, shorter
   item jumps the queue);
3. the prompt template (TIAP's own, :data:`DEFAULT_PROMPT`, or any file with ``{context}``
   and ``{question}``) filled with those items, one per line, and sent as one user message
   to an OpenAI-compatible endpoint (the local model by default: ``tiap llm serve``);
4. the reply's text is the answer; :class:`~tiap.answers.records.Context` records the store
   and the ids of exactly the items given.

Checked before any request, all together: a run whose store is not in ``stores``, ``k`` or
``token_budget`` out of range, a query asked for that a run does not rank, an item a ranking
names that its store lacks, and a query whose top-ranked item alone is over the budget
(``error[usage]`` naming ``token_budget`` and the queries: a context with no item would be an
answer to a question without its retrieval, so it is refused, never sent).

**Cache and resume**: every valid reply is committed at once to an :class:`AnswerCache`
(SQLite, :class:`tiap.cache.KeyedCache`) under the sha256 of the endpoint and the exact
request body (model, messages, temperature, ``max_tokens``, seed). A run that is
interrupted and run again asks only for what it had not finished. An invalid reply (not a
chat completion, an empty answer) is counted, never cached (:class:`tiap.llm.client.
InvalidReplies`: a run whose replies are mostly invalid stops with ``error[endpoint]``).
A reply cut by ``max_tokens`` is kept and counted (``warnings.answer_cut``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import random
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from tiap.answers.records import Answer, AnswerSet, Context
from tiap.cache import KeyedCache, Table, cache_dir
from tiap.config import option_name
from tiap.errors import Problems, TiapError
from tiap.io import read_text_file
from tiap.llm.local import DEFAULT_MODEL, DEFAULT_PORT, LocalServer, local_endpoint

__all__ = [
    "DEFAULT_PROMPT",
    "TOKEN_RULE",
    "AnswerCache",
    "GenerateProgress",
    "count_tokens",
    "default_prompt",
    "generate_answers",
    "stratified_sample",
]

#: the name of TIAP's own answer prompt (a template file shipped in the package)
DEFAULT_PROMPT = "tiap-answer-v1"
#: how :func:`count_tokens` counts (what a token budget means)
TOKEN_RULE = "a run of letters/digits/underscore, or one other non-space character"
_TOKEN = re.compile(r"\w+|[^\w\s]")
_MAX_K = 1000
_MAX_BUDGET = 1_000_000


def count_tokens(text: str) -> int:
    """Tokens of ``text`` by :data:`TOKEN_RULE` (a stated rule, not a model's tokenizer).

    >>> count_tokens("Caroline (8 May, 2023): I went!")  # Caroline ( 8 May , 2023 ) : I went !
    11
    """
    return len(_TOKEN.findall(text))


def default_prompt() -> Path:
    """The file of TIAP's own answer prompt (:data:`DEFAULT_PROMPT`).

    >>> p = default_prompt()
    >>> p.name, "{context}" in p.read_text(), "{question}" in p.read_text()
    ('answer.txt', True, True)
    """
    return Path(str(resources.files("tiap.answers") / "prompts" / "answer.txt"))


def _template(prompt: str | Path | None) -> tuple[str, str, str]:
    """(name, text, sha256) of the prompt template; a template without both fields is an
    error naming the file."""
    path = default_prompt() if prompt is None else Path(prompt)
    raw, text = read_text_file(path, "answer prompt")
    missing = [f for f in ("{context}", "{question}") if f not in text]
    if missing:
        raise TiapError(f"the answer prompt has no {' and no '.join(missing)}: a template "
                        "names both where the items and the question go", file=path,
                        code="invalid-value")
    name = DEFAULT_PROMPT if prompt is None else path.stem
    return name, text, hashlib.sha256(raw).hexdigest()


def _fill(template: str, context: str, question: str) -> str:
    # plain replacement (no str.format: a template may hold other braces)
    return template.replace("{context}", context).replace("{question}", question)


# -- cache ---------------------------------------------------------------------------------


class AnswerCache(KeyedCache):
    """Answers with a valid reply, by request (the sha256 of the endpoint and the exact
    body): one commit per answer, so a killed run loses at most the request in flight.

    >>> with AnswerCache("answers.sqlite") as c:
    ...     c.put("k1", model="m", system="A", query_id="q1", answer="Paris")
    ...     c.get("k1"), c.get("k2"), len(c)
    ('Paris', None, 1)
    """

    KIND = "answer cache"
    SCHEMA = 1
    NOUN = "answers"
    COMPARE = "answer"
    TABLES = (Table("answers", ("key TEXT PRIMARY KEY", "model TEXT NOT NULL",
                                "system TEXT NOT NULL", "query_id TEXT NOT NULL",
                                "answer TEXT NOT NULL", "created TEXT NOT NULL"), ("key",)),)
    ELSEWHERE = "pass another cache file"
    AGAIN = "the endpoint is then asked again"

    def get(self, key: str) -> str | None:
        """The cached answer of a request, else ``None``."""
        row = self.lookup("answers", (key,), ("answer",))
        return None if row is None else str(row[0])

    def put(self, key: str, *, model: str, system: str, query_id: str, answer: str) -> None:
        """Commit one valid answer."""
        with self.transaction():
            self.store("answers", [(key, model, system, query_id, answer,
                                    datetime.now(UTC).isoformat(timespec="seconds"))])

    def __len__(self) -> int:
        return self.count_rows("answers")


def default_cache_path() -> Path:
    """``$TIAP_CACHE/llm/answer-cache.sqlite``."""
    return cache_dir("llm", "answer-cache.sqlite")


# -- sampling ------------------------------------------------------------------------------


def stratified_sample(queries: Iterable[Any], n: int, *, seed: int = 0,
                      by: str = "category",
                      keep: Callable[[Any], bool] | None = None) -> list[str]:
    """``n`` query ids, spread evenly over the values of ``by`` (a query attribute), drawn
    with ``seed``; returned in the queries' order.

    Each stratum gets ``n // strata`` queries (the remainder one more each, strata in sorted
    order); a stratum with fewer queries gives all it has and the rest goes to the others.
    ``keep`` leaves queries out before drawing (e.g. those without a reference answer).

    >>> from types import SimpleNamespace as Q
    >>> qs = [Q(query_id=f"q{i}", category="ab"[i % 2]) for i in range(10)] + [
    ...       Q(query_id="q10", category="c")]
    >>> stratified_sample(qs, 5, seed=1)  # 2 of a (even), 2 of b (odd), c's only one
    ['q0', 'q1', 'q2', 'q5', 'q10']
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise TiapError(f"n must be an integer >= 1, got {n!r}", code="usage")
    pool = [q for q in queries if keep is None or keep(q)]
    strata: dict[str, list[str]] = {}
    for q in pool:
        strata.setdefault(str(getattr(q, by)), []).append(q.query_id)
    if n > len(pool):
        raise TiapError(f"n is {n}, but only {len(pool)} queries are there to draw from",
                        code="usage")
    rng = random.Random(seed)
    want = dict.fromkeys(sorted(strata), 0)
    left = n
    while left:  # deal one at a time to the strata that still have queries
        open_ = [s for s in want if want[s] < len(strata[s])]
        for s in open_[:left]:
            want[s] += 1
        left -= min(left, len(open_))
    chosen = {qid for s, m in want.items() for qid in rng.sample(sorted(strata[s]), m)}
    return [q.query_id for q in pool if q.query_id in chosen]


# -- generation ----------------------------------------------------------------------------


@dataclass(frozen=True)
class GenerateProgress:
    """One finished answer, as :func:`generate_answers` tells its ``progress`` callback:
    ``cached`` when it came from the cache (no request made), ``requests`` the HTTP
    attempts it took.

    >>> GenerateProgress(1, 4, "A", "q1", cached=True, requests=0).cached
    True
    """

    done: int
    total: int
    system: str
    query_id: str
    cached: bool
    requests: int


def _runs(run: Any) -> list[Any]:
    from tiap.runs import Run, read_run

    if isinstance(run, Run):
        return [run]
    if isinstance(run, (str, Path)):
        return read_run(run)
    out: list[Any] = []
    for r in run:
        out.extend(_runs(r))
    return out


def _queries(queries: Any) -> list[Any]:
    if isinstance(queries, (str, Path)):
        from tiap.datasets.queryfile import read_queries

        return read_queries(queries)
    return list(queries)


def _store_items(store: Any) -> dict[str, Any]:
    if isinstance(store, (str, Path)):
        from tiap.memory.store import read_items

        p = Path(store)
        store = read_items(p / "items.jsonl" if p.is_dir() else p)
    return {it.item_id: it for it in store}


def _check_int(name: str, value: Any, top: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= top:
        raise TiapError(f"{option_name(name)} must be an integer from 1 to {top:,}, got "
                        f"{value!r}",
                        code="usage")


def generate_answers(run: Any, queries: Any, stores: Mapping[str, Any], *,
                     systems: Sequence[str] | None = None, k: int = 10,
                     token_budget: int = 1024, endpoint: tuple[str, str] | None = None,
                     prompt: str | Path | None = None, cache: str | Path | None = None,
                     query_ids: Sequence[str] | None = None,
                     progress: Callable[[GenerateProgress], None] | None = None,
                     dataset: str | None = None, max_tokens: int = 64,
                     temperature: float = 0.0, seed: int | None = 0,
                     api_key_env: str | None = None, timeout: float = 600.0,
                     max_invalid: float = 0.5) -> AnswerSet:
    """Answer each query with the top ``k`` items of each system's ranking (module docstring).

    Args:
        run: a :class:`tiap.runs.Run`, a run file (any format :func:`tiap.runs.read_run`
            reads), or a list of either; each run names the store its items are in
            (``Run.store``: a TIAP trace's header says it).
        queries: the queries (:class:`tiap.datasets.records.Query`) or ``queries.jsonl``.
        stores: store name -> its items (a list of :class:`tiap.memory.store.Item`, an
            ``items.jsonl`` or a store folder).
        systems: the runs' systems to answer with (``None``: all).
        k: items per context, at most; ``token_budget``: tokens per context, at most
            (:func:`count_tokens`).
        endpoint: ``(base_url, model)`` of an OpenAI-compatible endpoint; ``None``: the
            local model served by ``tiap llm serve`` on its default port.
        prompt: a template file with ``{context}`` and ``{question}``; ``None``: TIAP's own
            (:func:`default_prompt`).
        cache: the :class:`AnswerCache` file (default ``$TIAP_CACHE/llm/answer-cache.sqlite``).
        query_ids: the queries to answer (``None``: every query; see
            :func:`stratified_sample`), in this order.
        progress: called with a :class:`GenerateProgress` after each answer.
        dataset: the answers' dataset (``None``: the run's benchmark, else ``"unknown"``).

    Returns:
        An :class:`~tiap.answers.records.AnswerSet` (no verdicts); its ``warnings`` count
        the invalid replies (``invalid_reply``: those answers are missing) and the answers
        cut at ``max_tokens`` (``answer_cut``), and its ``generation`` records the settings
        (prompt name and sha256, model, endpoint, ``k``, budget, token rule, decoding), the
        items the budget cut, the empty contexts (a ranking with no item: sent with
        ``(none)`` as context) and how many answers came from the cache.

    A run naming a store that is not given is refused before any request:

    >>> from tiap.runs import Ranking, Run
    >>> from tiap.datasets import Query
    >>> run = Run("f1-bm25", [Ranking("q1", "f1-bm25", ["t1"])], store="f1")
    >>> generate_answers(run, [Query("q1", "c1", "Who?", "Ann", "single-hop", ())],
    ...                  {"native": []})
    Traceback (most recent call last):
    ...
    tiap.errors.TiapError: run f1-bm25 ranks items of store 'f1', which is not given
    (stores: native)
    """
    from tiap.llm.client import ChatClient, InvalidReplies, endpoint_id

    _check_int("k", k, _MAX_K)
    _check_int("token_budget", token_budget, _MAX_BUDGET)
    _check_int("max_tokens", max_tokens, 100_000)
    pname, template, psha = _template(prompt)
    runs = _runs(run)
    if systems is not None:
        known = [r.system for r in runs]
        missing = [s for s in systems if s not in known]
        if missing:
            raise TiapError(f"no run of system {', '.join(map(repr, missing))}; the runs are "
                            f"of {', '.join(known) or 'none'}", code="usage")
        runs = [r for r in runs if r.system in systems]
    if not runs:
        raise TiapError("no run to answer with", code="usage")
    twice = sorted({r.system for r in runs if [x.system for x in runs].count(r.system) > 1})
    if twice:
        raise TiapError(f"two runs of system {', '.join(map(repr, twice))}: one run per "
                        "system (an answer is identified by dataset, system and query)",
                        code="usage")
    problems = Problems()
    for r in runs:
        name = r.store if r.store is not None else (next(iter(stores)) if len(stores) == 1
                                                    else None)
        if name is None:
            problems.add(f"run {r.system} does not name its store and {len(stores)} stores "
                         "are given: give a TIAP trace (its header names the store) or one "
                         "store", code="usage")
        elif name not in stores:
            problems.add(f"run {r.system} ranks items of store {name!r}, which is not given "
                         f"(stores: {', '.join(stores) or 'none'})", code="usage")
    problems.raise_if_any()
    qlist = _queries(queries)
    by_id = {q.query_id: q for q in qlist}
    wanted = list(query_ids) if query_ids is not None else [q.query_id for q in qlist]
    repeated = sorted({q for q in wanted if wanted.count(q) > 1})
    if repeated:
        raise TiapError(f"query_ids names {len(repeated)} queries twice: "
                        f"{', '.join(repeated[:5])}", code="usage")
    unknown = [q for q in wanted if q not in by_id]
    if unknown:
        raise TiapError(f"{len(unknown)} query ids are not among the queries: "
                        f"{', '.join(unknown[:5])}", code="usage")

    # every context, built and checked before any request
    items_of: dict[str, dict[str, Any]] = {}
    plans: list[tuple[Any, str, Any, list[str], str]] = []
    problems = Problems()
    cut_items = 0
    for r in runs:
        sname = r.store if r.store is not None else next(iter(stores))
        if sname not in items_of:
            items_of[sname] = _store_items(stores[sname])
        items = items_of[sname]
        for qid in wanted:
            if qid not in r:
                problems.add(f"run {r.system} has no ranking for query {qid}", query_id=qid,
                             code="usage")
                continue
            ids, lines, used = [], [], 0
            top = r.ranking(qid).item_ids[:k]
            for rank, iid in enumerate(top, start=1):
                it = items.get(iid)
                if it is None:
                    problems.add(f"run {r.system} ranks item {iid!r} (rank {rank}), which "
                                 f"store {sname!r} does not hold", query_id=qid, code="input")
                    break
                line = " ".join((it.text or "").split())
                n = count_tokens(line)
                if used + n > token_budget:
                    if not ids:
                        problems.add(f"{option_name('token_budget')} {token_budget} is too "
                                     "small for the "
                                     f"first item of run {r.system} ({iid!r}, {n} tokens)",
                                     query_id=qid, code="usage")
                    cut_items += len(top) - len(ids)
                    break
                ids.append(iid)
                lines.append(f"- {line}")
                used += n
            plans.append((r, sname, by_id[qid], ids, "\n".join(lines)))
    problems.raise_if_any()

    if endpoint is None:
        endpoint = local_endpoint(DEFAULT_MODEL)
    base_url, model = endpoint
    client = ChatClient(base_url, api_key_env=api_key_env, timeout=timeout)
    invalid = InvalidReplies(client.url, max_invalid, what="answer")
    eid = endpoint_id(client.base_url)
    store_cache = AnswerCache(default_cache_path() if cache is None else cache)
    answers: list[Answer] = []
    reused = cut = 0
    try:
        for done, (r, sname, q, ids, text) in enumerate(plans, start=1):
            body: dict[str, Any] = {
                "model": model,
                "messages": [{"role": "user",
                              "content": _fill(template, text or "(none)", q.question)}],
                "temperature": temperature, "max_tokens": max_tokens}
            if seed is not None:
                body["seed"] = seed
            key = hashlib.sha256(json.dumps({"endpoint": eid, "body": body}, sort_keys=True,
                                            ensure_ascii=False, allow_nan=False)
                                 .encode("utf-8")).hexdigest()
            got = store_cache.get(key)
            attempts = 0
            if got is None:
                reply = client.post(body)
                attempts = reply.attempts
                content = (reply.content or "").strip() if reply.status == 200 else ""
                if not content:
                    why = reply.error or "an empty answer"
                    invalid.add(False, where=f"{r.system}/{q.query_id}", reason=why,
                                body=reply.text, query_id=q.query_id)
                    if progress is not None:
                        progress(GenerateProgress(done, len(plans), r.system, q.query_id,
                                                  False, attempts))
                    continue
                invalid.add(True)
                cut += reply.finish_reason == "length"
                got = content
                store_cache.put(key, model=model, system=r.system, query_id=q.query_id,
                                answer=got)
            else:
                reused += 1
            answers.append(Answer(dataset or r.benchmark or "unknown", r.system, q.query_id,
                                  got, question=q.question, reference=q.answer,
                                  category=q.category, context=Context(sname, tuple(ids))))
            if progress is not None:
                progress(GenerateProgress(done, len(plans), r.system, q.query_id,
                                          got is not None and attempts == 0, attempts))
        invalid.finish(reused=reused)
    finally:
        store_cache.close()
        client.close()
    warnings: dict[str, Any] = {}
    w = invalid.warning()
    if w is not None:
        warnings["invalid_reply"] = w
    if cut:
        warnings["answer_cut"] = {"message": f"{cut} answers were cut at max_tokens="
                                             f"{max_tokens} (kept as given)", "count": cut}
    generation = {"prompt": pname, "prompt_sha256": psha, "model": model,
                              "endpoint": eid, "k": k, "token_budget": token_budget,
                              "token_rule": TOKEN_RULE, "max_tokens": max_tokens,
                              "temperature": temperature, "seed": seed,
                              "items_cut_by_budget": cut_items,
                              "empty_contexts": sum(1 for p in plans if not p[3]),
                              "answers": len(answers),
                              "from_cache": reused}
    return AnswerSet(tuple(answers), {}, warnings, generation)


def generate_files(runs: Sequence[str | Path], out: str | Path, *, queries: str | Path,
                   stores: Mapping[str, str | Path], sample: int | None = None,
                   sample_seed: int = 0, local_model: str | None = None,
                   local_port: int = DEFAULT_PORT, force: bool = False,
                   **options: Any) -> tuple[AnswerSet, Any]:
    """``tiap answers generate``: :func:`generate_answers` over run files, a queries file and
    stores given by path (``options``: its keyword arguments), saved as the folder ``out``
    (:func:`tiap.answers.save_answers`; the generation settings in its manifest). Returns
    the answers and the manifest. ``sample``: answer a stratified sample of that many
    queries with a reference answer and evidence (:func:`stratified_sample`, by category,
    seeded by ``sample_seed``). ``local_model``: serve that local model
    (:class:`tiap.llm.local.LocalServer`, on its default port, so the cache's keys stay the
    same from run to run) for the call and answer with it.

    A run naming a store that is not given is refused before any request:

    >>> import json
    >>> _ = Path("run.jsonl").write_text(json.dumps({"system": "A", "store": "S",
    ...     "query_id": "q1", "ranking": ["t1"]}) + "\\n")
    >>> _ = Path("q.jsonl").write_text(json.dumps({"query_id": "q1", "question": "?",
    ...     "evidence": ["c:1"]}) + "\\n")
    >>> generate_files(["run.jsonl"], "answers", queries="q.jsonl", stores={})
    Traceback (most recent call last):
    ...
    tiap.errors.TiapError: ...store 'S'...
    """

    from tiap.answers.files import save_answers
    from tiap.datasets.queryfile import read_queries

    if sample is not None:
        if options.get("query_ids") is not None:
            raise TiapError("give the query ids or a sample size, not both", code="usage")
        options["query_ids"] = stratified_sample(
            read_queries(queries), sample, seed=sample_seed,
            keep=lambda q: bool(getattr(q, "answer", None)) and bool(q.evidence))
    with contextlib.ExitStack() as stack:
        if local_model is not None:
            if options.get("endpoint") is not None:
                raise TiapError("local_model serves its own endpoint: give an endpoint or "
                                "a local model, not both", code="usage")
            local_endpoint(local_model, local_port)  # an unknown name, before any work
            srv = stack.enter_context(LocalServer(local_model, port=local_port))
            options["endpoint"] = (srv.base_url, srv.model)
        answers = generate_answers(list(runs), queries, dict(stores), **options)
    inputs = {"queries": Path(queries), **{f"run:{Path(r).name}": Path(r) for r in runs},
              **{f"items:{k}": Path(v) for k, v in stores.items()
                 if isinstance(v, str | Path)}}
    shown = {k: (str(v) if isinstance(v, Path) else list(v) if isinstance(v, tuple) else v)
             for k, v in options.items() if not callable(v)}
    shown.update(sample=sample, sample_seed=sample_seed, local_model=local_model,
                 local_port=local_port if local_model else None)
    man = save_answers(answers, out, step="answers generate", inputs=inputs, options=shown,
                       force=force)
    return answers, man
