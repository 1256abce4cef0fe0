"""The error and warning codes: every code used in the source is registered in
``tiap.errors.CODES``, and ``docs/errors.md`` lists exactly the registry."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tiap.errors import CODES, Problems, TiapError

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "tiap"
DOC = ROOT / "docs" / "errors.md"

#: How codes are spelled: errors kebab-case (or one word), warnings snake_case.
_CODE = re.compile(r"[a-z]+(-[a-z]+)*|[a-z]+(_[a-z]+)+")
_WARNING = re.compile(r"[a-z]+(_[a-z]+)+")
#: ``warning[code]`` (or ``warning\\[code]``, rich markup) in any string of the source.
_WARNING_TEXT = re.compile(r"warning\\*\[([a-z]+(?:_[a-z]+)+)\]")
#: Calls that take a warning code, and where: (positional index, keyword). ``.add`` is a
#: method (``RunWarnings.add("code", example)``; ``Problems.add`` takes a message first,
#: which is no code's spelling, and an f-string there is a message).
_EMITTERS = {".add": (0, None), "RunWarning": (0, "code"), "_score_warning": (0, None),
             "OverlayProblem": (1, "kind")}


def table() -> str:
    """The codes table of docs/errors.md, as it must read (rendered from CODES)."""
    rows = ["| code | kind | what it means | what to do |", "|---|---|---|---|"]
    for code, (meaning, todo) in CODES.items():
        kind = "warning" if "_" in code else "error"
        rows.append(f"| `{code}` | {kind} | {meaning} | {todo} |")
    return "\n".join(rows)


def _strings(node: ast.AST) -> list[tuple[str, int]]:
    """Every string constant in an expression, with its line (an ``a if c else b`` gives
    both)."""
    return [(n.value, n.lineno) for n in ast.walk(node)
            if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def codes_used(src: Path = SRC) -> dict[str, dict[str, list[str]]]:
    """Every error and warning code the source under ``src`` uses, per way of using it: ``{form: {code:
    [path:line, ...]}}``. The forms:

    - ``code=``: the keyword of ``TiapError``, ``Problem``, ``Problems.add`` (any call);
    - ``code =``: a code assigned to a variable named ``code``;
    - ``emitter``: the code argument of a call that takes one (:data:`_EMITTERS`:
      ``RunWarnings.add("code", ...)``, ``RunWarning``, ``OverlayProblem``'s kind);
    - ``table``: snake_case strings in a module-level table of codes (a name holding
      ``WARNING`` or ending ``_CODES``, e.g. ``_WARNING_TEXT``'s keys);
    - ``warnings[...]``: a key stored into a ``warnings`` mapping (``st.warnings["x"] =``,
      or any store in a function named ``warnings``);
    - ``entry``: a key whose value is a manifest warning entry (a dict with ``message``
      and ``count``);
    - ``findings``: the ``(code, sentence)`` pairs of a ``...findings`` function;
    - ``warning[...]``: the text ``warning[code]`` in a string (what the CLI prints).

    A code given to an emitter or ``code=`` as an f-string is a problem of its own (the
    test cannot read it): it is reported under the code ``<f-string>``.
    """
    used: dict[str, dict[str, list[str]]] = {}

    def note(form: str, code: str, path: Path, line: int) -> None:
        used.setdefault(form, {}).setdefault(code, []).append(
            f"{path.relative_to(src.parent)}:{line}")

    def take(form: str, node: ast.AST, path: Path, *, warning_only: bool = False,
             message: bool = False) -> None:
        """The code(s) ``node`` gives: a string, either string of ``a if c else b``
        (``message``: an f-string there is a message, not a code)."""
        if isinstance(node, ast.JoinedStr):
            if not message:
                note(form, "<f-string>", path, node.lineno)
        elif isinstance(node, ast.IfExp):
            take(form, node.body, path, warning_only=warning_only, message=message)
            take(form, node.orelse, path, warning_only=warning_only, message=message)
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str)
              and (_WARNING if warning_only else _CODE).fullmatch(node.value)):
            note(form, node.value, path, node.lineno)

    for path in sorted(src.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for value, line in _strings(tree):
            for code in _WARNING_TEXT.findall(value):
                note("warning[...]", code, path, line)
        for node in tree.body:  # module-level tables of codes
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any("WARNING" in _name(t) or _name(t).endswith("_CODES") for t in targets):
                    for v in ast.walk(node.value):  # keys, values, elements
                        take("table", v, path, warning_only=True)
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if fn.name.endswith("findings"):  # (code, sentence) pairs
                    for n in ast.walk(fn):
                        if (isinstance(n, ast.Tuple) and len(n.elts) == 2
                                and isinstance(n.elts[1], (ast.Constant, ast.JoinedStr))):
                            take("findings", n.elts[0], path, warning_only=True)
                if fn.name in ("warning", "warnings"):
                    for n in ast.walk(fn):
                        if isinstance(n, ast.Assign):
                            for t in n.targets:
                                if isinstance(t, ast.Subscript):
                                    take("warnings[...]", t.slice, path, warning_only=True)
        for n in ast.walk(tree):
            if isinstance(n, ast.Call):
                for kw in n.keywords:
                    if kw.arg == "code":
                        take("code=", kw.value, path)
                method = isinstance(n.func, ast.Attribute)
                emitter = _EMITTERS.get(("." if method else "") + _name(n.func))
                if emitter is not None:
                    pos, key = emitter
                    args = [kw.value for kw in n.keywords if key and kw.arg == key]
                    args += n.args[pos:pos + 1]
                    for a in args:
                        take("emitter", a, path, warning_only=method, message=method)
            elif isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None:
                targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                if any(_name(t) == "code" for t in targets):
                    take("code =", n.value, path)
                for t in targets:
                    if isinstance(t, ast.Subscript) and _name(t.value) == "warnings":
                        take("warnings[...]", t.slice, path, warning_only=True)
            elif isinstance(n, ast.Dict):
                for k, v in zip(n.keys, n.values, strict=True):
                    if k is not None and isinstance(v, ast.Dict) and {"message", "count"} <= {
                            x.value for x in v.keys if isinstance(x, ast.Constant)}:
                        take("entry", k, path, warning_only=True)
    return used


def unregistered(used: dict[str, dict[str, list[str]]]) -> dict[str, list[str]]:
    """``{"form: code": [where]}`` of the codes in ``used`` that CODES does not hold."""
    return {f"{form}: {code}": where for form, codes in used.items()
            for code, where in codes.items() if code not in CODES}


def test_every_code_used_in_the_source_is_registered() -> None:
    unknown = unregistered(codes_used())
    assert not unknown, ("codes used in the source but not registered in tiap.errors.CODES "
                         "(and docs/errors.md):\n" + "\n".join(
                             f"  {k} at {', '.join(v[:3])}" for k, v in unknown.items()))


def test_the_collector_sees_every_form() -> None:
    """Each way of using a code is seen (a form that finds nothing would let an unregistered
    code through), with one code the source is known to use that way."""
    used = codes_used()
    for form, code in [("code=", "input-changed"), ("code =", "score_ties"),
                       ("emitter", "duplicate_dropped"), ("emitter", "question_mismatch"),
                       ("table", "score_order"), ("warnings[...]", "invalid_reply"),
                       ("warnings[...]", "response_format"), ("entry", "unmatched_label"),
                       ("findings", "query_not_judged"),
                       ("findings", "overlay_unknown_query")]:
        # ("warning[...]": the CLI prints the codes the API gives, none by name; the form is
        # checked on a module of its own below)
        assert code in used.get(form, {}), (form, code, sorted(used.get(form, {})))


def test_the_collector_fails_on_an_unregistered_code(tmp_path: Path) -> None:
    """Each form, in a module of its own, with a code that is not registered."""
    src = tmp_path / "tiap"
    src.mkdir()
    (src / "m.py").write_text(
        "_WARNING_TEXT = {'no_such_table': 'a sentence'}\n"
        "def f(warns, st, Problem, RunWarning, OverlayProblem):\n"
        "    code = 'no_such_assigned'\n"
        "    warns.add('no_such_added', Problem('x'))\n"
        "    RunWarning(code='no_such_run')\n"
        "    OverlayProblem('r', 'no_such_kind', 'd')\n"
        "    OverlayProblem('r', f'{code}_evidence', 'd')\n"
        "    st.warnings['no_such_stored'] = {}\n"
        "    Problem('x', code='no-such-error')\n"
        "    print('warning[no_such_printed]: x')\n"
        "    return {'no_such_entry': {'message': 'm', 'count': 1}}\n"
        "def findings(x):\n"
        "    return [('no_such_finding', f'{x} text')]\n"
        "def warnings():\n"
        "    out = {}\n"
        "    out['no_such_key'] = 1\n", encoding="utf-8")
    assert set(unregistered(codes_used(src))) == {
        "table: no_such_table", "code =: no_such_assigned", "emitter: no_such_added",
        "emitter: no_such_run", "code=: no_such_run", "emitter: no_such_kind",
        "emitter: <f-string>", "warnings[...]: no_such_stored", "code=: no-such-error",
        "warning[...]: no_such_printed", "entry: no_such_entry", "findings: no_such_finding",
        "warnings[...]: no_such_key"}


def test_run_reader_warnings_are_registered() -> None:
    from tiap.runs import formats as runs

    assert set(runs.WARNING_TEXT) <= set(CODES)


def test_docs_list_exactly_the_registry() -> None:
    text = DOC.read_text()
    start = text.index("<!-- codes:start -->") + len("<!-- codes:start -->")
    end = text.index("<!-- codes:end -->")
    assert text[start:end].strip() == table(), (
        "docs/errors.md is out of date; its table must read:\n\n" + table())


def test_error_and_warning_codes_are_told_apart_by_their_spelling() -> None:
    # errors are kebab-case, warnings snake_case: the docs' "kind" column relies on it
    for code in CODES:
        assert re.fullmatch(r"[a-z]+(-[a-z]+)*|[a-z]+(_[a-z]+)+", code), code


def test_an_unregistered_code_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="unregistered"):
        TiapError("x", code="no-such-code")
    with pytest.raises(ValueError, match="unregistered"):
        Problems("f").add("x", code="no-such-code")


def test_problems_keep_their_code() -> None:
    probs = Problems("f.jsonl", limit=1)
    probs.add("a", line=1, code="duplicate")
    probs.add("b", line=2, code="duplicate")
    with pytest.raises(TiapError) as info:
        probs.raise_if_any()
    assert info.value.code == "duplicate"
    assert [p.code for p in info.value.problems] == ["duplicate", "duplicate"]
    assert str(info.value.problems[1]) == "f.jsonl: ... and 1 more problems"
