"""What makes the report something to explore: the per-query data and the page's script.

:func:`query_data` gathers, per dataset of a sensitivity folder, one compact record per
query (its question, evidence units, the value or interval of every measure per system and
target, where each system ranked each member of each target group, the answers and
verdicts where present) from the rescore folders the sensitivity manifest names: their
``per_query.csv`` and ``intervals.csv``, and the stores, queries and runs their manifests
record (verified by sha256, :func:`tiap.audit.cases.load_rescore_inputs`). What cannot be
reached is said in the data's ``notes``, never filled in. :data:`SCRIPT` renders it on
demand in the page, and makes every table sortable and filterable; the page's
Content-Security-Policy allows that one script by its hash (:func:`script_hash`).
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from tiap.answers import load_answers
from tiap.errors import TiapError
from tiap.io import iter_csv
from tiap.memory.store import Store
from tiap.provenance import verify_input
from tiap.report.load import SensitivityDir, num, truth
from tiap.scoring.folder import read_per_query

__all__ = ["SCRIPT", "QueryData", "attach_answers", "json_block", "query_data", "script_hash"]

#: Characters of an evidence unit's text the per-query view shows.
UNIT_TEXT = 280
#: Members of one group listed with their ranks (the rest are counted).
MEMBERS_SHOWN = 8


def _round(v: float | None) -> float | int | None:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    r = round(float(v), 4)
    return int(r) if r in (0.0, 1.0) else r


class QueryData:
    """The per-query data of one dataset: ``record`` (JSON-ready) and, per (system, target)
    of the primary measure, the defined values (for the score chart's intervals)."""

    def __init__(self, record: dict[str, Any],
                 primary_values: Mapping[tuple[str, str], np.ndarray]) -> None:
        self.record = record
        self.primary_values = primary_values


def _intervals(path: Path) -> dict[tuple[str, str, str, str], tuple[float, float]]:
    out: dict[tuple[str, str, str, str], tuple[float, float]] = {}
    f = path / "intervals.csv"
    if not f.is_file():
        return out
    rows = iter_csv(f, ("system", "target", "query_id", "measure", "lower", "upper"))
    _, head = next(rows)
    ix = [head.index(c) for c in ("system", "target", "query_id", "measure", "lower", "upper")]
    for _, r in rows:
        lo, hi = num(r[ix[4]]), num(r[ix[5]])
        if lo is not None and hi is not None:
            out[(r[ix[0]], r[ix[1]], r[ix[2]], r[ix[3]])] = (lo, hi)
    return out


def _held_inputs(rd: Any, preloaded: Mapping[Path, Any],
                 ) -> tuple[dict[str | None, Any], list[Any], list[Any]] | None:
    """The stores, queries and runs of rescoring ``rd`` as ``preloaded`` holds them (by
    resolved path: a :class:`~tiap.memory.store.Store`, a list of queries, a list of runs),
    or ``None`` unless it holds every one."""
    qpath = rd.input_paths("queries").get(None)
    stores_at = rd.input_paths("items")
    runs_at = rd.input_paths("run")
    if qpath is None or not stores_at or not runs_at:
        return None
    qs = preloaded.get(qpath.resolve())
    stores = {n: preloaded.get(p.resolve()) for n, p in stores_at.items()}
    runs: list[Any] = []
    for name, p in runs_at.items():
        got = preloaded.get(p.resolve())
        if got is None:
            return None
        mine = [r for r in got if name in (None, p.name, r.system)]
        if not mine:  # (a run renamed by NAME=PATH: read as the rescoring read it)
            return None
        runs.extend(mine)
    if qs is None or any(s is None for s in stores.values()):
        return None
    return stores, list(qs), runs


def query_data(sd: SensitivityDir, ds: Mapping[str, Any], label: str, *,
               inputs: bool = True, preloaded: Mapping[Path, Any] | None = None) -> QueryData:
    """The per-query record of dataset ``ds`` of ``sd`` (see the module's docstring);
    without ``inputs``, the values only (no store, queries file or run is read).

    ``preloaded``: what the caller already holds, by resolved path (the convention of
    :func:`tiap.sensitivity.analyze`): a rescore folder's ``per_query.csv`` ->
    :func:`tiap.scoring.folder.per_query_of` of its result; the folder itself -> the
    result (:class:`tiap.scoring.scores.Scores`, whose groups are used); each store,
    queries file and run file the rescoring read -> what was read from it. Those are used
    as they are (the caller read them for that rescoring), not read and checked again.

    Example: a folder without its rescorings (moved away) still gives a record, which says
    what it could not read.

    >>> from tiap.report.load import SensitivityDir
    >>> sd = SensitivityDir(Path("sens"), {}, {}, {})
    >>> ds = {"name": "d", "targets": [{"name": "raw"}], "measures": ["RR@10"],
    ...       "systems": {"A": {"rescore_dir": "gone"}}}
    >>> qd = query_data(sd, ds, "d")
    >>> qd.record["queries"], qd.record["notes"]  # doctest: +ELLIPSIS
    ([], ['rescore folder gone: ...])
    """
    from tiap.audit.cases import RescoreDir, load_rescore_inputs
    from tiap.datasets.queryfile import read_queries
    from tiap.scoring.rescore import store_lineages
    from tiap.targets import build_groups

    systems = list((ds.get("systems") or {}).keys())
    targets = [str(t["name"]) for t in ds.get("targets") or []]
    measures = [str(m) for m in ds.get("measures") or []]
    primary = str(ds.get("primary_measure") or (measures[-1] if measures else ""))
    cutoff = primary.rsplit("@", 1)[1] if "@" in primary else ""
    notes: list[str] = []
    by_dir: dict[str, list[str]] = {}
    for s in systems:
        d = (ds["systems"][s] or {}).get("rescore_dir") or next(iter(ds.get("rescore_dirs")
                                                                     or []), None)
        if d is None:
            notes.append(f"{s}: the sensitivity manifest names no rescore folder")
            continue
        by_dir.setdefault(str(d), []).append(s)
    held = preloaded or {}
    tix = {t: j for j, t in enumerate(targets)}
    mix = {m: j for j, m in enumerate(measures)}
    queries: dict[str, dict[str, Any]] = {}
    order: list[str] = []
    si = {s: i for i, s in enumerate(systems)}
    primary_values: dict[tuple[str, str], np.ndarray] = {}
    kinds: dict[str, int] = {}

    def entry(qid: str) -> dict[str, Any]:
        q = queries.get(qid)
        if q is None:
            q = queries[qid] = {"id": qid, "v": [None] * len(systems),
                                "g": [None] * len(systems)}
            order.append(qid)
        return q

    for d, members in by_dir.items():
        path = Path(d)
        try:
            rd = RescoreDir.open(path)
            pq = held.get((path / "per_query.csv").resolve())
            if pq is None:
                pq = read_per_query(path / "per_query.csv", rd.manifest, path / "manifest.json")
            ivs = _intervals(path)
        except TiapError as exc:
            notes.append(f"rescore folder {d}: {exc} (no values, ranks or evidence of "
                         f"{', '.join(members)})")
            continue
        for s in members:
            if s not in pq.order:
                notes.append(f"{s}: no values in {path / 'per_query.csv'}")
                continue
            for t in targets:
                arr = pq.values.get((s, t, primary))
                if arr is not None:
                    primary_values[(s, t)] = arr[~np.isnan(arr)]
            # each measure's values rounded once, then picked per query
            cols = [[_column(pq.values.get((s, t, m))) for m in measures] for t in targets]
            rows = {}
            for qid, i in pq.order[s].items():
                q = entry(qid)
                q["v"][si[s]] = rows[qid] = [[c[i] if i < len(c) else None for c in row]
                                             for row in cols]
            for (s2, t, qid, m), iv in ivs.items():
                if s2 == s and qid in rows and t in tix and m in mix:
                    rows[qid][tix[t]][mix[m]] = [_round(iv[0]), _round(iv[1])]
        # questions, evidence, stores and runs: what the rescoring read
        if not inputs:
            continue
        if any("spec" not in t for t in rd.options.get("targets") or ()):
            notes.append(f"{', '.join(members)}: ranks not shown: the rescoring in {path} "
                         "took its targets from qrels files, which hold no evidence groups")
            continue
        try:
            got = _held_inputs(rd, held) if held else None
            stores, qs, runs = got if got is not None else load_rescore_inputs(rd)[:3]
        except TiapError as exc:
            notes.append(f"{', '.join(members)}: ranks not shown: {_first_line(exc)}")
            try:
                qpath = rd.input_paths("queries").get(None)
                qs = read_queries(qpath) if qpath is not None else []
            except TiapError:
                qs = []
            runs, stores = [], {}
        qby = {q.query_id: q for q in qs}
        for q in qs:
            if q.query_id in queries:
                rec = queries[q.query_id]
                rec.update(q=q.question, a=q.answer or "", c=q.category,
                           ev=list(q.evidence))
        runs = [r for r in runs if r.system in members]
        if not runs:
            continue
        # the groups the rescoring built (the same lineage, queries and targets), unless
        # they read evidence overlays, which the groups built here do not
        result = None if rd.options.get("overlays") else held.get(path.resolve())
        groups_of: dict[str, Any] = dict(getattr(result, "target_sets", None) or {})
        need = {u for q in queries.values() if "ev" in q for u in q["ev"]}
        try:
            lineages = (_light_lineages(runs, stores, groups_of, need)
                        or store_lineages(runs, stores))
            defs = rd.target_defs
        except TiapError as exc:
            notes.append(f"{', '.join(members)}: ranks not shown: {_first_line(exc)}")
            continue
        texts_of: dict[str, dict[str, str]] = {}
        for run in runs:
            sname, lineage = lineages[run.system]
            if sname not in groups_of:
                groups_of[sname] = build_groups(lineage, list(qs), defs)
            tsets = groups_of[sname]
            unknown = set(lineage.possible) | set(getattr(lineage, "open_items", ()) or ())
            k = int(cutoff) if cutoff.isdigit() else None
            for ranking in run.rankings:
                qid = ranking.query_id
                if qid not in queries or qid not in qby:
                    continue
                rec = queries[qid]
                units = rec.get("ev") or []
                uix = {u: j for j, u in enumerate(units)}
                rank: dict[str, int] = {}
                for pos, iid in enumerate(ranking.item_ids, 1):
                    rank.setdefault(iid, pos)
                per_t: list[Any] = []
                listed: dict[str, int] = {}  # item -> its index in the system's list
                for t in targets:
                    qg = tsets[t].queries.get(qid) if t in tsets else None
                    if qg is None:
                        per_t.append(None)
                        continue
                    gl = []
                    for u, g in zip(qg.units, qg.groups, strict=True):
                        hits = sorted((rank[m], m) for m in g if m in rank)[:MEMBERS_SHOWN]
                        gl.append([uix.get(u, -1), len(g),
                                   [listed.setdefault(m, len(listed)) for _, m in hits]])
                    gl.extend([uix.get(u, -1), -1, []] for u in qg.open_units)
                    per_t.append(gl)
                rec["g"][si[run.system]] = {
                    "i": [[rank[m], m, kinds.setdefault(lineage.items[m].kind, len(kinds))]
                          for m in listed], "t": per_t}
                if unknown:
                    top = ranking.item_ids[:k] if k else ranking.item_ids
                    found = [[p, m] for p, m in enumerate(top, 1) if m in unknown]
                    if found:
                        rec.setdefault("u", [None] * len(systems))[si[run.system]] = found[:20]
            # the text of each evidence unit: its raw turn's (one source, kind raw)
            if sname not in texts_of:
                texts_of[sname] = (lineage.texts if isinstance(lineage, _Light)
                                   else _unit_texts(lineage.items.values(), need))
            texts = texts_of[sname]
            for q in queries.values():
                if "ev" in q and "et" not in q and any(u in texts for u in q["ev"]):
                    q["et"] = [texts.get(u, "") for u in q["ev"]]
    # answers of the heuristic answerer (sensitivity answers.csv)
    for r in sd.rows("answers", ds["name"]):
        q = queries.get(r["query_id"])
        if q is None or r["system"] not in si:
            continue
        q.setdefault("ans", [None] * len(systems))[si[r["system"]]] = [
            r.get("answer", ""), _round(num(r.get("f1"))),
            None if r.get("correct", "") == "" else truth(r.get("correct")), r.get("hits", "")]
    record = {"label": label, "systems": systems, "targets": targets, "measures": measures,
              "primary": primary, "k": int(cutoff) if cutoff.isdigit() else None,
              "kinds": list(kinds), "credit": str(ds.get("credit") or "group"),
              "notes": notes, "queries": [queries[q] for q in order]}
    return QueryData(record, primary_values)


def attach_answers(records: list[dict[str, Any]], path: Path,
                   manifest: Mapping[str, Any]) -> None:
    """Add the answers and verdicts behind a ``tiap answers analyze`` folder (``path``,
    its ``manifest``) to the per-query ``records``: to a dataset's record where its queries
    are there (key ``jv`` per query, the record's ``answer_systems`` and ``judges``), else
    as a record of its own. The answers file must still be the one the analysis read
    (sha256); otherwise every record says so in its notes.

    >>> recs = [{"label": "d", "notes": [], "queries": []}]
    >>> attach_answers(recs, Path("gone"), {"inputs": {}})
    >>> recs[0]["notes"]  # doctest: +ELLIPSIS
    ['answers of gone: not shown: ...']
    """
    try:
        answers = load_answers(verify_input(manifest, path / "manifest.json", "answers"))
    except TiapError as exc:
        for r in records or [{"notes": []}]:
            r["notes"].append(f"answers of {path}: not shown: {_first_line(exc)}")
        return
    by_ds: dict[str, list[Any]] = {}
    for a in answers:
        by_ds.setdefault(a.dataset, []).append(a)
    judges = list(answers.judges)
    for dataset, own in by_ds.items():
        ids = {a.query_id for a in own}
        target = next((r for r in records if ids & {q["id"] for q in r["queries"]}), None)
        if target is None:
            target = {"label": f"{dataset} (answers of {path.name})", "systems": [],
                      "targets": [], "measures": [], "primary": "", "k": None, "kinds": [],
                      "credit": "", "notes": [], "queries": []}
            records.append(target)
        systems = target.setdefault("answer_systems", [])
        target["judges"] = list(dict.fromkeys([*target.get("judges", []), *judges]))
        jx = {j: i for i, j in enumerate(target["judges"])}
        qby = {q["id"]: q for q in target["queries"]}
        for a in own:
            q = qby.get(a.query_id)
            if q is None:
                q = qby[a.query_id] = {"id": a.query_id, "v": [], "g": []}
                if a.question:
                    q["q"] = a.question
                if a.reference:
                    q["a"] = a.reference
                target["queries"].append(q)
            if a.system not in systems:
                systems.append(a.system)
            labels: list[str | None] = [None] * len(target["judges"])
            for v in a.verdicts:
                labels[jx[v.judge]] = v.label
            q.setdefault("jv", []).append([systems.index(a.system), (a.answer or "")[:500],
                                           labels])


def _unit_texts(items: Iterable[Any], need: set[str]) -> dict[str, str]:
    """Evidence unit -> the start of its raw turn's text (the first raw item with that one
    source), for the units in ``need``."""
    texts: dict[str, str] = {}
    for item in items:
        if item.kind == "raw" and len(item.sources) == 1 and item.sources[0] in need:
            texts.setdefault(item.sources[0], (item.text or "")[:UNIT_TEXT])
    return texts


class _Light(NamedTuple):
    """What the per-query view reads of a lineage, from one pass over a store: the items
    the runs ranked, the evidence units' texts, and no partial lineage."""

    items: dict[str, Any]
    texts: dict[str, str]
    possible: tuple[str, ...] = ()
    open_items: tuple[str, ...] = ()


def _light_lineages(runs: list[Any], stores: Mapping[str | None, Any],
                    groups: Mapping[str, Any], need: set[str],
                    ) -> dict[str, tuple[str, _Light]] | None:
    """``system -> (store name, _Light)`` where the groups of every run's store are given
    (the rescoring's), so no lineage need be built: one pass over each store's items. ``None``
    (build the lineage) where a store is not a read :class:`~tiap.memory.store.Store`, has
    no given groups, is named twice or by a run otherwise, or has partial lineage (an
    item's ``uncertain``)."""
    if not groups:
        return None
    name_of: dict[str, str] = {}
    by_name: dict[str, Any] = {}
    for r in runs:
        st = stores.get(r.system if r.system in stores else None)
        if not isinstance(st, Store) or st.name not in groups:
            return None
        if by_name.setdefault(st.name, st) is not st or r.store not in (None, st.name):
            return None  # store_lineages says what is wrong
        name_of[r.system] = st.name
    views: dict[str, _Light] = {}
    for name, st in by_name.items():
        wanted = {i for r in runs if name_of[r.system] == name
                  for rk in r.rankings for i in rk.item_ids}
        items: dict[str, Any] = {}
        texts: dict[str, str] = {}
        for it in st.items:  # one pass: what _unit_texts does, and the ranked items
            if it.uncertain is not None:
                return None
            if it.item_id in wanted:
                items.setdefault(it.item_id, it)
            if it.kind == "raw" and len(it.sources) == 1 and it.sources[0] in need:
                texts.setdefault(it.sources[0], (it.text or "")[:UNIT_TEXT])
        views[name] = _Light(items, texts)
    return {s: (n, views[n]) for s, n in name_of.items()}


def _column(arr: np.ndarray | None) -> list[Any]:
    """Every value of ``arr`` as the per-query view shows it (4 decimals; ``None``:
    undefined, no target); none for ``None``. A value that partial lineage only bounds is
    ``[lower, upper]`` instead (from ``intervals.csv``)."""
    return [] if arr is None else [_round(v) for v in arr.tolist()]


def _first_line(exc: Exception) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def json_block(element_id: str, data: Any) -> str:
    """``data`` as a ``<script type="application/json">`` block: not run (no script is
    allowed but :data:`SCRIPT`), read by it with ``JSON.parse``; every ``<`` escaped, so no
    text of the data can close the element.

    >>> json_block("d", {"q": "</script><b>"})
    '<script type="application/json" id="d">{"q":"\\\\u003c/script>\\\\u003cb>"}</script>'
    """
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    text = text.replace("<", "\\u003c")
    return f'<script type="application/json" id="{element_id}">{text}</script>'


def script_hash(script: str | None = None) -> str:
    """The CSP source that allows ``script`` (default :data:`SCRIPT`) inline, and no other.

    >>> script_hash("").startswith("'sha256-")
    True
    """
    text = SCRIPT if script is None else script
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


#: The page's one script: sortable, filterable tables and the per-query view. It builds
#: every element with ``textContent`` (never ``innerHTML``), so data cannot become markup.
SCRIPT = r"""
(function () {
"use strict";
var LIMIT = 60;
function el(tag, cls, text) {
  var e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}
function parseNum(s) {
  s = s.replace(/\u221e/g, "Infinity");
  var v = parseFloat(s);
  return isNaN(v) ? null : v;
}
// a cell's sort key: a number (an interval by its midpoint, or by its finite end), or null
function sortKey(text) {
  var s = text.replace(/\u2212/g, "-").replace(/\u2264\s*/g, "").replace(/,(?=\d{3}\b)/g, "")
    .trim();
  if (s === "" || s === "\u2013" || s === "-") return null;
  var m = s.match(/^[\[(]\s*([-+]?(?:[\d.]+(?:e[-+]?\d+)?|\u221e))\s*,\s*([-+]?(?:[\d.]+(?:e[-+]?\d+)?|\u221e))\s*[\])]/i);
  if (m) {
    var lo = parseNum(m[1]), hi = parseNum(m[2]);
    var flo = lo !== null && isFinite(lo), fhi = hi !== null && isFinite(hi);
    if (flo && fhi) return (lo + hi) / 2;
    if (flo) return lo;
    if (fhi) return hi;
    return null;
  }
  m = s.match(/^([-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?)(?:\s*\u2013\s*([-+]?\d+(?:\.\d+)?))?\s*%?(?:\s|$|\()/i);
  if (m) {
    var a = parseFloat(m[1]);
    return m[2] !== undefined ? (a + parseFloat(m[2])) / 2 : a;
  }
  return NaN;  // text
}
function setupTable(wrap) {
  var table = wrap.querySelector("table");
  var tbody = table.tBodies[0];
  var data = [], block = wrap.querySelector("script.tiap-rows");
  if (block) {
    var parsed = JSON.parse(block.textContent);
    var marked = {};
    parsed.marked.forEach(function (i) { marked[i] = true; });
    parsed.rows.forEach(function (r, i) { data.push({cells: r, mark: !!marked[i]}); });
  } else {
    Array.prototype.forEach.call(tbody.rows, function (tr) {
      if (tr.cells.length === 1 && tr.cells[0].colSpan > 1) return;  // "no rows"
      data.push({cells: Array.prototype.map.call(tr.cells, function (td) {
        return td.textContent; }), mark: tr.classList.contains("mark")});
    });
  }
  data.forEach(function (r, i) {
    r.index = i;
    r.text = r.cells.join("\u0001").toLowerCase();
  });
  var heads = table.tHead ? table.tHead.rows[0].cells : [];
  var numeric = [];
  for (var c = 0; c < heads.length; c++) {
    var n = 0, t = 0;
    data.forEach(function (r) {
      var k = sortKey(r.cells[c] || "");
      if (k === null) return;
      if (typeof k === "number" && !isNaN(k)) n++; else t++;
    });
    numeric.push(n > 0 && t === 0);
  }
  var state = {filter: "", col: -1, dir: 1, all: false};
  var ctl = el("div", "ctl");
  var box = el("input");
  box.type = "search";
  box.placeholder = "filter rows";
  box.setAttribute("aria-label", "filter the rows of " + (table.caption ?
    table.caption.textContent.slice(0, 60) : "the table"));
  var count = el("span", "count");
  var more = el("button", "all");
  more.type = "button";
  if (data.length > 5) {  // a short table needs no filter, only sorting
    ctl.appendChild(box);
    ctl.appendChild(count);
  }
  ctl.appendChild(more);
  wrap.insertBefore(ctl, table);
  var note = wrap.querySelector("p.more");
  if (note) note.hidden = true;
  function render() {
    var f = state.filter.toLowerCase();
    var rows = data.filter(function (r) { return !f || r.text.indexOf(f) >= 0; });
    if (state.col >= 0) {
      var c = state.col, num = numeric[c];
      rows = rows.slice().sort(function (a, b) {
        var x = num ? sortKey(a.cells[c] || "") : (a.cells[c] || "");
        var y = num ? sortKey(b.cells[c] || "") : (b.cells[c] || "");
        if (num) {
          if (x === null || isNaN(x)) return (y === null || isNaN(y)) ? a.index - b.index : 1;
          if (y === null || isNaN(y)) return -1;
          return x === y ? a.index - b.index : (x - y) * state.dir;
        }
        var o = x.localeCompare(y, undefined, {numeric: true});
        return o === 0 ? a.index - b.index : o * state.dir;
      });
    }
    var shown = state.all ? rows : rows.slice(0, LIMIT);
    var body = document.createElement("tbody");
    shown.forEach(function (r) {
      var tr = el("tr", r.mark ? "mark" : "");
      r.cells.forEach(function (cell) { tr.appendChild(el("td", "", cell)); });
      body.appendChild(tr);
    });
    if (!shown.length) {
      var tr = el("tr"), td = el("td", "", f ? "no row matches the filter" : "no rows");
      td.colSpan = Math.max(1, heads.length);
      tr.appendChild(td);
      body.appendChild(tr);
    }
    table.replaceChild(body, tbody);
    tbody = body;
    show();
    function show() {
      count.textContent = (rows.length === data.length ? data.length + " rows" :
        rows.length + " of " + data.length + " rows match") +
        (shown.length < rows.length ? ", first " + shown.length + " shown" : "");
      more.hidden = shown.length >= rows.length;
      more.textContent = "show all " + rows.length;
    }
  }
  function status() {
    var rows = data.length, shown = Math.min(rows, LIMIT);
    count.textContent = rows + " rows" + (shown < rows ? ", first " + shown + " shown" : "");
    more.hidden = shown >= rows;
    more.textContent = "show all " + rows;
  }
  status();
  box.addEventListener("input", function () { state.filter = box.value; state.all = false;
    render(); });
  more.addEventListener("click", function () { state.all = true; render(); });
  Array.prototype.forEach.call(heads, function (th, c) {
    th.tabIndex = 0;
    th.classList.add("sortable");
    th.title = "sort by this column (" + (numeric[c] ? "numbers" : "text") + ")";
    function sort() {
      state.dir = state.col === c ? -state.dir : 1;
      state.col = c;
      Array.prototype.forEach.call(heads, function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", state.dir > 0 ? "ascending" : "descending");
      render();
    }
    th.addEventListener("click", sort);
    th.addEventListener("keydown", function (e) {
      if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sort(); }
    });
  });
}
Array.prototype.forEach.call(document.querySelectorAll("div.tw"), setupTable);

// ---- the per-query view
var view = document.getElementById("tiap-q-search");
var DATA = null;
function data() {
  if (DATA === null) {
    var block = document.getElementById("tiap-query-data");
    DATA = block ? JSON.parse(block.textContent) : [];
  }
  return DATA;
}
function fmt(v) {
  if (v === null || v === undefined) return "undefined (no target)";
  if (Array.isArray(v)) return "[" + v[0].toFixed(4) + ", " + v[1].toFixed(4) + "]";
  return v.toFixed(4);
}
function table(cls, heads) {
  var t = el("table", "t " + cls), h = t.createTHead().insertRow();
  heads.forEach(function (x) { h.appendChild(el("th", "", x)); });
  t.appendChild(document.createElement("tbody"));
  return t;
}
function showRanks(ds, q, ev, out) {
  out.appendChild(el("p", "", "Where each system ranked the members of each evidence unit's group" +
    (ds.k ? " (cutoff of " + ds.primary + ": " + ds.k + ")" : "") +
    (ds.credit === "set" ? "; every member within the cutoff earns credit (set credit)" :
     "; bold: the member credited (group credit: the first of its group within the cutoff)") +
    "; \u2717: no member retrieved; \u201c= unit\u201d: the item whose id is the unit's, " +
    "\u201c\u2026#f1\u201d: an item whose id continues the unit's (the full id on hover)."));
  var rt = table("ranks", ["system", "target"].concat(ev.length ? ev : ["groups"]));
  rt.id = "tiap-q-ranks";
  ds.systems.forEach(function (s, i) {
    ds.targets.forEach(function (t, j) {
      var tr = el("tr");
      tr.dataset.system = s;
      tr.dataset.target = t;
      tr.appendChild(el("td", "", s));
      tr.appendChild(el("td", "", t));
      var groups = q.g && q.g[i] ? q.g[i].t[j] : null, items = q.g && q.g[i] ? q.g[i].i : [];
      var cols = ev.length ? ev.length : 1;
      var cells = [];
      for (var c = 0; c < cols; c++) cells.push([]);
      if (!q.g || !q.g[i]) {
        var td = el("td", "note", "ranks not available (see the notes below)");
        td.colSpan = cols;
        tr.appendChild(td);
        rt.tBodies[0].appendChild(tr);
        return;
      }
      (groups || []).forEach(function (g) { cells[g[0] >= 0 ? g[0] : 0].push(g); });
      cells.forEach(function (gs) {
        var td = el("td");
        if (!gs.length) td.appendChild(el("span", "note", "no group"));
        gs.forEach(function (g) {
          if (g[1] < 0) { td.appendChild(el("span", "note", "not determined (partial lineage)")); return; }
          if (!g[2].length) { td.appendChild(el("span", "miss", "\u2717 (" + g[1] + " member" + (g[1] === 1 ? "" : "s") + ")")); return; }
          g[2].forEach(function (x, n) {
            var h = items[x];
            var beyond = ds.k && h[0] > ds.k;
            var credited = !beyond && (n === 0 || ds.credit === "set");
            var s = el("span", "rank" + (beyond ? " beyond" : "") + (credited ? " credited" : ""));
            s.dataset.rank = h[0];
            s.dataset.item = h[1];
            // an item named after its unit shows the rest of its id (the full id on hover)
            var unit = g[0] >= 0 ? ev[g[0]] : "";
            var name = unit && h[1] === unit ? "= unit" :
              unit && h[1].indexOf(unit) === 0 ? "\u2026" + h[1].slice(unit.length) : h[1];
            s.title = h[1];
            s.textContent = "#" + h[0] + " " + name + " (" + ds.kinds[h[2]] + ")" +
              (ds.k && h[0] > ds.k ? " beyond @" + ds.k : "");
            td.appendChild(s);
          });
          if (g[1] > g[2].length) td.appendChild(el("span", "note", "+" + (g[1] - g[2].length) + " not retrieved or not listed"));
        });
        tr.appendChild(td);
      });
      rt.tBodies[0].appendChild(tr);
    });
  });
  out.appendChild(rt);
  if (q.u) {
    var ul2 = el("ul", "note");
    ds.systems.forEach(function (s, i) {
      if (q.u[i]) ul2.appendChild(el("li", "", s + ": items of unknown origin (possibly credited) at ranks " +
        q.u[i].map(function (x) { return "#" + x[0] + " " + x[1]; }).join(", ")));
    });
    out.appendChild(ul2);
  }
  // values
  out.appendChild(el("p", "", "Values per measure ([lower, upper] where partial lineage only bounds a value):"));
  var vt = table("values", ["system", "target"].concat(ds.measures));
  vt.id = "tiap-q-values";
  ds.systems.forEach(function (s, i) {
    ds.targets.forEach(function (t, j) {
      var tr = el("tr");
      tr.dataset.system = s;
      tr.dataset.target = t;
      tr.appendChild(el("td", "", s));
      tr.appendChild(el("td", "", t));
      ds.measures.forEach(function (m, k) {
        var v = q.v[i] ? q.v[i][j][k] : undefined;
        var td = el("td", "", q.v[i] ? fmt(v) : "not scored");
        td.dataset.measure = m;
        tr.appendChild(td);
      });
      vt.tBodies[0].appendChild(tr);
    });
  });
  out.appendChild(vt);
}
function showQuery(label, qid) {
  var ds = null, q = null;
  data().forEach(function (d) {
    if (d.label !== label) return;
    ds = d;
    d.queries.forEach(function (x) { if (x.id === qid) q = x; });
  });
  var out = document.getElementById("tiap-q-view");
  out.textContent = "";
  if (!ds || !q) { out.appendChild(el("p", "note", "no query " + qid)); return false; }
  out.dataset.query = qid;
  out.dataset.dataset = label;
  out.appendChild(el("h4", "", q.id + (q.c ? " \u00b7 " + q.c : "") + " \u00b7 " + ds.label));
  if (q.q !== undefined) out.appendChild(el("p", "question", q.q));
  if (q.a) out.appendChild(el("p", "note", "reference answer: " + q.a));
  var ev = q.ev || [];
  if (q.ev === undefined) {
    out.appendChild(el("p", "note", "no question or evidence: the rescoring read no queries file, or it is not reachable (see the notes)"));
  } else {
    var ul = el("ul", "evidence");
    if (!ev.length) ul.appendChild(el("li", "", "no evidence units"));
    ev.forEach(function (u, j) {
      var li = el("li");
      li.appendChild(el("code", "", u));
      if (q.et && q.et[j]) li.appendChild(document.createTextNode(" " + q.et[j]));
      ul.appendChild(li);
    });
    out.appendChild(el("p", "", "Evidence units (" + ev.length + "):"));
    out.appendChild(ul);
  }
  if (ds.systems.length) showRanks(ds, q, ev, out);
  if (q.ans) {
    out.appendChild(el("p", "", "Answers (heuristic extractive answerer, no language model; correct: token F1 \u2265 0.5):"));
    var at = table("answers", ["system", "answer", "F1", "correct", "hits"]);
    at.id = "tiap-q-answers";
    ds.systems.forEach(function (s, i) {
      var a = q.ans[i];
      if (!a) return;
      var tr = el("tr");
      [s, a[0], a[1] === null ? "\u2013" : a[1].toFixed(2), a[2] === null ? "\u2013" : (a[2] ? "yes" : "no"), a[3]]
        .forEach(function (x) { tr.appendChild(el("td", "", x)); });
      at.tBodies[0].appendChild(tr);
    });
    out.appendChild(at);
  }
  if (q.jv) {
    out.appendChild(el("p", "", "Answers and the verdict of each judge configuration (tiap answers):"));
    var jt = table("verdicts", ["system", "answer"].concat(ds.judges));
    jt.id = "tiap-q-verdicts";
    q.jv.forEach(function (x) {
      var tr = el("tr");
      tr.appendChild(el("td", "", ds.answer_systems[x[0]]));
      tr.appendChild(el("td", "", x[1]));
      x[2].forEach(function (l) { tr.appendChild(el("td", "", l === null ? "not judged" : l)); });
      jt.tBodies[0].appendChild(tr);
    });
    out.appendChild(jt);
  }
  if (ds.notes.length) {
    var nl = el("ul", "note");
    ds.notes.forEach(function (n) { nl.appendChild(el("li", "", n)); });
    out.appendChild(nl);
  }
  return true;
}
if (view) {
  var search = document.getElementById("tiap-q-search");
  var hits = document.getElementById("tiap-q-hits");
  function find() {
    var f = search.value.trim().toLowerCase();
    hits.textContent = "";
    var n = 0, total = 0;
    data().forEach(function (d) {
      d.queries.forEach(function (q) {
        if (f && q.id.toLowerCase().indexOf(f) < 0 && (q.q || "").toLowerCase().indexOf(f) < 0) return;
        total++;
        if (n >= 20) return;
        n++;
        var li = el("li"), b = el("button", "qhit");
        b.type = "button";
        b.dataset.query = q.id;
        b.dataset.dataset = d.label;
        b.textContent = q.id + (data().length > 1 ? " (" + d.label + ")" : "") + ": " + (q.q || "");
        b.addEventListener("click", function () {
          showQuery(d.label, q.id);
          hits.textContent = "";  // the list gives way to the view; typing lists again
          document.getElementById("tiap-q-count").textContent = "showing " + q.id;
        });
        li.appendChild(b);
        hits.appendChild(li);
      });
    });
    var c = document.getElementById("tiap-q-count");
    c.textContent = total + (total === 1 ? " query matches" : " queries match") +
      (total > n ? ", first " + n + " listed" : "");
  }
  search.addEventListener("input", find);
  search.addEventListener("focus", function () { if (!hits.childNodes.length) find(); }, {once: true});
}
// a link to a section inside a closed <details> opens it
function reveal(id) {
  var t = id && document.getElementById(id);
  for (var e = t; e; e = e.parentElement) if (e.tagName === "DETAILS") e.open = true;
  if (t) t.scrollIntoView();
}
Array.prototype.forEach.call(document.querySelectorAll('a[href^="#"]'), function (a) {
  a.addEventListener("click", function () { reveal(a.getAttribute("href").slice(1)); });
});
if (location.hash) reveal(decodeURIComponent(location.hash.slice(1)));
window.tiapShowQuery = showQuery;
window.tiapSortKey = sortKey;
})();
"""
