"""The `embedding:` block of vector-store retrievers: a Python callable, an OpenAI-compatible
endpoint or wordllama's bundled weights, as one batched, shape-checked function."""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag

from retrieval_gate.adapters.http import public_url
from retrieval_gate.adapters.targets import load_target, user_errors
from retrieval_gate.core import redaction
from retrieval_gate.core.strict import StrictModel
from retrieval_gate.core.wording import excerpt
from retrieval_gate.errors import GateError, RetrieverError

if TYPE_CHECKING:
    import numpy as np

WORDLLAMA_CONFIG = "l2_supercat"
WORDLLAMA_SHIPPED = 256
"""The one width whose weights the wordllama wheel holds; 64 and 128 are its first columns."""


class PythonEmbedding(StrictModel):
    """Any Python callable: a list of texts in, one vector per text out."""

    python: str = Field(
        description=(
            "'module:callable' taking a list of strings and returning one vector per string "
            "(a list of lists of floats or a 2-D numpy array); the config's folder is importable."
        )
    )
    batch: int = Field(default=64, ge=1, description="Texts per call.")


class OpenAIEndpoint(StrictModel):
    """An endpoint speaking the OpenAI embeddings protocol (POST /v1/embeddings)."""

    url: str = Field(
        description=(
            "Base URL the protocol's paths hang from, e.g. https://api.openai.com/v1 or "
            "http://127.0.0.1:8080/v1; requests go to URL/embeddings."
        )
    )
    model: str = Field(description="The model name sent with each request.")
    api_key_env: str | None = Field(
        default=None,
        description="Environment variable holding the API key, sent as a Bearer token; null "
        "for a server that needs none. The key never appears in output.",
    )
    batch: int = Field(default=64, ge=1, le=2048, description="Texts per request.")
    dimensions: int | None = Field(
        default=None,
        ge=1,
        description="Asked of models that can shorten their vectors (`dimensions` in the "
        "request); answers of another width are an error. null: the model's own width.",
    )
    timeout: float = Field(default=60.0, gt=0, description="Seconds to wait for one request.")


class OpenAIEmbedding(StrictModel):
    """Vectors from an OpenAI-compatible embeddings endpoint."""

    openai: OpenAIEndpoint


class WordLlamaSettings(StrictModel):
    """wordllama's static token embeddings, shipped inside its wheel: no download."""

    dim: Literal[64, 128, 256] = Field(
        default=256,
        description="Vector width: 256, or its first 64 or 128 columns (wordllama's "
        "matryoshka truncation). Wider models are not in the wheel and would need a download.",
    )
    batch: int = Field(default=256, ge=1, description="Texts per call.")


class WordLlamaEmbedding(StrictModel):
    """Vectors from wordllama (pip install 'retrieval-gate[dense]'), offline."""

    wordllama: WordLlamaSettings = Field(default_factory=WordLlamaSettings)


EMBEDDING_KINDS = ("python", "openai", "wordllama")


def _embedding_kind(value: Any) -> str | None:
    """The one source a block names (a model when validating a built config), else None."""
    if isinstance(value, PythonEmbedding | OpenAIEmbedding | WordLlamaEmbedding):
        value = value.model_dump()
    if isinstance(value, Mapping):
        named = [kind for kind in EMBEDDING_KINDS if kind in value]
        return named[0] if len(named) == 1 else None
    return None


EmbeddingConfig = Annotated[
    Annotated[PythonEmbedding, Tag("python")]
    | Annotated[OpenAIEmbedding, Tag("openai")]
    | Annotated[WordLlamaEmbedding, Tag("wordllama")],
    Discriminator(
        _embedding_kind,
        custom_error_type="embedding_kind",
        custom_error_message=(
            "give exactly one of python: 'module:callable', openai: {url, model, ...} or "
            "wordllama: {dim: 256}"
        ),
    ),
]


class Embedder:
    """Texts to a float32 matrix, one row per text, `batch` texts per call. Every answer is
    checked: one finite row per text, and one width for every call (the first answer's, or
    the width the config declares). Thread-safe when the function it wraps is."""

    def __init__(
        self,
        embed: Callable[[list[str]], Any],
        *,
        name: str,
        batch: int,
        dimension: int | None,
        description: Mapping[str, Any],
        close: Callable[[], None] | None = None,
    ) -> None:
        self._embed = embed
        self.name = name
        self.batch = batch
        self._dimension = dimension
        self._description = dict(description)
        self._close = close

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        parts = []
        for start in range(0, len(texts), self.batch):
            chunk = list(texts[start : start + self.batch])
            parts.append(self._checked(self._embed(chunk), len(chunk)))
        if not parts:
            return np.zeros((0, self._dimension or 0), dtype=np.float32)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def dimension(self) -> int:
        """The vectors' width: declared by the config, or read off one probe call."""
        if self._dimension is None:
            self(["dimension probe"])
        assert self._dimension is not None
        return self._dimension

    def describe(self) -> dict[str, Any]:
        """What decides the vectors (never a key): part of the retriever's description."""
        return dict(self._description)

    def close(self) -> None:
        if self._close is not None:
            self._close()

    def _checked(self, answer: Any, rows: int) -> np.ndarray:
        import numpy as np

        try:
            matrix = np.asarray(answer, dtype=np.float32)
        except (TypeError, ValueError):
            raise RetrieverError(
                f"{self.name} returned {type(answer).__name__}, not one vector per text "
                "(rows of equal length, numbers only): fix the embedding function"
            ) from None
        if matrix.ndim != 2 or matrix.shape[0] != rows or matrix.shape[1] == 0:
            raise RetrieverError(
                f"{self.name} returned an array of shape {matrix.shape} for {rows} texts; "
                f"expected ({rows}, width): one vector per text, in order"
            )
        if not np.isfinite(matrix).all():
            raise RetrieverError(f"{self.name} returned NaN or infinite values")
        width = matrix.shape[1]
        if self._dimension is None:
            self._dimension = width
        elif width != self._dimension:
            raise RetrieverError(
                f"{self.name} returned vectors of width {width}, expected {self._dimension}"
                " (the configured dimensions, or the first answer's width)"
            )
        return matrix


def embedder(config: EmbeddingConfig, base_dir: Path, *, where: str = "retriever") -> Embedder:
    """The function `config` describes; `base_dir` (the config's folder) makes a python
    target importable and `where` names the block in errors. Raises GateError."""
    name = f"{where}.embedding"
    if isinstance(config, PythonEmbedding):
        return _python(config, base_dir, name)
    if isinstance(config, OpenAIEmbedding):
        return _openai(config.openai, name, os.environ)
    return _wordllama(config.wordllama, name)


def _python(config: PythonEmbedding, base_dir: Path, name: str) -> Embedder:
    function = load_target(
        config.python, "a callable: list of texts -> list of vectors", search_dir=base_dir
    )
    if not callable(function):
        raise GateError(
            f"{name}.python {config.python!r} is a {type(function).__name__}, not a callable"
        )

    def call(texts: list[str]) -> Any:
        with user_errors(f"{name} ({config.python})"):
            return function(texts)

    return Embedder(
        call,
        name=f"{name} ({config.python})",
        batch=config.batch,
        dimension=None,
        description={"python": config.python},
    )


def _openai(config: OpenAIEndpoint, name: str, environ: Mapping[str, str]) -> Embedder:
    import httpx

    headers = {"Content-Type": "application/json"}
    if config.api_key_env:
        key = redaction.secret_from_env(f"{name}.openai.api_key_env", config.api_key_env, environ)
        headers["Authorization"] = f"Bearer {key}"
    try:
        parsed = httpx.URL(config.url)
    except httpx.InvalidURL as error:
        raise GateError(f"{name}.openai.url: {error}") from None
    if parsed.scheme not in ("http", "https"):
        raise GateError(
            f"{name}.openai.url {public_url(config.url)!r} is not an http(s) URL; write the "
            "base URL, e.g. https://api.openai.com/v1"
        )
    if parsed.password:
        redaction.register(parsed.password)
    target = config.url.rstrip("/")
    target = target if target.endswith("/embeddings") else f"{target}/embeddings"
    shown = f"{name} {public_url(target)}"
    # Redirects are not followed: httpx would send the key to whatever origin one names.
    client = httpx.Client(headers=headers, timeout=config.timeout, follow_redirects=False)

    def call(texts: list[str]) -> Any:
        body: dict[str, Any] = {"model": config.model, "input": texts, "encoding_format": "float"}
        if config.dimensions is not None:
            body["dimensions"] = config.dimensions
        try:
            response = client.post(target, json=body)
        except httpx.TimeoutException:
            raise RetrieverError(
                f"{shown}: no answer within {config.timeout:g}s", retryable=True
            ) from None
        except httpx.HTTPError as error:
            raise RetrieverError(
                redaction.redacted(
                    f"{shown}: {type(error).__name__}: {error}; check {name}.openai.url and "
                    "that the endpoint is up"
                ),
                retryable=isinstance(error, httpx.TransportError),
                kind=f"{shown}: {type(error).__name__}",
            ) from None
        status = response.status_code
        if status != 200:
            hint = {
                401: f": set {name}.openai.api_key_env to a variable holding a valid key",
                403: f": set {name}.openai.api_key_env to a variable holding a valid key",
                404: f": check {name}.openai.url (the base, ending in /v1) and model",
            }.get(status, "")
            raise RetrieverError(
                redaction.redacted(f"{shown}: HTTP {status}{hint}: {excerpt(response.text)}"),
                retryable=status == 429 or status >= 500,
                kind=f"{shown}: HTTP {status}",
            )
        return _vectors(response, shown)

    return Embedder(
        call,
        name=shown,
        batch=config.batch,
        dimension=config.dimensions,
        description={
            "openai": {
                "url": public_url(target),
                "model": config.model,
                "dimensions": config.dimensions,
            }
        },
        close=client.close,
    )


def _vectors(response: Any, shown: str) -> list[Any]:
    """The vectors of an embeddings answer, in input order (`data[*].index` says it)."""
    try:
        data = response.json()["data"]
        ordered = sorted(data, key=lambda item: int(item["index"]))
        return [item["embedding"] for item in ordered]
    except (ValueError, KeyError, TypeError):
        raise RetrieverError(
            redaction.redacted(
                f"{shown}: the answer has no data[*].embedding and index: {excerpt(response.text)}"
            ),
            kind=f"{shown}: the answer has no data[*].embedding",
        ) from None


def _wordllama(config: WordLlamaSettings, name: str) -> Embedder:
    model = load_wordllama(config.dim, name)
    import wordllama  # type: ignore[import-untyped]

    def call(texts: list[str]) -> Any:
        return model.embed(texts, norm=True, batch_size=config.batch)

    return Embedder(
        call,
        name=f"{name} (wordllama)",
        batch=config.batch,
        dimension=config.dim,
        description={
            "wordllama": {
                "config": WORDLLAMA_CONFIG,
                "dim": config.dim,
                "version": getattr(wordllama, "__version__", "unknown"),
            }
        },
    )


def load_wordllama(dim: int, name: str = "retriever.embedding") -> Any:
    """wordllama's model from the weights in its wheel, never from the network.

    wordllama 0.4 looks for its tokenizer in `<package>/tokenizer/` while the wheel ships it
    in `tokenizers/`, and on a miss downloads it from Hugging Face: a cache folder holding a
    copy is where it looks next, and `disable_download` makes any other miss an error."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        import wordllama
    except ImportError:
        raise GateError(
            f"{name}: wordllama is not installed: pip install 'retrieval-gate[dense]'"
        ) from None
    finally:
        # wordllama calls logging.basicConfig(level=INFO) on import: every library's INFO
        # lines (httpx's request URLs among them) would reach stderr.
        for handler in root.handlers[:]:
            if handler not in handlers:
                root.removeHandler(handler)
        root.setLevel(level)
    package = Path(wordllama.__file__).parent
    tokenizer = package / "tokenizers" / f"{WORDLLAMA_CONFIG}_tokenizer_config.json"
    if not tokenizer.is_file():
        raise GateError(
            f"{name}: wordllama's tokenizer is not at {tokenizer.name} in its package; "
            "reinstall wordllama (pip install --force-reinstall wordllama)"
        )
    with tempfile.TemporaryDirectory(prefix="retrieval-gate-wordllama-") as cache:
        (Path(cache) / "tokenizers").mkdir()
        shutil.copyfile(tokenizer, Path(cache) / "tokenizers" / tokenizer.name)
        try:
            return wordllama.WordLlama.load(
                config=WORDLLAMA_CONFIG,
                cache_dir=Path(cache),
                dim=WORDLLAMA_SHIPPED,
                trunc_dim=None if dim == WORDLLAMA_SHIPPED else dim,
                disable_download=True,
            )
        except (FileNotFoundError, ValueError) as error:
            raise GateError(f"{name}: wordllama could not load offline: {error}") from None
