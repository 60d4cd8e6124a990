"""An example search service for http.yaml: POST {"query", "top_k"} -> {"hits": [{id, score}]}.

GET /health answers 200 once it listens: http.yaml's `serve.ready` can poll it.

Start it with `python3 configs/adapters/my_server.py [PORT]` (default 8000), then run
`retrieval-gate run -c configs/adapters/http.yaml` in another shell.
"""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from my_retriever import search


class SearchHandler(BaseHTTPRequestHandler):
    """POST /search with a JSON body {"query": text, "top_k": k}; GET /health."""

    def do_GET(self) -> None:
        """Answer the readiness check."""
        if self.path.split("?")[0] != "/health":
            self._send(404, {"error": f"no route {self.path}; GET /health"})
            return
        self._send(200, {"status": "ok"})

    def do_POST(self) -> None:
        """Answer one search request, or 400 on a malformed one."""
        if self.path.split("?")[0] != "/search":
            self._send(404, {"error": f"no route {self.path}; POST /search"})
            return
        try:
            request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            hits = search(str(request["query"]), int(request.get("top_k", 10)), {})
        except (ValueError, KeyError, TypeError) as error:
            self._send(400, {"error": f"expected {{query, top_k}}: {error!r}"})
            return
        self._send(200, {"hits": [{"id": doc, "score": score} for doc, score in hits]})

    def log_message(self, format: str, *args: object) -> None:
        """Stay quiet: one log line per query drowns the gate's output."""

    def _send(self, status: int, body: object) -> None:
        data = json.dumps(body).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def make_server(port: int = 8000, host: str = "127.0.0.1") -> ThreadingHTTPServer:
    """A server on `host:port` (port 0 picks a free one); call serve_forever() on it."""
    return ThreadingHTTPServer((host, port), SearchHandler)


if __name__ == "__main__":
    server = make_server(int(sys.argv[1]) if len(sys.argv) > 1 else 8000)
    print(f"serving on http://127.0.0.1:{server.server_address[1]}/search", file=sys.stderr)
    server.serve_forever()
