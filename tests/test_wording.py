"""Counted nouns read as English."""

from retrieval_gate.wording import plural


def test_plural_forms() -> None:
    assert plural(1, "query") == "1 query"
    assert plural(3, "query") == "3 queries"
    assert plural(0, "failing check") == "0 failing checks"
    assert plural(2, "day") == "2 days"
    assert plural(2, "index", "indices") == "2 indices"
