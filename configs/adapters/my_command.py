"""An example program for command.yaml: answers one JSON line per query on stdin/stdout.

retrieval-gate starts it once and keeps it running. Each request is a line
{"id", "text", "k", "metadata"}; each answer a line {"id", "results": [{"id", "score"}, ...]},
or {"id", "error": "message"} to fail that query. Logs go to stderr, never stdout.
"""

from __future__ import annotations

import json
import sys

from my_retriever import search  # the program's folder is on sys.path


def main() -> None:
    """Answer request lines until stdin closes."""
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        try:
            hits = search(request["text"], request["k"], request.get("metadata") or {})
        except Exception as error:  # report it for this query and keep serving
            print(json.dumps({"id": request["id"], "error": repr(error)}), flush=True)
            continue
        results = [{"id": doc, "score": score} for doc, score in hits]
        print(json.dumps({"id": request["id"], "results": results}), flush=True)


if __name__ == "__main__":
    main()
