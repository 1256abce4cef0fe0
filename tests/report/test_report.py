"""``tiap report``: files present, untrusted text escaped everywhere, the target card, and
a headless-Chromium screenshot that is not blank and has no console error."""

from __future__ import annotations

import base64
import csv
import io
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tiap.cli.main import main
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
    assert "<script" not in html.lower()  # no script at all, escaped or ours
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


def test_chromium_screenshot_not_blank_no_console_errors(report: Path, tmp_path: Path) -> None:
    from PIL import Image

    if shutil.which("chromium") is None:
        if os.environ.get("TIAP_REQUIRE_BROWSER"):  # CI (.ci/run) installs it
            pytest.fail("TIAP_REQUIRE_BROWSER is set but chromium is not installed")
        pytest.skip("chromium is not installed (Debian: apt-get install chromium)")
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
    # what the browser laid out: every figure decoded and shown at a size, within the page;
    # every table shown with rows (a wide one may scroll in its own box, never be hidden)
    layout = _browser_layout(report, tmp_path)
    assert layout["images"] == len(figures) and layout["tables"] == html.count("<table")
    assert layout["problems"] == [], layout["problems"]


#: Run in the page once it has loaded: what is not visible, written into the DOM.
_VISIBILITY_PROBE = """<script>
window.addEventListener("load", () => {
  const problems = [], page = document.documentElement.clientWidth;
  const hidden = (el) => el.offsetParent === null || getComputedStyle(el).visibility !== "visible";
  const imgs = [...document.images], tables = [...document.querySelectorAll("table")];
  imgs.forEach((img, i) => {
    const r = img.getBoundingClientRect();
    if (!img.complete || img.naturalWidth === 0) problems.push(`img ${i}: not decoded`);
    if (hidden(img) || r.width < 50 || r.height < 50) problems.push(`img ${i}: not shown`);
    if (r.right > page + 1) problems.push(`img ${i}: wider than the page`);
  });
  tables.forEach((t, i) => {
    const r = t.getBoundingClientRect();
    if (hidden(t) || r.height === 0 || t.rows.length < 2) problems.push(`table ${i}: not shown`);
    let box = t.parentElement, clipped = r.right > page + 1;
    for (; box && clipped; box = box.parentElement) {
      if (["auto", "scroll"].includes(getComputedStyle(box).overflowX)) clipped = false;
    }
    if (clipped) problems.push(`table ${i}: cut at the page's right edge`);
  });
  const out = document.createElement("pre");
  out.id = "tiap-probe";
  out.textContent = JSON.stringify({images: imgs.length, tables: tables.length, problems});
  document.body.appendChild(out);
});
</script>"""


def _browser_layout(report: Path, tmp_path: Path) -> dict:
    """Load a copy of the report, with :data:`_VISIBILITY_PROBE` added (and allowed by the
    page's Content-Security-Policy), in headless Chromium at a laptop's width and read what
    the probe found."""
    page = tmp_path / "probe"
    shutil.copytree(report, page)
    index = page / "index.html"
    text = index.read_text()
    assert text.count("default-src 'none';") == 1  # the page runs no script of its own
    text = text.replace("default-src 'none';", "default-src 'none'; script-src 'unsafe-inline';")
    index.write_text(text.replace("</body>", _VISIBILITY_PROBE + "</body>"))
    proc = subprocess.run(
        ["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1280,900",
         "--virtual-time-budget=10000", "--dump-dom", index.resolve().as_uri()],
        capture_output=True, text=True, timeout=120, check=False)
    found = re.search(r'<pre id="tiap-probe">(.*?)</pre>', proc.stdout, re.S)
    assert found, proc.stderr[-2000:]
    return json.loads(found.group(1).replace("&quot;", '"').replace("&amp;", "&"))


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
