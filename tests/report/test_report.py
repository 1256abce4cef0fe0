"""``tiap report``: files present, untrusted text escaped everywhere, the target card, and
a headless-Chromium screenshot that is not blank and has no console error."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tiap.cli.main import main
from tiap.report.explore import SCRIPT
from tiap.report.render import ReportTable, ci, md_escape, tex_escape

pytest.importorskip("matplotlib")

EVIL = "<script>alert('x')</script>"
ITEMS = [
    {"item_id": "t1", "kind": "raw", "sources": ["u1"],
     "text": f"Caroline: {EVIL} I love pottery."},
    {"item_id": "f1", "kind": "fact", "sources": ["u1"], "text": f"Caroline loves pottery {EVIL}."},
    {"item_id": "t2", "kind": "raw", "sources": ["u2"], "text": "Melanie ran a charity race."},
    {"item_id": "f2", "kind": "fact", "sources": ["u2"], "text": "Melanie ran a race in 2023."},
    {"item_id": "x", "kind": "raw", "sources": ["u9"], "text": "Nothing <img src=x onerror=1>."},
]
QUERIES = [
    {"query_id": "q1", "question": f"What does Caroline love? {EVIL}", "answer": f"pottery {EVIL}",
     "category": "<b>single</b>", "evidence": ["u1"]},
    {"query_id": "q2", "question": "When did Melanie run a race?", "answer": "2023",
     "category": "temporal", "evidence": ["u2"]},
    {"query_id": "q3", "question": "What did Melanie run?", "answer": "a charity race",
     "category": "single-hop", "evidence": ["u2"]},
]
RUNS = {
    "sys<i>A</i>": [{"query_id": "q1", "ranking": ["f1", "t1", "x"]},
                    {"query_id": "q2", "ranking": ["x", "t2", "f2"]},
                    {"query_id": "q3", "ranking": ["t2", "x"]}],
    "B": [{"query_id": "q1", "ranking": ["t1", "x", "f1"]},
          {"query_id": "q2", "ranking": ["f2", "x"]},
          {"query_id": "q3", "ranking": ["x", "f2", "t2"]}],
}


def _jsonl(path: Path, rows: list[dict]) -> Path:  # type: ignore[type-arg]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("report")
    items = _jsonl(tmp / "items.jsonl", ITEMS)
    queries = _jsonl(tmp / "queries.jsonl", QUERIES)
    args = ["rescore", "--items", str(items), "--queries", str(queries), "--measures",
            "nDCG@5,nDCG@10,RR@10,Success@10,Success@1", "--out", str(tmp / "rescore")]
    for i, (name, rows) in enumerate(RUNS.items()):
        args += ["--run", f"{name}={_jsonl(tmp / f'run{i}.jsonl', rows)}"]
    assert main(args) == 0
    assert main(["sensitivity", f"demo={tmp / 'rescore'}", "--out", str(tmp / "sens"),
                 "--resamples", "500", "--answers", "--answer-depth", "2",
                 "--configs", "pair=sys<i>A</i>,B"]) == 0
    assert main(["report", str(tmp / "sens"), "--out", str(tmp / "report")]) == 0
    return tmp / "report"


def test_files_present(report: Path) -> None:
    for f in ("index.html", "tables.md", "tables.tex", "target_card.md", "target_card.json",
              "manifest.json"):
        assert (report / f).is_file() and (report / f).stat().st_size > 0, f
    md = sorted(p.name for p in (report / "tables").glob("*.md"))
    tex = sorted(p.name for p in (report / "tables").glob("*.tex"))
    assert "demo_winner_flips.md" in md and "demo_winner_flips.tex" in tex
    assert "demo_change.md" in md and "demo_design.md" in md and "demo_answers.md" in md
    assert len(md) == len(tex)


def test_html_escapes_untrusted_text(report: Path) -> None:
    html = (report / "index.html").read_text(encoding="utf-8")
    # one script runs, the page's own, allowed by its hash; the others are JSON data blocks
    scripts = re.findall(r"<script([^>]*)>(.*?)</script>", html, re.DOTALL)
    code = [body for attrs, body in scripts if "application/json" not in attrs]
    assert len(code) == 1 and code[0] == SCRIPT
    digest = base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()
    [csp] = re.findall(r'Content-Security-Policy" content="([^"]+)"', html)
    directives = dict(d.strip().split(" ", 1) for d in csp.split(";"))
    assert directives["script-src"] == f"'sha256-{digest}'"  # no 'unsafe-inline', no URL
    assert directives["default-src"] == "'none'"
    assert "<script>alert" not in html.lower() and html.lower().count("<script") == len(scripts)
    for attrs, body in scripts:  # no data can close its block: every "<" is escaped
        assert "<" not in body or body == SCRIPT
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in html
    assert "<img src=x" not in html and "<i>A</i>" not in html and "<b>single</b>" not in html
    assert "sys&lt;i&gt;A&lt;/i&gt;" in html
    assert "Content-Security-Policy" in html and "default-src 'none'" in html
    assert "data:image/png;base64," in html  # figures embedded
    assert 'src="http' not in html and "href=\"http" not in html  # nothing external
    # Markdown tables must not carry raw HTML either
    md = (report / "tables.md").read_text(encoding="utf-8")
    assert "<script" not in md and "&lt;script&gt;" in md


def test_target_card(report: Path) -> None:
    card = json.loads((report / "target_card.json").read_text())
    ds = card["datasets"][0]
    assert ds["dataset"] == "demo"
    assert ds["credit"]["mode"] == "group"
    assert [t["name"] for t in ds["targets"]] == ["raw", "source", "canonical"]
    assert ds["targets"][0]["spec"] == "kind == raw"
    cov = ds["coverage"]["B"]["targets"]
    assert cov["raw"]["defined"] == 3 and cov["canonical"]["defined"] == 3
    # every winner flip of winner_flips.csv (all measures) is in the card
    with open(report.parent / "sens" / "winner_flips.csv", newline="") as fh:
        flips = [r for r in csv.DictReader(fh) if r["flip"] == "true"]
    assert len(ds["winner_flips"]) == len(flips)
    assert {p["n_shared"] for p in ds["shared_subsets"]["pairs"]} == {3}
    card_md = (report / "target_card.md").read_text()
    assert "## demo" in card_md and "`kind == raw`" in card_md
    assert "### Headline winner flips (nDCG@10)" in card_md
    # the long tables are in the appendix
    md = (report / "target_card_appendix.md").read_text()
    assert "## demo" in md and "kind == raw" in md and "### Winner flips" in md
    # the sensitivity run used the defaults: Holm, |d_z| >= 0.2, no floor in nDCG units
    st = card["statistics"]
    assert st["correction"] == "holm" and st["min_effect"] == 0 and st["resamples"] == 500
    assert st["min_dz"] == 0.2 and st["threshold"] == "|d_z| ≥ 0.2 on both gaps"
    assert "bootstrap" not in json.dumps(st)
    assert "- Correction: **Holm** (`holm`" in md
    assert "- Practical threshold of a headline: **\\|d_z\\| ≥ 0.2 on both gaps** (" in md
    for f in ds["winner_flips"]:
        assert set(f) >= {"p_1_adjusted", "p_2_adjusted", "effect_1", "effect_2", "headline"}
        assert isinstance(f["headline"], bool)


def test_three_queries_cannot_reject_anything(report: Path) -> None:
    """3 shared queries: the exact test has 2^3 = 8 sign vectors, and the two with equal
    signs reach every shift, so every p-value is at least 2/8 and every interval is
    unbounded: shown as (-∞, +∞), never as significant."""
    with open(report.parent / "sens" / "winner_flips.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert rows and all(float(r["p_1"]) >= 0.25 for r in rows if r["p_1"])
    assert all(r["significant_flip"] == "false" for r in rows)
    md = (report / "tables" / "demo_winner_flips.md").read_text()
    body = [ln for ln in md.splitlines() if ln.startswith("| ") and "vs" in ln][1:]
    assert body and all("(-∞, +∞)" in ln for ln in body)
    assert "headline" not in "".join(ln.split("|")[-2] for ln in body)
    html = (report / "index.html").read_text(encoding="utf-8")
    assert "Correction: Holm over each family at alpha 0.05" in html
    assert "clear the practical threshold, |d_z| ≥ 0.2 on both gaps;" in html
    assert "bootstrap" not in html
    assert r"(-$\infty$, +$\infty$)" in (report / "tables.tex").read_text()


def test_render_escaping() -> None:
    assert md_escape("a|b <x> & c") == "a\\|b &lt;x&gt; &amp; c"
    assert tex_escape("f_1 & 50% #1 $x$") == r"f\_1 \& 50\% \#1 \$x\$"
    t = ReportTable("t", "Title <x>", ["a", "b"])
    t.add(["<b>", "1"], mark=True)
    html = t.to_html()
    assert "<td><b>" not in html and "<td>&lt;b&gt;</td>" in html
    assert "Title &lt;x&gt;" in html
    assert r"\textbf{\textless{}b\textgreater{}}" in t.to_latex()


def test_report_rejects_rescore_dir(report: Path) -> None:
    assert main(["report", str(report.parent / "rescore"), "--out",
                 str(report.parent / "r2")]) == 2


def _chromium() -> None:
    if shutil.which("chromium") is None:
        if os.environ.get("TIAP_REQUIRE_BROWSER"):  # CI (.ci/run) installs it
            pytest.fail("TIAP_REQUIRE_BROWSER is set but chromium is not installed")
        pytest.skip("chromium is not installed (Debian: apt-get install chromium)")


def test_chromium_screenshot_not_blank_no_console_errors(report: Path, tmp_path: Path) -> None:
    from PIL import Image

    _chromium()
    # every figure the page shows is a readable image, every table has rows
    html = (report / "index.html").read_text()
    figures = re.findall(r'<img[^>]+src="([^"]+)"', html)
    assert figures
    for src in figures:
        blob = (io.BytesIO(base64.b64decode(src.split(",", 1)[1])) if src.startswith("data:")
                else report / src)
        with Image.open(blob) as im:
            assert min(im.size) > 50, src[:60]
    assert html.count("<table") >= 3 and html.count("<table") <= html.count("<tr>")

    shot = tmp_path / "shot.png"
    proc = subprocess.run(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         f"--screenshot={shot}", "--window-size=1280,1800", "--enable-logging=stderr", "--v=0",
         (report / "index.html").resolve().as_uri()],
        capture_output=True, text=True, timeout=120, check=False)
    assert shot.exists(), proc.stderr[-2000:]
    console = [ln for ln in proc.stderr.splitlines() if ":CONSOLE" in ln]
    assert not console, console
    im = Image.open(shot).convert("L")
    lo, hi = im.getextrema()
    assert hi - lo > 100  # not a blank page
    hist = im.histogram()
    assert max(hist) < 0.97 * sum(hist)  # more than one colour covers the page


#: Run in the page once it has loaded, driving it with events as a reader would: open every
#: section by a click on its summary, then check what is not visible; sort a table by a
#: click on a header (twice); filter a table; find a query and open its view. What it found
#: is written into the DOM, which chromium --dump-dom prints.
_PROBE = """
window.addEventListener("load", () => {
  const out = {problems: []}, page = document.documentElement.clientWidth;
  const click = (el) => el.dispatchEvent(new MouseEvent("click", {bubbles: true}));
  const details = [...document.querySelectorAll("details")];
  out.closed_at_load = details.filter((d) => !d.open).length;
  out.details = details.length;
  details.forEach((d) => click(d.querySelector(":scope > summary")));
  out.opened = details.filter((d) => d.open).length;
  const hidden = (el) => el.offsetParent === null || getComputedStyle(el).visibility !== "visible";
  const imgs = [...document.images], tables = [...document.querySelectorAll("main table")];
  imgs.forEach((img, i) => {
    const r = img.getBoundingClientRect();
    if (!img.complete || img.naturalWidth === 0) out.problems.push(`img ${i}: not decoded`);
    if (hidden(img) || r.width < 50 || r.height < 50) out.problems.push(`img ${i}: not shown`);
    if (r.right > page + 1) out.problems.push(`img ${i}: wider than the page`);
  });
  tables.forEach((t, i) => {
    const r = t.getBoundingClientRect();
    if (hidden(t) || r.height === 0 || t.rows.length < 2) out.problems.push(`table ${i}: not shown`);
    let box = t.parentElement, clipped = r.right > page + 1;
    for (; box && clipped; box = box.parentElement) {
      if (["auto", "scroll"].includes(getComputedStyle(box).overflowX)) clipped = false;
    }
    if (clipped) out.problems.push(`table ${i}: cut at the page's right edge`);
  });
  out.images = imgs.length;
  out.tables = tables.length;
  // sorting: a click on a header sorts ascending, a second one descending
  const table = document.getElementById(SORT_TABLE);
  const col = [...table.tHead.rows[0].cells].findIndex((th) => th.textContent === SORT_COLUMN);
  const column = () => [...table.tBodies[0].rows].map((tr) => tr.cells[col].textContent);
  out.before = column();
  click(table.tHead.rows[0].cells[col]);
  out.ascending = column();
  click(table.tHead.rows[0].cells[col]);
  out.descending = column();
  // filtering: the box above the table hides the rows that do not hold its text
  const box = table.parentElement.querySelector("div.ctl input");
  box.value = FILTER;
  box.dispatchEvent(new Event("input", {bubbles: true}));
  out.filtered = [...table.tBodies[0].rows].map((tr) => [...tr.cells].map((c) => c.textContent));
  // the per-query view: type the query's id, click the first hit
  const search = document.getElementById("tiap-q-search");
  search.value = QUERY;
  search.dispatchEvent(new Event("input", {bubbles: true}));
  const hit = document.querySelector("#tiap-q-hits button");
  out.hit = hit ? hit.dataset.query : null;
  if (hit) click(hit);
  const rows = (id) => [...document.querySelectorAll(`#${id} tbody tr`)];
  out.values = rows("tiap-q-values").map((tr) => [tr.dataset.system, tr.dataset.target,
    ...[...tr.cells].slice(2).map((td) => [td.dataset.measure, td.textContent])]);
  out.ranks = rows("tiap-q-ranks").map((tr) => [tr.dataset.system, tr.dataset.target,
    [...tr.querySelectorAll("span.rank")].map((s) => [+s.dataset.rank, s.dataset.item,
                                                      s.classList.contains("credited")]),
    tr.textContent]);
  out.view_text = document.getElementById("tiap-q-view").textContent;
  out.keys = KEYS.map((k) => { const v = window.tiapSortKey(k);
                               return Number.isNaN(v) ? "text" : v; });
  out.view_markup = document.querySelectorAll("#tiap-q-view script, #tiap-q-view img, " +
                                              "#tiap-q-view b, #tiap-q-view i").length;
  const pre = document.createElement("pre");
  pre.id = "tiap-probe";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
});
"""


def run_probe(report: Path, tmp_path: Path, probe: str, **consts: str) -> dict:
    """Load a copy of the report with ``probe`` added (its constants set from ``consts``,
    its hash allowed by the page's Content-Security-Policy beside the page's own script) in
    headless Chromium at a laptop's width; return what the probe wrote, with the page's
    console messages under ``console``."""
    for k, v in consts.items():
        probe = probe.replace(k, json.dumps(v))
    page = tmp_path / "probe"
    shutil.copytree(report, page)
    index = page / "index.html"
    text = index.read_text()
    assert text.count("script-src 'sha256-") == 1
    digest = base64.b64encode(hashlib.sha256(probe.encode()).digest()).decode()
    text = text.replace("script-src 'sha256-", f"script-src 'sha256-{digest}' 'sha256-", 1)
    index.write_text(text.replace("</body>", f"<script>{probe}</script></body>"))
    proc = subprocess.run(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1280,900",
         "--enable-logging=stderr", "--v=0", "--virtual-time-budget=10000", "--dump-dom",
         index.resolve().as_uri()],
        capture_output=True, text=True, timeout=180, check=False)
    found = re.search(r'<pre id="tiap-probe">(.*?)</pre>', proc.stdout, re.DOTALL)
    assert found, proc.stderr[-2000:]
    out = json.loads(found.group(1).replace("&lt;", "<").replace("&gt;", ">")
                     .replace("&quot;", '"').replace("&amp;", "&"))
    out["console"] = [ln for ln in proc.stderr.splitlines() if ":CONSOLE" in ln]
    return out


def _key(text: str) -> float:
    return float(text.replace("\u2212", "-"))


def test_page_works_with_events_in_the_browser(report: Path, tmp_path: Path) -> None:
    """In headless Chromium, driven by events: no console message; every section is closed
    at load and opens with a click; a header click sorts by the numbers (ascending, then
    descending); the filter hides the rows without its text; the per-query view of q2
    shows the ranks of its group members and the values of per_query.csv."""
    _chromium()
    html = (report / "index.html").read_text()
    keys = {"[+0.012, +0.046]": 0.029, "(-∞, +0.5]": 0.5, "(-∞, +∞)": None,
            "≤\u00a00.0036": 0.0036, "12.3% [10.1, 14.8]": 12.3, "18.1–95.4%": 56.75,
            "1,981": 1981, "–": None, "raw → source": "text", "0.5000 (1981)": 0.5,
            "\u22120.25": -0.25}
    got = run_probe(report, tmp_path, _PROBE, SORT_TABLE="demo_scores_all",
                    SORT_COLUMN="nDCG@5", FILTER="sys<i>", QUERY="q2", KEYS=list(keys))
    assert got["console"] == []
    # sort keys: an interval by its midpoint, or its finite end; a share by its value
    assert got["keys"] == pytest.approx(list(keys.values()))
    assert got["details"] >= 10 and got["closed_at_load"] == got["details"]
    assert got["opened"] == got["details"]
    assert got["problems"] == [], got["problems"]
    assert got["images"] == html.count("<img") and got["tables"] == html.count("<table")
    # sorting: the same cells, in order of their numbers
    nums = [_key(x) for x in got["before"]]
    assert sorted(nums) != nums  # the test could fail: the rows are not sorted at load
    assert [_key(x) for x in got["ascending"]] == sorted(nums)
    assert [_key(x) for x in got["descending"]] == sorted(nums, reverse=True)
    # filtering: 2 systems x 3 targets; the filter keeps system sys<i>A</i>'s 3 rows
    assert len(got["before"]) == 6
    assert sorted(r[:2] for r in got["filtered"]) == [["sys<i>A</i>", t] for t in
                                                      ("canonical", "raw", "source")]
    # the per-query view of q2: values as per_query.csv has them (4 decimals)
    assert got["hit"] == "q2"
    with open(report.parent / "rescore" / "per_query.csv", newline="") as fh:
        expected = {(r["system"], r["target"], r["measure"]): r["value"]
                    for r in csv.DictReader(fh) if r["query_id"] == "q2"}
    shown = {(s, t, m): v for s, t, *cells in got["values"] for m, v in cells}
    assert len(shown) == len(expected) == 2 * 3 * 5
    for key, value in expected.items():
        assert shown[key] == f"{float(value):.4f}", key
    # ranks, by hand from RUNS: sys<i>A</i> ranks x, t2, f2 for q2: raw's group {t2} at 2;
    # source's {f2, t2}: t2 at 2 (credited, the first), f2 at 3; canonical's {f2} at 3.
    # B ranks f2, x: raw's {t2} not retrieved; source's f2 at 1; canonical's f2 at 1.
    ranks = {(s, t): (spans, text) for s, t, spans, text in got["ranks"]}
    assert ranks[("sys<i>A</i>", "raw")][0] == [[2, "t2", True]]
    assert ranks[("sys<i>A</i>", "source")][0] == [[2, "t2", True], [3, "f2", False]]
    assert ranks[("sys<i>A</i>", "canonical")][0] == [[3, "f2", True]]
    assert ranks[("B", "raw")][0] == [] and "\u2717 (1 member)" in ranks[("B", "raw")][1]
    assert ranks[("B", "source")][0] == [[1, "f2", True]]
    assert ranks[("B", "canonical")][0] == [[1, "f2", True]]
    assert "u2" in got["view_text"] and "Melanie ran a charity race." in got["view_text"]
    assert "When did Melanie run a race?" in got["view_text"]


def test_query_view_shows_untrusted_text_as_text(report: Path, tmp_path: Path) -> None:
    """q1's question and answer hold markup: the view shows it as text, adds no element."""
    _chromium()
    got = run_probe(report, tmp_path, _PROBE, SORT_TABLE="demo_scores_all",
                    SORT_COLUMN="nDCG@5", FILTER="B", QUERY="q1", KEYS=[])
    assert got["console"] == [] and got["hit"] == "q1"
    assert EVIL in got["view_text"] and got["view_markup"] == 0


def test_same_dataset_in_two_folders_gets_folder_labels(report: Path, tmp_path: Path) -> None:
    sens = report.parent / "sens"
    other = tmp_path / "again"
    shutil.copytree(sens, other)
    assert main(["report", str(sens), str(other), "--out", str(tmp_path / "r")]) == 0
    card = json.loads((tmp_path / "r" / "target_card.json").read_text())
    assert [d["dataset"] for d in card["datasets"]] == ["sens/demo", "again/demo"]
    assert (tmp_path / "r" / "tables" / "sens_demo_winner_flips.md").exists()
    assert (tmp_path / "r" / "tables" / "again_demo_winner_flips.md").exists()


def test_latex_symbols_and_labels() -> None:
    assert tex_escape("raw → source, Δ ≥ 0.1, R²") == \
        r"raw $\rightarrow$ source, $\Delta$ $\geq$ 0.1, R$^2$"
    t = ReportTable("my_ds_flips", "T", ["a"])
    assert r"\label{tab:my-ds-flips}" in t.to_latex()


def test_interval_digits_never_hide_a_bound_off_zero() -> None:
    assert ci(0.0123, 0.0456) == "[+0.012, +0.046]"
    # -0.00042 would print as -0.000 with 3 digits: one more digit shows it
    assert ci(-0.0014, -0.00042) == "[-0.0014, -0.0004]"
    assert ci(-0.0014, 0.0) == "[-0.001, +0.000]"  # a bound of exactly 0 stays 0
    assert ci(None, 0.1) == "–"


def test_p_values_at_the_resampling_floor_are_bounds() -> None:
    from tiap.report.render import p_cell

    # 10,000 resamples: the floor is 1/10,001 = 9.999e-05; Holm x36 gives 0.0036
    row = {"p_1": 1 / 10001, "p_1_adjusted": 36 / 10001, "p_2": 6 / 10001,
           "p_2_adjusted": 0.006}
    assert p_cell(row, "p_1", 10000) == "≤\u00a01.0e-04"
    assert p_cell(row, "p_1_adjusted", 10000) == "≤\u00a00.0036"
    assert p_cell(row, "p_2", 10000) == "0.0006"  # 6 sign vectors as large: an estimate
    assert p_cell(row, "p_2_adjusted", 10000) == "0.0060"
    assert p_cell(row, "p_1", None) == "1.0e-04"  # resamples unknown: no claim
    assert p_cell({"p": None}, "p", 10000) == "–"



def test_target_card_carries_its_provenance(report: Path) -> None:
    import hashlib

    card = json.loads((report / "target_card.json").read_text())
    prov = card["provenance"]
    assert prov["report"]["tiap"] and prov["report"]["tiap_commit"]
    [src] = prov["sources"]
    assert src["command_line"][:2] == ["tiap", "sensitivity"]
    assert (src["seed"], src["resamples"]) == (0, 500)
    [resc] = src["rescorings"]
    assert resc["command_line"][:2] == ["tiap", "rescore"]
    assert "queries" in resc["inputs"] and len(resc["inputs"]) >= 3  # queries, items, runs
    for e in resc["inputs"].values():  # each hash is the file's own
        assert hashlib.sha256(Path(e["path"]).read_bytes()).hexdigest() == e["sha256"]
    md = (report / "target_card.md").read_text()  # in short: the commands, seed, resamples
    assert "## Provenance" in md and "Made by `tiap sensitivity " in md
    assert "seed 0, 500 resamples" in md
    md = (report / "target_card_appendix.md").read_text()  # in full: every input's sha256
    assert "## Provenance" in md and "tiap rescore --items" in md
    assert resc["inputs"]["queries"]["sha256"] in md
    html = (report / "index.html").read_text()
    assert 'id="provenance"' in html and resc["inputs"]["queries"]["sha256"] in html


def test_latex_tables_compile_and_fit_a_one_column_article(report: Path, tmp_path: Path,
                                                            compile_tex) -> None:
    """pdflatex (Debian's TeX Live) compiles tables.tex, and every table file alone, in a
    plain one-column article: no table wider than the text (none needed scaling either:
    the wide ones are split into parts), none taller than the page."""
    wide = (report / "tables" / "demo_winner_flips.tex").read_text()
    assert re.search(r"In [2-9] parts, each repeating A vs B, targets\.", wide)  # 13 columns
    for tex in [report / "tables.tex", *sorted((report / "tables").glob("*.tex"))]:
        compile_tex(f"\\input{{{tex.resolve()}}}", tmp_path / tex.stem)


def test_query_view_shows_judged_answers(report: Path, tmp_path: Path) -> None:
    """Answers judged by two configurations (``tiap answers analyze``, given with
    ``--answers``) appear in the per-query view of their query, each verdict as recorded;
    with the answers file changed after the analysis, the view says they are not shown."""
    from tiap.answers import analyze_files

    rows = [{"dataset": "demo", "system": "A", "query_id": "q2", "answer": "in 2023",
             "verdicts": [{"judge": "strict", "kind": "offline", "label": "correct"},
                          {"judge": "lenient", "kind": "offline", "label": "correct"}]},
            {"dataset": "demo", "system": "B", "query_id": "q2", "answer": "a race",
             "verdicts": [{"judge": "strict", "kind": "offline", "label": "wrong"}]}]
    answers = _jsonl(tmp_path / "answers.jsonl", rows)
    analyze_files(str(answers), str(tmp_path / "analysis"), resamples=100)
    assert main(["report", str(report.parent / "sens"), "--answers", str(tmp_path / "analysis"),
                 "--out", str(tmp_path / "r")]) == 0
    html = (tmp_path / "r" / "index.html").read_text()
    [block] = re.findall(r'<script type="application/json" id="tiap-query-data">(.*?)</script>',
                         html, re.DOTALL)
    [rec] = json.loads(block)
    assert rec["answer_systems"] == ["A", "B"] and rec["judges"] == ["strict", "lenient"]
    q2 = next(q for q in rec["queries"] if q["id"] == "q2")
    assert q2["jv"] == [[0, "in 2023", ["correct", "correct"]], [1, "a race", ["wrong", None]]]
    if shutil.which("chromium") is not None or os.environ.get("TIAP_REQUIRE_BROWSER"):
        _chromium()
        got = run_probe(tmp_path / "r", tmp_path / "b", _PROBE, SORT_TABLE="demo_scores_all",
                        SORT_COLUMN="nDCG@5", FILTER="B", QUERY="q2", KEYS=[])
        assert got["console"] == []
        assert "Ain 2023correctcorrect" in got["view_text"]
        assert "Ba racewrongnot judged" in got["view_text"]
    # the answers file changed since the analysis: not shown, and the notes say why
    answers.write_text(answers.read_text().replace("in 2023", "in 2024"))
    assert main(["report", str(report.parent / "sens"), "--answers", str(tmp_path / "analysis"),
                 "--out", str(tmp_path / "r2")]) == 0
    html = (tmp_path / "r2" / "index.html").read_text()
    [block] = re.findall(r'<script type="application/json" id="tiap-query-data">(.*?)</script>',
                         html, re.DOTALL)
    [rec] = json.loads(block)
    assert "jv" not in json.dumps(rec) and "answers of" in rec["notes"][0]
    assert "sha256" in rec["notes"][0]


def test_no_query_view(report: Path, tmp_path: Path) -> None:
    """--no-query-view: no per-query data and no view (no store or run is read); the rest
    of the page, the chart's intervals included, is there."""
    assert main(["report", str(report.parent / "sens"), "--no-query-view", "--out",
                 str(tmp_path / "r")]) == 0
    html = (tmp_path / "r" / "index.html").read_text()
    assert 'id="tiap-query-data"' not in html and 'id="queries"' not in html
    assert 'id="summary"' in html and "95% t interval of the mean" in html
    assert "not drawn" not in html
