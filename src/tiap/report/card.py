"""The target card: what a benchmark report should state about its scoring targets.

For every dataset: the target definitions used (the specs recorded by ``tiap rescore``), the
credit mode, target-set sizes and coverage per system, the shared-subset sizes the
comparisons used, and every winner flip (all measures), with the design recommendations
that change with the target. Written as ``target_card.json`` and ``target_card.md``.

The statistics block (:func:`tiap.report.procedure.statistics`) states the procedure the
sensitivity folder used: the sign-flip test, resamples, seed, alpha, the correction and the
family it runs over, the practical threshold, the interval, and what *significant* and
*headline* mean; every flip carries its adjusted p-values, effect sizes and ``headline`` flag.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tiap.provenance import peek_manifest, source_commit, versions
from tiap.report.answers import answers_card_md
from tiap.report.load import SensitivityDir, num, truth
from tiap.report.procedure import (
    DZ_REASON,
    after_correction,
    correction_name,
    effect_pair,
    number,
    statistics,
)
from tiap.report.render import FLOOR_NOTE, ci, f4, md_escape, p_cell
from tiap.sensitivity.flips import gap_text

__all__ = ["CREDIT_MODES", "card_json", "card_markdown"]

CARD_SCHEMA_VERSION = 1

CREDIT_MODES = {
    "group": "group credit (the paper's scorer): walking the top k, an item earns gain 1 when "
             "it belongs to at least one evidence group not yet matched, and then matches every "
             "unmatched group it belongs to; later members of a matched group earn 0. Recall = "
             "matched groups / groups; the ideal DCG has min(groups, k) ones.",
    "set": "set credit (trec_eval semantics): the relevant set is the union of the groups and "
           "every member is relevant; the ideal DCG has min(|set|, k) ones.",
}

_FLOATS = ("gap_1", "gap_2", "gap_1_lower", "gap_1_upper", "gap_2_lower", "gap_2_upper",
           "ci_1_low", "ci_1_high", "ci_2_low", "ci_2_high", "p_1", "p_2", "p_1_adjusted",
           "p_2_adjusted", "effect_1", "effect_2", "moved_1", "moved_2", "mde_1", "mde_2")


def _bool_or_none(r: dict[str, str], key: str) -> bool | None:
    """A boolean column, ``None`` when the folder predates it."""
    v = r.get(key)
    return None if v in (None, "") else truth(v)


def _flip_json(r: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {k: r[k] for k in ("measure", "system_a", "system_b", "target_1",
                                             "target_2")}
    out["n_shared"] = int(num(r["n_shared"]) or 0)
    out.update({k: num(r.get(k)) for k in _FLOATS})
    out["flip"] = True
    out["significant_flip"] = truth(r["significant_flip"])
    out["practical"] = _bool_or_none(r, "practical")
    out["headline"] = _bool_or_none(r, "headline")
    return out


def _ci(f: dict[str, Any], side: int) -> str:
    """A card flip's interval: an empty end of a tested gap is unbounded."""
    return ci(f[f"ci_{side}_low"], f[f"ci_{side}_high"], open_ends=f[f"p_{side}"] is not None)


def card_json(dirs: Sequence[SensitivityDir]) -> dict[str, Any]:
    datasets = []
    for sd in dirs:
        for ds in sd.datasets:
            name = ds["name"]
            flips = [_flip_json(r) for r in sd.rows("winner_flips", name) if truth(r["flip"])]
            pairs = {}
            for r in sd.rows("winner_flips", name):
                key = (r["system_a"], r["system_b"], r["target_1"], r["target_2"])
                pairs.setdefault(key, int(num(r["n_shared"]) or 0))
            changes = [{"group": r["group"], "measure": r["measure"],
                        "comparison": r["comparison"], "preferences": r["preferences"],
                        "significant_change": (truth(r["significant_change"])
                                               if r["significant_change"] else None)}
                       for r in sd.rows("design_changes", name) if truth(r["changes"])]
            credit = ds.get("credit", "group")
            datasets.append({
                "dataset": sd.labels.get(name, name),
                "queries": ds.get("queries"),
                "n_queries": ds.get("n_queries"),
                "credit": {"mode": credit, "definition": CREDIT_MODES.get(credit, "")},
                "targets": ds.get("targets", []),
                "measures": ds.get("measures", []),
                "primary_measure": ds.get("primary_measure"),
                "coverage": {s: {"scored": v.get("scored"), "targets": v.get("coverage"),
                                 "zero_target_queries": v.get("zero_target_queries"),
                                 "possibly_empty_queries": v.get("possibly_empty_queries"),
                                 "shared_all_targets": v.get("shared_all_targets"),
                                 "shared_all_targets_in_universe": v.get(
                                     "shared_all_targets_in_universe"),
                                 "rescore_dir": v.get("rescore_dir")}
                             for s, v in (ds.get("systems") or {}).items()},
                "shared_subsets": {
                    "all_systems_all_targets": ds.get("shared_all_systems_all_targets"),
                    "pairs": [{"system_a": a, "system_b": b, "target_1": t1, "target_2": t2,
                               "n_shared": n} for (a, b, t1, t2), n in pairs.items()],
                },
                "winner_flips": flips,
                "design_changes": changes,
            })
    opts = dirs[0].manifest.get("options", {}) if dirs else {}
    per_source = [statistics(sd.manifest.get("options", {})) for sd in dirs]
    return {
        "schema_version": CARD_SCHEMA_VERSION,
        "kind": "tiap target card",
        "statistics": statistics(opts),
        **({"statistics_per_source": {str(sd.path): st for sd, st in
                                      zip(dirs, per_source, strict=True)}}
           if any(st != per_source[0] for st in per_source) else {}),
        "sources": [str(sd.path) for sd in dirs],
        "datasets": datasets,
        "provenance": provenance(dirs),
    }


def _made_by(man: Mapping[str, Any]) -> dict[str, Any]:
    v = man.get("versions") or {}
    return {"command": man.get("command"), "command_line": man.get("command_line"),
            "created": man.get("created"), "tiap": v.get("tiap"),
            "tiap_commit": v.get("tiap_commit", "not recorded")}


def provenance(dirs: Sequence[SensitivityDir]) -> dict[str, Any]:
    """What a reader needs to reproduce the card: the TIAP version and commit of this report,
    and per Stage III folder the command that made it, its seed and resamples, and the
    rescorings it read with every input's sha256 (queries, stores, runs) and the dataset
    files the stores were built from (from the stores' manifests, where they have one)."""
    out: dict[str, Any] = {"report": {"tiap": versions()["tiap"],
                                      "tiap_commit": source_commit()}, "sources": []}
    for sd in dirs:
        opts = sd.manifest.get("options") or {}
        src: dict[str, Any] = {"sensitivity": str(sd.path), **_made_by(sd.manifest),
                               "seed": opts.get("seed"), "resamples": opts.get("resamples"),
                               "rescorings": []}
        for key, entry in (sd.manifest.get("inputs") or {}).items():
            if not (key.endswith("rescore/manifest.json") or key.endswith(":manifest.json")):
                continue
            rpath = Path(entry["path"])
            rman = peek_manifest(rpath)
            if rman is None:
                src["rescorings"].append({"manifest": str(rpath), "note": "not readable"})
                continue
            inputs = {k: {"path": e.get("path"), "sha256": e.get("sha256")}
                      for k, e in (rman.get("inputs") or {}).items()}
            datasets: dict[str, dict[str, Any]] = {}
            for k, e in inputs.items():
                if not k.startswith("items") or not e["path"]:
                    continue
                sman = peek_manifest(Path(e["path"]).parent) or {}
                ds = sman.get("dataset") or {}
                for f in ds.get("files") or []:
                    datasets.setdefault(f"{ds.get('id')}:{f.get('path')}",
                                        {"dataset": ds.get("id"), "file": f.get("path"),
                                         "sha256": f.get("sha256")})
            src["rescorings"].append({"manifest": str(rpath), **_made_by(rman),
                                      "inputs": inputs, "dataset_files": list(datasets.values())})
        out["sources"].append(src)
    return out


def provenance_md(prov: Mapping[str, Any]) -> list[str]:
    """The card's provenance section as Markdown lines."""
    rep = prov["report"]
    out = ["## Provenance", "",
           f"- This card: TIAP {md_escape(rep['tiap'])}, commit "
           f"`{md_escape(rep['tiap_commit'])}`."]
    for src in prov["sources"]:
        cl = " ".join(src.get("command_line") or []) or "command line not recorded"
        when = f"{src['created']}; " if src.get("created") else ""
        out += [f"- Stage III `{md_escape(src['sensitivity'])}`: `{md_escape(cl)}` "
                f"({md_escape(when)}TIAP {md_escape(src.get('tiap'))}, commit "
                f"`{md_escape(src.get('tiap_commit'))}`); seed {src.get('seed')}, "
                f"{src.get('resamples')} resamples."]
        for r in src["rescorings"]:
            if "inputs" not in r:
                out.append(f"  - rescoring `{md_escape(r['manifest'])}`: {r['note']}")
                continue
            cl = " ".join(r.get("command_line") or []) or "command line not recorded"
            out.append(f"  - rescoring `{md_escape(r['manifest'])}`: `{md_escape(cl)}`")
            out += [f"    - {md_escape(k)}: `{md_escape(e['path'])}` sha256 "
                    f"`{md_escape(str(e['sha256']))}`" for k, e in r["inputs"].items()]
            out += [f"    - dataset {md_escape(f['dataset'])} file `{md_escape(f['file'])}` "
                    f"sha256 `{md_escape(str(f['sha256']))}`" for f in r["dataset_files"]]
    return [*out, ""]


def _statistics_md(st: dict[str, Any]) -> list[str]:
    if st.get("correction") is None:  # an older folder
        return [f"Statistics (a folder written by an older tiap sensitivity): paired bootstrap "
                f"percentile intervals and paired sign-flip p-values, {st['resamples']} "
                f"resamples, seed {st['seed']}, alpha {number(st['alpha'])}, "
                f"{md_escape(st['correction_method'])}, no minimum effect. A winner flip is a "
                f"{md_escape(st['winner_flip'])}; it is significant when "
                f"{md_escape(st['significant_flip'])}.", ""]
    return ["## Statistics", "",
            f"- Test: {md_escape(st['test'])}; {st['resamples']} resamples, seed {st['seed']}, "
            f"alpha {number(st['alpha'])}.",
            f"- Correction: **{md_escape(correction_name(st))}** "
            f"(`{md_escape(st['correction'])}`: {md_escape(st['correction_method'])})"
            + ("." if st["correction"] == "none" else
               f" over each family: {md_escape(st['family'])}."),
            f"- Practical threshold of a headline: **{md_escape(st.get('threshold'))}** "
            f"(min_dz {number(st.get('min_dz'))}, min_effect {number(st['min_effect'])} in "
            "the measure's units"
            + (f"; {md_escape(DZ_REASON)}" if num(st.get("min_dz")) else "") + ").",
            f"- Interval: {md_escape(st['interval'])}.",
            f"- A winner flip is a {md_escape(st['winner_flip'])}; it is **significant** "
            f"when {md_escape(st['significant_flip'])}; **practical** when "
            f"{md_escape(st['practical'])}; a **headline** when {md_escape(st['headline'])}.",
            f"- Effect sizes: {md_escape(st['effect_size'])}.", ""]


def card_markdown(card: dict[str, Any]) -> str:
    st = card["statistics"]
    res = st.get("resamples")
    if not card["datasets"] and card.get("answers"):  # a report of answers alone
        out = ["# Target card", "", "No retrieval targets were analysed: this card states the "
               "judge configurations of fixed answers and what they change.", "",
               *answers_card_md(card["answers"])]
        if card.get("provenance"):
            out += provenance_md(card["provenance"])
        return "\n".join(out)
    out = ["# Target card", "",
           "Which stored forms received retrieval credit, how many queries each target covers, "
           "on which shared subsets systems were compared, and where the winner depends on "
           "the target.", "", *_statistics_md(st)]
    for src, other in (card.get("statistics_per_source") or {}).items():
        if other != st:
            out += [f"Statistics of {md_escape(src)} (they differ from the above):", "",
                    *_statistics_md(other)]
    for ds in card["datasets"]:
        out += [f"## {md_escape(ds['dataset'])}", ""]
        q = ds.get("queries") or {}
        out.append(f"- Queries: {md_escape(q.get('path', '–'))} (sha256 "
                   f"{md_escape(str(q.get('sha256', '–'))[:16])}…), {ds.get('n_queries')} "
                   "queries in the universe")
        out.append(f"- Credit mode: **{md_escape(ds['credit']['mode'])}**: "
                   f"{md_escape(ds['credit']['definition'])}")
        out.append(f"- Measures: {md_escape(', '.join(ds.get('measures', [])))} (primary "
                   f"{md_escape(ds.get('primary_measure'))})")
        out += ["", "### Targets", "", "| target | spec | description |", "|---|---|---|"]
        for t in ds["targets"]:
            spec = md_escape(t.get("spec", t.get("qrels")))
            out.append(f"| {md_escape(t.get('name'))} | {spec} | "
                       f"{md_escape(t.get('description', ''))} |")
        tnames = [t.get("name") for t in ds["targets"]]
        out += ["", "### Target-set sizes and coverage", "",
                "| system | target | defined queries | zero-target | mean groups | mean members |",
                "|---|---|---|---|---|---|"]
        for s, c in ds["coverage"].items():
            for t in tnames:
                cov = (c.get("targets") or {}).get(t, {})
                zero = (c.get("zero_target_queries") or {}).get(t, "–")
                maybe = (c.get("possibly_empty_queries") or {}).get(t, 0)
                if maybe and isinstance(zero, int):  # the lineage may leave more empty
                    zero = f"{zero} to {zero + maybe}"
                # under partial lineage a query may be in the universe with its value only
                # bounded: "defined" counts them all, and says how many are exact
                defined = (f"{cov['in_universe']} of {c.get('scored')} ({cov['exact']} exact)"
                           if "in_universe" in cov else
                           f"{cov.get('defined', '–')} of {c.get('scored')}")
                out.append(f"| {md_escape(s)} | {md_escape(t)} | {defined} | {zero} | "
                           f"{f4(cov.get('mean_groups'), 2)} | "
                           f"{f4(cov.get('mean_members'), 2)} |")
        lineage = [(s, t, cov) for s, c in ds["coverage"].items() for t in tnames
                   if "in_universe" in (cov := (c.get("targets") or {}).get(t, {}))]
        if lineage:
            out += ["", ("Mean groups and members are over the exact queries. A query whose "
                         "target the lineage may leave empty is counted as defined and in the "
                         "zero-target range."), "",
                    ("Where lineage is partial or inferred, the queries in a target's "
                         "universe are exact (determined by the lineage), inferred (resting "
                         "on lineage the import assumed, e.g. `--infer-from-text`) or bounded "
                         "(an interval over every consistent lineage):"), "",
                    "| system | target | in universe | exact | inferred | bounded |",
                    "|---|---|---|---|---|---|"]
            out += [f"| {md_escape(s)} | {md_escape(t)} | {cov['in_universe']} | "
                    f"{cov['exact']} | {cov['inferred']} | {cov['bounded']} |"
                    for s, t, cov in lineage]
        out += ["", "### Shared subsets", ""]
        for s, c in ds["coverage"].items():
            if c.get("shared_all_targets_in_universe") is not None:
                out.append(f"- {md_escape(s)}: {c['shared_all_targets_in_universe']} queries "
                           f"in every target's universe, {c.get('shared_all_targets')} of them "
                           "exact under every target (winner flips, system means and change "
                           "tables bound the others; the other tables use the exact ones)")
            else:
                out.append(f"- {md_escape(s)}: {c.get('shared_all_targets')} queries defined "
                           "under every target")
        out.append(f"- every system under every target: "
                   f"{ds['shared_subsets']['all_systems_all_targets']}")
        pairs = ds["shared_subsets"]["pairs"]
        if pairs:
            out += ["", "| system A | system B | targets | n shared |", "|---|---|---|---|"]
            for p in pairs:
                out.append(f"| {md_escape(p['system_a'])} | {md_escape(p['system_b'])} | "
                           f"{md_escape(p['target_1'])} vs {md_escape(p['target_2'])} | "
                           f"{p['n_shared']} |")
        out += ["", "### Winner flips", ""]
        if not ds["winner_flips"]:
            out.append("No winner flip: every pair of systems keeps its winner under every "
                       "pair of targets (on every measure).")
        elif st.get("correction") is None:  # an older folder
            out += ["| measure | A vs B | targets | n | gap 1 [CI] | gap 2 [CI] | p 1 | p 2 | "
                    "significant |", "|---|---|---|---|---|---|---|---|---|"]
            for f in ds["winner_flips"]:
                out.append(
                    f"| {md_escape(f['measure'])} | {md_escape(f['system_a'])} vs "
                    f"{md_escape(f['system_b'])} | {md_escape(f['target_1'])} → "
                    f"{md_escape(f['target_2'])} | {f['n_shared']} | {gap_text(f, 1)} "
                    f"{ci(f['ci_1_low'], f['ci_1_high'])} | {gap_text(f, 2)} "
                    f"{ci(f['ci_2_low'], f['ci_2_high'])} | {p_cell(f, 'p_1', res)} | "
                    f"{p_cell(f, 'p_2', res)} | {'yes' if f['significant_flip'] else 'no'} |")
        else:
            n_sig = sum(1 for f in ds["winner_flips"] if f["significant_flip"])
            n_head = sum(1 for f in ds["winner_flips"] if f.get("headline"))
            out += [f"{len(ds['winner_flips'])} winner flips, {n_sig} significant "
                    f"{md_escape(after_correction(st))} at alpha {number(st['alpha'])}, "
                    f"{n_head} headline (practical threshold: "
                    f"{md_escape(st.get('threshold'))}). p adj: "
                    f"adjusted p-values; d_z: paired effect size of each gap. {FLOOR_NOTE}.", "",
                    "| measure | A vs B | targets | n | gap 1 [CI] | gap 2 [CI] | p adj 1 | "
                    "p adj 2 | d_z 1 / 2 | significant | headline |",
                    "|---|---|---|---|---|---|---|---|---|---|---|"]
            for f in ds["winner_flips"]:
                head = ("yes" if f.get("headline") else "no (below threshold)"
                        if f["significant_flip"] else "no")
                out.append(
                    f"| {md_escape(f['measure'])} | {md_escape(f['system_a'])} vs "
                    f"{md_escape(f['system_b'])} | {md_escape(f['target_1'])} → "
                    f"{md_escape(f['target_2'])} | {f['n_shared']} | {gap_text(f, 1)} "
                    f"{_ci(f, 1)} | {gap_text(f, 2)} {_ci(f, 2)} | "
                    f"{p_cell(f, 'p_1_adjusted', res)} | "
                    f"{p_cell(f, 'p_2_adjusted', res)} | {effect_pair(f)} | "
                    f"{'yes' if f['significant_flip'] else 'no'} | {head} |")
        if ds["design_changes"]:
            out += ["", "### Design recommendations that change with the target", "",
                    "| group | measure | comparison | preferred per target | significant |",
                    "|---|---|---|---|---|"]
            for c in ds["design_changes"]:
                sig = c["significant_change"]
                out.append(f"| {md_escape(c['group'])} | {md_escape(c['measure'])} | "
                           f"{md_escape(c['comparison'])} | {md_escape(c['preferences'])} | "
                           f"{'–' if sig is None else 'yes' if sig else 'no'} |")
        out.append("")
    if card.get("provenance"):
        out += provenance_md(card["provenance"])
    if card.get("answers"):
        out += ["", *answers_card_md(card["answers"])]
    return "\n".join(out)
