"""Local HTTP for tests: a server on 127.0.0.1 that answers by a Python function, a free port."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

Answer = tuple[int, Mapping[str, str], bytes]
"""Status, headers and body of a response."""
Respond = Callable[[str, str, Mapping[str, str], bytes], Answer]
"""(method, path, request headers, request body) -> the answer."""


@contextmanager
def serving(respond: Respond) -> Iterator[str]:
    """The server's base URL (http://127.0.0.1:PORT) while the block runs."""

    class Handler(BaseHTTPRequestHandler):
        # Keep-alive, as the services the gate calls do: a connection per request cost the
        # judge's tests a third of their time in connects and closes.
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go out at once, not 40 ms apart

        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            status, headers, payload = respond(self.command, self.path, dict(self.headers), body)
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = _answer  # noqa: N815 (http.server's names)

        def log_message(self, *args: object) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def free_port() -> int:
    """A port nothing listens on now (bound by the OS, then released)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def listening(port: int) -> bool:
    """Whether something accepts connections on 127.0.0.1:`port` now."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1.0).close()
    except OSError:
        return False
    return True
