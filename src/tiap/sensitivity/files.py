"""Stage III from rescore folders to the sensitivity folder: what ``tiap sensitivity`` does."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tiap.engine import make_engine, use_engine
from tiap.io import check_output_folder, split_named
from tiap.sensitivity.analyze import SensitivityResult, analyze, write_sensitivity
from tiap.sensitivity.design import parse_configs

__all__ = ["sensitivity_files"]


def sensitivity_files(
    dirs: Any,
    out: str | Path,
    *,
    primary: str | None = None,
    queries: str | Path | None = None,
    items: Sequence[str | Path] = (),
    runs: Sequence[str | Path] = (),
    configs: Sequence[str] | Mapping[str, Sequence[str]] = (),
    pairs: Sequence[str] = (),
    engine: str = "local",
    progress: Callable[[str, int, int], None] | None = None,
    force: bool = False,
    **options: Any,
) -> SensitivityResult:
    """Analyze rescore folders (:func:`analyze`) and write the sensitivity folder ``out``
    (:func:`write_sensitivity`), as ``tiap sensitivity`` does; returns the analysis.

    ``out`` is checked before anything is read (a folder that is not a ``tiap
    sensitivity`` output is refused unless ``force``). ``queries``, ``items`` and ``runs``
    override the inputs the rescore manifests name for the answer alignment; ``items`` and
    ``runs`` are ``[SYSTEM=]PATH`` specs. ``configs`` are configuration groups, as
    ``NAME=SYSTEM,SYSTEM,...`` strings (:func:`parse_configs`) or a mapping. ``engine``
    runs the randomization tests (:func:`tiap.engine.make_engine`). ``primary``, ``pairs``,
    ``progress`` and the other keywords (``seed``, ``resamples``, ``alpha``,
    ``correction``, ``min_effect``, ``min_dz``, ``answers``, ``answer_depth``,
    ``by_category_tests``) are :func:`analyze`'s.

        >>> import tiap
        >>> scores = tiap.rescore({"A": {"q1": ["t1", "m1"]}, "B": {"q1": ["m1", "t1"]}},
        ...                       [{"query_id": "q1", "evidence": ["d1:1"]}],
        ...                       [{"item_id": "t1", "kind": "raw", "sources": ["d1:1"]},
        ...                        {"item_id": "m1", "kind": "fact", "sources": ["d1:1"]}],
        ...                       measures="RR@5")
        >>> res = sensitivity_files(scores, "sensitivity", resamples=100)
        >>> res.table("system_means")[0]["mean"], Path("sensitivity/manifest.json").exists()
        (1.0, True)
        >>> sensitivity_files(scores, "sensitivity", configs=["density=A"])
        Traceback (most recent call last):
        tiap.errors.TiapError: --configs 'density=A': expected NAME=SYSTEM,SYSTEM[,...] ...
    """
    from tiap.config import option_name

    check_output_folder(out, "sensitivity", force=force, known=("*.csv",))
    groups = dict(configs) if isinstance(configs, Mapping) else parse_configs(configs)
    overrides: dict[str, object] = {}
    if queries:
        overrides["queries"] = queries
    for key, specs in (("items", items), ("runs", runs)):
        if specs:
            overrides[key] = dict(split_named(spec, option_name(key)) for spec in specs)
    eng = make_engine(engine)
    with contextlib.closing(eng), use_engine(eng):
        res = analyze(dirs, configs=groups, primary=primary, answer_inputs=overrides,
                      pairs=tuple(pairs), progress=progress, **options)
    write_sensitivity(res, out, force=force)
    return res
