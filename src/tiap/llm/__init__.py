"""Talking to language models: one HTTP client and one local server.

- :mod:`tiap.llm.client`: the client for OpenAI-compatible chat-completions endpoints
  (retries, structured output, redaction, endpoint identity, invalid-reply watch), shared
  by the ``llm`` memory parser (:mod:`tiap.memory.llm_parser`) and the ``openai`` judge
  (:mod:`tiap.audit.openai_judge`).
- :mod:`tiap.llm.local`: pinned small models and the llama.cpp server TIAP starts on
  ``127.0.0.1`` (``tiap llm serve``; the server's child process is
  ``python -m tiap.llm.local``).

The package imports nothing until a name is used (PEP 562): ``from tiap.llm import
ChatClient`` loads the client only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tiap.lazy import lazy_exports

__all__ = [
    "DEFAULT_MODEL",
    "MODELS",
    "ChatClient",
    "CheckReply",
    "LocalServer",
    "check_server",
    "installed",
    "local_endpoint",
    "model_rows",
    "redact",
    "serve_model",
]

#: name -> the module that defines it
_HOMES = {
    "ChatClient": "tiap.llm.client",
    "redact": "tiap.llm.client",
    "DEFAULT_MODEL": "tiap.llm.local",
    "MODELS": "tiap.llm.local",
    "LocalServer": "tiap.llm.local",
    "installed": "tiap.llm.local",
    "local_endpoint": "tiap.llm.local",
    "CheckReply": "tiap.llm.local",
    "check_server": "tiap.llm.local",
    "model_rows": "tiap.llm.local",
    "serve_model": "tiap.llm.local",
}

if TYPE_CHECKING:  # pragma: no cover
    from tiap.llm.client import ChatClient, redact
    from tiap.llm.local import (
        DEFAULT_MODEL,
        MODELS,
        CheckReply,
        LocalServer,
        check_server,
        installed,
        local_endpoint,
        model_rows,
        serve_model,
    )


__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
