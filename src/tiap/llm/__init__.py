"""Talking to language models: one HTTP client and one local server.

- :mod:`tiap.llm.client`: the client for OpenAI-compatible chat-completions endpoints
  (retries, structured output, redaction, endpoint identity, invalid-reply watch), shared
  by the ``llm`` memory parser (:mod:`tiap.memory.llm_parser`) and the ``openai`` judge
  (:mod:`tiap.audit.openai_judge`).
- :mod:`tiap.llm.local`: pinned small models and the llama.cpp server TIAP starts on
  ``127.0.0.1`` (``tiap llm serve``; the server's child process is
  ``python -m tiap.llm.local``).

The package itself imports nothing: import the module you need.
"""
