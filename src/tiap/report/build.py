"""``tiap report``: one self-contained HTML page, Markdown and LaTeX tables, a target card.

The page needs no server and no network: figures are PNGs embedded as ``data:`` URIs, the
style is inline, the per-query data is one JSON block, and its one script
(:data:`tiap.report.explore.SCRIPT`) is allowed by its sha256 in a Content-Security-Policy
that forbids everything else, so an escaping mistake could not run code. Every piece of
text from the data (questions, answers, memory text, system names, categories, target
specs) goes through :func:`html.escape` in the HTML, and the script sets text only with
``textContent``.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from tiap.errors import MissingExtraError, require
from tiap.io import check_output_folder, iter_csv, output_folder
from tiap.limits import check
from tiap.provenance import Manifest, input_entry, read_manifest
from tiap.report import plots
from tiap.report.answers import (
    AnswersDir,
    answers_card,
    load_answers_dir,
    section_tables,
)
from tiap.report.card import appendix_markdown, card_json, card_markdown, provenance_md
from tiap.report.compare import comparison_table
from tiap.report.explore import SCRIPT, attach_answers, json_block, query_data, script_hash
from tiap.report.load import SensitivityDir, load_sensitivity_dirs, num, truth, unique
from tiap.report.procedure import (
    after_correction,
    correction_name,
    effect_pair,
    flip_status,
    intro_text,
    is_legacy,
    level_text,
    number,
    threshold_text,
)
from tiap.report.render import (
    FLOOR_NOTE,
    LATEX_WIDTH_PT,
    ReportTable,
    bounded,
    ci,
    esc,
    f4,
    latex_tables,
    mean_text,
    p_cell,
    pct,
    pct_range_ci,
    pval,
    signed,
    signed_pct,
)
from tiap.sensitivity.flips import flip_undetermined, gap_text

__all__ = ["build_report"]

#: The options that decide what the statistics mean (compared across folders).
_STAT_KEYS = ("resamples", "seed", "alpha", "correction", "min_effect", "min_dz")
HTML_LIMIT = 60
#: Nothing but the page's own: images as data: URIs, inline style, and the one script
#: allowed by its hash (no other script, inline or fetched, runs).
CSP = f"default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src {script_hash()}"

_STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:0;
color:#1d232a;background:#fff;line-height:1.45}
main{max-width:1180px;margin:0 auto;padding:24px 28px 60px}
header{background:#18324a;color:#fff;padding:22px 28px}
header h1{margin:0 0 4px;font-size:24px} header p{margin:0;opacity:.85}
h2{border-bottom:2px solid #18324a;padding-bottom:4px;margin-top:40px}
h3{margin-top:28px;color:#18324a}
table.t{border-collapse:collapse;margin:10px 0 18px;font-size:13px;display:block;
overflow-x:auto;max-width:100%}
table.t caption{text-align:left;padding:4px 0;color:#333}
div.cmp p.cap{font-size:13px;color:#333;max-width:60em;margin:14px 0 0}
table.t th{background:#eef2f6;text-align:left;padding:4px 8px;border-bottom:1px solid #b9c4cf}
table.t td{padding:3px 8px;border-bottom:1px solid #e3e7eb;vertical-align:top}
table.t tr.mark td{background:#fff1d6;font-weight:600}
.kpi{display:flex;flex-wrap:wrap;gap:12px;margin:14px 0}
.kpi div{background:#f3f6f9;border-left:4px solid #1b6ca8;padding:8px 12px;min-width:180px}
.kpi b{display:block;font-size:20px}
figure{margin:12px 0 22px} figure img{max-width:100%;height:auto;border:1px solid #e3e7eb}
figcaption{font-size:12px;color:#555}
.note{font-size:12px;color:#555} code{background:#f3f6f9;padding:0 3px}
nav ul{columns:2;font-size:14px}
details.sec{border:1px solid #d5dde5;border-radius:4px;margin:10px 0;padding:0 14px}
details.sec[open]{padding-bottom:10px}
details.sec>summary{cursor:pointer;padding:9px 0;list-style-position:outside}
details.sec>summary .st{font-weight:600;color:#18324a;font-size:16px}
details.sec>summary .what{color:#555;font-size:13px}
#summary{margin-bottom:18px}
div.tw{margin:10px 0 18px} div.tw table.t{margin-top:4px}
div.ctl{font-size:12px;display:flex;gap:10px;align-items:center}
div.ctl input{font-size:12px;padding:2px 4px;width:220px}
div.ctl .count{color:#555}
th.sortable{cursor:pointer;user-select:none} th[aria-sort=ascending]::after{content:" ▲"}
th[aria-sort=descending]::after{content:" ▼"}
#tiap-q-hits{list-style:none;padding:0;margin:4px 0;max-height:260px;overflow-y:auto}
#tiap-q-hits button{background:none;border:none;color:#1b6ca8;cursor:pointer;text-align:left;
padding:1px 0;font-size:13px}
#tiap-q-view .question{font-size:16px;font-weight:600}
#tiap-q-view span.rank{display:block;white-space:nowrap} #tiap-q-view span.credited{font-weight:600}
#tiap-q-view span.beyond{color:#888} #tiap-q-view span.miss{color:#b00}
"""


@dataclass
class _Page:
    """The page's parts: the summary (always shown), then sections, each a ``<details>``
    closed by default whose ``<summary>`` line says what it holds (its title, a sentence,
    and how many tables, rows and figures it has)."""

    parts: list[str] = field(default_factory=list)
    tables: list[ReportTable] = field(default_factory=list)
    toc: list[tuple[str, str]] = field(default_factory=list)
    summary: list[str] = field(default_factory=list)
    query_view: bool = True
    #: what the caller already read (``build_report``'s ``preloaded``)
    preloaded: Mapping[Path, Any] | None = None
    #: the per-query data of each dataset (:func:`tiap.report.explore.query_data`)
    queries: list[dict[str, Any]] = field(default_factory=list)
    _open: dict[str, Any] | None = None

    def h(self, level: int, text: str, anchor: str | None = None, what: str = "") -> None:
        """Level 2: a heading over sections; level 3: a new collapsed section."""
        self.close()
        a = f' id="{esc(anchor)}"' if anchor else ""
        if level == 2:
            self.parts.append(f"<h2{a}>{esc(text)}</h2>")
            if anchor:
                self.toc.append((anchor, text))
            return
        self._open = {"title": text, "what": what, "anchor": a, "at": len(self.parts),
                      "tables": 0, "rows": 0, "figures": 0}
        self.parts.append("")  # the <details><summary>, written when the section closes

    def close(self) -> None:
        sec, self._open = self._open, None
        if sec is None:
            return
        counts = [f"{sec[k]:,} {k if sec[k] != 1 else k[:-1]}" for k in ("tables", "rows",
                                                                          "figures") if sec[k]]
        self.parts[sec["at"]] = (
            f'<details class="sec"{sec["anchor"]}><summary><span class="st">'
            f'{esc(sec["title"])}</span> <span class="what">{esc(sec["what"])}'
            + (f" ({esc(', '.join(counts))})" if counts else "") + "</span></summary>")
        self.parts.append("</details>")

    def p(self, text: str, cls: str = "") -> None:
        c = f' class="{cls}"' if cls else ""
        self.parts.append(f"<p{c}>{esc(text)}</p>")

    def table(self, t: ReportTable, limit: int | None = HTML_LIMIT) -> None:
        self.tables.append(t)
        self.parts.append(t.to_html(limit=limit))
        if self._open is not None:
            self._open["tables"] += 1
            self._open["rows"] += len(t.rows)

    def figure(self, png: bytes | None, caption: str, summary: bool = False) -> None:
        """A figure in the current section, or (``summary``) in the summary."""
        if not png:
            return
        data = base64.b64encode(png).decode("ascii")
        html_fig = (f'<figure><img alt="{esc(caption)}" src="data:image/png;base64,'
                    f'{data}"><figcaption>{esc(caption)}</figcaption></figure>')
        if summary:
            self.summary.append(html_fig)
            return
        self.parts.append(html_fig)
        if self._open is not None:
            self._open["figures"] += 1

    def kpis(self, items: Sequence[tuple[str, str]]) -> None:
        self.summary.append('<div class="kpi">' + "".join(
            f"<div><b>{esc(v)}</b>{esc(k)}</div>" for k, v in items) + "</div>")


#: What a report folder may hold beside its manifest's outputs.
REPORT_OUTPUTS = ("index.html", "tables", "tables.md", "tables.tex", "target_card.md",
                  "target_card_appendix.md", "target_card.json")


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "dataset"


def _safe(fn: Callable[[], bytes], notes: list[str], what: str) -> bytes | None:
    try:
        return fn()
    except Exception as exc:  # a figure must never take the report down

        if isinstance(exc, MissingExtraError):
            raise
        notes.append(f"figure {what} not drawn: {exc}")
        return None


def build_report(dirs: Sequence[str | Path], out: str | Path, *, force: bool = False,
                 latex_width: float = LATEX_WIDTH_PT,
                 audits: Sequence[str | Path] = (),
                 answers: Sequence[str | Path] = (),
                 query_view: bool = True,
                 preloaded: Mapping[Path, Any] | None = None) -> dict[str, Any]:
    """Write ``index.html``, ``tables/*.md|.tex``, ``tables.md``, ``tables.tex``,
    ``target_card.md`` (one screen), ``target_card_appendix.md`` (every table in full),
    ``target_card.json`` (everything, for tools) and ``manifest.json`` into ``out``, replaced whole
    (:func:`tiap.io.output_folder`: no table of an earlier report survives); a folder that
    is not a ``tiap report`` output is refused unless ``force``. The LaTeX tables are laid
    out to fit ``latex_width`` points (:func:`tiap.report.render.latex_table`). ``audits``:
    output folders of ``tiap audit graded``, each a section on what survives the judges
    (graded nDCG, composed support). ``answers``: output folders of ``tiap answers
    analyze``, each an "Answers and judges" section (:mod:`tiap.report.answers`) and its part
    of the card (the judge configurations); with answers, ``dirs`` may be empty.
    ``query_view``: the per-query view (:func:`tiap.report.explore.query_data`, which reads
    each rescoring's store, queries and runs; without it the report reads only the
    rescorings' values). ``preloaded``: what a caller that just ran the steps already holds,
    by resolved path (the rescorings' results, stores, queries and runs), so the per-query
    view does not read them again (:func:`tiap.report.explore.query_data`). Returns the
    report's manifest.

    Example: two systems on two queries, analysed and reported. Under Raw only ``A``'s
    first items are raw turns (Success@1 = 1, 1 for A; 0, 0 for B); under Canonical only
    ``B``'s are derived facts (A: its fact is 2nd on q1, and q2 has none: 0, 0; B: 1, 1);
    under Source every first item is credited. The winner flips from A to B.

    >>> import tiap
    >>> from pathlib import Path
    >>> from tiap.sensitivity import write_sensitivity
    >>> scores = tiap.rescore(
    ...     {"A": {"q1": ["t1", "m1"], "q2": ["t2"]}, "B": {"q1": ["m1", "t1"], "q2": ["m2"]}},
    ...     [{"query_id": "q1", "evidence": ["d1:1"]}, {"query_id": "q2", "evidence": ["d1:2"]}],
    ...     [{"item_id": "t1", "kind": "raw", "sources": ["d1:1"]},
    ...      {"item_id": "t2", "kind": "raw", "sources": ["d1:2"]},
    ...      {"item_id": "m1", "kind": "fact", "sources": ["d1:1"]},
    ...      {"item_id": "m2", "kind": "fact", "sources": ["d1:2"]}],
    ...     measures="Success@1", tokenizer="none")
    >>> _ = write_sensitivity(tiap.analyze(scores, resamples=100), "sensitivity")
    >>> manifest = tiap.build_report(["sensitivity"], "report")
    >>> manifest["outputs"][:6]  # doctest: +NORMALIZE_WHITESPACE
    ['index.html', 'tables.md', 'tables.tex', 'target_card.md', 'target_card_appendix.md',
     'target_card.json']
    >>> print(Path("report/tables/scores_scores.md").read_text())  # doctest: +ELLIPSIS
    ### scores: mean Success@1 per system and target
    ...
    | | system | Success@1 raw | Success@1 source | Success@1 canonical |
    |---|---|---|---|---|
    | a | A | **1.000** | **1.000** | 0.000 |
    | b | B | 0.000 | **1.000** | **1.000** |
    >>> card = Path("report/target_card.md").read_text()  # one screen: the counts
    >>> "Success@1: 1 flip (0 significant, 0 headline)" in card
    True
    >>> "raw → canonical" in Path("report/target_card_appendix.md").read_text()  # every flip
    True
    """

    check("latex_width", latex_width, "--latex-width (the text width in points; a "
          "one-column article: 345, a two-column paper's column: about 240)")
    check_output_folder(out, "report", force=force, known=REPORT_OUTPUTS)
    sds = load_sensitivity_dirs(dirs) if dirs or not answers else []
    ads = [load_answers_dir(a) for a in answers]
    plots.pyplot()  # fail early with the install hint when matplotlib is missing
    page = _Page(query_view=query_view, preloaded=preloaded)
    notes: list[str] = []
    card = card_json(sds)
    for sd in sds:
        for ds in sd.datasets:
            _dataset_section(page, sd, ds, notes)
    audit_inputs = {}
    for a in audits:
        audit_inputs[f"{Path(a).name}/manifest.json"] = _audit_section(page, Path(a))
    for ad in ads:
        audit_inputs[f"{ad.path.name}/manifest.json"] = _answers_analysis_section(page, ad)
        if query_view:
            attach_answers(page.queries, ad.path, ad.manifest)
    if ads:
        card["answers"] = [answers_card(ad) for ad in ads]
    for sd in sds:
        notes.extend(f"{sd.path.name}: {n}" for n in sd.manifest.get("notes") or [])
    html_text = _html(page, sds, card, notes)
    with output_folder(out, "report", force=force, known=REPORT_OUTPUTS) as tmp:
        (tmp / "index.html").write_text(html_text, encoding="utf-8")
        (tmp / "tables").mkdir()
        names: set[str] = set()
        for t in page.tables:
            base = t.name
            i = 2
            while t.name in names:
                t.name = f"{base}_{i}"
                i += 1
            names.add(t.name)
            (tmp / "tables" / f"{t.name}.md").write_text(t.to_markdown(), encoding="utf-8")
            (tmp / "tables" / f"{t.name}.tex").write_text(t.to_latex(latex_width), encoding="utf-8")
        (tmp / "tables.md").write_text("\n".join(t.to_markdown() for t in page.tables),
                                       encoding="utf-8")
        (tmp / "tables.tex").write_text(latex_tables(page.tables, latex_width), encoding="utf-8")
        (tmp / "target_card.json").write_text(
            json.dumps(card, indent=2, ensure_ascii=False, allow_nan=False) + "\n",
            encoding="utf-8")
        (tmp / "target_card.md").write_text(card_markdown(card), encoding="utf-8")
        (tmp / "target_card_appendix.md").write_text(appendix_markdown(card),
                                                      encoding="utf-8")
        man = Manifest.new(
            "report",
            inputs={**{f"{sd.path.name}/manifest.json": input_entry(sd.path / "manifest.json")
                       for sd in sds}, **audit_inputs},
            outputs=["index.html", "tables.md", "tables.tex", "target_card.md",
                     "target_card_appendix.md", "target_card.json"]
            + [f"tables/{t.name}.{x}" for t in page.tables for x in ("md", "tex")],
            extra={"notes": notes, "latex_width_pt": latex_width})
        man.write(tmp / "manifest.json")
    return man.to_json()


# ------------------------------------------------------------------------------------------


def _html(page: _Page, sds: Sequence[SensitivityDir], card: dict[str, Any],
          notes: list[str]) -> str:
    """The page: the summary (key figures, headline flips, the card's essentials), the
    per-query view and every other section collapsed, the notes and provenance last; one
    script (:data:`tiap.report.explore.SCRIPT`, allowed by its hash) and the per-query data
    as one JSON block."""
    page.close()
    opts = sds[0].manifest.get("options", {}) if sds else {}
    names = ", ".join(sd.labels.get(d["name"], d["name"]) for sd in sds for d in sd.datasets)
    if sds:
        title, lead = "Target-sensitivity report", (
            f"{names}: what the scores, winners and design recommendations depend on when "
            "only the credited target changes (fixed ranked outputs).")
    else:  # a report of answers alone
        title, lead = "Answers and judges report", (
            "What the accuracies and the winners depend on when only the judge changes "
            "(fixed answers).")
    head = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>TIAP {title[0].lower() + title[1:]}</title>"
        f'<link rel="icon" href="data:,"><style>{_STYLE}</style></head><body>'
        f"<header><h1>{esc(title)}</h1><p>{esc(lead)}</p></header><main>")
    intro = [] if not sds else [(
        "<p>Each ranked trace was rescored under several <i>targets</i> (which stored forms "
        "earn credit for an evidence turn). On fixed outputs, every difference below comes "
        "from the target alone. Gaps are compared on <i>shared subsets</i> (queries defined "
        "under every compared target for every compared system). Highlighted rows are flips "
        "significant after the correction, or changed recommendations. Every section below "
        "the summary opens with a click; every table sorts by a click on a column's header "
        "and filters by the box above it.</p>")]
    stat = [", ".join(f"{k} {sd.manifest.get('options', {}).get(k, '–')}" for k in _STAT_KEYS)
            for sd in sds]
    proc = [] if not sds else [f'<p id="procedure">{esc(intro_text(opts))}</p>']
    if len(set(stat)) > 1:
        proc.append('<p class="note">' + esc(
            "The folders were analysed with different statistical options (the paragraph "
            "above describes the first): " + "; ".join(f"{sd.path.name}: {st}" for sd, st
                                                        in zip(sds, stat, strict=True)))
                    + ".</p>")
    summary = ['<section id="summary"><h2>Summary</h2>', *intro, *page.summary,
               _card_html(card), "</section>"]
    toc = ["<nav><b>Contents</b><ul>", '<li><a href="#summary">Summary</a></li>'] + (
        ['<li><a href="#queries">Per-query view</a></li>'] if page.queries else []) + [
        f'<li><a href="#{esc(a)}">{esc(t)}</a></li>' for a, t in page.toc] + [
        '<li><a href="#notes">Notes and provenance</a></li></ul></nav>']
    sections: list[str] = []
    if proc:
        sections += [('<details class="sec" id="procedure-sec"><summary><span class="st">'
                      'Procedure</span> <span class="what">How the tests, intervals and '
                      "the correction were computed.</span></summary>"), *proc, "</details>"]
    if page.queries:
        n = sum(len(r["queries"]) for r in page.queries)
        sections += [
            ('<details class="sec" id="queries"><summary><span class="st">Per-query view'
             f'</span> <span class="what">Pick one of {n:,} queries: its evidence, where each '
             "system ranked each credited item under each target, its values and answers."
             "</span></summary>"),
            ('<p><input type="search" id="tiap-q-search" placeholder="query id or words of '
             'the question" aria-label="find a query by id or question" size="40"> '
             '<span id="tiap-q-count" class="note"></span></p><ul id="tiap-q-hits"></ul>'
             '<div id="tiap-q-view"></div>'),
            '<noscript><p class="note">The per-query view needs JavaScript.</p></noscript>',
            "</details>"]
    foot = ['<details class="sec" id="notes"><summary><span class="st">Notes and provenance'
            '</span> <span class="what">'
            + esc(f"{len(notes)} notes of the analyses; the commands, versions, seeds and "
                  "inputs' sha256 behind every number.") + "</span></summary>"]
    if notes:
        foot += ['<ul class="note">', *(f"<li>{esc(n)}</li>" for n in notes), "</ul>"]
    else:
        foot.append('<p class="note">The analyses recorded no notes.</p>')
    foot.append(_provenance_html(card.get("provenance")))
    foot.append("<p class=\"note\">Sources: " + esc(", ".join(str(sd.path) for sd in sds))
                + ". Files: tables/*.md and *.tex (one per table), tables.md, tables.tex, "
                "target_card.md, target_card_appendix.md, target_card.json.</p></details>")
    data = [json_block("tiap-query-data", page.queries)] if page.queries else []
    return "\n".join([head, *summary, *toc, *sections, *page.parts, *foot, "</main>",
                      *data, f"<script>{SCRIPT}</script>", "</body></html>\n"])


def _provenance_html(prov: dict[str, Any] | None) -> str:
    """The card's provenance (commands, versions, commit, seeds, inputs' sha256) as nested
    lists: the lines of its Markdown, nested by their indentation."""
    if not prov:
        return ""

    out, depth = ['<h3 id="provenance">Provenance</h3>'], 0
    for line in provenance_md(prov)[2:]:
        if not line.strip():
            continue
        level = (len(line) - len(line.lstrip())) // 2 + 1
        while depth < level:
            out.append('<ul class="note">')
            depth += 1
        while depth > level:
            out.append("</ul>")
            depth -= 1
        text = line.strip().removeprefix("- ").replace("\\", "")
        out.append(f"<li>{esc(text).replace('`', '')}</li>")
    out += ["</ul>"] * depth
    return "\n".join(out)


def _card_html(card: dict[str, Any]) -> str:
    out = ['<h3 id="card">Target card</h3>',
           "<p>The statement of which stored forms received credit (also in "
           "<code>target_card.md</code>, <code>target_card_appendix.md</code> and "
           "<code>target_card.json</code>).</p>"]
    for ds in card["datasets"]:
        out.append(f"<h4>{esc(ds['dataset'])}</h4>")
        out.append(f"<p><b>Credit mode:</b> {esc(ds['credit']['mode'])}: "
                   f"{esc(ds['credit']['definition'])}</p>")
        t = ReportTable("card_targets", "Targets", ["target", "spec", "description"])
        for tg in ds["targets"]:
            t.add([tg.get("name", ""), tg.get("spec", tg.get("qrels", "")),
                   tg.get("description", "")])
        out.append(t.to_html(limit=None))
        n_flips = len(ds["winner_flips"])
        n_sig = sum(1 for f in ds["winner_flips"] if f["significant_flip"])
        st = card["statistics"]
        if st.get("headline") is None:  # an older folder: no correction, no headline
            counts = f"{n_sig} significant"
        else:
            n_head = sum(1 for f in ds["winner_flips"] if f.get("headline"))
            counts = (f"{n_sig} significant {after_correction(st)} at alpha "
                      f"{number(st.get('alpha'))}, {n_head} headline (practical threshold: "
                      f"{st.get('threshold')})")
        out.append(f"<p>{n_flips} winner flips over all measures ({esc(counts)}); "
                   f"{len(ds['design_changes'])} design recommendations change with the "
                   "target. Every flip is listed in target_card_appendix.md.</p>")
    for a in card.get("answers") or []:
        f = a["judge_flips"]
        out.append(f"<h3>Answers and judges ({esc(Path(a['source']).name)})</h3><p>"
                   f"{len(a['judges'])} judge configurations (listed in target_card.md); "
                   f"{f['flips']} winner flips across them of {f['comparisons']} "
                   f"comparisons, {f['significant']} significant, {f['headline']} "
                   "headline.</p>")
    return "\n".join(out)


def _dataset_section(page: _Page, sd: SensitivityDir, ds: dict[str, Any],
                     notes: list[str]) -> None:
    name = ds["name"]
    label = sd.labels.get(name, name)
    slug = _slug(label)
    primary = ds.get("primary_measure") or ""
    targets = [t["name"] for t in ds.get("targets", [])]
    systems = list((ds.get("systems") or {}).keys())
    page.h(2, f"Dataset {label}", f"ds-{slug}")
    opts = sd.manifest.get("options", {})
    legacy = is_legacy(opts)
    flips = [r for r in sd.rows("winner_flips", name) if truth(r["flip"])]
    pflips = [r for r in flips if r["measure"] == primary]
    p_open = sum(flip_undetermined(r) for r in sd.rows("winner_flips", name, measure=primary)
                 if not truth(r["flip"]))
    n_sig = sum(truth(r["significant_flip"]) for r in pflips)
    n_head = sum(truth(r.get("headline")) for r in pflips)
    changes = [r for r in sd.rows("change", name, measure=primary)]
    # partial lineage: a share only bounded counts with its bounds
    fr = [x for r in changes for x in ((num(r["changed_fraction"]),) * 2
                                       if num(r["changed_fraction"]) is not None else
                                       (num(r.get("changed_fraction_lower")),
                                        num(r.get("changed_fraction_upper"))))
          if x is not None]
    page.summary.append(f"<h3>{esc(label)}</h3>")
    page.kpis([
        ("queries", f"{ds.get('n_queries', 0):,}"),
        ("systems", str(len(systems))),
        ("targets", ", ".join(targets)),
        ("credit mode", str(ds.get("credit"))),
        (f"queries changed ({primary})", f"{100 * min(fr):.1f}–{100 * max(fr):.1f}%" if fr
         else "–"),
        (f"winner flips ({primary})",
         (f"{len(pflips)} ({n_sig} significant)" if legacy else
          f"{len(pflips)} ({n_sig} significant, {n_head} headline)")
         + (f"; {p_open} not determined" if p_open else "")),
    ])
    _headline_flips(page, slug, pflips, primary, legacy)
    qd = query_data(sd, ds, label, inputs=page.query_view, preloaded=page.preloaded)
    if page.query_view:
        page.queries.append(qd.record)
    primary_values = qd.primary_values

    # scores
    page.h(3, "Scores under each target", what="Every measure per system and target (the "
           f"comparison table of {primary} with its tests, and the chart of the means with "
           "their intervals, are in the summary).")
    means = sd.rows("system_means", name)
    # the table a paper pastes, in the summary (and in tables/ as Markdown and LaTeX)
    scores = comparison_table(sd, dataset=name, measures=[primary], name=f"{slug}_scores",
                              title=f"{label}: mean {primary} per system and target")
    page.tables.append(scores)
    page.summary.append(scores.to_html())
    series: dict[str, list[plots.Bar | None]] = {tg: [] for tg in targets}
    for s in systems:
        for tg in targets:
            r = next((x for x in means if x["system"] == s and x["target"] == tg
                      and x["measure"] == primary), None)
            series[tg].append(_bar(r, primary_values.get((s, tg))))
    all_m = ReportTable(f"{slug}_scores_all", f"{label}: every measure per target",
                        ["system", "target", *ds.get("measures", [])], key=2)
    for s in systems:
        for tg in targets:
            row = [s, tg]
            for m in ds.get("measures", []):
                r = next((x for x in means if x["system"] == s and x["target"] == tg
                          and x["measure"] == m), None)
                row.append(mean_text(r) if r else "–")
            all_m.add(row)
    page.table(all_m)
    bars_ = [b for v in series.values() for b in v if b is not None and b.mean is not None]
    n_exact, n_ci = len(bars_), sum(b.ci_low is not None for b in bars_)
    page.figure(_safe(lambda: plots.bars(f"{label}: mean {primary} per target", systems,
                                         series, primary), notes, "scores"),
                f"Mean {primary} per system and target over the queries defined under the "
                "target, with the 95% t interval of the mean over those queries (Student's "
                "t, from the per-query values of the rescoring"
                + ("" if _scipy_special() is not None else "; not drawn: the stats extra, "
                   "scipy, is not installed")
                + (f"; drawn for {n_ci} of {n_exact} exact means, the others' per-query "
                   "values could not be read: the per-query view says why"
                   if _scipy_special() is not None and n_ci < n_exact else "")
                + "); a mean that partial lineage "
                "only bounds is drawn as a hatched range from its lower to its upper bound. "
                "The comparison table above gives n and the paired tests.",
                summary=True)

    # per-query change
    page.h(3, "Per-query change between targets",
           what=f"How many queries change {primary} between two targets, by how much, and the "
                f"distribution of the change.")
    level = level_text(opts)
    t = ReportTable(f"{slug}_change", f"{label}: per-query change of {primary}",
                    ["system", "targets", "n shared", f"changed [{level} CI]", "mean Δ",
                     "mean |Δ|", "|Δ| ≥ 0.1", "hit flips", "top-1 flips"],
                    caption="Δ = value under the second target minus the first, on the "
                    f"queries defined under both; changed: share of them with Δ ≠ 0, with its "
                    f"{level} Wilson interval" + (
                        "; a–b% and [lower, upper]: bounds over every lineage the store "
                        "allows, where partial lineage does not decide the value"
                        if any("changed_lower" in r for r in changes) else "") + ".", key=2)
    for r in changes:
        t.add([r["system"], f"{r['target_1']} → {r['target_2']}", r["n_shared"],
               pct_range_ci(r, "changed_fraction"), bounded(r, "mean_delta", signed),
               bounded(r, "mean_abs_delta", f4), bounded(r, "share_abs_delta_ge_0.1", pct),
               bounded(r, "hit_flips"), bounded(r, "top1_flips")])
    page.table(t)
    deltas = sd.rows("deltas", name)
    pairs = list(dict.fromkeys(f"{r['target_1']} → {r['target_2']}" for r in deltas)) or [
        f"{a} → {b}" for a, b in combinations(targets, 2)]  # the pairs Stage III compared
    panels: dict[tuple[str, str], list[float]] = {}
    open_d: dict[str, int] = {}
    for r in deltas:
        v = num(r["delta"])
        if v is not None:
            panels.setdefault((r["system"], f"{r['target_1']} → {r['target_2']}"), []).append(v)
        else:  # only bounded (delta_lower / delta_upper): no bin to put it in
            open_d[r["system"]] = open_d.get(r["system"], 0) + 1
    page.figure(_safe(lambda: plots.delta_histograms(
        f"{label}: per-query Δ {primary}", panels, systems[:12], pairs), notes, "deltas"),
        f"Distribution of the per-query change of {primary} per system and pair of targets "
        "(the paper's Figure 3; bins of 0.1)."
        + (" Not in a bin: " + "; ".join(f"{s}: {n} Δ only bounded by partial lineage"
                                         for s, n in open_d.items())
           + " (their bounds: deltas.csv; the change table above counts them)."
           if open_d else ""))

    # winner flips
    page.h(3, "Winner flips between systems",
           what=f"Every pair of systems whose order by {primary} (and other measures) changes "
                f"between two targets, with gaps, intervals and tests.")
    rows = sd.rows("winner_flips", name, measure=primary)
    if legacy:
        t = ReportTable(f"{slug}_winner_flips", f"{label}: system gaps on {primary} under "
                        "pairs of targets", ["A vs B", "targets", "n shared", "gap 1", "CI 1",
                                             "p 1", "gap 2", "CI 2", "p 2", "winner 1 → 2",
                                             "flip"],
                        caption="Gap = A minus B on the shared subset; CI: paired bootstrap "
                        "percentile interval; p: uncorrected sign-flip p-value; highlighted: "
                        f"significant flips; {FLOOR_NOTE}.", key=2)
    else:
        t = ReportTable(f"{slug}_winner_flips", f"{label}: system gaps on {primary} under "
                        "pairs of targets", ["A vs B", "targets", "n shared", "gap 1", "CI 1",
                                             "p adj 1", "gap 2", "CI 2", "p adj 2",
                                             "d_z 1 / 2", "MDE 1 / 2", "winner 1 → 2", "flip"],
                        caption=_flip_caption(opts), key=2)
    entries: list[tuple[Any, ...]] = []  # forest plot: (pair, target, gap, ci, [bounds])
    for r in rows:
        flip = truth(r["flip"])
        cells = [f"{r['system_a']} vs {r['system_b']}", f"{r['target_1']} → {r['target_2']}",
                 r["n_shared"], gap_text(r, 1), _ci(r, 1, legacy)]
        if legacy:
            cells += [p_cell(r, "p_1", opts.get("resamples")), gap_text(r, 2), _ci(r, 2, legacy),
                      p_cell(r, "p_2", opts.get("resamples"))]
        else:
            res = opts.get("resamples")
            cells += [p_cell(r, "p_1_adjusted", res), gap_text(r, 2), _ci(r, 2, legacy),
                      p_cell(r, "p_2_adjusted", res), effect_pair(r), _mde_pair(r)]
        t.add([*cells, f"{r['winner_1'] or '–'} → {r['winner_2'] or '–'}", flip_status(r)],
              mark=flip and _significant(r))
    _open_note(t, rows)
    page.table(t)
    seen: set[tuple[str, str]] = set()
    unbounded = only_bounded = 0
    for r in rows:
        lab = f"{r['system_a']} vs {r['system_b']}"
        for side, tg in (("1", r["target_1"]), ("2", r["target_2"])):
            g, lo, hi = num(r[f"gap_{side}"]), num(r[f"ci_{side}_low"]), num(r[f"ci_{side}_high"])
            glo, ghi = num(r.get(f"gap_{side}_lower")), num(r.get(f"gap_{side}_upper"))
            if (g is None and (lab, tg) not in seen and glo is not None
                    and ghi is not None):  # partial lineage: the gap's range, drawn as such
                seen.add((lab, tg))
                only_bounded += 1
                entries.append((lab, tg, None, lo, hi, glo, ghi))
                continue
            if g is None or (lab, tg) in seen:
                continue
            seen.add((lab, tg))
            if lo is None or hi is None:
                unbounded += num(r.get(f"p_{side}")) is not None
                continue
            entries.append((lab, tg, g, lo, hi))
    if entries:
        if legacy:
            xlabel = "gap (A − B) with its 95% paired bootstrap interval"
            cap = ("Gap between two systems under each target, with its 95% paired bootstrap "
                   "percentile interval (on the first shared subset the pair appears in).")
        else:
            xlabel = "gap (A − B) with its sign-flip interval (family-adjusted level)"
            cap = ("Gap between two systems under each target, with the inverted sign-flip "
                   f"interval at the gap's family-adjusted effective level ({_adj_level(opts)}"
                   f"; it excludes 0 exactly when the adjusted p-value is at most "
                   f"{number(opts.get('alpha'))}), on the first shared subset the pair appears in"
                   + (f"; {unbounded} unbounded interval(s) not drawn" if unbounded else "")
                   + (f"; {only_bounded} gap(s) partial lineage only bounds drawn as hatched "
                      "boxes from their lower to their upper bound" if only_bounded else "")
                   + ".")
        page.figure(_safe(lambda: plots.forest_plot(f"{label}: {primary} gaps", entries[:150],
                                                    targets, xlabel=xlabel), notes, "forest"),
                    cap)
    other = [r for r in sd.rows("winner_flips", name)
             if r["measure"] != primary and _open_flip(r)]
    if other:
        t = ReportTable(f"{slug}_winner_flips_other", f"{label}: winner flips on other measures",
                        ["measure", "A vs B", "targets", "n", "gap 1 [CI]", "gap 2 [CI]",
                         *([] if legacy else ["p adj 1 / 2", "d_z 1 / 2"]),
                         "significant" if legacy else "flip"],
                        caption="" if legacy else _flip_caption(opts), key=3)
        for r in other:
            t.add([r["measure"], f"{r['system_a']} vs {r['system_b']}",
                   f"{r['target_1']} → {r['target_2']}", r["n_shared"],
                   f"{gap_text(r, 1)} {_ci(r, 1, legacy)}",
                   f"{gap_text(r, 2)} {_ci(r, 2, legacy)}",
                   *([] if legacy else [_p_pair(r, opts), effect_pair(r)]),
                   ("yes" if truth(r["significant_flip"]) else "no") if legacy
                   else flip_status(r)], mark=_significant(r))
        _open_note(t, other)
        page.table(t)
    _ranking_section(page, sd, name, label, slug, primary)

    _design_section(page, sd, name, label, slug, primary, targets, notes)
    _category_section(page, sd, name, label, slug, primary, targets)
    _cardinality_section(page, sd, name, label, slug, primary, notes)
    _depth_section(page, sd, name, label, slug, primary, targets, notes)
    _cost_section(page, sd, name, label, slug, primary, targets, notes)
    _aggregation_section(page, sd, name, label, slug, primary)
    _answers_section(page, sd, name, label, slug)


def _left_out(t: ReportTable, items: Sequence[str]) -> None:
    """Say under a table (its caption: HTML, Markdown and LaTeX) what it leaves out and
    why, counted; nothing when it leaves nothing out."""
    if items:
        t.caption = (f"{t.caption} " if t.caption else "") + (
            f"Left out or not determined ({len(items)}): " + "; ".join(items) + ".")


def _open_note(t: ReportTable, rows: Sequence[dict[str, str]]) -> None:
    """Say, counted, which flips of a flip table partial lineage leaves not determined."""
    n = sum(1 for r in rows if not truth(r["flip"]) and flip_undetermined(r))
    if n:
        t.caption += (f" Flip not determined ({n} rows): partial lineage bounds a gap by an "
                      "interval that contains 0, so the winners flip under some lineage the "
                      "store allows and not under another.")


def _open_flip(r: dict[str, str]) -> bool:
    """A flip row to list among the flips: a flip, or one partial lineage leaves open."""
    return truth(r["flip"]) or flip_undetermined(r)


def _scipy_special() -> Any:
    """scipy.special, or ``None`` without the ``stats`` extra (the t quantile of the score
    chart's intervals: what ``scipy.stats.t.ppf`` computes, without importing scipy.stats,
    which costs the step more than its whole rendering of the chart)."""
    try:
        return require("scipy.special", "stats")
    except MissingExtraError:
        return None


def _bar(row: dict[str, str] | None, values: Any) -> plots.Bar | None:
    """A bar of the score chart: the mean with the 95% t interval of the mean over the
    queries' values (scipy), or the bounds of a mean partial lineage leaves open."""
    if row is None:
        return None
    mean = num(row["mean"])
    if mean is None:
        lo, hi = num(row.get("lower")), num(row.get("upper"))
        return None if lo is None or hi is None else plots.Bar(None, lo, hi)
    if values is None or len(values) < 2:
        return plots.Bar(mean, mean, mean)
    special = _scipy_special()
    if special is None:  # the chart without its intervals, and its caption says so
        return plots.Bar(mean, mean, mean)
    # scipy.stats.sem (std with ddof 1 over sqrt(n)) and t.interval(0.95, n - 1, loc, scale)
    # (the t quantiles of 0.025 and 0.975 times scale plus loc), step for step
    n = len(values)
    sem = float(np.std(values, ddof=1) / n ** 0.5)
    if not sem > 0:
        return plots.Bar(mean, mean, mean, mean, mean)
    loc = float(values.mean())
    lo, hi = (float(special.stdtrit(n - 1, q) * sem + loc) for q in ((1.0 - 0.95) / 2,
                                                                     (1.0 + 0.95) / 2))
    return plots.Bar(mean, mean, mean, lo, hi)


def _headline_flips(page: _Page, slug: str, flips: list[dict[str, str]], primary: str,
                    legacy: bool) -> None:
    """The summary's flips: the headline ones of the primary measure (in a folder written
    before headlines, the significant ones); the rest are counted and listed further down."""
    which = "significant" if legacy else "headline"
    top = [r for r in flips if truth(r["significant_flip"] if legacy else r.get("headline"))]
    if not top:
        page.summary.append(f'<p class="note">No {which} winner flip on {esc(primary)} '
                            f"({len(flips)} flip(s) in all: see Winner flips).</p>")
        return
    t = ReportTable(f"{slug}_headline_flips", f"{which.capitalize()} winner flips on {primary}",
                    ["A vs B", "targets", "n shared", "gap 1 [CI]", "gap 2 [CI]",
                     "winner 1 → 2"],
                    caption=f"{len(top)} of {len(flips)} flips on {primary}; every flip, with "
                    "its tests, under Winner flips.")
    for r in top:
        t.add([f"{r['system_a']} vs {r['system_b']}", f"{r['target_1']} → {r['target_2']}",
               r["n_shared"], f"{gap_text(r, 1)} {_ci(r, 1, legacy)}",
               f"{gap_text(r, 2)} {_ci(r, 2, legacy)}",
               f"{r['winner_1'] or '–'} → {r['winner_2'] or '–'}"], mark=True)
    page.summary.append(t.to_html(limit=HTML_LIMIT))


def _ci(r: dict[str, str], side: int | str, legacy: bool) -> str:
    """A flip row's interval ``side``: a tested gap (p-value present) with an empty end has an
    unbounded interval (new procedure), else ``–``."""
    lo, hi = r.get(f"ci_{side}_low"), r.get(f"ci_{side}_high")
    tested = not legacy and num(r.get(f"p_{side}")) is not None
    return ci(lo, hi, open_ends=tested)


def _p_pair(r: dict[str, str], opts: dict[str, Any]) -> str:
    res = opts.get("resamples")
    return f"{p_cell(r, 'p_1_adjusted', res)} / {p_cell(r, 'p_2_adjusted', res)}"


def _significant(r: dict[str, str]) -> bool:
    """What the tables highlight: a flip whose two gaps are both significant after the
    correction (``significant_flip``)."""
    return truth(r.get("significant_flip"))


def _mde_pair(r: dict[str, str]) -> str:
    return f"{f4(r.get('mde_1'))} / {f4(r.get('mde_2'))}"


def _adj_level(opts: dict[str, Any]) -> str:
    if opts.get("correction") == "none":
        return f"no correction: the nominal {level_text(opts)}"
    return f"alpha · p / p adj, so a level of at least {level_text(opts)}"


def _flip_caption(opts: dict[str, Any]) -> str:
    corr = after_correction(opts)
    adj = ("p adj: the sign-flip p-value (no correction)" if opts.get("correction") == "none"
           else f"p adj: the sign-flip p-value adjusted by {correction_name(opts)} "
           "within the family (raw p-values in winner_flips.csv)")
    alpha = number(opts.get("alpha"))
    return (f"Gap = A minus B on the shared subset; CI: the inverted sign-flip interval at the "
            f"gap's effective level ({_adj_level(opts)}); {adj}; d_z: paired effect size under "
            f"each target; MDE: the gap detectable with 80% power at alpha {alpha}. Flip: "
            f"headline (significant {corr} at alpha {alpha} and past the practical threshold: "
            f"{threshold_text(opts)}), significant, below threshold, yes (not significant) or "
            f"no; highlighted: flips significant {corr}; {FLOOR_NOTE}.")


def _ranking_section(page: _Page, sd: SensitivityDir, name: str, label: str, slug: str,
                     primary: str) -> None:
    if sd.tables.get("ranking_stability") is None:
        return
    rows = sd.rows("ranking_stability", name, measure=primary)
    if not rows:
        return
    page.h(3, "Ranking stability",
           what="How much the order of all systems agrees between two targets (Kendall τ-b, τ-AP).")
    t = ReportTable(f"{slug}_ranking_stability", f"{label}: agreement of the system rankings "
                    f"by {primary} under pairs of targets",
                    ["targets", "n systems", "n queries", "Kendall τ-b", "τ-AP",
                     "discordant / pairs", "tied pairs"],
                    caption="Systems ranked by their mean under each target on one shared "
                    "subset (queries defined under both targets for every system); Kendall "
                    "τ-b (1 = same order, −1 = reversed) and the AP correlation τ-AP (Yilmaz et "
                    "al. 2008; target 1 is the reference, disagreements near the top weigh "
                    "more); highlighted: some pair of systems swaps order. Every measure in "
                    "ranking_stability.csv.")
    for r in rows:
        c, d, ti = (int(num(r.get(k)) or 0) for k in ("concordant_pairs", "discordant_pairs",
                                                      "tied_pairs"))
        known = num(r.get("discordant_pairs")) is not None
        t.add([f"{r.get('target_1', '–')} → {r.get('target_2', '–')}",
               r.get("n_systems") or "–", r.get("n_queries") or "–",
               f4(r.get("kendall_tau"), 3), f4(r.get("tau_ap"), 3),
               f"{d} / {c + d + ti}" if known else "–",
               str(ti) if num(r.get("tied_pairs")) is not None else "–"], mark=known and d > 0)
    _left_out(t, [f"{r.get('target_1')} → {r.get('target_2')}: the statistics (a ranked "
                  "system's mean is only bounded by partial lineage; the notes name it)"
                  for r in rows if num(r.get("kendall_tau")) is None
                  and int(num(r.get("n_systems")) or 0) >= 2 and num(r.get("n_queries"))
                  and num(r.get("discordant_pairs")) is None])
    page.table(t)


def _design_section(page: _Page, sd: SensitivityDir, name: str, label: str, slug: str,
                    primary: str, targets: list[str], notes: list[str]) -> None:
    pref = sd.rows("design_preferred", name, measure=primary)
    if not pref:
        return
    page.h(3, "Design recommendations per target",
           what="Which configuration each target prefers, and the pairwise tests behind it.")
    groups = unique(r["group"] for r in pref)
    opts = sd.manifest.get("options", {})
    legacy = is_legacy(opts)
    tested = "significant" in pref[0]  # older folders name the top mean, untested
    t = ReportTable(f"{slug}_design", f"{label}: preferred configuration per target "
                    f"({primary})", ["group", "target", "n matched", "preferred", "ranking",
                                     "margin", *(["margin p adj"] if tested else [])],
                    caption=(f"Preferred: the configuration with the highest mean when its gap "
                             f"to every other one is significant {after_correction(opts)} at "
                             f"alpha {number(opts.get('alpha'))} (the pairwise tests below), "
                             "else a tie (not significant) of it and every configuration "
                             "whose gap to it is not. Margin: the top two's difference of "
                             "means; margin p adj: their gap's adjusted p-value."
                             if tested else "Preferred: the highest mean (a folder written "
                             "before preferences were tested: the margin's significance is "
                             "not known)."), key=2)
    chg = {(r["group"], r["comparison"]): r for r in sd.rows("design_changes", name,
                                                            measure=primary)}
    for r in pref:
        changed = truth(chg.get((r["group"], "preferred"), {}).get("changes", "false"))
        t.add([r["group"], r["target"], r["n_matched"], r["preferred"], r["ranking"],
               f4(r["margin"]),
               *([p_cell(r, "margin_p_adjusted", opts.get("resamples"))] if tested else [])],
              mark=changed)
    page.table(t)
    t = ReportTable(f"{slug}_design_pairwise", f"{label}: pairwise preferences ({primary})",
                    ["group", "A vs B", "target", "gap", "CI", "p" if legacy else "p adj",
                     *([] if legacy else ["d_z", "moved"]), "preferred", "changes"], key=3)
    for r in sd.rows("design_pairwise", name, measure=primary):
        comp = f"{r['config_a']} vs {r['config_b']}"
        changed = truth(chg.get((r["group"], comp), {}).get("changes", "false"))
        tested = not legacy and num(r.get("p")) is not None
        eff = num(r.get("effect"))
        gap = (signed(r["gap"]) if num(r["gap"]) is not None or not r.get("gap_lower") else
               gap_text({"gap_1_lower": r["gap_lower"], "gap_1_upper": r["gap_upper"]}, 1))
        t.add([r["group"], comp, r["target"], gap,
               ci(r["ci_low"], r["ci_high"], open_ends=tested),
               p_cell(r, "p" if legacy else "p_adjusted", opts.get("resamples")),
               *([] if legacy else [signed(eff, 2), pct(r.get("moved"))]),
               r["preferred"] + (" *" if truth(r["significant"]) else ""),
               "yes" if changed else "not determined" if chg.get((r["group"], comp), {}).get(
                   "changes", "false") == "" else "no"], mark=changed)
    page.table(t)
    if legacy:
        page.p("* the interval (paired bootstrap, percentile) excludes 0.", "note")
    else:
        none = opts.get("correction") == "none"
        page.p(f"* significant {after_correction(opts)} ({'p' if none else 'adjusted p'} ≤ "
               f"{number(opts.get('alpha'))}; the interval then excludes 0)."
               + ("" if none else " Family: every pair of configurations and target of the "
                  "group under one measure.")
               + " d_z: paired effect size; moved: share of the matched queries whose "
               f"difference is not 0. {FLOOR_NOTE}.", "note")
    means = sd.rows("design_means", name, measure=primary)
    for g in groups:
        configs = unique(r["config"] for r in means if r["group"] == g)
        by_t = {tg: [_design_point(next((r for r in means if r["group"] == g and
                                         r["target"] == tg and r["config"] == c), None))
                     for c in configs] for tg in targets
                if any(r["target"] == tg for r in means if r["group"] == g)}
        open_m = [f"{r['config']} under {r['target']}" for r in means if r["group"] == g
                  and num(r["mean"]) is None and num(r.get("lower")) is not None]
        page.figure(_safe(lambda g=g, configs=configs, by_t=by_t: plots.design_plot(
            f"{label} / {g}: {primary}", configs, by_t), notes, f"design {g}"),
            f"{g}: each configuration's mean {primary} minus the first configuration's, per "
            "target (a line crossing another means the recommendation changes)."
            + (f" Drawn as ranges ({len(open_m)}): " + ", ".join(open_m) + ": means partial "
               "lineage only bounds, so their difference is every value it may take "
               "(design_means.csv: lower, upper)." if open_m else ""))


def _design_point(r: dict[str, str] | None) -> float | tuple[float, float] | None:
    """A design_means row as the design plot takes it: the mean, or ``(lower, upper)``
    where partial lineage only bounds it."""
    if r is None:
        return None
    mean = num(r["mean"])
    if mean is not None:
        return mean
    lo, hi = num(r.get("lower")), num(r.get("upper"))
    return None if lo is None or hi is None else (lo, hi)


def _category_section(page: _Page, sd: SensitivityDir, name: str, label: str, slug: str,
                      primary: str, targets: list[str]) -> None:
    rows = sd.rows("category_change", name, measure=primary)
    if not rows or len(unique(r["category"] for r in rows)) < 2 and not rows[0]["category"]:
        return
    page.h(3, "By category",
           what="The per-query change and the winner flips within each question category.")
    opts = sd.manifest.get("options", {})
    legacy = is_legacy(opts)
    level = level_text(opts)
    t = ReportTable(f"{slug}_category_change", f"{label}: per-query change of {primary} by "
                    "category", ["category", "system", "targets", "n", f"changed [{level} CI]",
                                 "mean Δ", "|Δ| ≥ 0.1"],
                    caption=f"changed: share of the shared queries with Δ ≠ 0, with its {level} "
                    "Wilson interval.", key=3)
    empty: list[str] = []
    for r in rows:
        if r["n_shared"] in ("", "0"):
            empty.append(f"{r['category'] or '(none)'} / {r['system']} / {r['target_1']} → "
                         f"{r['target_2']} (no shared query)")
            continue
        t.add([r["category"] or "(none)", r["system"], f"{r['target_1']} → {r['target_2']}",
               r["n_shared"], pct_range_ci(r, "changed_fraction"),
               bounded(r, "mean_delta", signed), bounded(r, "share_abs_delta_ge_0.1", pct)])
    _left_out(t, empty)
    page.table(t)
    cf = [r for r in sd.rows("category_flips", name, measure=primary) if _open_flip(r)]
    if sd.tables.get("category_flips") is not None:
        if legacy:
            t = ReportTable(f"{slug}_category_flips", f"{label}: winner flips within "
                            f"categories ({primary})", ["category", "A vs B", "targets", "n",
                                                        "gap 1 [CI]", "gap 2 [CI]",
                                                        "significant"], key=3)
        else:
            t = ReportTable(
                f"{slug}_category_flips", f"{label}: winner flips within categories "
                f"({primary})", ["category", "A vs B", "targets", "n", "gap 1 [CI]",
                                 "gap 2 [CI]", "p adj 1 / 2", "MDE 1 / 2", "flip"],
                caption=("Not adjusted (correction none). " if opts.get("correction") == "none"
                         else "One family per measure: every category's gaps adjusted together "
                         f"({correction_name(opts)}). ") + "Significant: both gaps significant "
                f"{after_correction(opts)} at alpha {number(opts.get('alpha'))}; headline: "
                f"also past the practical threshold, {threshold_text(opts)}. MDE: the gap "
                "the category's shared queries detect with 80% power in one test; a flip whose "
                "gaps lie well below it could not have been resolved by these queries.",
                key=3)
        for r in cf:
            cells = [r["category"] or "(none)", f"{r['system_a']} vs {r['system_b']}",
                     f"{r['target_1']} → {r['target_2']}", r["n_shared"],
                     f"{gap_text(r, 1)} {_ci(r, 1, legacy)}",
                     f"{gap_text(r, 2)} {_ci(r, 2, legacy)}"]
            if legacy:
                cells.append("yes" if truth(r["significant_flip"]) else "no")
            else:
                cells += [_p_pair(r, opts), _mde_pair(r), flip_status(r)]
            t.add(cells, mark=_significant(r))
        _open_note(t, cf)
        page.table(t)


def _cardinality_section(page: _Page, sd: SensitivityDir, name: str, label: str, slug: str,
                         primary: str, notes: list[str]) -> None:
    corr = sd.rows("cardinality", name, measure=primary)
    if not corr:
        return
    page.h(3, "Cardinality: does target-set size explain the shift?",
           what="Correlation of the shift with the number of extra credited items.")
    t = ReportTable(f"{slug}_cardinality", f"{label}: size difference vs {primary} shift",
                    ["system", "comparison", "n", "Pearson r", "R²", "p", "mean size diff",
                     "mean shift"], key=2)
    for r in corr:
        t.add([r["system"], f"{r['target_2']} − {r['target_1']}", r["n"], f4(r["pearson_r"], 3),
               f4(r["r_squared"], 3), pval(r["p_value"]), f4(r["mean_size_diff"], 2),
               signed(r["mean_shift"])])
    zero = [f"{r['system']} {r['target_2']} − {r['target_1']}" for r in corr
            if r["n"] in ("", "0")]
    _left_out(t, [f"{z} (n 0: no query whose target sizes and values the lineage "
                  "determines)" for z in zero])
    page.table(t)
    bins = sd.rows("cardinality_bins", name, measure=primary, system="all")
    if not bins:
        bins = sd.rows("cardinality_bins", name, measure=primary)
    t = ReportTable(f"{slug}_cardinality_bins", f"{label}: mean {primary} shift by size "
                    "difference (all systems pooled)", ["comparison", "extra ids", "n",
                                                        "mean shift", "sd", "t", "p"])
    series: dict[str, list[tuple[str, float | None, float | None, int]]] = {}
    for r in bins:
        comp = f"{r['target_2']} − {r['target_1']}"
        t.add([comp, r["bin"], r["n"], signed(r["mean_shift"]), f4(r["sd_shift"], 3),
               f4(r["t"], 2), pval(r["p_value"])])
        series.setdefault(comp, []).append((r["bin"], num(r["mean_shift"]), num(r["sd_shift"]),
                                            int(num(r["n"]) or 0)))
    _left_out(t, [f"{z}: not pooled (n 0 in the table above)" for z in zero])
    page.table(t)
    page.figure(_safe(lambda: plots.cardinality_plot(f"{label}: shift by extra ids", series),
                      notes, "cardinality"),
                "Mean shift per bin of the target-set size difference, ±1.96 standard errors.")


def _depth_section(page: _Page, sd: SensitivityDir, name: str, label: str, slug: str,
                   primary: str, targets: list[str], notes: list[str]) -> None:
    rows = sd.rows("depth", name)
    fam = primary.split("@")[0]
    rows = [r for r in rows if r["family"] == fam]
    ks = unique(r["k"] for r in rows)
    if len(ks) < 2:
        return
    page.h(3, "Depth: the shift at several cutoffs",
           what="The relative shift of the measure at each cutoff k.")
    t = ReportTable(f"{slug}_depth", f"{label}: {fam} by cutoff",
                    ["system", "targets", "n", *[f"{fam}@{k}: mean 1 → mean 2 (relative)"
                                                 for k in ks]],
                    caption="Relative shift = (mean 2 − mean 1) / mean 1 on the queries "
                    "defined under both targets.", key=2)
    cells: dict[tuple[str, str], dict[str, dict[str, str]]] = {}
    for r in rows:
        cells.setdefault((r["system"], f"{r['target_1']} → {r['target_2']}"), {})[r["k"]] = r
    _left_out(t, [f"{system} {pair} at k {k} (n 0: no query the lineage determines under "
                  "both targets)" for (system, pair), by_k in cells.items()
                  for k, r in by_k.items() if r["n"] in ("", "0")])
    for (system, pair), by_k in cells.items():
        n = next(iter(by_k.values()))["n"]
        t.add([system, pair, n, *[
            (f"{f4(by_k[k]['mean_1'])} → {f4(by_k[k]['mean_2'])} "
             f"({signed_pct(by_k[k]['relative_shift'])})") if k in by_k else "–" for k in ks]])
    page.table(t)
    if len(targets) >= 2:
        for t2 in targets[1:]:
            series: dict[str, list[tuple[int, float | None]]] = {}
            for r in rows:
                if r["target_1"] == targets[0] and r["target_2"] == t2:
                    series.setdefault(r["system"], []).append((int(r["k"]),
                                                               num(r["relative_shift"])))
            if any(v is not None for pts in series.values() for _, v in pts):
                page.figure(_safe(lambda series=series, t2=t2: plots.depth_plot(
                    f"{label}: {t2} vs {targets[0]} by k", series), notes, "depth"),
                    f"Relative {fam} shift, {t2} minus {targets[0]} over {targets[0]}, by "
                    "cutoff.")


def _audit_section(page: _Page, gdir: Path) -> dict[str, Any]:
    """What survives semantic checking, from a ``tiap audit graded`` folder: graded nDCG
    and composed support (Coverage, GradedCoverage, Sufficient) per system and target; its
    manifest's entry for the report's provenance."""

    man = read_manifest(gdir, step="audit graded")

    def rows(name: str) -> list[dict[str, str]]:
        it = iter_csv(gdir / name)
        _, head = next(it)
        return [dict(zip(head, r, strict=True)) for _, r in it]

    opts = man.get("options", {})
    k = opts.get("k")
    judges = []
    for key, entry in man.get("inputs", {}).items():
        lman = Path(entry["path"]).parent / "manifest.json" if key.startswith("labels") else None
        if lman is not None and lman.is_file():
            for j in read_manifest(lman).get("judges", []):
                what = j.get("statistic") or j.get("model") or j.get("factory")
                judges.append(f"{j.get('name')} ({what})")
    who = "; ".join(judges) or "the judges of its labels"
    name = gdir.parent.parent.name if gdir.name == "graded" and gdir.parent.name == "audit" \
        else gdir.name  # audit-run writes OUT/<name>/audit/graded
    slug = re.sub(r"[^A-Za-z0-9]+", "_", name)
    page.h(2, f"Semantic audit: what survives checking ({name})", anchor=f"audit-{slug}")
    page.h(3, "Graded nDCG and composed support", what="What of each system's credit the "
           "judges' labels keep, and whether its top k support every evidence unit.")
    page.p(f"Every contested credit (an item a relaxed target credits and Raw does not) "
              f"judged by {who}. An offline judge is a heuristic, not a language model: its "
              "verdicts bound what a careful reader would accept, they do not replace one "
              "(docs/audit.md measures them against the paper's human labels).")
    t = ReportTable(f"audit_{slug}_graded", f"nDCG@{k} when the judged members keep only the "
                    "credit their labels grant (set credit)",
                    ["system", "target", "n", "Raw", "binary", "retained", "graded"],
                    caption="binary: the target as it is; retained: the labels' grades over "
                    "the binary ideal (what of the binary credit survives); graded: graded "
                    f"nDCG over the graded ideal. Unjudged members: {opts.get('unjudged')}.",
                    key=2)
    for r in rows("graded_summary.csv"):
        t.add([r["system"], r["target"], r["n"], f4(r["raw"]), f4(r["binary"]),
               f4(r["retained"]), f4(r["graded"])])
    page.table(t)
    t = ReportTable(f"audit_{slug}_support", f"Composed support at k = {k}: do the top k "
                    "together support every evidence unit?",
                    ["system", "target", "n", f"Coverage@{k}", f"GradedCoverage@{k}",
                     f"Sufficient@{k}", "exact"],
                    caption="Coverage: share of the evidence units some top-k item supports "
                    "(a Raw member by definition, a derived one by its label); GradedCoverage: "
                    "the best grade per unit (partial = 0.5); Sufficient: every unit "
                    "supported. [lower, upper] where unjudged members leave a value open "
                    f"(policy {opts.get('support_unjudged')}); exact: queries whose value "
                    "the labels decide.", key=2)
    by: dict[tuple[str, str], dict[str, dict[str, str]]] = {}
    for r in rows("support_summary.csv"):
        by.setdefault((r["system"], r["target"]), {})[r["measure"].split("@")[0]] = r

    def bound(r: dict[str, str]) -> str:
        lo, hi = num(r["lower"]), num(r["upper"])
        if lo is None or hi is None:
            return "–"
        return f4(lo) if hi - lo <= 1e-12 else f"[{f4(lo)}, {f4(hi)}]"

    for (system, target), ms in by.items():
        first = next(iter(ms.values()))
        t.add([system, target, first["n"], *(bound(ms[m]) if m in ms else "–"
                                             for m in ("Coverage", "GradedCoverage",
                                                       "Sufficient")),
               ms.get("Coverage", first)["n_exact"]])
    page.table(t)
    return input_entry(gdir / "manifest.json")


def _answers_analysis_section(page: _Page, ad: AnswersDir) -> dict[str, Any]:
    """Answers and judges, from a ``tiap answers analyze`` folder; its manifest's entry."""
    slug = re.sub(r"[^A-Za-z0-9]+", "_", ad.path.name)
    page.h(2, f"Answers and judges ({ad.path.name})", anchor=f"answers-{slug}")
    page.h(3, "Accuracy, rankings and flips across judges", what="Each judge "
           "configuration's accuracy per system, the rankings and winner flips across them, "
           "agreement with human labels and the run-to-run noise.")
    page.p("Fixed answers, judged under several judge configurations (model, prompt, "
           "decoding, run): how much of each accuracy, and of each ranking of systems, is the "
           "judge. On fixed answers every difference below comes from the judge alone.")
    for t in section_tables(ad, slug):
        page.table(t)
    for note in ad.manifest.get("notes") or []:
        page.p(note, cls="note")
    return answers_card(ad)["input"]


def _cost_section(page: _Page, sd: SensitivityDir, name: str, label: str, slug: str,
                  primary: str, targets: list[str], notes: list[str]) -> None:
    """Context tokens of each system's top k (``cost.csv`` of the rescoring) beside its
    quality under each target: what a system's score costs a reader."""
    rows = sd.rows("cost", name)
    if not rows:
        return
    page.h(3, "Cost: context tokens against quality",
           what="Tokens of each system's top k against its score under each target.")
    k = primary.rsplit("@", 1)[1] if "@" in primary else "all"
    tok = ", ".join(unique(r["tokenizer"] for r in rows))
    latency = any(num(r["mean_latency_ms"]) is not None for r in rows)
    t = ReportTable(f"{slug}_cost", f"{label}: context tokens of the top k per query",
                    ["system", "k", "queries", "mean tokens", "median", "max",
                     *(["latency ms (mean / median / p95)"] if latency else [])],
                    caption="Tokens of the top k items' text, summed per query"
                    + (f" ({tok})" if tok else "") + (
                        "; latency where the run records it (– : not recorded, not zero)."
                        if latency else "; no latency recorded (no run records one)."),
                    key=2)
    for r in rows:
        lat = ("–" if num(r["mean_latency_ms"]) is None else
               f"{f4(r['mean_latency_ms'], 1)} / {f4(r['median_latency_ms'], 1)} / "
               f"{f4(r['p95_latency_ms'], 1)} ({r['latency_queries']})")
        t.add([r["system"], r["cutoff"], r["queries"], f4(r["mean_tokens"], 0),
               f4(r["median_tokens"], 0), r["max_tokens"] or "–",
               *([lat] if latency else [])])
    page.table(t)
    tokens = {r["system"]: num(r["mean_tokens"]) for r in rows if r["cutoff"] == k}
    points: dict[str, list[tuple[str, float, float, float, float]]] = {}
    for r in sd.rows("system_means", name, measure=primary):
        x = tokens.get(r["system"])
        mean, lo, hi = num(r["mean"]), num(r["lower"]), num(r["upper"])
        if x is None or (mean is None and (lo is None or hi is None)):
            continue
        y = mean if mean is not None else (lo + hi) / 2  # type: ignore[operator]
        points.setdefault(r["target"], []).append(
            (r["system"], x, y, lo if lo is not None else y, hi if hi is not None else y))
    if points:
        page.figure(_safe(lambda: plots.cost_plot(
            f"{label}: {primary} against context tokens", f"mean tokens of the top {k}",
            primary, {t: points[t] for t in targets if t in points}), notes, "cost"),
            f"Each system's mean {primary} under each target against the mean number of "
            f"tokens of its top {k} items: the same ranking costs the reader the same under "
            "every target, so the targets move the points only vertically.")


def _aggregation_section(page: _Page, sd: SensitivityDir, name: str, label: str, slug: str,
                         primary: str) -> None:
    rows = sd.rows("aggregation", name, measure=primary)
    if not rows:
        return
    page.h(3, "Aggregation over targets and agreement filtering",
           what="System rankings when the targets are pooled, and on the queries where they agree.")
    t = ReportTable(f"{slug}_aggregation", f"{label}: system rankings ({primary})",
                    ["subset", "scheme", "n", "ranking", "means", "novel ranking",
                     "target-dependent"], key=2)
    for r in rows:
        novel = truth(r["novel"])
        t.add([r["subset"], r["scheme"], r["n"], r["ranking"], r["means"],
               "yes" if novel else ("no" if r["novel"] else "not determined"
                                    if r["kind"] == "aggregate" and r["ranking"] else ""),
               "yes" if truth(r["target_dependent"]) else ("no" if r["target_dependent"]
                                                           else "")], mark=novel)
    agree = sd.rows("agreement", name, measure=primary)
    _left_out(t, ["the rankings on the agreement subset (partial lineage leaves some hit open, "
                  "so the subset is not determined; the agreement table bounds n agree)"]
              if any(not r.get("n_agree_all_systems") and r.get("n_agree_lower")
                     for r in agree) else [])
    page.table(t)
    t = ReportTable(f"{slug}_agreement", f"{label}: agreement filtering ({primary})",
                    ["system", "hit k", "n common", "targets agree", "retained",
                     "spread (all)", "spread (agreeing)", "agree for every system"])
    for r in sd.rows("agreement", name, measure=primary):
        n_agree = (r["n_agree"] if r["n_agree"] or not r.get("n_agree_lower") else
                   f"{r['n_agree_lower']} to {r['n_agree_upper']}")
        t.add([r["system"], r["hit_k"], r["n_common"], n_agree, pct(r["retained_fraction"]),
               f4(r["mean_spread_common"]), f4(r["mean_spread_agree"]),
               r["n_agree_all_systems"] or "not determined"])
    page.table(t)


def _answers_section(page: _Page, sd: SensitivityDir, name: str, label: str, slug: str) -> None:
    rows = sd.rows("answer_alignment", name)
    if not rows:
        return
    page.h(3, "Answer-level alignment",
           what="Whether a target hit goes with a correct answer (heuristic answerer), with "
                "examples.")
    depth = rows[0]["depth"]
    t = ReportTable(f"{slug}_answers", f"{label}: target hits in the top {depth} vs answer "
                    "correctness", ["system", "target", "n", "hit rate", "F1 | hit", "F1 | miss",
                                    "F1 gap", "P(correct | hit)", "P(correct | miss)",
                                    "agreement", "phi"],
                    caption="Answers from TIAP's heuristic extractive answerer (no language "
                    "model: the sentence of the top items sharing most words with the question, "
                    "cut by question type), so F1 measures what the retrieved text contains, "
                    "not what an LLM reader would answer; correct = token F1 ≥ 0.5.")
    for r in rows:
        t.add([r["system"], r["target"], r["n"], pct(r["hit_rate"]), f4(r["f1_hit"], 3),
               f4(r["f1_miss"], 3), signed(r["f1_gap"], 3), pct(r["p_correct_hit"]),
               pct(r["p_correct_miss"]), pct(r["agreement"]), f4(r["phi"], 3)])
    page.table(t)
    ans = sd.rows("answers", name)
    if ans:
        f1 = [num(r["f1"]) or 0.0 for r in ans]
        page.p(f"Mean token F1 {sum(f1) / len(f1):.3f} over {len(ans):,} (query, system) pairs "
               "(heuristic answerer, no model). Examples where the targets disagree on the hit:",
               "note")
        t = ReportTable(f"{slug}_answer_examples", f"{label}: answer examples (heuristic "
                        "extractive answerer, no language model)",
                        ["system", "query", "question", "reference", "answer", "F1", "hits"], key=2)
        picked = [r for r in ans if len({h.split(":")[-1] for h in r["hits"].split()}) > 1][:10]
        for r in picked or ans[:10]:
            t.add([r["system"], r["query_id"], r["question"], r["reference"], r["answer"],
                   f4(r["f1"], 2), r["hits"]])
        page.table(t, limit=None)


