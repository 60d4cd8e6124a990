"""A real HTTP server on 127.0.0.1 that speaks the GitHub REST endpoints for issue comments
and pull requests."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

BOT = {"login": "github-actions[bot]", "type": "Bot"}
LIST_OR_CREATE = re.compile(r"/repos/([^/]+/[^/]+)/issues/(\d+)/comments")
ONE_COMMENT = re.compile(r"/repos/([^/]+/[^/]+)/issues/comments/(\d+)")
PULLS = re.compile(r"/repos/([^/]+/[^/]+)/pulls")
ONE_PULL = re.compile(r"/repos/([^/]+/[^/]+)/pulls/(\d+)")
DEFAULT_PER_PAGE = 30  # GitHub's page size when the request names none


@dataclass(frozen=True)
class Request:
    """One request the server received; `headers` has lower-case names and no Authorization."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any  # the parsed JSON body, or None


@dataclass
class _Injected:
    method: str
    status: int
    times: int
    headers: dict[str, str]
    body: Any


@dataclass
class _State:
    token: str
    read_only: bool
    per_page_max: int
    known: set[tuple[str, int]]
    comments: dict[tuple[str, int], list[dict[str, Any]]] = field(default_factory=dict)
    pulls: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)
    injected: list[_Injected] = field(default_factory=list)
    next_id: int = 1
    lock: threading.Lock = field(default_factory=threading.Lock)


class FakeGitHub:
    """GitHub's issue-comment endpoints with auth, pagination, read-only tokens and failures.

    Served on a daemon thread; use it as a context manager so the server is shut down."""

    def __init__(
        self,
        *,
        token: str = "t0ken",
        repos: Mapping[str, Iterable[int]] | None = None,
        read_only: bool = False,
        per_page_max: int = 100,
    ) -> None:
        known = {(repo, number) for repo, numbers in (repos or {}).items() for number in numbers}
        self._state = _State(
            token=token, read_only=read_only, per_page_max=per_page_max, known=known
        )
        handler = type("BoundHandler", (_Handler,), {"fake": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._thread: threading.Thread | None = None
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    # Settings are read on every request, so tests may change them between calls.
    @property
    def read_only(self) -> bool:
        """Whether POST and PATCH get 403, as with a fork pull request's token."""
        return self._state.read_only

    @read_only.setter
    def read_only(self, value: bool) -> None:
        self._state.read_only = value

    @property
    def per_page_max(self) -> int:
        """The largest page the server sends, whatever `per_page` asks for."""
        return self._state.per_page_max

    @per_page_max.setter
    def per_page_max(self, value: int) -> None:
        self._state.per_page_max = value

    @property
    def comments(self) -> dict[tuple[str, int], list[dict[str, Any]]]:
        """Comments per (repository "owner/name", issue number), oldest first."""
        return self._state.comments

    @property
    def pulls(self) -> dict[str, list[dict[str, Any]]]:
        """Pull requests per repository "owner/name", oldest first."""
        return self._state.pulls

    @property
    def requests(self) -> list[Request]:
        """Every request received, in order (including ones answered with an error)."""
        return self._state.requests

    def add_comment(self, repo: str, number: int, body: str) -> dict[str, Any]:
        """Seed a comment (registering the repository and issue); returns it."""
        with self._state.lock:
            self._state.known.add((repo, number))
            return self._create(repo, number, body)

    def fail_next(
        self,
        method: str,
        status: int,
        *,
        times: int = 1,
        headers: dict[str, str] | None = None,
        body: dict[str, Any] | list[Any] | None = None,
    ) -> None:
        """Answer the next `times` requests with `method` ("*" for any) with this response."""
        if body is None:
            body = {"message": HTTPStatus(status).phrase}
        injected = _Injected(method.upper(), status, times, dict(headers or {}), body)
        with self._state.lock:
            self._state.injected.append(injected)

    def start(self) -> FakeGitHub:
        """Start serving; returns self."""
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
            )
            self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving and close the listening socket."""
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> FakeGitHub:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def _create(self, repo: str, number: int, body: str) -> dict[str, Any]:
        comment_id = self._state.next_id
        self._state.next_id += 1
        comment = {
            "id": comment_id,
            "body": body,
            "html_url": f"https://github.com/{repo}/pull/{number}#issuecomment-{comment_id}",
            "url": f"{self.url}/repos/{repo}/issues/comments/{comment_id}",
            "user": dict(BOT),
        }
        self._state.comments.setdefault((repo, number), []).append(comment)
        return comment

    def _handle(
        self, method: str, target: str, headers: Mapping[str, str], body: Any
    ) -> tuple[int, dict[str, str], Any]:
        """Answer one request: (status, extra headers, JSON payload)."""
        url = urlsplit(target)
        query = dict(parse_qsl(url.query))
        state = self._state
        with state.lock:
            public = {k.lower(): v for k, v in headers.items() if k.lower() != "authorization"}
            state.requests.append(Request(method, url.path, query, public, body))
            for injected in state.injected:
                if injected.method in (method, "*"):
                    injected.times -= 1
                    if injected.times <= 0:
                        state.injected.remove(injected)
                    return injected.status, injected.headers, injected.body
            auth = headers.get("Authorization") or headers.get("authorization") or ""
            if auth not in (f"Bearer {state.token}", f"token {state.token}"):
                return 401, {}, _message("Bad credentials")
            return self._route(method, url.path, query, body)

    def _route(
        self, method: str, path: str, query: dict[str, str], body: Any
    ) -> tuple[int, dict[str, str], Any]:
        state = self._state
        if (match := LIST_OR_CREATE.fullmatch(path)) is not None:
            key = (match[1], int(match[2]))
            if key not in state.known:
                return 404, {}, _message("Not Found")
            if method == "GET":
                return self._page(path, key, query)
            if method == "POST":
                if state.read_only:
                    return 403, {}, _message("Resource not accessible by integration")
                if not isinstance(body, dict) or not isinstance(body.get("body"), str):
                    return 422, {}, _message('Invalid request.\n\n"body" wasn\'t supplied.')
                return 201, {}, self._create(key[0], key[1], body["body"])
        elif (match := PULLS.fullmatch(path)) is not None:
            return self._pulls(method, match[1], query, body)
        elif (match := ONE_PULL.fullmatch(path)) is not None:
            return self._one_pull(method, match[1], int(match[2]), body)
        elif (match := ONE_COMMENT.fullmatch(path)) is not None:
            found = self._find(match[1], int(match[2]))
            if found is None:
                return 404, {}, _message("Not Found")
            if method == "PATCH":
                if state.read_only:
                    return 403, {}, _message("Resource not accessible by integration")
                if not isinstance(body, dict) or not isinstance(body.get("body"), str):
                    return 422, {}, _message('Invalid request.\n\n"body" wasn\'t supplied.')
                found["body"] = body["body"]
                return 200, {}, found
        return 404, {}, _message("Not Found")

    def _pulls(
        self, method: str, repo: str, query: dict[str, str], body: Any
    ) -> tuple[int, dict[str, str], Any]:
        """GET lists (filters `head` "owner:branch" and `state`, default open); POST creates."""
        state = self._state
        if not any(known == repo for known, _ in state.known):
            return 404, {}, _message("Not Found")
        pulls = state.pulls.setdefault(repo, [])
        if method == "GET":
            wanted = query.get("state", "open")
            found = [
                dict(pull)
                for pull in pulls
                if wanted in ("all", pull["state"])
                and query.get("head", pull["head"]["label"]) == pull["head"]["label"]
            ]
            return 200, {}, found
        if method != "POST":
            return 404, {}, _message("Not Found")
        if state.read_only:
            return 403, {}, _message("Resource not accessible by integration")
        fields = ("title", "head", "base")
        if not isinstance(body, dict) or not all(isinstance(body.get(k), str) for k in fields):
            return 422, {}, _message("Validation Failed")
        owner = repo.split("/")[0]
        label = f"{owner}:{body['head']}"
        for pull in pulls:
            if (pull["state"], pull["head"]["label"]) == ("open", label):
                return 422, {}, _message(f"A pull request already exists for {label}.")
        number = state.next_id
        state.next_id += 1
        pull = {
            "number": number,
            "state": "open",
            "title": body["title"],
            "body": body.get("body"),
            "html_url": f"https://github.com/{repo}/pull/{number}",
            "url": f"{self.url}/repos/{repo}/pulls/{number}",
            "head": {"ref": body["head"], "label": label},
            "base": {"ref": body["base"], "label": f"{owner}:{body['base']}"},
            "user": dict(BOT),
        }
        pulls.append(pull)
        return 201, {}, dict(pull)

    def _one_pull(
        self, method: str, repo: str, number: int, body: Any
    ) -> tuple[int, dict[str, str], Any]:
        """GET reads one pull request; PATCH changes its title, body or state."""
        state = self._state
        found = next((p for p in state.pulls.get(repo, []) if p["number"] == number), None)
        if found is None:
            return 404, {}, _message("Not Found")
        if method == "GET":
            return 200, {}, dict(found)
        if method != "PATCH":
            return 404, {}, _message("Not Found")
        if state.read_only:
            return 403, {}, _message("Resource not accessible by integration")
        if not isinstance(body, dict):
            return 422, {}, _message("Validation Failed")
        for key in ("title", "body", "state"):
            if isinstance(body.get(key), str):
                found[key] = body[key]
        return 200, {}, dict(found)

    def _find(self, repo: str, comment_id: int) -> dict[str, Any] | None:
        for (owner_name, _), comments in self._state.comments.items():
            for comment in comments:
                if owner_name == repo and comment["id"] == comment_id:
                    return comment
        return None

    def _page(
        self, path: str, key: tuple[str, int], query: dict[str, str]
    ) -> tuple[int, dict[str, str], Any]:
        try:
            per_page = int(query.get("per_page", DEFAULT_PER_PAGE))
            page = int(query.get("page", 1))
        except ValueError:
            return 422, {}, _message("Invalid per_page or page")
        per_page = max(1, min(per_page, self._state.per_page_max))
        page = max(page, 1)
        comments = self._state.comments.get(key, [])
        last = max(1, -(-len(comments) // per_page))
        items = comments[(page - 1) * per_page : page * per_page]
        links = []

        def link(number: int, rel: str) -> str:
            pairs = {**query, "per_page": str(per_page), "page": str(number)}
            return f'<{self.url}{path}?{urlencode(pairs)}>; rel="{rel}"'

        # GitHub's order: prev, next, last, first; each only when it leads somewhere.
        if page > 1:
            links.append(link(min(page - 1, last), "prev"))
        if page < last:
            links += [link(page + 1, "next"), link(last, "last")]
        if page > 1:
            links.append(link(1, "first"))
        headers = {"Link": ", ".join(links)} if links else {}
        return 200, headers, [dict(comment) for comment in items]


def _message(text: str) -> dict[str, str]:
    return {"message": text, "documentation_url": "https://docs.github.com/rest"}


class _Handler(BaseHTTPRequestHandler):
    fake: FakeGitHub
    server_version = "FakeGitHub/1"

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def do_PATCH(self) -> None:
        self._serve()

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keeps test output quiet

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            self._reply(400, {}, _message("Problems parsing JSON"))
            return
        status, headers, payload = self.fake._handle(
            self.command, self.path, dict(self.headers.items()), body
        )
        self._reply(status, headers, payload)

    def _reply(self, status: int, headers: Mapping[str, str], payload: Any) -> None:
        data = json.dumps(payload).encode()
        sent = {name.lower() for name in headers}
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            if "x-ratelimit-remaining" not in sent:
                self.send_header("X-RateLimit-Limit", "5000")
                self.send_header("X-RateLimit-Remaining", "4999")
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            pass  # the client gave up (a timeout test)
