"""The LLM answer judge: any OpenAI-compatible endpoint, the prompt as a template file.

**Template files.** Optional comment lines starting with ``#`` at the top (not sent); then
either the user message alone, or the sections ``--- SYSTEM ---`` and ``--- USER TEMPLATE
---`` (each line alone; an empty system section sends no system message). Placeholders, as
LongMemEval names them: ``{question}``, ``{answer}`` (the REFERENCE answer) and ``{response}``
(the system's answer), with the aliases ``{gold_answer}`` (= ``{answer}``) and
``{generated_answer}`` (= ``{response}``). They are filled in one pass, so a value holding
``{answer}`` is never filled again, and every other brace text (JSON examples such as
``{"label": "CORRECT"}``) is sent as it is: the template is never run through
``str.format``. Checked when read, every problem together (``error[input]``, with the line):

- a template with no ``{response}`` (or ``{generated_answer}``) or no ``{answer}`` (or
  ``{gold_answer}``): the judge would not see what it judges;
- a placeholder-like name close to a known one (``{respnse}``): an error with a
  did-you-mean, since the model would be sent the typo and never the text;
- another ``{name}`` (``{label}``) is sent as it is, and named in :attr:`PromptTemplate.unknown`
  and in the judged set's warnings (``template_text``);
- a section marker given twice, text before the first marker, an empty user template.

A missing file is ``error[io]``. The prompt's name is the file's stem (or ``name=``) and its
sha256 that of the file's bytes (:func:`tiap.answers.records.prompt_sha256`); both are
recorded with every verdict. TIAP's own prompt is :data:`DEFAULT_JUDGE_PROMPT`
(``src/tiap/answers/prompts/tiap_judge.txt``).

**The judge** (:class:`LLMAnswerJudge`) is the ``openai`` audit judge's transport
(:class:`tiap.audit.openai_judge.OpenAIJudge`: retries, invalid-reply watch, redaction) with
its own request: ``{"base_url", "body"}``, the body holding the model, the rendered messages,
``temperature``, ``max_tokens``, ``seed`` (the judge's seed + its run) and the
``response_format`` asked for: a JSON schema ``{"label": "CORRECT" | "WRONG", "reason":
...}``, falling back to ``json_object`` and to none as
:class:`tiap.llm.client.StructuredOutput` does. A reply is read as (:func:`parse_reply`):

- a JSON object with ``label`` ``CORRECT`` or ``WRONG`` (any case; ``reason`` or
  ``reasoning`` kept as the verdict's reason), also inside a ```` ```json ```` fence or
  with text around it;
- the plain words ``yes``, ``correct`` (-> correct), ``no``, ``wrong`` (-> wrong), any case,
  quotes and a final full stop ignored;
- anything else: no label (``null``), with the reason, never cached, asked again next run.

With no ``base_url``, the judge posts to the local llama.cpp server (``tiap llm serve``,
:func:`tiap.llm.local.local_endpoint`; default model ``qwen2.5-coder-1.5b`` on port 8089),
one request at a time.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from tiap.answers.judges import AnswerJudge
from tiap.answers.records import CORRECT, WRONG, Answer, JudgeConfig, prompt_sha256
from tiap.audit.judges import Request
from tiap.audit.labels import UNSCORED, Verdict
from tiap.audit.openai_judge import OpenAIJudge
from tiap.config import did_you_mean
from tiap.errors import Problems, TiapError
from tiap.io import read_text_file
from tiap.llm.client import MAX_INVALID, StructuredOutput, endpoint_id
from tiap.llm.local import CLIENT_DEFAULTS, DEFAULT_MODEL, DEFAULT_PORT, local_endpoint

__all__ = [
    "ANSWER_SCHEMA",
    "DEFAULT_JUDGE_PROMPT",
    "PLACEHOLDERS",
    "LLMAnswerJudge",
    "PromptTemplate",
    "parse_reply",
    "read_prompt",
]

#: placeholder -> the answer field it is filled with
PLACEHOLDERS = {"question": "question", "answer": "reference", "response": "response",
                "gold_answer": "reference", "generated_answer": "response"}
SYSTEM_MARK, USER_MARK = "--- SYSTEM ---", "--- USER TEMPLATE ---"
#: TIAP's own judge prompt (a template file inside the package)
DEFAULT_JUDGE_PROMPT: Path = Path(str(resources.files("tiap.answers") / "prompts" / "tiap_judge.txt"))
#: The structured output asked for: a label and a short reason
ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"label": {"type": "string", "enum": ["CORRECT", "WRONG"]},
                   "reason": {"type": "string"}},
    "required": ["label", "reason"],
    "additionalProperties": False,
}
ANSWER_SCHEMA_NAME = "answer_verdict"
_NAME = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_FILL = re.compile(r"\{(" + "|".join(PLACEHOLDERS) + r")\}")


@dataclass(frozen=True)
class PromptTemplate:
    """A judge prompt read from a template file (module docstring).

    >>> _ = Path("judge.txt").write_text("# my judge\\nIs {response} the same as {answer}? "
    ...                                  'Reply {"label": "CORRECT"} or WRONG.\\n')
    >>> t = read_prompt("judge.txt")
    >>> t.name, t.system, t.render("Where?", "Paris", "in Paris")
    ('judge', None, [{'role': 'user', 'content': 'Is in Paris the same as Paris? Reply {"label": "CORRECT"} or WRONG.'}])
    """

    name: str
    sha256: str
    system: str | None
    user: str
    path: str | None = None
    #: ``{name}`` texts that are no placeholder, sent as they are
    unknown: tuple[str, ...] = ()

    def render(self, question: str | None, reference: str | None,
               response: str | None) -> list[dict[str, str]]:
        """The chat messages for one answer (a missing value is filled with ``""``)."""
        values = {"question": question or "", "reference": reference or "",
                  "response": response or ""}

        def fill(text: str) -> str:
            return _FILL.sub(lambda m: values[PLACEHOLDERS[m.group(1)]], text)

        out = [] if self.system is None else [{"role": "system", "content": fill(self.system)}]
        return [*out, {"role": "user", "content": fill(self.user)}]


def read_prompt(path: str | Path, *, name: str | None = None) -> PromptTemplate:
    """Read a template file (module docstring); every problem is reported together.

    >>> _ = Path("typo.txt").write_text("Q: {question}\\nGold: {answer}\\nSaid: {respnse}\\n")
    >>> read_prompt("typo.txt")
    Traceback (most recent call last):
    ...
    tiap.errors.TiapError: typo.txt:3: unknown placeholder {respnse} (did you mean 'response'?)...
    """
    path = Path(path)
    _, text = read_text_file(path, "prompt template")
    problems = Problems(path)
    lines = text.splitlines()
    start = 0
    while start < len(lines) and (lines[start].startswith("#") or not lines[start].strip()):
        start += 1
    marks: dict[str, list[int]] = {SYSTEM_MARK: [], USER_MARK: []}
    for i in range(start, len(lines)):
        if lines[i].strip() in marks:
            marks[lines[i].strip()].append(i)
    for mark, at in marks.items():
        if len(at) > 1:
            problems.add(f"section {mark!r} is given {len(at)} times", at[1] + 1)
    sections: dict[str, tuple[int, str]] = {}  # mark -> (first line of its text, text)
    if not any(marks.values()):
        sections[USER_MARK] = (start + 1, "\n".join(lines[start:]).strip())
    else:
        bounds = sorted((at[0], m) for m, at in marks.items() if at)
        if any(ln.strip() for ln in lines[start:bounds[0][0]]):
            problems.add(f"text before the first section marker ({bounds[0][1]!r})",
                         start + 1)
        for j, (at, mark) in enumerate(bounds):
            end = bounds[j + 1][0] if j + 1 < len(bounds) else len(lines)
            sections[mark] = (at + 2, "\n".join(lines[at + 1:end]).strip())
        if not marks[USER_MARK]:
            problems.add(f"a {SYSTEM_MARK!r} section but no {USER_MARK!r} section")
    user_line, user = sections.get(USER_MARK, (start + 1, ""))
    if USER_MARK in sections and not user:
        problems.add("the user template is empty", user_line)
    found: set[str] = set()
    unknown: list[str] = []
    for mark, (first, body) in sections.items():
        for k, line in enumerate(body.splitlines()):
            for m in _NAME.finditer(line):
                word = m.group(1)
                if word in PLACEHOLDERS:
                    found.add(PLACEHOLDERS[word])
                    continue
                hint = did_you_mean(word, list(PLACEHOLDERS))
                if hint:
                    problems.add(f"unknown placeholder {{{word}}}{hint}; the placeholders are "
                                 f"{', '.join('{' + p + '}' for p in PLACEHOLDERS)}",
                                 _line_of(lines, first, mark, body, k))
                elif word not in unknown:
                    unknown.append(word)
    if not (found or problems.total):
        problems.add("the template has no placeholder: it needs {response} (the system's "
                     "answer) and {answer} (the reference answer)")
    elif not problems.total:
        for role, names in (("response", "{response} (the system's answer)"),
                            ("reference", "{answer} (the reference answer)")):
            if role not in found:
                problems.add(f"the template has no {names}: the judge would not see it")
    problems.raise_if_any()
    system = sections.get(SYSTEM_MARK, (0, ""))[1] or None
    return PromptTemplate(name or path.stem, prompt_sha256(path), system, user, str(path),
                          tuple(unknown))


def _line_of(lines: list[str], first: int, mark: str, body: str, k: int) -> int:
    """The file line of line ``k`` of a section's stripped text (blank lines before it)."""
    i = first - 1
    while i < len(lines) and not lines[i].strip():
        i += 1
    return i + k + 1


_FENCE = re.compile(r"```(?:json)?\s*(\{.*?\})\s*```", re.DOTALL)
_OBJECT = re.compile(r"(\{.*\})", re.DOTALL)  # a JSON object with text around it
_WORDS = {"yes": CORRECT, "correct": CORRECT, "no": WRONG, "wrong": WRONG}


def parse_reply(content: str) -> Verdict:
    """The verdict a reply gives (module docstring).

    >>> parse_reply('{"label": "CORRECT", "reason": "same date"}').label
    'correct'
    >>> parse_reply("No.").label, parse_reply(" yes ").label
    ('wrong', 'correct')
    >>> parse_reply("I think it is right").reason
    "the reply is not a label: 'I think it is right'"
    """
    text = (content or "").strip()
    if not text:
        return Verdict(UNSCORED, reason="empty reply")
    m = _FENCE.search(text) or _OBJECT.search(text)
    candidate = m.group(1) if m else text
    if candidate.startswith("{"):
        try:
            data = json.loads(candidate)
        except ValueError:
            return Verdict(UNSCORED, reason=f"the reply is not valid JSON: {text[:80]!r}")
        if not isinstance(data, dict):
            return Verdict(UNSCORED, reason="the reply is not a JSON object")
        keys = {str(k).lower(): v for k, v in data.items()}
        label = keys.get("label")
        why = keys.get("reason", keys.get("reasoning"))
        word = label.strip().lower() if isinstance(label, str) else None
        if word not in ("correct", "wrong"):
            return Verdict(UNSCORED, reason=f"label {label!r} is not CORRECT or WRONG")
        return Verdict(word, notes=str(why) if why is not None else None)
    word = text.strip("\"'`*").rstrip(".!").strip().lower()
    if word in _WORDS:
        return Verdict(_WORDS[word])
    return Verdict(UNSCORED, reason=f"the reply is not a label: {text[:80]!r}")


class LLMAnswerJudge(OpenAIJudge, AnswerJudge):
    """An LLM judge of answers over an OpenAI-compatible endpoint (module docstring).

    Args:
        prompt: a template file, or a :class:`PromptTemplate` (default :data:`DEFAULT_JUDGE_PROMPT`).
        model, base_url: the endpoint; neither: the local server's (``tiap llm serve``).
        temperature, max_tokens, seed: decoding (the seed sent is ``seed + run``).
        run: the repetition (0, 1, ...): a distinct request, a distinct configuration.
        response_format, timeout, max_retries, backoff, max_backoff, concurrency,
        max_invalid, api_key_env: as for the ``openai`` judge.
        port: the local server's port, when ``base_url`` is not given.

    Its configuration is named ``<model>|<prompt>|r<run>``:

    >>> j = LLMAnswerJudge(model="gpt-4o", base_url="http://127.0.0.1:9/v1")
    >>> j.name, j.config().prompt, len(j.config().prompt_sha256)
    ('gpt-4o|tiap_judge|r0', 'tiap_judge', 64)
    >>> body = j.request(Answer("locomo", "A", "q1", "in Paris", question="Where?",
    ...                         reference="Paris"))["body"]
    >>> body["seed"], body["response_format"]["type"], body["messages"][1]["content"][-60:]
    (0, 'json_schema', '...')
    >>> j.for_run(2).name, j.for_run(2).request(Answer("locomo", "A", "q1", "x"))["body"]["seed"]
    ('gpt-4o|tiap_judge|r2', 2)
    """

    factory = "answer-llm"
    kind = "llm"
    batch_size = None

    def __init__(self, prompt: str | Path | PromptTemplate | None = None, *,
                 model: str | None = None, base_url: str | None = None,
                 temperature: float = 0.0, max_tokens: int = 256, seed: int = 0, run: int = 0,
                 response_format: str = "json_schema", timeout: float | None = None,
                 max_retries: int = 4, backoff: float = 1.0, max_backoff: float = 30.0,
                 concurrency: int | None = None, max_invalid: float = MAX_INVALID,
                 api_key_env: str = "OPENAI_API_KEY", port: int = DEFAULT_PORT) -> None:
        self._args = {k: v for k, v in locals().items() if k not in ("self", "__class__")}
        if isinstance(run, bool) or not isinstance(run, int) or run < 0:
            raise TiapError(f"run must be an integer >= 0, got {run!r}", code="config")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TiapError(f"seed must be an integer, got {seed!r}", code="config")
        self.template = (prompt if isinstance(prompt, PromptTemplate)
                         else read_prompt(DEFAULT_JUDGE_PROMPT if prompt is None else prompt))
        local = base_url is None
        if local:
            base_url, model = local_endpoint(model or DEFAULT_MODEL, port)
        self.run = run
        self.seed_base = seed
        super().__init__(
            model=model, base_url=base_url, api_key_env=api_key_env, temperature=temperature,
            max_tokens=max_tokens, seed=seed + run, response_format=response_format,
            timeout=timeout or (CLIENT_DEFAULTS["timeout"] if local else 60.0),
            max_retries=max_retries, backoff=backoff, max_backoff=max_backoff,
            concurrency=concurrency or (CLIENT_DEFAULTS["concurrency"] if local else 4),
            max_invalid=max_invalid, name=f"{model}|{self.template.name}|r{run}")
        self.structured = StructuredOutput(self.http, self.response_format,
                                           ANSWER_SCHEMA_NAME, ANSWER_SCHEMA)

    def for_run(self, run: int, *, temperature: float | None = None) -> LLMAnswerJudge:
        """This judge for repetition ``run`` (and ``temperature``, when given)."""
        args = dict(self._args, run=run, prompt=self.template)
        if temperature is not None:
            args["temperature"] = temperature
        return LLMAnswerJudge(args.pop("prompt"), **args)

    @property
    def template_warnings(self) -> list[dict[str, Any]]:
        """The prompt's ``{name}`` texts sent as they are (a counted warning)."""
        if not self.template.unknown:
            return []
        names = ", ".join("{" + u + "}" for u in self.template.unknown)
        return [{"message": f"prompt {self.template.name}: {names} is no placeholder and was "
                            "sent as it is", "count": len(self.template.unknown)}]

    def settings(self) -> dict[str, Any]:
        return {"factory": self.factory, "name": self.name, "model": self.model,
                "base_url": endpoint_id(self.base_url), "temperature": self.temperature,
                "max_tokens": self.max_tokens, "seed": self.seed, "run": self.run,
                "response_format": self.response_format, "max_invalid": self.max_invalid,
                "prompt": self.template.name, "prompt_sha256": self.template.sha256}

    def config(self) -> JudgeConfig:
        """The judge configuration: its settings record the base seed (run ``r`` sends
        ``seed + r``), so the runs of one judge differ in ``run`` only and form one family
        of the noise band."""
        return JudgeConfig(self.name, kind="llm", model=self.model, prompt=self.template.name,
                           prompt_sha256=self.template.sha256, temperature=self.temperature,
                           run=self.run,
                           settings={"max_tokens": self.max_tokens, "seed": self.seed_base,
                                     "response_format": self.response_format,
                                     "base_url": endpoint_id(self.base_url)})

    def payload(self, case: Any) -> dict[str, Any]:
        a: Answer = case.answer if hasattr(case, "case_id") else case
        body: dict[str, Any] = {
            "model": self.model,
            "messages": self.template.render(a.question, a.reference, a.answer),
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
        }
        return self.structured.body(body)

    def request_for(self, answer: Answer) -> Request:
        return OpenAIJudge.request(self, answer)

    def request(self, case: Any) -> Request:
        return OpenAIJudge.request(self, case)

    def parse_reply(self, content: str) -> Verdict:
        return parse_reply(content)
