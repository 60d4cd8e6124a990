"""The http retriever's HTTP clients: aiohttp on its own event loop when installed, else httpx."""

from __future__ import annotations

import base64
import contextlib
import importlib.util
import json
import os
import threading
import weakref
from collections.abc import Callable, Coroutine, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

from retrieval_gate.core.wording import one_line
from retrieval_gate.errors import GateError

if TYPE_CHECKING:
    import asyncio

ClientName = Literal["aiohttp", "httpx"]
Request = tuple[str, str, Mapping[str, str], "bytes | None"]
"""Method, URL, headers (complete), body."""
T = TypeVar("T")
REDIRECTS = frozenset({301, 302, 303, 307, 308})
CLIENT_ENV = "RETRIEVAL_GATE_HTTP_CLIENT"
"""Names the client (httpx or aiohttp) over the default, e.g. to compare the two."""


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


def default_client(environ: Mapping[str, str] | None = None) -> ClientName:
    """The client RETRIEVAL_GATE_HTTP_CLIENT names (httpx or aiohttp), else aiohttp when it
    is installed (the `fast-http` extra): about half of httpx's client CPU per query through
    the runner, or less (benchmarks/timings/bench_runner.py); else httpx, a core dependency."""
    installed = importlib.util.find_spec("aiohttp") is not None
    chosen = (os.environ if environ is None else environ).get(CLIENT_ENV, "").strip().lower()
    if chosen == "httpx" or (chosen == "aiohttp" and installed):
        return chosen  # type: ignore[return-value]  # one of ClientName, checked just above
    if chosen == "aiohttp":
        raise GateError(
            f"{CLIENT_ENV} is aiohttp, which is not installed: "
            'pip install "retrieval-gate[fast-http]", or unset it'
        )
    if chosen:
        raise GateError(
            f"{CLIENT_ENV} is {one_line(chosen)[:40]!r}; set it to httpx or aiohttp, or unset "
            "it (then aiohttp when installed, else httpx)"
        )
    return "aiohttp" if installed else "httpx"


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
        from aiohttp.helpers import get_env_proxy_for_url
        from yarl import URL

        self._aiohttp = aiohttp
        self._url = URL
        self._env_proxy = get_env_proxy_for_url
        self._proxies: dict[tuple[str, str | None, int | None], dict[str, Any]] = {}
        self.loop = asyncio.new_event_loop()
        """The client's event loop, on a thread of its own: `sent` is awaited there."""
        self._thread = threading.Thread(
            target=_serve, args=(self.loop,), name="retrieval-gate-http", daemon=True
        )
        self._thread.start()
        # The certificates httpx trusts (certifi, or SSL_CERT_FILE), so that the choice of
        # client never changes which servers verify.
        ssl_context = httpx.create_ssl_context()

        # A request whose caller bounds it as a whole (`sent(bounded=True)`) spares the
        # read timeout's timer, rescheduled at every chunk read.
        self._bounded = aiohttp.ClientTimeout(total=None, connect=timeout, sock_connect=timeout)

        async def session() -> Any:
            return aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=connections, ssl=ssl_context),
                timeout=aiohttp.ClientTimeout(
                    total=None, connect=timeout, sock_connect=timeout, sock_read=timeout
                ),
            )

        try:
            self._session = self._run(session()).result()
        except BaseException:
            self.loop.call_soon_threadsafe(self.loop.stop)
            raise
        # A retriever dropped unclosed must not leave its session open or its thread running.
        self._finalizer = weakref.finalize(self, _abandon, self.loop, self._session)

    def send(self, method: str, url: str, headers: Mapping[str, str], body: bytes | None) -> Reply:
        reply: Reply = self._run(self.sent(method, url, headers, body)).result()
        return reply

    def submit(
        self,
        request: Request,
        then: Callable[[Reply], T],
        fail: Callable[[UnansweredError], BaseException],
        delay: float = 0.0,
    ) -> Future[T]:
        """Send `request` (method, url, headers, body) after `delay` seconds without blocking
        the caller: a future of `then(reply)`, which runs on this client's thread (so does
        `fail`, which turns an unanswered request into the future's error)."""
        import asyncio

        async def call() -> T:
            if delay > 0:
                await asyncio.sleep(delay)
            try:
                reply = await self.sent(*request)
            except UnansweredError as error:
                raise fail(error) from None
            return then(reply)

        future: Future[T] = self._run(call())
        return future

    async def sent(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        body: bytes | None,
        *,
        bounded: bool = False,
    ) -> Reply:
        """The reply to a request, or UnansweredError; awaited on `loop` only. `bounded`: the
        caller bounds the whole request by a timeout, so no read needs its own."""
        import asyncio

        aiohttp = self._aiohttp
        try:
            return await self._send(method, url, headers, body, bounded)
        except asyncio.TimeoutError:
            raise UnansweredError("timeout", timeout=True) from None
        except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError) as error:
            raise UnansweredError(f"{type(error).__name__}: {error}", retryable=True) from None
        except (aiohttp.ClientError, ValueError) as error:  # an invalid URL or header
            raise UnansweredError(f"{type(error).__name__}: {error}") from None

    async def _send(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes | None, bounded: bool
    ) -> Reply:
        # encoded=True: the URL is sent as given (httpx built it), not re-quoted.
        target = self._url(url, encoded=True)
        if target.user is not None or target.password is not None:
            # As httpx does: the URL's user info is Basic auth and replaces any Authorization
            # header (aiohttp refuses the two together).
            userpass = f"{target.user or ''}:{target.password or ''}".encode()
            headers = {n: v for n, v in headers.items() if n.lower() != "authorization"}
            headers["Authorization"] = "Basic " + base64.b64encode(userpass).decode("ascii")
            target = target.with_user(None)
        async with self._session.request(
            method,
            target,
            headers=headers,
            data=body,
            allow_redirects=False,
            **self._proxy(target),
            **({"timeout": self._bounded} if bounded else {}),
        ) as response:
            return Reply(response.status, response.headers, await response.read())

    def _proxy(self, url: Any) -> dict[str, Any]:
        """The proxy HTTP(S)_PROXY and NO_PROXY name for `url`'s origin, as httpx honours
        them; looked up once per origin (aiohttp's trust_env would ask on a worker thread
        for every request, and read ~/.netrc, which httpx does not)."""
        origin = (url.scheme, url.host, url.port)
        if origin not in self._proxies:
            try:
                proxy, auth = self._env_proxy(url)
                self._proxies[origin] = {"proxy": proxy, "proxy_auth": auth}
            except LookupError:  # none, or NO_PROXY names the host
                self._proxies[origin] = {}
        return self._proxies[origin]

    def _run(self, coroutine: Coroutine[Any, Any, T]) -> Future[T]:
        """`coroutine` started on the client's loop."""
        import asyncio

        if self.loop.is_closed():
            coroutine.close()
            raise UnansweredError("the HTTP client is closed")
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)

    def close(self) -> None:
        if not self._finalizer.alive:
            return
        self._finalizer.detach()
        try:
            self._run(self._session.close()).result()
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join()


def _serve(loop: asyncio.AbstractEventLoop) -> None:
    """The client thread: run `loop` until it is stopped, then close it."""
    import asyncio

    try:
        loop.run_forever()
    finally:
        # Tasks still pending (a run's workers, when the client closes mid-run) are cancelled
        # and run to their end: destroyed pending, they would call into the closed loop.
        pending = asyncio.all_tasks(loop)
        for task in pending:
            task.cancel()
        if pending:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.close()


def _abandon(loop: asyncio.AbstractEventLoop, session: Any) -> None:
    """Close an unclosed client's session and stop its loop, without waiting: this may run
    on any thread, the loop's own included."""

    def shut() -> None:
        task = loop.create_task(session.close())
        task.add_done_callback(lambda _: loop.stop())

    with contextlib.suppress(RuntimeError):  # the loop closed already
        loop.call_soon_threadsafe(shut)
