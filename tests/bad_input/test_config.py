"""Kind 2 of the bad-input campaign: configs are validated against a declared schema.

The mechanism is :mod:`tiap.config` (strict pydantic models, unknown keys forbidden, one
``TiapError`` with one located problem per wrong key) and the schema of an ``audit-run``
config, :class:`tiap.pipeline.PipelineConfig`. Every bad config exits 2 with lines
``error[config]: <file>:<line>: key <dotted key>: expected ..., got ...`` and writes nothing
to ``--out``; a bad override names its option (``error[usage]``).

Expected lines are written by hand from the TOML each test writes (the line numbers count
the lines of that text).
"""

from __future__ import annotations

import math
import string
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tiap.cli.main import main
from tiap.config import key_path, read_toml
from tiap.errors import TiapError
from tiap.pipeline import PipelineConfig, StoreSpec, load_config

HEAD = 'name = "x"\ndataset = "locomo"\n'  # lines 1-2
STORES = '\n[[stores]]\nname = "a"\nparser = "heuristic"\n'  # 4 lines after the body


def _run(tmp_path: Path, text: str | bytes, capsys, *extra: str) -> tuple[int, list[str], Path]:
    cfg = tmp_path / "c.toml"
    if isinstance(text, bytes):
        cfg.write_bytes(text)
    else:
        cfg.write_text(text, encoding="utf-8")
    out = tmp_path / "out"
    rc = main(["audit-run", str(cfg), "--out", str(out), *extra])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    lines = [ln for ln in captured.err.splitlines() if ln.strip()]
    return rc, lines, out


def _expect(tmp_path: Path, text: str | bytes, capsys, expected: list[str], *extra: str) -> None:
    rc, lines, out = _run(tmp_path, text, capsys, *extra)
    f = str(tmp_path / "c.toml")
    assert rc == 2
    assert lines == [e.replace("FILE", f) for e in expected]
    assert not out.exists()  # nothing written


# -- the issue's examples --------------------------------------------------------------------

@pytest.mark.parametrize(("body", "expected"), [
    # a TOML true was an int (depth 1): now it is not an integer
    ("k = true", "error[config]: FILE:3: key k: expected an integer, got true (a boolean)"),
    # the string "false" was truthy
    ('sensitivity = "false"',
     'error[config]: FILE:3: key sensitivity: expected true or false, got "false" (a string)'),
    ('k = "sixty"', 'error[config]: FILE:3: key k: expected an integer, got "sixty" (a string)'),
    ('design = ["a", "b"]', "error[config]: FILE:3: key design: expected a table, got an array "
                            "of 2"),
])
def test_issue_examples(tmp_path: Path, capsys, body: str, expected: str) -> None:
    _expect(tmp_path, HEAD + body + "\n" + STORES, capsys, [expected])


def test_stores_is_not_a_number(tmp_path: Path, capsys) -> None:
    _expect(tmp_path, HEAD + "stores = 5\n", capsys,
            ["error[config]: FILE:3: key stores: expected an array, got 5 (an integer)"])


# -- unknown, missing, nested, syntax, empty --------------------------------------------------

KNOWN = ("alpha, answers, audit, collections, correction, credit, dataset, design, engine, k, "
         "local_model, local_port, local_threads, measures, min_dz, min_effect, name, query_shard, "
         "resamples, retrievers, seed, sensitivity, sessions, stores, targets")


def test_unknown_key_with_did_you_mean(tmp_path: Path, capsys) -> None:
    _expect(tmp_path, HEAD + "sensitivty = true\ncolour = 1\n" + STORES, capsys, [
        f"error[config]: FILE:3: key sensitivty: unknown key (did you mean 'sensitivity'?); "
        f"known: {KNOWN}",
        f"error[config]: FILE:4: key colour: unknown key; known: {KNOWN}",
    ])


def test_wrong_type_in_a_nested_table(tmp_path: Path, capsys) -> None:
    text = (HEAD + STORES                                       # lines 1-6
            + '\n[[stores]]\nname = "b"\nparser = "heuristic"\nmax_facts = "5"\n'  # 7-11
            + '\n[[stores]]\nname = "c"\nparser = "heuristic"\nmax_fact = 5\n')    # 12-16
    _expect(tmp_path, text, capsys, [
        'error[config]: FILE:11: key stores[1].max_facts: expected an integer, got "5" '
        "(a string)",
        "error[config]: FILE:16: key stores[2].max_fact: unknown key for parser 'heuristic' "
        "(did you mean 'max_facts'?); it takes: max_facts",
    ])


def test_inline_stores_each_key_located(tmp_path: Path, capsys) -> None:
    text = HEAD + 'stores = [{name = "a/b", parser = "heurstic"}, {name = "c", parser = 5}]\n'
    _expect(tmp_path, text, capsys, [  # an inline table's keys are on the line of `stores`
        "error[config]: FILE:3: key stores[0].name: invalid store name 'a/b': use letters, "
        "digits, '_', '.' and '-', starting with a letter or digit",
        "error[config]: FILE:3: key stores[0].parser: unknown parser 'heurstic' (did you mean "
        "'heuristic'?); known: heuristic, llm, native, turns",
        "error[config]: FILE:3: key stores[1].parser: expected a string, got 5 (an integer)",
    ])


def test_a_parsers_own_checks_are_config_errors(tmp_path: Path, capsys) -> None:
    text = HEAD + STORES + "max_facts = 0\n"  # the key is on line 7
    _expect(tmp_path, text, capsys, [  # the parser's declared schema locates the key
        "error[config]: FILE:7: key stores[0].max_facts: expected an integer from 1 to 1,000, "
         "got 0 "
        "(an integer)"])


def test_missing_required_keys(tmp_path: Path, capsys) -> None:
    _expect(tmp_path, 'name = "x"\n\n[[stores]]\nname = "a"\n', capsys, [
        "error[config]: FILE:3: key stores[0].parser: missing required key",
        "error[config]: FILE: key dataset: missing required key",
    ])


def test_toml_syntax_error_names_file_and_line(tmp_path: Path, capsys) -> None:
    _expect(tmp_path, HEAD + "k = \n", capsys,
            ["error[config]: FILE:3: invalid TOML: Invalid value (column 5)"])


def test_empty_file(tmp_path: Path, capsys) -> None:
    _expect(tmp_path, "", capsys, [
        "error[config]: FILE: key name: missing required key",
        "error[config]: FILE: key dataset: missing required key",
        "error[config]: FILE: key stores: missing required key",
    ])


def test_not_utf8(tmp_path: Path, capsys) -> None:
    # 'name = "' is 8 bytes, so the bad byte is at offset 8 of line 1
    _expect(tmp_path, b'name = "\xff"\n', capsys,
            ["error[encoding]: FILE:1: not valid UTF-8: byte(s) ff at byte offset 8 (invalid "
             "start byte); expected UTF-8 text"])


def test_missing_file(tmp_path: Path, capsys) -> None:
    rc = main(["audit-run", str(tmp_path / "none.toml"), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip()
    assert rc == 2
    assert err == f"error[io]: {tmp_path / 'none.toml'}: pipeline config file not found"
    assert not (tmp_path / "out").exists()


# -- values, ranges and rules across keys -----------------------------------------------------

@pytest.mark.parametrize(("body", "expected"), [
    ("alpha = 1.5", "key alpha: expected a number in (0, 1), got 1.5 (a float)"),
    ("alpha = 0", "key alpha: expected a number in (0, 1), got 0 (an integer)"),
    ("alpha = nan", "key alpha: expected a number in (0, 1), got nan (a float)"),
    ("min_effect = -0.1", "key min_effect: expected a number from 0 to 1, got -0.1 (a float)"),
    ('min_effect = "big"', 'key min_effect: expected a number, got "big" (a string)'),
    ("min_dz = -0.2", "key min_dz: expected a number from 0 to 10, got -0.2 (a float)"),
    ("min_dz = inf", "key min_dz: expected a number from 0 to 10, got inf (a float); a paired "
     "effect size d_z of 10 (a mean difference of ten standard deviations) is past any "
     "threshold in use; Cohen's 'large' is 0.8"),
    ('correction = "bonferroni"',
     'key correction: expected one of holm, bh, none, got "bonferroni" (a string)'),
    ("k = 0", "key k: expected an integer from 1 to 1,000,000, got 0 (an integer)"),
    ("seed = -1", "key seed: expected an integer from 0 to 2^63 - 1, got -1 (an integer)"),
    ("resamples = 0", "key resamples: expected an integer from 1 to 10,000,000, got 0 (an "
     "integer)"),
    ("query_shard = 0", "key query_shard: expected an integer from 1 to 1,000,000,000, got 0 (an "
     "integer)"),
    ('query_shard = "big"', 'key query_shard: expected an integer, got "big" (a string)'),
    ('credit = "sets"', "key credit: unknown credit mode 'sets' (did you mean 'set'?); known: "
                        "group, set"),
    ('dataset = "locmo"', None),  # replaced below: the dataset line is line 2
    ('retrievers = ["bm25", "bm52"]', "key retrievers[1]: unknown retriever 'bm52' (did you "
                                      "mean 'bm25'?); known: bm25, dense, hybrid"),
    ('retrievers = ["bm25", "bm25"]', "key retrievers[1]: retriever 'bm25' is listed twice"),
    ("retrievers = []", "key retrievers: expected at least 1 entry, got an array of 0"),
    ('name = "../elsewhere"', None),
])
def test_values(tmp_path: Path, capsys, body: str, expected: str | None) -> None:
    if body.startswith("dataset"):  # override line 2
        text = 'name = "x"\n' + body + "\n" + STORES
        exp = ("error[config]: FILE:2: key dataset: unknown dataset 'locmo' (did you mean "
               "'locomo'?); known: locomo, longmemeval/s, longmemeval/oracle, beam/100k, beam/1m")
    elif body.startswith("name"):
        text = body + '\ndataset = "locomo"\n' + STORES
        exp = ("error[config]: FILE:1: key name: invalid name (the folder OUT/<name>) "
               "'../elsewhere': use letters, digits, '_', '.' and '-', starting with a letter "
               "or digit")
    else:
        text = HEAD + body + "\n" + STORES
        exp = f"error[config]: FILE:3: {expected}"
    _expect(tmp_path, text, capsys, [exp])


def test_design_names_a_store_the_file_does_not_define(tmp_path: Path, capsys) -> None:
    text = (HEAD + STORES                                   # 1-6
            + '\n[[stores]]\nname = "b"\nparser = "native"\n'   # 7-10
            + '\n[design]\ndensity = ["a", "bb"]\nsolo = ["a"]\n')  # 11-14
    _expect(tmp_path, text, capsys, [
        "error[config]: FILE:14: key design.solo: a design compares at least 2 stores, got 1",
    ])
    # rules across keys run once every key is valid on its own: now the unknown store shows
    text = text.replace('solo = ["a"]', 'solo = ["a", "b"]')
    _expect(tmp_path, text, capsys, [
        "error[config]: FILE:13: key design.density[1]: unknown store 'bb' (did you mean "
        "'b'?); the stores are a, b",
    ])


def test_two_stores_one_name_and_a_measure_deeper_than_k(tmp_path: Path, capsys) -> None:
    text = (HEAD + 'k = 10\nmeasures = ["nDCG@10", "R@20"]\n'   # 3-4
            + STORES                                             # 5-8
            + '\n[[stores]]\nname = "a"\nparser = "native"\n')   # 9-12
    _expect(tmp_path, text, capsys, [
        "error[config]: FILE:4: key measures[1]: R@20 reads deeper than the retrieval depth "
        "k = 10: it would score as R@10; raise k or lower the cutoff",
        "error[config]: FILE:11: key stores[1].name: store name 'a' is listed twice",
    ])


def test_bad_overrides_name_their_option(tmp_path: Path, capsys) -> None:
    _expect(tmp_path, HEAD + STORES, capsys, [
        "error[usage]: option --retriever: unknown retriever 'bm52' (did you mean 'bm25'?); "
        "known: bm25, dense, hybrid",
        "error[usage]: option --collections: expected a collection id, got an empty string",
        "error[usage]: option --resamples: expected an integer from 1 to 10,000,000, got 0 (an "
         "integer)",
    ], "--retriever", "bm52", "--resamples", "0", "--collections", "conv-26,")


def test_an_unknown_collection_is_an_error_before_anything_is_written(
        data_dir: Path, tmp_path: Path, capsys) -> None:
    rc, lines, out = _run(tmp_path, HEAD + STORES, capsys, "--collections", "conv-999",
                          "--data", str(data_dir))
    assert rc == 2
    assert lines == [  # the config is good: its summary line, then the error
        "x: locomo, stores a, retrievers bm25",
        "error[invalid-value]: option --collections: locomo has no queries in collection(s) "
        "conv-999 (did you mean 'conv-49'?); it has 10: conv-26, conv-30, conv-41, conv-42, "
        "conv-43, ..."]
    assert not out.exists()


# -- what still loads ------------------------------------------------------------------------

def test_good_values_load(tmp_path: Path) -> None:
    f = tmp_path / "c.toml"
    f.write_text(HEAD + 'correction = "BH"\nmin_effect = 0\nalpha = 0.1\nk = 20\n'
                 'measures = ["nDCG@20", "RR"]\n' + STORES + "max_facts = 3\n", encoding="utf-8")
    cfg = load_config(f, retrievers=["dense"], resamples=7)
    assert (cfg.correction, cfg.min_effect, cfg.alpha, cfg.k) == ("bh", 0.0, 0.1, 20)
    # no min_dz given: the documented default, |d_z| >= 0.2 (never a silent 0)
    from tiap.sensitivity.flips import DEFAULT_MIN_DZ

    assert cfg.min_dz == DEFAULT_MIN_DZ == 0.2
    assert cfg.measures == ("nDCG@20", "RR") and cfg.retrievers == ("dense",)
    assert cfg.stores == (StoreSpec(name="a", parser="heuristic", args={"max_facts": 3}),)
    assert cfg.resamples == 7 and cfg.source == str(f)
    assert cfg.overridden == ("retrievers", "resamples")
    with pytest.raises(Exception):  # frozen
        cfg.k = 3  # type: ignore[misc]


def test_key_path() -> None:
    assert key_path(("stores", 2, "density")) == "stores[2].density"
    assert key_path(("design", "a b", 0)) == 'design."a b"[0]'


def test_read_toml_line_of_a_syntax_error(tmp_path: Path) -> None:
    f = tmp_path / "x.toml"
    f.write_text('a = 1\n[t]\nb = "unterminated\n', encoding="utf-8")
    with pytest.raises(TiapError) as info:
        read_toml(f)
    (p,) = info.value.problems
    assert (p.file, p.line, p.code) == (str(f), 3, "config")


# -- property: any bytes or any table either load or raise TiapError --------------------------

FAST = settings(max_examples=150, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

KEYS = ["name", "dataset", "stores", "retrievers", "k", "targets", "measures", "credit",
        "design", "collections", "sensitivity", "seed", "resamples", "alpha", "correction",
        "min_effect", "min_dz", "parser", "max_facts", "kinds", "density", "f1", "colour"]

scalars = st.one_of(
    st.booleans(), st.integers(-3, 100), st.integers(), st.floats(allow_nan=True),
    st.sampled_from(["x", "locomo", "heuristic", "native", "bm25", "raw", "nDCG@20", "R@999",
                     "holm", "BH", "group", "a", "f1", "", "conv-26", "observation",
                     "nDCG@0", "source=raw", "((((", "@", "llm"]),
    st.text(string.printable, max_size=8),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.sampled_from(KEYS), inner, max_size=4)),
    max_leaves=12)


def _toml(v: object) -> str:
    """An inline TOML value (a small writer: TIAP only reads TOML)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf") if math.isinf(v) \
            else repr(v)
    if isinstance(v, str):
        return '"' + "".join(c if c.isprintable() and c not in '"\\' else f"\\u{ord(c):04x}"
                             for c in v) + '"'
    if isinstance(v, list):
        return "[" + ", ".join(_toml(x) for x in v) + "]"
    assert isinstance(v, dict)
    return "{" + ", ".join(f'"{k}" = {_toml(x)}' for k, x in v.items()) + "}"


@st.composite
def good_config(draw: st.DrawFn) -> dict:
    """A valid config (by the rules the docs state), drawn key by key."""
    names = draw(st.lists(st.sampled_from(["a", "b", "f1"]), min_size=1, max_size=3,
                          unique=True))
    stores = []
    for n in names:
        s: dict = {"name": n, "parser": draw(st.sampled_from(["heuristic", "native"]))}
        if s["parser"] == "heuristic" and draw(st.booleans()):
            s["max_facts"] = draw(st.integers(1, 9))
        if s["parser"] == "native" and draw(st.booleans()):
            s["kinds"] = draw(st.lists(st.sampled_from(["observation", "session_summary"]),
                                       min_size=1, max_size=2, unique=True))
        stores.append(s)
    cfg: dict = {"name": draw(st.sampled_from(["x", "run-1", "a.b"])),
                 "dataset": draw(st.sampled_from(["locomo", "beam/100k", "longmemeval/s"])),
                 "stores": stores}
    optional = {
        "retrievers": st.lists(st.sampled_from(["bm25", "dense", "hybrid"]), min_size=1,
                               unique=True),
        "k": st.integers(1, 100),
        "targets": st.lists(st.sampled_from(["raw", "source", "canonical"]), min_size=1,
                            unique=True),
        "measures": st.lists(st.sampled_from(["nDCG@1", "R@1", "RR", "nDCG", "Success@1"]),
                             min_size=1, unique=True),
        "credit": st.sampled_from(["group", "set"]),
        "collections": st.lists(st.sampled_from(["conv-26", "conv-30"]), unique=True),
        "sensitivity": st.booleans(), "seed": st.integers(0, 2**31),
        "resamples": st.integers(1, 10**6),
        "alpha": st.floats(0, 1, exclude_min=True, exclude_max=True),
        "correction": st.sampled_from(["holm", "BH", "none"]),
        "min_effect": st.floats(0, 1e6),
        "min_dz": st.floats(0, 1e6),
    }
    for key, strategy in optional.items():
        if draw(st.booleans()):
            cfg[key] = draw(strategy)
    if len(names) >= 2 and draw(st.booleans()):
        cfg["design"] = {"d": names}
    return cfg


#: a valid config, then up to two changes: a key set to any value, removed, or a store's key
mutation = st.one_of(
    st.tuples(st.just("set"), st.sampled_from(KEYS), values),
    st.tuples(st.just("drop"), st.sampled_from(KEYS), st.none()),
    st.tuples(st.just("store"), st.sampled_from(KEYS), values),
)


@st.composite
def configs(draw: st.DrawFn) -> dict:
    cfg = draw(good_config())
    for what, key, value in draw(st.lists(mutation, max_size=2)):
        if what == "set":
            cfg[key] = value
        elif what == "drop":
            cfg.pop(key, None)
        elif isinstance(cfg.get("stores"), list) and cfg["stores"] \
                and isinstance(cfg["stores"][0], dict):
            cfg["stores"][0][key] = value
    return cfg


def _check(path: Path) -> PipelineConfig | None:
    """The config at ``path``, or None when it is a located config (or encoding) error."""
    try:
        cfg = load_config(path)
    except TiapError as exc:
        assert exc.problems and all(p.code in ("config", "encoding") for p in exc.problems)
        assert all(p.file == str(path) for p in exc.problems)
        event("config error" if exc.problems[0].code == "config" else "encoding error")
        return None
    event("loaded")
    assert isinstance(cfg, PipelineConfig)
    assert cfg.stores and all(isinstance(s, StoreSpec) for s in cfg.stores)
    assert not isinstance(cfg.k, bool) and cfg.k >= 1 and 0 < cfg.alpha < 1
    return cfg


def _same_as_written(cfg: PipelineConfig, data: dict) -> None:
    """A loaded config holds what the TOML said (tomllib is the reference reader)."""
    for key, value in data.items():
        got = getattr(cfg, key)
        if key == "stores":
            assert [(s.name, s.parser, s.args) for s in got] == [
                (s["name"], s["parser"], {k: v for k, v in s.items() if k not in ("name",
                                                                                  "parser")})
                for s in value]
        elif key == "correction":
            assert got == value.lower()
        elif key == "design":
            assert got == {k: tuple(v) for k, v in value.items()}
        elif isinstance(value, list):
            assert got == tuple(value)
        else:
            assert got == value and type(got) is type(value) or (
                isinstance(value, int) and type(got) is float and got == value)


@FAST
@given(data=configs())
def test_property_any_table_loads_or_is_a_config_error(tmp_path: Path, data: dict) -> None:
    f = tmp_path / "c.toml"
    f.write_text("".join(f'"{k}" = {_toml(v)}\n' for k, v in data.items()), encoding="utf-8")
    cfg = _check(f)
    if cfg is not None:
        _same_as_written(cfg, data)


@FAST
@given(data=st.one_of(
    st.binary(max_size=200),
    st.lists(st.sampled_from([b'name = "x"\n', b'dataset = "locomo"\n', b"[[stores]]\n",
                              b'name = "a"\n', b'parser = "heuristic"\n', b"k = true\n",
                              b"[design]\n", b'd = ["a"]\n', b"max_facts = 2\n", b"= \n",
                              b'"\xff"', b"[stores]\n", b"k = 5\n", b'"""\n', b"#\n"]),
             max_size=12).map(b"".join)))
def test_property_any_bytes_load_or_raise_tiap_error(tmp_path: Path, data: bytes) -> None:
    f = tmp_path / "c.toml"
    f.write_bytes(data)
    _check(f)


# -- a local model for the llm stores, and a session slice -----------------------------------

LLM_STORE = '\n[[stores]]\nname = "q"\nparser = "llm"\nmax_facts = 1\n'


def test_local_model_gives_the_llm_stores_its_endpoint(tmp_path: Path) -> None:
    p = tmp_path / "c.toml"
    p.write_text(HEAD + 'local_model = "smollm2-135m"\nlocal_port = 9123\nsessions = 2\n'
                 + STORES + LLM_STORE + 'timeout = 30.0\n', encoding="utf-8")
    cfg = load_config(p)
    heuristic, llm = cfg.stores
    assert heuristic.args == {}  # only llm stores are given an endpoint
    assert llm.args == {"max_facts": 1, "base_url": "http://127.0.0.1:9123/v1",
                        "model": "smollm2-135m", "concurrency": 1, "timeout": 30.0}
    assert cfg.llm_stores() == [llm] and cfg.sessions == 2 and cfg.local_threads == 1


@pytest.mark.parametrize(("body", "expected"), [
    # line 3 is the body's first line; the llm store's table starts at line 9
    ('local_model = "smollm2"\n',
     ["error[config]: FILE:3: key local_model: unknown local model 'smollm2' (did you mean "
      "'smollm2-135m'?); known: qwen2.5-coder-1.5b, smollm2-135m (see `tiap llm models`)"]),
    ('local_model = "smollm2-135m"\n' + LLM_STORE + 'base_url = "http://127.0.0.1:11434/v1"\n',
     ["error[config]: FILE:13: key stores[1].base_url: local_model gives the llm stores "
      "base_url 'http://127.0.0.1:8089/v1'; this store names 'http://127.0.0.1:11434/v1': "
      "remove it, or remove local_model"]),
    ('local_model = "smollm2-135m"\n' + LLM_STORE + 'model = "qwen2.5"\n',
     ["error[config]: FILE:13: key stores[1].model: local_model gives the llm stores model "
      "'smollm2-135m'; this store names 'qwen2.5': remove it, or remove local_model"]),
    ('local_model = "smollm2-135m"\n',
     ["error[config]: FILE:3: key local_model: no store uses parser 'llm': the local model "
      "would serve nothing"]),
    ("sessions = 0\n", ["error[config]: FILE:3: key sessions: expected an integer from 1 to "
     "1,000,000,000, got 0 "
                        "(an integer)"]),
    ("local_threads = 0\n", ["error[config]: FILE:3: key local_threads: expected an integer from "
     "1 to 512, "
                             "got 0 (an integer)"]),
])
def test_local_model_and_sessions_errors(tmp_path: Path, capsys, body: str,
                                         expected: list[str]) -> None:
    head, _, rest = body.partition("\n")
    _expect(tmp_path, HEAD + head + "\n" + STORES + rest, capsys, expected)


def test_the_answer_stage_is_checked_before_anything_runs(tmp_path: Path, capsys) -> None:
    """[answers]: a system the config does not make, a judge that is not one, a local model
    that is not one, each located, together, before any step."""
    text = (HEAD + STORES                                                   # lines 1-6
            + '\n[answers]\nsystems = ["a-bm25", "b-bm25"]\n'               # 7-9
            + 'judges = ["locomo-f1", "locomo-f2"]\nlocal_model = "gpt-9"\n')  # 10-11
    rc, lines, out = _run(tmp_path, text, capsys)
    assert rc == 2 and not out.exists()
    joined = "\n".join(lines)
    assert "key answers.judges[1]: unknown answer judge 'locomo-f2'" in joined
    assert "key answers.local_model: unknown local model 'gpt-9'" in joined
    # the systems are checked against the stores once every key has its type
    rc, lines, out = _run(tmp_path, HEAD + STORES + '\n[answers]\nsystems = ["a-bm25", '
                          '"b-bm25"]\n', capsys)
    assert rc == 2 and not out.exists()
    assert "key answers.systems[1]: unknown system 'b-bm25'" in "\n".join(lines)
