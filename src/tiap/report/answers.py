"""The report's "Answers and judges" section and its part of the target card.

From an output folder of ``tiap answers analyze`` (:func:`tiap.answers.write_answer_analysis`):
the judge configurations, accuracy per system and configuration (Wilson interval; the
accuracy over all answers bounded where some are unscored), the rankings and the winner
flips across judge configurations, agreement with human labels, the variance components and
the run-to-run noise band.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tiap.io import iter_csv
from tiap.provenance import input_entry, read_manifest
from tiap.report.load import num, truth
from tiap.report.render import ReportTable, ci, f4, md_escape

__all__ = ["AnswersDir", "answers_card", "answers_card_md", "load_answers_dir"]


class AnswersDir:
    """An output folder of ``tiap answers analyze``: its manifest and tables."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.manifest = read_manifest(self.path, step="answers analysis")
        self._rows: dict[str, list[dict[str, str]]] = {}

    def rows(self, name: str) -> list[dict[str, str]]:
        if name not in self._rows:
            it = iter_csv(self.path / f"{name}.csv")
            _, head = next(it)
            self._rows[name] = [dict(zip(head, r, strict=True)) for _, r in it]
        return self._rows[name]

    @property
    def judges(self) -> Mapping[str, Mapping[str, Any]]:
        return self.manifest.get("judges") or {}


def load_answers_dir(path: str | Path) -> AnswersDir:
    """The folder ``path`` of ``tiap answers analyze`` (refused if it is another step's)."""
    return AnswersDir(path)


def _pct(x: object) -> str:
    v = num(x)
    return "–" if v is None else f"{100 * v:.1f}"


def _all_answers(r: Mapping[str, str]) -> str:
    """The accuracy over all answers: exact, or the interval unscored answers leave."""
    if num(r["accuracy_all"]) is not None:
        return _pct(r["accuracy_all"])
    lo, hi = num(r["accuracy_all_lower"]), num(r["accuracy_all_upper"])
    return "–" if lo is None or hi is None else f"[{_pct(lo)}, {_pct(hi)}]"


def section_tables(ad: AnswersDir, slug: str) -> list[ReportTable]:
    """The section's tables, in order."""
    out: list[ReportTable] = []
    t = ReportTable(f"answers_{slug}_judges", "Judge configurations (model, prompt, "
                    "decoding, run)", ["judge", "kind", "model", "prompt", "sha256",
                                       "temperature", "run"],
                    caption="sha256: the first 12 hex digits of the prompt template file's "
                    "sha256; – where the source does not record it.")
    for name, c in ad.judges.items():
        t.add([name, c.get("kind", "–"), c.get("model") or "–", c.get("prompt") or "–",
               (c.get("prompt_sha256") or "–")[:12], f4(c.get("temperature"), 2),
               c.get("run", 0)])
    out.append(t)
    t = ReportTable(f"answers_{slug}_accuracy", "Accuracy (%) per system and judge "
                    "configuration", ["system", "judge", "n scored", "accuracy", "95% CI",
                                      "over all answers"],
                    caption="Accuracy over the answers the configuration scored, with its "
                    "Wilson 95% interval. Over all answers it is exact when every answer was "
                    "scored, else the interval [every unscored answer wrong, every one "
                    "right].", key=2)
    for r in ad.rows("accuracy"):
        if r["category"] == "all":
            lo, hi = num(r["wilson_low"]), num(r["wilson_high"])
            t.add([r["system"], r["judge"], r["n_scored"], _pct(r["accuracy"]),
                   "–" if lo is None or hi is None else f"[{_pct(lo)}, {_pct(hi)}]",
                   _all_answers(r)])
    out.append(t)
    flips = [r for r in ad.rows("judge_flips") if truth(r["flip"])]
    opts = ad.manifest.get("options") or {}
    t = ReportTable(f"answers_{slug}_flips", "Winner flips across judge configurations",
                    ["A vs B", "judges", "n", "gap 1 [CI]", "gap 2 [CI]", "p adj 1",
                     "p adj 2", "significant", "headline"],
                    caption=f"Gap: accuracy of A minus B on the questions both answered and "
                    f"both configurations scored; paired sign-flip tests, "
                    f"{opts.get('correction', 'holm')}-adjusted over every pair and "
                    f"configuration; highlighted: significant flips. "
                    f"{len(flips)} flips of {len(ad.rows('judge_flips'))} comparisons.",
                    key=2)
    for r in flips:
        t.add([f"{r['system_a']} vs {r['system_b']}", f"{r['judge_1']} → {r['judge_2']}",
               r["n_shared"], f"{f4(r['gap_1'])} {ci(r['ci_1_low'], r['ci_1_high'])}",
               f"{f4(r['gap_2'])} {ci(r['ci_2_low'], r['ci_2_high'])}",
               f4(r["p_1_adjusted"]), f4(r["p_2_adjusted"]),
               "yes" if truth(r["significant_flip"]) else "no",
               "yes" if truth(r["headline"]) else "no"], mark=truth(r["significant_flip"]))
    out.append(t)
    human = [r for r in ad.rows("agreement") if "human" in (r["kind_1"], r["kind_2"])]
    if human:
        t = ReportTable(f"answers_{slug}_human", "Agreement with human labels",
                        ["judge", "human", "n", "ambiguous left out", "agreement",
                         "kappa [CI]"],
                        caption="On the answers both labelled; ambiguous human labels are "
                        "left out and counted.")
        for r in human:
            j, h = ((r["judge_1"], r["judge_2"]) if r["kind_2"] == "human"
                    else (r["judge_2"], r["judge_1"]))
            t.add([j, h, r["n"], r["n_ambiguous"], f4(r["agreement"], 3),
                   f"{f4(r['kappa'], 3)} {ci(r['kappa_low'], r['kappa_high'])}"])
        out.append(t)
    var = [r for r in ad.rows("variance") if num(r["share"]) is not None]
    if var:
        t = ReportTable(f"answers_{slug}_variance", "Variance components across the crossed "
                        "factors", ["level", "component", "variance", "share [95% CI]",
                                    "questions"],
                        caption="Random-effects ANOVA of the fully crossed design (expected "
                        "mean squares), intervals by bootstrap over questions; question: "
                        "per-question correctness, score: system accuracies.", key=2)
        for r in var:
            t.add([r["level"], r["component"], f4(r["variance"]),
                   f"{_pct(r['share'])}% [{_pct(r['share_low'])}, {_pct(r['share_high'])}]",
                   r["n_queries"]])
        out.append(t)
    noise = [r for r in ad.rows("noise") if num(r["n_runs"]) and (num(r["n_runs"]) or 0) > 1]
    if noise:
        t = ReportTable(f"answers_{slug}_noise", "Run-to-run noise band",
                        ["family", "system", "runs", "accuracies", "SD [CI]",
                         "answers changed"],
                        caption="One configuration family (model, prompt, decoding) asked "
                        "several times: the spread of its accuracy and the share of answers "
                        "whose verdict changed between runs.", key=2)
        for r in noise:
            t.add([r["family"], r["system"], r["n_runs"], r["accuracies"],
                   f"{f4(r['accuracy_sd'])} {ci(r['sd_low'], r['sd_high'])}",
                   f"{r['n_changed']} of {r['n_compared']}"])
        out.append(t)
    return out


def answers_card(ad: AnswersDir) -> dict[str, Any]:
    """The target card's entry for one analysis: the judge configurations, accuracy range per
    system across them, the flips, and the input."""
    acc: dict[str, list[float]] = {}
    for r in ad.rows("accuracy"):
        v = num(r["accuracy"])
        if r["category"] == "all" and v is not None and ad.judges.get(
                r["judge"], {}).get("kind") != "human":
            acc.setdefault(r["system"], []).append(v)
    flips = ad.rows("judge_flips")
    return {
        "source": str(ad.path),
        "judges": {k: dict(v) for k, v in ad.judges.items()},
        "accuracy_range": {s: [min(v), max(v)] for s, v in acc.items()},
        "judge_flips": {"comparisons": len(flips),
                        "flips": sum(truth(r["flip"]) for r in flips),
                        "significant": sum(truth(r["significant_flip"]) for r in flips),
                        "headline": sum(truth(r["headline"]) for r in flips)},
        "input": input_entry(ad.path / "manifest.json"),
    }


def answers_card_md(entries: Sequence[Mapping[str, Any]]) -> list[str]:
    """The card's "Answers and judges" section (Markdown lines)."""
    out = ["## Answers and judges", ""]
    for e in entries:
        f = e["judge_flips"]
        out += [f"Source: {md_escape(e['source'])}. A judge configuration is (model, prompt, "
                "decoding, run).", "",
                "| judge | kind | model | prompt | sha256 | temperature | run |",
                "|---|---|---|---|---|---|---|"]
        for name, c in e["judges"].items():
            out.append(f"| {md_escape(name)} | {md_escape(c.get('kind'))} | "
                       f"{md_escape(c.get('model') or '–')} | "
                       f"{md_escape(c.get('prompt') or '–')} | "
                       f"{md_escape((c.get('prompt_sha256') or '–')[:12])} | "
                       f"{f4(c.get('temperature'), 2)} | {c.get('run', 0)} |")
        out += ["", "| system | accuracy across judge configurations |", "|---|---|"]
        out += [f"| {md_escape(s)} | {_pct(lo)}% to {_pct(hi)}% |"
                for s, (lo, hi) in e["accuracy_range"].items()]
        out += ["", f"Winner flips across judge configurations: {f['flips']} of "
                f"{f['comparisons']} comparisons, {f['significant']} significant after "
                f"correction, {f['headline']} headline.", ""]
    return out
