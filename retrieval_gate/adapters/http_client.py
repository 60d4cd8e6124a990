"""The http retriever's HTTP clients: aiohttp on its own event loop when installed, else httpx."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import threading
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    import asyncio

ClientName = Literal["aiohttp", "httpx"]
REDIRECTS = frozenset({301, 302, 303, 307, 308})


@dataclass(frozen=True)
class Reply:
    """One HTTP response, read whole."""

    status: int
    headers: Mapping[str, str]
    """Case-insensitive, as each client gives them."""
    content: bytes

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")

    @property
    def is_redirect(self) -> bool:
        return self.status in REDIRECTS and "Location" in self.headers


class UnansweredError(Exception):
    """A request that got no response: `timeout` when none came in time, else `retryable`
    when the connection failed (a transport error) and not when the request was invalid."""

    def __init__(self, text: str, *, timeout: bool = False, retryable: bool = False) -> None:
        super().__init__(text)
        self.timeout = timeout
        self.retryable = retryable or timeout


class Client(Protocol):
    name: ClientName

    def send(self, method: str, url: str, headers: Mapping[str, str], body: bytes | None) -> Reply:
        """The response to one request (`headers` complete: nothing is added but what the
        client always sends), or UnansweredError."""
        ...

    def close(self) -> None: ...


def json_body(value: Any) -> bytes:
    """`value` as a JSON request body, byte for byte as httpx's `json=` encodes it."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


def default_client() -> ClientName:
    """aiohttp when it is installed (the `fast-http` extra): a quarter of httpx's CPU per
    request (benchmarks/bench_http_clients.py); else httpx, a core dependency."""
    return "aiohttp" if importlib.util.find_spec("aiohttp") is not None else "httpx"


def open_client(name: ClientName | None, connections: int, timeout: float) -> Client:
    """A pooled, thread-safe client keeping `connections` connections alive, bounding each
    connect and each read by `timeout` seconds, following no redirect (a redirect would
    send custom headers, an X-Api-Key, to whatever origin it names)."""
    if (name or default_client()) == "aiohttp":
        return AiohttpClient(connections, timeout)
    return HttpxClient(connections, timeout)


class HttpxClient:
    name: ClientName = "httpx"

    def __init__(self, connections: int, timeout: float) -> None:
        import httpx

        self._httpx = httpx
        self._client = httpx.Client(
            timeout=timeout,
            follow_redirects=False,
            limits=httpx.Limits(max_connections=connections, max_keepalive_connections=connections),
        )

    def send(self, method: str, url: str, headers: Mapping[str, str], body: bytes | None) -> Reply:
        httpx = self._httpx
        try:
            response = self._client.request(method, url, headers=headers, content=body)
        except httpx.TimeoutException:
            raise UnansweredError("timeout", timeout=True) from None
        except httpx.TransportError as error:
            raise UnansweredError(f"{type(error).__name__}: {error}", retryable=True) from None
        except (httpx.HTTPError, httpx.InvalidURL) as error:
            raise UnansweredError(f"{type(error).__name__}: {error}") from None
        return Reply(response.status_code, response.headers, response.content)

    def close(self) -> None:
        self._client.close()


class AiohttpClient:
    """One `aiohttp.ClientSession` on an event loop of its own thread; `send` may be called
    from any thread and blocks it until the response is read."""

    name: ClientName = "aiohttp"

    def __init__(self, connections: int, timeout: float) -> None:
        import asyncio  # here: a CLI command that calls no service never loads it

        import aiohttp
        import httpx
        from yarl import URL

        self._aiohttp = aiohttp
        self._url = URL
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=_serve, args=(self._loop,), name="retrieval-gate-http", daemon=True
        )
        self._thread.start()
        # The certificates httpx trusts (certifi, or SSL_CERT_FILE), so that the choice of
        # client never changes which servers verify.
        ssl_context = httpx.create_ssl_context()

        async def session() -> Any:
            return aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=connections, ssl=ssl_context),
                timeout=aiohttp.ClientTimeout(
                    total=None, connect=timeout, sock_connect=timeout, sock_read=timeout
                ),
                trust_env=True,  # HTTP(S)_PROXY and NO_PROXY, as httpx honours them
            )

        try:
            self._session = self._run(session())
        except BaseException:
            self._loop.call_soon_threadsafe(self._loop.stop)
            raise
        # A retriever dropped unclosed must not leave its session open or its thread running.
        self._finalizer = weakref.finalize(self, _abandon, self._loop, self._session)

    def send(self, method: str, url: str, headers: Mapping[str, str], body: bytes | None) -> Reply:
        import asyncio

        aiohttp = self._aiohttp
        try:
            reply: Reply = self._run(self._send(method, url, headers, body))
            return reply
        except asyncio.TimeoutError:
            raise UnansweredError("timeout", timeout=True) from None
        except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError) as error:
            raise UnansweredError(f"{type(error).__name__}: {error}", retryable=True) from None
        except (aiohttp.ClientError, ValueError) as error:  # an invalid URL or header
            raise UnansweredError(f"{type(error).__name__}: {error}") from None

    async def _send(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes | None
    ) -> Reply:
        # encoded=True: the URL is sent as given (httpx built it), not re-quoted.
        async with self._session.request(
            method,
            self._url(url, encoded=True),
            headers=headers,
            data=body,
            allow_redirects=False,
        ) as response:
            return Reply(response.status, response.headers, await response.read())

    def _run(self, coroutine: Any) -> Any:
        import asyncio

        if self._loop.is_closed():
            coroutine.close()
            raise UnansweredError("the HTTP client is closed")
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    def close(self) -> None:
        if not self._finalizer.alive:
            return
        self._finalizer.detach()
        try:
            self._run(self._session.close())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()


def _serve(loop: asyncio.AbstractEventLoop) -> None:
    """The client thread: run `loop` until it is stopped, then close it."""
    try:
        loop.run_forever()
    finally:
        loop.close()


def _abandon(loop: asyncio.AbstractEventLoop, session: Any) -> None:
    """Close an unclosed client's session and stop its loop, without waiting: this may run
    on any thread, the loop's own included."""

    def shut() -> None:
        task = loop.create_task(session.close())
        task.add_done_callback(lambda _: loop.stop())

    with contextlib.suppress(RuntimeError):  # the loop closed already
        loop.call_soon_threadsafe(shut)
