"""Answer-level alignment (the paper's Appendix E, Table 13).

An *extractive answerer* reads the text of a run's top ``depth`` items for a query and
returns a span of it; the span is scored against the reference answer with LoCoMo-style
token F1 and BLEU-1; then, per target, we ask how well "the target credits something in the
top ``depth``" (a hit) agrees with "the answer is correct" (F1 >= 0.5).

Normalisation: LoCoMo's (:func:`tiap.answers.normalize.normalize_answer`: lower-case, drop
commas, drop punctuation, drop the words ``a``, ``an``, ``the``, ``and``, split on
whitespace), with two explicit options of that one function: no stemming (LoCoMo also
Porter-stems tokens; we keep the scorer dependency-free, which can only lower F1) and the
typographic quotes dropped too.

- token F1: with ``c`` the multiset intersection of prediction and reference tokens,
  ``P = |c| / |pred|``, ``R = |c| / |ref|``, ``F1 = 2PR / (P + R)`` (0 when ``c`` is empty;
  1 when both are empty);
- BLEU-1 (Papineni et al. 2002, unigrams only): clipped unigram precision times the brevity
  penalty ``BP = 1`` if ``|pred| > |ref|`` else ``exp(1 - |ref| / |pred|)``.

The answerer (a deterministic heuristic, no model): split the items' texts into sentences,
pick the sentence sharing the most content words with the question (ties: the higher-ranked
item, then the earlier sentence), then answer by question type: *when / what date / what
year* -> the first date expression in it; *how many / how much* -> the first number; *who*
-> its capitalised words not in the question; otherwise its content words not in the
question (the sentence itself when none are left).

Alignment per (system, target), over queries with a reference answer and a defined value
under the target: the hit rate, mean F1 given a hit and given a miss and their difference,
P(correct | hit), P(correct | miss), the agreement rate ``mean[hit == correct]`` and the phi
coefficient (Pearson's r of the two binary variables).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tiap.answers.normalize import answer_tokens
from tiap.answers.normalize import normalize_answer as _normalize
from tiap.answers.normalize import token_f1 as _token_f1
from tiap.errors import TiapError
from tiap.provenance import read_manifest, verify_input
from tiap.sensitivity.load import Dataset

__all__ = [
    "ALIGN_COLUMNS",
    "ANSWER_COLUMNS",
    "CORRECT_F1",
    "answer_tables",
    "bleu1",
    "extract_answer",
    "normalize_answer",
    "token_f1",
    "tokens",
]

CORRECT_F1 = 0.5
ANSWER_COLUMNS = ("dataset", "system", "query_id", "category", "question", "reference",
                  "answer", "f1", "bleu1", "correct", "hits")
ALIGN_COLUMNS = ("dataset", "system", "target", "depth", "n", "hit_rate", "f1_hit", "f1_miss",
                 "f1_gap", "p_correct_hit", "p_correct_miss", "agreement", "phi")

_STOP = frozenset("""a an the and or but if of to in on at by for with about as from into
over after before between through during without within is are was were be been being am
do does did done have has had having i me my mine we our ours you your yours he him his she
her hers it its they them their theirs this that these those there here what which who whom
whose when where why how not no so too very can could would should will shall may might
must just also than then up down out off s t said says say""".split())
_MONTHS = ("january|february|march|april|may|june|july|august|september|october|november|"
           "december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec")
_DATE_RE = re.compile(
    rf"\b(?:\d{{1,2}}(?:st|nd|rd|th)?\s+(?:{_MONTHS})\.?,?\s+\d{{4}}"
    rf"|(?:{_MONTHS})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}"
    rf"|(?:{_MONTHS})\.?\s+\d{{4}}"
    rf"|(?:19|20)\d{{2}}"
    rf"|(?:last|next|this)\s+(?:week|month|year|weekend|summer|winter|spring|fall)"
    rf"|yesterday|today|tomorrow)\b",
    re.IGNORECASE,
)
_NUMBER_RE = re.compile(r"\b(?:\d+(?:\.\d+)?|one|two|three|four|five|six|seven|eight|nine|ten|"
                        r"eleven|twelve|twenty|thirty|hundred|once|twice)\b", re.IGNORECASE)
_SENT_RE = re.compile(r"(?<=[.!?])\s+")
_WORD_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9'\-]*")


def normalize_answer(text: str) -> str:
    """LoCoMo's normalisation without stemming, typographic quotes dropped too
    (:func:`tiap.answers.normalize.normalize_answer` with ``typographic=True``)."""
    return _normalize(text, typographic=True)


def tokens(text: str) -> list[str]:
    return answer_tokens(text, stem=False, typographic=True)


def token_f1(prediction: str, reference: str) -> float:
    """Token F1 of the unstemmed tokens (:func:`tiap.answers.normalize.token_f1`), 1.0 when
    both are empty (LoCoMo scores that 0)."""
    if not tokens(prediction) and not tokens(reference):
        return 1.0
    return _token_f1(prediction, reference, stem=False, typographic=True)


def bleu1(prediction: str, reference: str) -> float:
    """BLEU-1: clipped unigram precision times the brevity penalty (0 for an empty answer)."""
    p, r = tokens(prediction), tokens(reference)
    if not p:
        return 1.0 if not r else 0.0
    clipped = sum((Counter(p) & Counter(r)).values())
    bp = 1.0 if len(p) > len(r) else math.exp(1 - len(r) / len(p))
    return bp * clipped / len(p)


def _bare(word: str) -> str:
    """Lower case without a possessive ``'s``."""
    low = word.lower()
    return low[:-2] if low.endswith("'s") else low


def _content(text: str) -> list[str]:
    return [w for w in tokens(text) if w not in _STOP]


@functools.lru_cache(maxsize=1 << 16)
def _content_set(sentence: str) -> frozenset[str]:
    """The content words of a sentence, once per sentence: the same stored sentences are
    read again for every system and query that ranks them high."""
    return frozenset(_content(sentence))


def extract_answer(question: str, texts: Sequence[str]) -> str:
    """A span of ``texts`` (the top items, best first) answering ``question``."""
    q = set(_content(question))
    best: tuple[int, int, int] | None = None
    best_sent = ""
    for rank, text in enumerate(texts):
        sentences = (sent for sent in _SENT_RE.split(str(text or "").strip()) if sent)
        for j, sent in enumerate(sentences):
            overlap = len(q & _content_set(sent))
            key = (overlap, -rank, -j)
            if best is None or key > best:
                best, best_sent = key, sent
    if not best_sent:
        return ""
    ql = question.lower().strip()
    if ql.startswith("when") or re.match(r"(what|which) (date|year|month|day|time)", ql) \
            or "how long ago" in ql:
        m = _DATE_RE.search(best_sent)
        if m:
            return m.group(0)
    if ql.startswith(("how many", "how much", "how often")):
        m = _NUMBER_RE.search(best_sent)
        if m:
            return m.group(0)
    qwords = {_bare(w) for w in _WORD_RE.findall(question)}
    words = _WORD_RE.findall(best_sent)
    if ql.startswith("who"):
        names = [w for w in words if w[:1].isupper() and _bare(w) not in qwords
                 and w.lower() not in _STOP]
        if names:
            return " ".join(dict.fromkeys(names))
    rest = [w for w in words if _bare(w) not in qwords and w.lower() not in _STOP]
    return " ".join(rest) if rest else best_sent


# ------------------------------------------------------------------------------------------
# the tables


class _Gone(Exception):
    """A recorded input that is no longer there (the alignment is skipped with a note)."""


def _verified(ds: Dataset, system: str | None, what: str, given: Any, option: str,
              manifests: dict[Path, Any]) -> Path:
    """The rescore input ``what`` (``queries``; ``items`` / ``run`` of ``system``), verified
    against the sha256 its rescore manifest recorded (:func:`tiap.provenance.verify_input`).
    A file ``given`` with ``option`` must hold the same bytes: the alignment reads the
    rescored values, so another file would mix two inputs. :class:`_Gone` when the recorded
    file is gone and none was given."""

    folder = ds.dirs[0] if system is None else ds.systems[system].source
    key = "queries" if system is None else ds.inputs.get(system, {}).get(f"{what}_key")
    mpath = Path(folder) / "manifest.json"
    if mpath not in manifests:
        if not mpath.is_file():  # a Scores held in memory (tiap.sensitivity.load.folder_of)
            raise _Gone(f"{folder} is held in memory and records no input files")
        manifests[mpath] = read_manifest(mpath)
    if key is None:
        if given is None:
            raise _Gone(f"{mpath} records no {what} of {system}")
        key = f"{what}:{system}"  # verify_input names what the manifest does record
    try:
        return verify_input(manifests[mpath], mpath, key, given, option=option)
    except TiapError as exc:
        if given is None and exc.code == "io":
            raise _Gone(str(exc.problems[0])) from None
        raise


def _pick(overrides: Mapping[str, Any], key: str, system: str) -> Any:
    v = overrides.get(key)
    if isinstance(v, Mapping):
        return v.get(system, v.get(None))  # type: ignore[call-overload]
    return v


def _target_args(ds: Dataset) -> list[str] | None:
    from tiap.targets import BUILTIN_TARGETS

    builtin = {t.name: t for t in BUILTIN_TARGETS}
    out = []
    for t in ds.targets:
        spec = ds.target_specs[t].get("spec")
        if spec is None:
            return None
        if t in builtin and str(getattr(builtin[t], "spec", spec)) == str(spec):
            out.append(t)
        else:
            out.append(f"{t}={spec}")
    return out


def _load_run(path: Path, system: str, dedup: str, preloaded: Mapping[Path, Any],
              order: str = "rank") -> Any:
    """The run of ``system`` in ``path``, read as its rescoring read it (``dedup``, and
    ``order``: rank, or score as trec_eval orders)."""
    from tiap.runs import read_run

    got = preloaded.get(path.resolve())
    if got is None:
        got = read_run(path, dedup=dedup, order=order)  # type: ignore[arg-type]
    if len(got) == 1:
        r = got[0]
    else:
        chosen = [r for r in got if r.system == system]
        if not chosen:
            raise TiapError(f"the run holds {len(got)} systems, none named {system!r}", file=path)
        r = chosen[0]
    if r.system == system and all(x.system == system for x in r.rankings):
        return r  # (as ``tiap audit-run`` read it: nothing to rename)
    return dataclasses.replace(r, system=system, rankings=tuple(
        dataclasses.replace(x, system=system) for x in r.rankings))


def _hits_from_rr(ds: Dataset, system: str, depth: int,
                  ) -> tuple[list[str], dict[str, Any]] | None:
    """Success@depth of ``system`` under every target, read from a rescored RR@k with
    k >= depth (or RR): exactly, since the first credited item sits at rank 1 / RR, so
    Success@depth = [RR >= 1 / depth] (NaN stays NaN). ``None`` when no such RR was
    rescored (then the caller rescores Success@depth itself)."""
    rr = [m for m in ds.measures if m.family == "RR" and m.budget is None
          and (m.cutoff is None or m.cutoff >= depth)]  # RR@tok500 is cut by tokens, not ranks
    if not rr:
        return None
    sc = ds.systems[system]
    hits: dict[str, Any] = {}
    for t in ds.targets:
        v = sc.get(t, rr[0])
        hits[t] = np.where(np.isnan(v), np.nan, (v * depth >= 1 - 1e-9).astype(float))
    return list(ds.query_ids), hits


def answer_tables(
    datasets: Sequence[Dataset],
    *,
    overrides: Mapping[str, Any],
    depth: int = 5,
    required: bool = False,
    preloaded: Mapping[Path, Any] | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str], dict[str, Any]]:
    """Per-query answers and per-target alignment rows, notes, and the inputs used.

    ``preloaded`` maps resolved file paths to what was already read from them (a list of
    ``Query``, a ``Store``, a list of ``Run``), so a caller holding them (``tiap audit-run``)
    spares the rereading; a file is still checked against the sha256 its rescore recorded.
    """
    preloaded = preloaded or {}
    from tiap.datasets.queryfile import read_queries
    from tiap.memory.store import read_store
    from tiap.scoring.rescore import rescore

    if depth < 1:
        raise TiapError(f"the answerer depth must be positive, got {depth}")
    per_q: list[dict[str, Any]] = []
    align: list[dict[str, Any]] = []
    notes: list[str] = []
    used: dict[str, Any] = {}
    for ds in datasets:
        targets = _target_args(ds)
        if targets is None:
            notes.append(f"{ds.name}: answer alignment skipped (targets given as qrels have no "
                         "lineage spec)")
            continue
        manifests: dict[Path, Any] = {}
        try:
            qpath = _verified(ds, None, "queries", overrides.get("queries"), "--queries",
                              manifests)
        except _Gone as exc:
            if required:
                raise TiapError(f"{ds.name}: answer alignment needs the queries file ({exc}); "
                                "pass --queries") from None
            notes.append(f"{ds.name}: answer alignment skipped ({exc})")
            continue
        queries = preloaded.get(qpath.resolve()) or read_queries(qpath)
        qby = {q.query_id: q for q in queries}
        used[ds.name] = {"queries": str(qpath), "systems": {}}
        pooled: dict[str, list[tuple[float, float, float]]] = {}
        for s in ds.systems:
            try:
                ipath = _verified(ds, s, "items", _pick(overrides, "items", s), "--items",
                                  manifests)
                rpath = _verified(ds, s, "run", _pick(overrides, "runs", s), "--run",
                                  manifests)
            except _Gone as exc:
                if required:
                    raise TiapError(f"{ds.name}/{s}: answer alignment needs the items and the "
                                    f"run ({exc}); pass --items/--run") from None
                notes.append(f"{ds.name}/{s}: answer alignment skipped ({exc})")
                continue
            store = preloaded.get(ipath.resolve()) or read_store(ipath)
            items = store.items
            text = {it.item_id: it.text for it in items if it.text}
            if not text:
                notes.append(f"{ds.name}/{s}: answer alignment skipped (the items of {ipath} "
                             "carry no text)")
                continue
            run = _load_run(rpath, s, str(ds.options.get("dedup") or "error"), preloaded,
                            str(ds.options.get("order") or "rank"))
            used[ds.name]["systems"][s] = {"items": str(ipath), "run": str(rpath)}
            from_rr = _hits_from_rr(ds, s, depth)
            if from_rr is not None:
                qids, hits = from_rr
            else:
                res = rescore([run], queries, {s: store}, targets=targets,
                              measures=f"Success@{depth}", credit=ds.credit,
                              missing=ds.options.get("missing") or "skip")
                qids = res.query_ids[s]
                hits = {t: res.values[(s, t, res.measures[0])] for t in ds.targets}
            by_q = {rk.query_id: rk for rk in run.rankings}
            rows_t: dict[str, list[tuple[float, float, float]]] = {t: [] for t in ds.targets}
            no_text = 0
            for i, qid in enumerate(qids):
                q = qby.get(qid)
                if q is None or not q.answer:  # (not in --queries, or no reference answer)
                    continue
                rk = by_q.get(qid)
                if rk is None and from_rr is not None and all(
                        hits[t][i] != hits[t][i] for t in ds.targets):
                    continue  # not scored for this system (as rescore's query_ids)
                top = [text.get(x, "") for x in (rk.item_ids[:depth] if rk else ())]
                if rk and not any(top):
                    no_text += 1
                    continue
                pred = extract_answer(q.question, top)
                f1, b1 = token_f1(pred, q.answer), bleu1(pred, q.answer)
                correct = f1 >= CORRECT_F1
                hit_text = []
                for t in ds.targets:
                    h = hits[t][i]
                    if h == h:
                        rows_t[t].append((float(h), f1, float(correct)))
                        pooled.setdefault(t, []).append((float(h), f1, float(correct)))
                        hit_text.append(f"{t}:{int(h)}")
                per_q.append({"dataset": ds.name, "system": s, "query_id": qid,
                              "category": q.category, "question": q.question,
                              "reference": q.answer, "answer": pred, "f1": f1, "bleu1": b1,
                              "correct": correct, "hits": " ".join(hit_text)})
            if no_text:
                notes.append(f"{ds.name}/{s}: {no_text:,} queries left out of the answer "
                             f"alignment (none of their top {depth} items has text)")
            for t in ds.targets:
                align.append(_align_row(ds.name, s, t, depth, rows_t[t]))
        if len(used[ds.name]["systems"]) > 1 and pooled:
            for t in ds.targets:
                align.append(_align_row(ds.name, "all", t, depth, pooled.get(t, [])))
    return per_q, align, notes, used


def _align_row(dataset: str, system: str, target: str, depth: int,
               rows: list[tuple[float, float, float]]) -> dict[str, Any]:
    base = {"dataset": dataset, "system": system, "target": target, "depth": depth,
            "n": len(rows)}
    if not rows:
        return {**base, **dict.fromkeys(ALIGN_COLUMNS[5:])}
    a = np.asarray(rows)
    hit, f1, ok = a[:, 0] > 0, a[:, 1], a[:, 2] > 0

    def mean(x: np.ndarray) -> float | None:  # type: ignore[type-arg]
        return float(x.mean()) if x.size else None

    f_hit, f_miss = mean(f1[hit]), mean(f1[~hit])
    phi = None
    if hit.any() and not hit.all() and ok.any() and not ok.all():
        phi = float(np.corrcoef(hit.astype(float), ok.astype(float))[0, 1])
    return {**base, "hit_rate": float(hit.mean()), "f1_hit": f_hit, "f1_miss": f_miss,
            "f1_gap": (f_hit - f_miss) if f_hit is not None and f_miss is not None else None,
            "p_correct_hit": mean(ok[hit].astype(float)),
            "p_correct_miss": mean(ok[~hit].astype(float)),
            "agreement": float((hit == ok).mean()), "phi": phi}
