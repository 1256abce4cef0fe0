"""Kind 2, follow-up: every settings object is a declared schema (:class:`tiap.config.Settings`).

The judges (``openai``, ``lexical``, ``embedding``), the endpoint client, the ``llm`` and
``heuristic`` parsers, the retrievers and the Mem0 harness validate their settings through
:mod:`tiap.config`: a wrong type, an unknown key (with a did-you-mean) or a value out of range
is ONE :class:`~tiap.errors.TiapError` (code ``config``) naming what is configured and the key,
never a ``TypeError`` or a pydantic ``ValidationError``; inside
:func:`tiap.config.command_options` (the command layer naming its options) the same problem is
``error[usage]: option --x: ...``. Through the CLI every such input exits 2 and writes nothing.

Every expected message is written by hand from the schema's declared rule (``ge=1`` reads
"expected a value >= 1"), never copied from a run.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tiap.audit.cases import Case, write_cases
from tiap.audit.judges import EmbeddingJudge, LexicalJudge, make_judge
from tiap.cli.main import main
from tiap.config import command_options
from tiap.errors import TiapError
from tiap.importers.mem0_harness import Mem0RunConfig
from tiap.llm.client import ChatClient
from tiap.memory import make_parser
from tiap.retrieval import make_retriever

pytest.importorskip("httpx")


def _problems(call: Any) -> list[tuple[str, str]]:
    """``(code, message)`` of every problem ``call()`` raises (it must raise a TiapError)."""
    with pytest.raises(TiapError) as exc:
        call()
    return [(p.code, p.message) for p in exc.value.problems]


def _line(call: Any) -> str:
    """The one line the CLI prints for the one problem of ``call()``."""
    with pytest.raises(TiapError) as exc:
        call()
    assert len(exc.value.problems) == 1, exc.value.problems
    p = exc.value.problems[0]
    return f"error[{p.code}]: {p}"


# -- every settings object: a wrong type, an unknown key, an out-of-range value --------------

CASES = [
    # (what is built, expected (code, message))
    # the openai judge
    (lambda: make_judge('openai(model="m", timeout="60")'),
     ("config", 'judge \'openai\': key timeout: expected a number, got "60" (a string)')),
    (lambda: make_judge('openai(model="m", timout=60)'),
     ("config", "judge 'openai' takes no argument 'timout' (did you mean 'timeout'?); it "
                "takes model, base_url, api_key_env, temperature, max_tokens, seed, "
                "response_format, timeout, max_retries, backoff, max_backoff, concurrency, "
                "max_invalid, name, system_template, user_template, rubric_version")),
    (lambda: make_judge('openai(model="m", concurrency=0)'),
     ("config", "judge 'openai': key concurrency: expected an integer from 1 to 256, got 0 (an "
      "integer)")),
    (lambda: make_judge('openai(model="m", max_retries=True)'),  # True was 1 retry
     ("config", "judge 'openai': key max_retries: expected an integer, got true (a boolean)")),
    (lambda: make_judge('openai(model="m", max_invalid=1.5)'),
     ("config", "judge 'openai': key max_invalid: expected a number from 0 to 1, got 1.5 (a "
      "float)")),
    (lambda: make_judge('openai(model="m", user_template="Q: {questoin}")'),  # was a KeyError
     ("config", "judge 'openai': key user_template: unknown placeholder {questoin}; the "
                "template is filled with question, answer, item_text, item_kind, "
                "raw_support_text")),
    # the lexical and embedding judges
    (lambda: make_judge('lexical(supports="0.8")'),
     ("config", 'judge \'lexical\': key supports: expected a number, got "0.8" (a string)')),
    (lambda: make_judge("lexical(suports=0.8)"),
     ("config", "judge 'lexical' takes no argument 'suports' (did you mean 'supports'?); it "
                "takes supports, partial, name")),
    (lambda: LexicalJudge(supports=1.5),
     ("config", "judge 'lexical': key supports: expected a number from 0 to 1, got 1.5 (a float)")),
    (lambda: make_judge("embedding(partial=-2)"),
     ("config", "judge 'embedding': key partial: expected a number from -1 to 1, got -2 "
                "(an integer)")),
    (lambda: make_judge("embedding(batchsize=8)"),
     ("config", "judge 'embedding' takes no argument 'batchsize' (did you mean "
                "'batch_size'?); it takes supports, partial, model, batch_size, name")),
    (lambda: EmbeddingJudge(batch_size="64"),
     ("config", 'judge \'embedding\': key batch_size: expected an integer, got "64" '
                "(a string)")),
    # the endpoint client
    (lambda: ChatClient("http://127.0.0.1:9/v1", timeout="60"),
     ("config", 'endpoint client: key timeout: expected a number, got "60" (a string)')),
    (lambda: ChatClient("http://127.0.0.1:9/v1", backoff=-1.0),
     ("config", "endpoint client: key backoff: expected a number from 0 to 3,600, got -1.0 (a "
      "float)")),
    (lambda: ChatClient("127.0.0.1:9/v1"),  # no scheme: every request would fail
     ("config", "endpoint client: key base_url: expected an http:// or https:// URL (the API "
                "root, e.g. http://127.0.0.1:11434/v1), got '127.0.0.1:9/v1'")),
    # the llm parser
    (lambda: make_parser("llm", base_url="http://x/v1", model="m", timeout="60"),
     ("config", 'parser \'llm\': key timeout: expected a number, got "60" (a string)')),
    (lambda: make_parser("llm", base_url="http://x/v1", model="m", timeuot=60),
     ("config", "parser 'llm': key timeuot: unknown key (did you mean 'timeout'?); it takes: "
                "base_url, model, max_facts, api_key_env, temperature, seed, timeout, "
                "max_retries, json_retries, backoff, concurrency, context_turns, "
                "context_chars, max_turn_chars, cache, max_invalid, response_format, "
                "max_tokens")),
    (lambda: make_parser("llm", base_url="http://x/v1", model="m", context_turns=-1),
     ("config", "parser 'llm': key context_turns: expected an integer from 0 to 1,000, got -1 "
                "(an integer)")),
    (lambda: make_parser("llm", base_url="http://x/v1", model="m", seed=1.5),
     ("config", "parser 'llm': key seed: expected an integer, got 1.5 (a float)")),
    # the heuristic parser
    (lambda: make_parser("heuristic", max_facts="5"),
     ("config", 'parser \'heuristic\': key max_facts: expected an integer, got "5" '
                "(a string)")),
    (lambda: make_parser("heuristic", max_fact=5),
     ("config", "parser 'heuristic': key max_fact: unknown key (did you mean 'max_facts'?); "
                "it takes: max_facts")),
    (lambda: make_parser("heuristic", max_facts=0),
     ("config", "parser 'heuristic': key max_facts: expected an integer from 1 to 1,000, got 0 "
                "(an integer)")),
    # the retrievers
    (lambda: make_retriever("bm25", k1="1.2"),
     ("config", 'retriever \'bm25\': key k1: expected a number, got "1.2" (a string)')),
    (lambda: make_retriever("bm52"),
     ("config", "retriever: key name: unknown retriever 'bm52' (did you mean 'bm25'?); "
                "choose one of bm25, dense, hybrid")),
    (lambda: make_retriever("bm25", b=1.5),
     ("config", "retriever 'bm25': key b: expected a number from 0 to 1, got 1.5 (a float)")),
    (lambda: make_retriever("hybrid", rrf_k=math.nan),
     ("config", "retriever 'hybrid': key rrf_k: expected a number from 0 to 1,000,000, got nan "
                "(a float)")),
    (lambda: make_retriever("bm25", batch_size=8),  # was silently ignored
     ("config", "retriever 'bm25': key batch_size: applies to the dense and hybrid "
                "retrievers only, not to 'bm25'")),
    (lambda: make_retriever("dense", fusion_depth=10),  # was silently ignored
     ("config", "retriever 'dense': key fusion_depth: applies to the hybrid retriever only, "
                "not to 'dense'")),
    # the Mem0 harness
    (lambda: Mem0RunConfig(limit="60"),
     ("config", 'mem0 run: key limit: expected an integer, got "60" (a string)')),
    (lambda: Mem0RunConfig(limt=60),
     ("config", "mem0 run: key limt: unknown key (did you mean 'limit'?); known: infer, "
                "limit, llm_base_url, llm_model, max_sessions, max_tokens, system, "
                "threshold, window")),
    (lambda: Mem0RunConfig(infer=True, llm_base_url="http://127.0.0.1:9/v1", llm_model="m",
                           max_tokens=8),
     ("config", "mem0 run: key max_tokens: expected an integer from 16 to 1,000,000, got 8 (an "
      "integer)")),
    (lambda: Mem0RunConfig(max_sessions=0),
     ("config", "mem0 run: key max_sessions: expected an integer from 1 to 1,000,000,000, got 0 "
      "(an integer)")),
    (lambda: Mem0RunConfig(infer="yes"),  # a non-empty string was true
     ("config", 'mem0 run: key infer: expected true or false, got "yes" (a string)')),
    (lambda: Mem0RunConfig(system="my mem0"),  # a TREC tag with a space splits every line
     ("config", "mem0 run: key system: expected a system name, non-empty and without "
                "whitespace (the run's TREC tag), got 'my mem0'")),
]


@pytest.mark.parametrize(("build", "expected"), CASES, ids=[c[1][1][:48] for c in CASES])
def test_every_settings_object_names_the_key(build, expected) -> None:
    assert _problems(build) == [expected]


def test_all_problems_of_one_object_at_once() -> None:
    assert _problems(lambda: make_parser("llm", timeout=0, concurrency=0)) == [
        ("config", "parser 'llm': key timeout: expected a number in (0, 86,400], got 0 (an "
         "integer)"),
        ("config", "parser 'llm': key concurrency: expected an integer from 1 to 256, got 0 (an "
         "integer)"),
    ]
    # required keys, named (the factory's defaults are None)
    assert _problems(lambda: make_parser("llm")) == [
        ("config", "parser 'llm': key base_url: missing: the llm parser needs the endpoint's "
                   "API root, e.g. http://127.0.0.1:11434/v1"),
        ("config", "parser 'llm': key model: missing: the llm parser needs the endpoint's "
                   "model name"),
    ]
    assert _problems(lambda: Mem0RunConfig(infer=False, llm_model="m")) == [
        ("config", "mem0 run: key llm_model: applies with infer=True only")]


def test_a_key_pasted_into_api_key_env_is_refused_and_never_echoed() -> None:
    key = "sk-proj-0123456789abcdef"
    for build in (lambda: make_judge(f'openai(model="m", api_key_env="{key}")'),
                  lambda: make_parser("llm", base_url="http://x/v1", model="m",
                                      api_key_env=key)):
        [(code, message)] = _problems(build)
        assert code == "config" and "key api_key_env: expected the NAME of an environment " \
            "variable" in message
        assert key not in message


def test_a_password_in_a_base_url_is_never_echoed() -> None:
    [(_, message)] = _problems(lambda: ChatClient("ftp://user:hunter2-pass@host/v1"))
    assert "hunter2-pass" not in message and "ftp://user:[redacted]@host/v1" in message


# -- command options: error[usage] naming the option -----------------------------------------

def test_a_value_from_a_command_option_names_the_option() -> None:
    with command_options({"max_facts": "--max-facts"}):
        assert _line(lambda: make_parser("heuristic", max_facts=0)) == (
            "error[usage]: option --max-facts: expected an integer from 1 to 1,000, got 0 (an "
             "integer)")
    with command_options({"batch_size": "--batch-size", "k1": "--bm25-k1"}):
        assert _line(lambda: make_retriever("bm25", batch_size=8)) == (
            "error[usage]: option --batch-size: applies to the dense and hybrid retrievers "
            "only, not to 'bm25'")
    with command_options({"max_sessions": "--sessions"}):
        assert _line(lambda: Mem0RunConfig(max_sessions=0)) == (
            "error[usage]: option --sessions: expected an integer from 1 to 1,000,000,000, got 0 "
             "(an integer)")
    # outside the block the same value is the key's again
    assert _line(lambda: Mem0RunConfig(max_sessions=0)) == (
        "error[config]: mem0 run: key max_sessions: expected an integer from 1 to 1,000,000,000, "
         "got 0 (an integer)")


def test_a_judge_specs_own_value_is_never_blamed_on_an_option() -> None:
    options = {"timeout": "--timeout", "concurrency": "--concurrency"}
    with command_options(options):
        # --concurrency 0 reached the judge through make_judge's defaults: the option's fault
        assert _line(lambda: make_judge('openai(model="m")', {"concurrency": 0})) == (
            "error[usage]: option --concurrency: expected an integer from 1 to 256, got 0 (an "
             "integer)")
        # the spec's own timeout: the spec's fault, even though --timeout exists
        assert _line(lambda: make_judge('openai(model="m", timeout=-1)', {"timeout": 5})) == (
            "error[config]: judge 'openai': key timeout: expected a number in (0, 86,400], got -1 "
            "(an integer)")


# -- through the CLI: exit 2, the line names the file/key/option, nothing written -------------

def _cli(capsys, argv: list[str]) -> tuple[int, list[str]]:
    rc = main(argv)
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return rc, [ln for ln in err.splitlines() if ln.startswith(("error[", "warning["))]


@pytest.fixture()
def cases(tmp_path: Path) -> Path:
    path = tmp_path / "cases.jsonl"
    write_cases(path, [Case(case_id="s:q1:source", system="s", query_id="q1", target="source",
                            item_id="f1", item_text="She moved to Paris.",
                            question="Where did she move?", answer="Paris", credited_rank=1)])
    return path


@pytest.mark.parametrize(("spec", "expected"), [
    ('openai(model="m", timeout="60")',
     'error[config]: judge \'openai\': key timeout: expected a number, got "60" (a string)'),
    ("lexical(suports=0.8)",
     "error[config]: judge 'lexical' takes no argument 'suports' (did you mean 'supports'?); "
     "it takes supports, partial, name"),
    ("lexical(supports=0.2, partial=0.5)",
     "error[config]: judge 'lexical': key partial: partial (0.5) must not exceed supports "
     "(0.2)"),
])
def test_cli_judge_spec(cases: Path, tmp_path: Path, capsys, spec: str, expected: str) -> None:
    out = tmp_path / "judged"
    rc, lines = _cli(capsys, ["audit", "judge", str(cases), "--judge", spec, "--out", str(out)])
    assert (rc, lines) == (2, [expected])
    assert not out.exists()


_OPTION = "error\\[usage\\]: option {opt}: {says}$"


@pytest.mark.parametrize(("argv", "opt", "what", "key", "says"), [
    # retrieve: a setting bm25 ignores was dropped silently, now refused
    (["retrieve", "--retriever", "bm25", "--batch-size", "8"], "--batch-size",
     "retriever 'bm25'", "batch_size",
     "applies to the dense and hybrid retrievers only, not to 'bm25'"),
    # build-store: a base URL without a scheme
    (["build-store", "locomo", "--parser", "llm", "--model", "m", "--base-url",
      "127.0.0.1:11434/v1"], "--base-url", "parser 'llm'", "base_url",
     r"expected an http:// or https:// URL \(the API root, e\.g\. "
     r"http://127\.0\.0\.1:11434/v1\), got '127\.0\.0\.1:11434/v1'"),
    # mem0-run: ranges the harness checked only when run, now when the settings are built
    (["mem0-run", "locomo", "--limit", "0"], "--limit", "mem0 run", "limit",
     r"expected an integer from 1 to 1,000,000, got 0 \(an integer\)"),
    (["mem0-run", "locomo", "--threshold", "2"], "--threshold", "mem0 run", "threshold",
     r"expected a number from 0 to 1, got 2\.0 \(a float\)"),
])
def test_cli_option_values(tmp_path: Path, capsys, argv, opt, what, key, says) -> None:
    """A bad option value exits 2 with one line naming the option (``error[usage]``: the
    command names its options with command_options); nothing is read or written."""
    out = tmp_path / "out"
    extra = (["--store", str(tmp_path / "store"), "--queries", str(tmp_path / "q.jsonl")]
             if argv[0] == "retrieve" else ["--data", str(tmp_path / "no-data")])
    rc, lines = _cli(capsys, [*argv, *extra, "--out", str(out)])
    assert rc == 2 and len(lines) == 1, lines
    pattern = _OPTION.format(opt=re.escape(opt), says=says)
    assert re.match(pattern, lines[0]), lines[0]
    assert not out.exists()


def test_cli_audit_run_store_arguments_at_their_lines(tmp_path: Path, capsys) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text('name = "x"\n'                 # 1
                   'dataset = "locomo"\n'         # 2
                   "\n"                           # 3
                   "[[stores]]\n"                 # 4
                   'name = "a"\n'                 # 5
                   'parser = "llm"\n'             # 6
                   'base_url = "http://x/v1"\n'   # 7
                   'model = "m"\n'                # 8
                   "timeout = 0\n"                # 9
                   "max_invalid = 1.5\n",         # 10
                   encoding="utf-8")
    out = tmp_path / "out"
    rc, lines = _cli(capsys, ["audit-run", str(cfg), "--out", str(out)])
    assert rc == 2 and lines == [
        f"error[config]: {cfg}:9: key stores[0].timeout: expected a number in (0, 86,400], got 0 "
        "(an integer)",
        f"error[config]: {cfg}:10: key stores[0].max_invalid: expected a number from 0 to 1, got "
         f"1.5 "
        "(a float)",
    ]
    assert not out.exists()


# -- properties: any value either validates as the reference rule says or is a TiapError -----

VALUES = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.text(max_size=3),
                   st.floats(-2, 2), st.sampled_from([math.nan, math.inf, -math.inf]),
                   st.lists(st.integers(), max_size=2))


def _number(v: Any) -> bool:
    """The reference: a real number (a bool is not one), finite."""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


@settings(max_examples=300, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(supports=VALUES, partial=VALUES)
def test_property_lexical_thresholds(supports: Any, partial: Any) -> None:
    ok = (_number(supports) and _number(partial) and 0 <= supports <= 1
          and 0 <= partial <= 1 and partial <= supports)
    try:
        j = LexicalJudge(supports=supports, partial=partial)
    except TiapError as exc:
        assert not ok, (supports, partial)
        assert {p.code for p in exc.problems} == {"config"}
        assert all(p.message.startswith("judge 'lexical': key ") for p in exc.problems)
    else:
        assert ok, (supports, partial)
        assert (j.supports, j.partial) == (supports, partial)


@settings(max_examples=300, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(k1=VALUES, b=VALUES, max_facts=VALUES)
def test_property_bm25_and_heuristic(k1: Any, b: Any, max_facts: Any) -> None:
    ok = _number(k1) and _number(b) and k1 >= 0 and 0 <= b <= 1
    try:
        r = make_retriever("bm25", k1=k1, b=b)
    except TiapError as exc:
        assert not ok and {p.code for p in exc.problems} == {"config"}, (k1, b)
    else:
        assert ok and (r.k1, r.b) == (k1, b), (k1, b)
    ok = isinstance(max_facts, int) and not isinstance(max_facts, bool) and max_facts >= 1
    try:
        p = make_parser("heuristic", max_facts=max_facts)
    except TiapError as exc:
        assert not ok and {q.code for q in exc.problems} == {"config"}, max_facts
    else:
        assert ok and p.max_facts == max_facts


def test_schemas_and_signatures_agree() -> None:
    """A factory's signature and its declared schema list the same keys with the same
    defaults (one declaration of each setting, checked)."""
    import inspect

    from tiap.audit.openai_judge import OpenAIJudge, OpenAISettings
    from tiap.memory.parsers import parser_factory, parser_schema

    pairs = [(parser_factory(n), parser_schema(n)) for n in ("heuristic", "llm")]
    pairs += [(LexicalJudge, LexicalJudge.schema), (EmbeddingJudge, EmbeddingJudge.schema),
              (OpenAIJudge, OpenAISettings)]
    for factory, schema in pairs:
        params = {k: p.default for k, p in inspect.signature(factory).parameters.items()
                  if k not in ("self", "encoder")}
        fields = {k: f.default for k, f in schema.model_fields.items()}
        assert params == fields, factory
