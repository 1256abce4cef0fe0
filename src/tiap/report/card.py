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
from tiap.report.render import FLOOR_NOTE, ci, f4, md_escape, mean_text, p_cell
from tiap.sensitivity.flips import UNDETERMINED, flip_undetermined, gap_text

__all__ = ["CARD_FILES", "CREDIT_MODES", "appendix_markdown", "card_json", "card_markdown"]

CARD_SCHEMA_VERSION = 1

#: The card's files: the one-screen card, its appendix (every table in full), and the JSON
#: that holds everything both say (complete, for tools).
CARD_FILES = ("target_card.md", "target_card_appendix.md", "target_card.json")

CREDIT_MODES = {
    "group": "group credit (the paper's scorer): walking the top k, an item earns gain 1 when "
             "it belongs to at least one evidence group not yet matched, and then matches every "
             "unmatched group it belongs to; later members of a matched group earn 0. Recall = "
             "matched groups / groups; the ideal DCG has min(groups, k) ones.",
    "set": "set credit (trec_eval semantics): the relevant set is the union of the groups and "
           "every member is relevant; the ideal DCG has min(|set|, k) ones.",
}

#: The credit modes in one line each (the card; :data:`CREDIT_MODES` in full in the appendix).
CREDIT_SHORT = {
    "group": "the paper's scorer: an item earns gain 1 for the first evidence group it "
             "matches, later members of that group earn 0; recall counts matched groups",
    "set": "trec_eval's: every member of the union of the groups is relevant",
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
            # partial lineage: a flip under some lineage but not under every one
            open_flips = [{**_flip_json(r), "flip": UNDETERMINED}
                          for r in sd.rows("winner_flips", name)
                          if not truth(r["flip"]) and flip_undetermined(r)]
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
            # each system's mean of the primary measure per target: an interval where partial
            # lineage only bounds it
            means: dict[str, dict[str, Any]] = {}
            for r in sd.rows("system_means", name, measure=ds.get("primary_measure") or ""):
                means.setdefault(r["system"], {})[r["target"]] = {
                    "n": int(num(r["n"]) or 0), "n_exact": int(num(r.get("n_exact")) or 0)
                    if r.get("n_exact") not in (None, "") else None,
                    "mean": num(r["mean"]), "lower": num(r.get("lower")),
                    "upper": num(r.get("upper"))}
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
                    **({"all_systems_all_targets_in_universe": ds[
                        "shared_all_systems_all_targets_in_universe"]}
                       if "shared_all_systems_all_targets_in_universe" in ds else {}),
                    "pairs": [{"system_a": a, "system_b": b, "target_1": t1, "target_2": t2,
                               "n_shared": n} for (a, b, t1, t2), n in pairs.items()],
                },
                "means": means,
                "winner_flips": flips,
                "winner_flips_not_determined": open_flips,
                "undetermined_flips": {m: n for m in ds.get("measures", [])
                                       if (n := sum(f["measure"] == m for f in open_flips))},
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


def appendix_markdown(card: dict[str, Any]) -> str:
    """The card's appendix (``target_card_appendix.md``): every table behind the one-screen
    card, in full: the statistical procedure, target-set sizes and coverage per system and
    target, the shared subset of every pair of systems and targets, every winner flip on every
    measure, the design recommendations that change with the target, and the provenance with
    every input's sha256."""
    st = card["statistics"]
    res = st.get("resamples")
    if not card["datasets"] and card.get("answers"):  # a report of answers alone
        out = ["# Target card: appendix", "", "No retrieval targets were analysed: the card "
               "states the judge configurations of fixed answers and what they change.", "",
               *answers_card_md(card["answers"])]
        if card.get("provenance"):
            out += provenance_md(card["provenance"])
        return "\n".join(out)
    out = ["# Target card: appendix", "",
           f"Every table behind the one-screen card ({CARD_FILES[0]}): which stored forms "
           "received retrieval credit, how many queries each target covers, on which shared "
           "subsets systems were compared, and every winner flip on every measure. "
           f"{CARD_FILES[2]} holds all of it for tools.", "", *_statistics_md(st)]
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
        sub = ds["shared_subsets"]
        out.append(f"- every system under every target: {sub['all_systems_all_targets']}"
                   + (f" exact, {sub['all_systems_all_targets_in_universe']} in every universe"
                      if sub.get("all_systems_all_targets_in_universe") is not None else ""))
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
        if ds.get("winner_flips_not_determined"):
            out += ["", "### Winner flips the lineage does not determine", "",
                    f"{len(ds['winner_flips_not_determined'])} pairs whose gap intervals "
                    "(partial lineage) allow a flip under some lineage but not under every "
                    "one: neither a flip nor no flip.", "",
                    "| measure | A vs B | targets | n | gap 1 | gap 2 |",
                    "|---|---|---|---|---|---|"]
            out += [f"| {md_escape(f['measure'])} | {md_escape(f['system_a'])} vs "
                    f"{md_escape(f['system_b'])} | {md_escape(f['target_1'])} → "
                    f"{md_escape(f['target_2'])} | {f['n_shared']} | {gap_text(f, 1)} | "
                    f"{gap_text(f, 2)} |" for f in ds["winner_flips_not_determined"]]
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


def _coverage_cell(c: Mapping[str, Any], t: str) -> str:
    """A system's coverage of one target on the card: ``n 1981``, the queries defined under
    it; under partial lineage the queries in its universe and how many of them are exact (and
    inferred, where an import assumed the lineage), and the zero-target range where the lineage may leave more targets empty."""
    cov = (c.get("targets") or {}).get(t, {})
    zero = (c.get("zero_target_queries") or {}).get(t)
    maybe = (c.get("possibly_empty_queries") or {}).get(t, 0)
    if "in_universe" in cov:
        n = f"n {cov['in_universe']}, {cov['exact']} exact"
        if cov.get("inferred"):  # resting on lineage an import assumed: counted as such
            n += f", {cov['inferred']} inferred"
    else:
        n = f"n {cov.get('defined', '–')}"
    if isinstance(zero, int) and maybe:
        return f"{n}, zero-target {zero} to {zero + maybe}"
    return n


def _pair_sizes(pairs: Sequence[Mapping[str, Any]]) -> str:
    """``raw vs source 1981; raw vs canonical 1876`` (``1876 to 1981`` where the pairs of
    systems compared on a pair of targets differ)."""
    by: dict[tuple[str, str], list[int]] = {}
    for p in pairs:
        by.setdefault((p["target_1"], p["target_2"]), []).append(int(p["n_shared"]))
    return "; ".join(f"{md_escape(a)} vs {md_escape(b)} {min(ns)}" if min(ns) == max(ns) else
                     f"{md_escape(a)} vs {md_escape(b)} {min(ns)} to {max(ns)}"
                     for (a, b), ns in by.items())


def _flip_counts(flips: Sequence[Mapping[str, Any]], undetermined: int) -> str:
    """``8 flips (6 significant, 4 headline)``, and the flips partial lineage leaves open."""
    n_sig = sum(1 for f in flips if f["significant_flip"])
    n_head = sum(1 for f in flips if f.get("headline"))
    text = f"{len(flips)} flip{'' if len(flips) == 1 else 's'} ({n_sig} significant, " \
           f"{n_head} headline)"
    return text + (f", {undetermined} not determined by the lineage" if undetermined else "")


def _short_provenance(prov: Mapping[str, Any]) -> list[str]:
    rep = prov["report"]
    out = [f"- This card: TIAP {md_escape(rep['tiap'])}, commit "
           f"`{md_escape(rep['tiap_commit'])}`."]
    for src in prov["sources"]:
        cl = " ".join(src.get("command_line") or []) or "command line not recorded"
        out.append(f"- Made by `{md_escape(cl)}`; seed {src.get('seed')}, "
                   f"{src.get('resamples')} resamples.")
        files = [e for r in src["rescorings"] for e in (r.get("inputs") or {}).values()]
        data = {(f["dataset"], f["file"]): f["sha256"] for r in src["rescorings"]
                for f in r.get("dataset_files") or []}
        n_r = len(src["rescorings"])
        out.append(f"- Inputs: {n_r} rescoring{'' if n_r == 1 else 's'} of {len(files)} input "
                   "files (queries, stores, runs), each with its sha256 in the appendix"
                   + "".join(f"; dataset {md_escape(d)} `{md_escape(f)}` sha256 "
                             f"`{md_escape(str(h))[:16]}…`" for (d, f), h in data.items())
                   + ".")
    return out


def card_markdown(card: dict[str, Any]) -> str:
    """The one-screen target card (``target_card.md``): per dataset the targets and the
    credit, the coverage and n of each shared subset, the headline winner flips of the
    primary measure (with the counts of all flips), the judge configurations where answers
    were judged, and the provenance in short. Every table in full is in the appendix
    (:func:`appendix_markdown`); ``target_card.json`` holds everything."""
    st = card["statistics"]
    res = st.get("resamples")
    out = ["# Target card", ""]
    if not card["datasets"] and card.get("answers"):  # a report of answers alone
        out += ["No retrieval targets were analysed: this card states the judge "
                "configurations of fixed answers and what they change.", ""]
    else:
        out += [f"What received retrieval credit, what each target covers, and where the "
                f"winner depends on the target. Every table in full: {CARD_FILES[1]}; "
                f"everything for tools: {CARD_FILES[2]}.", ""]
    for ds in card["datasets"]:
        q = ds.get("queries") or {}
        primary = ds.get("primary_measure")
        out += [f"## {md_escape(ds['dataset'])}", "",
                f"- Queries: `{md_escape(Path(str(q.get('path', '–'))).name)}` (sha256 "
                f"`{md_escape(str(q.get('sha256', '–'))[:16])}…`), {ds.get('n_queries')} queries; "
                f"primary measure **{md_escape(primary)}** (of "
                f"{len(ds.get('measures', []))}).",
                f"- Credit: **{md_escape(ds['credit']['mode'])}**: "
                f"{md_escape(CREDIT_SHORT.get(ds['credit']['mode'], 'see the appendix'))} "
                "(in full: appendix).", "",
                "| target | credits (spec) | what it credits |", "|---|---|---|"]
        out += [f"| {md_escape(t.get('name'))} | `{md_escape(t.get('spec', t.get('qrels')))}` "
                f"| {md_escape(t.get('description', ''))} |" for t in ds["targets"]]
        tnames = [t.get("name") for t in ds["targets"]]
        out += ["", f"Mean {md_escape(primary)} per target (`[lower, upper]`: partial lineage "
                "only bounds it), with n, the queries defined under the target (the others "
                "are zero-target: no evidence the target can credit); every target: the "
                "system's shared subset.", "",
                "| system | " + " | ".join(md_escape(t) for t in tnames) + " | every target |",
                "|---|" + "---|" * (len(tnames) + 1)]
        for s, c in ds["coverage"].items():
            every = c.get("shared_all_targets")
            if c.get("shared_all_targets_in_universe") is not None:
                every = f"{c['shared_all_targets_in_universe']} ({every} exact)"
            m = (ds.get("means") or {}).get(s, {})
            out.append(f"| {md_escape(s)} | " + " | ".join(
                f"{mean_text(m[t]) if t in m else '–'} ({_coverage_cell(c, t)})"
                for t in tnames) + f" | {every} |")
        every = ds["shared_subsets"]["all_systems_all_targets"]
        if ds["shared_subsets"].get("all_systems_all_targets_in_universe") is not None:
            every = (f"{ds['shared_subsets']['all_systems_all_targets_in_universe']} "
                     f"({every} exact)")
        out += ["", f"Shared subsets: every system under every target "
                f"{every}; a pair of targets is "
                f"compared on {_pair_sizes(ds['shared_subsets']['pairs'])} queries.", ""]
        flips = [f for f in ds["winner_flips"] if f["measure"] == primary]
        open_p = int((ds.get("undetermined_flips") or {}).get(str(primary), 0))
        open_all = sum(int(v) for v in (ds.get("undetermined_flips") or {}).values())
        heads = [f for f in flips if f.get("headline")]
        out += [f"### Headline winner flips ({md_escape(primary)})", "",
                f"{md_escape(primary)}: {_flip_counts(flips, open_p)}; all "
                f"{len(ds.get('measures', []))} measures: "
                f"{_flip_counts(ds['winner_flips'], open_all)}. Every flip is in the "
                "appendix.", ""]
        if heads:
            out += ["| A vs B | targets | n | gap 1 [CI] | gap 2 [CI] | p adj 1 / 2 | "
                    "d_z 1 / 2 |", "|---|---|---|---|---|---|---|"]
            out += [f"| {md_escape(f['system_a'])} vs {md_escape(f['system_b'])} | "
                    f"{md_escape(f['target_1'])} → {md_escape(f['target_2'])} | "
                    f"{f['n_shared']} | {gap_text(f, 1)} {_ci(f, 1)} | {gap_text(f, 2)} "
                    f"{_ci(f, 2)} | {p_cell(f, 'p_1_adjusted', res)} / "
                    f"{p_cell(f, 'p_2_adjusted', res)} | {effect_pair(f)} |" for f in heads]
            out.append("")
            if "≤" in "".join(p_cell(f, f"p_{i}_adjusted", res) for f in heads for i in (1, 2)):
                out += [f"{FLOOR_NOTE}.", ""]
        if st.get("correction") is not None:
            out += [f"A headline flip: both gaps significant {md_escape(after_correction(st))} "
                    f"at alpha {number(st['alpha'])} (paired sign-flip test, {res} resamples, "
                    f"seed {st['seed']}) and past the practical threshold, "
                    f"{md_escape(st.get('threshold'))}. The procedure in full: appendix.", ""]
        if ds["design_changes"]:
            n_sig = sum(1 for c in ds["design_changes"] if c["significant_change"])
            out += [f"Design recommendations that change with the target: "
                    f"{len(ds['design_changes'])} ({n_sig} significant); all in the appendix.",
                    ""]
    if card.get("answers"):
        out += answers_card_md(card["answers"])
    else:
        out += ["## Judge configurations", "", "None: no judged answers were given to this "
                "report (`tiap report --answers`).", ""]
    if card.get("provenance"):
        out += ["## Provenance", "", *_short_provenance(card["provenance"]), ""]
    return "\n".join(out)
