"""Counted nouns read as English; text shown inert."""

import pytest

from retrieval_gate.core.wording import console_text, one_line, plural, visible_controls


def test_plural_forms() -> None:
    assert plural(1, "query") == "1 query"
    assert plural(3, "query") == "3 queries"
    assert plural(0, "failing check") == "0 failing checks"
    assert plural(2, "day") == "2 days"
    assert plural(2, "index", "indices") == "2 indices"


def test_id_lists_are_the_json_text_of_each_row_inert() -> None:
    import json
    import random
    import re

    from retrieval_gate.core.wording import json_id_lists

    rng = random.Random(0)
    alphabet = ['"', "\\", "\n", "\x00", "\x1b[31m", "\x85", "\u2028", "é", "中", "::error::", "a"]
    rows = [
        ("".join(rng.choices(alphabet, k=3)), ["".join(rng.choices(alphabet, k=4))] * i)
        for i in range(30)
    ]
    expected = "".join(json.dumps([q, docs], ensure_ascii=False) + "\n" for q, docs in rows)
    expected = re.sub("[\x80-\x9f]", lambda c: f"\\u{ord(c.group()):04x}", expected)
    text = json_id_lists(rows)
    assert text == expected
    assert [json.loads(line) for line in text.split("\n")[:-1]] == [[q, d] for q, d in rows]
    assert not re.search("[\x00-\x09\x0b-\x1f\x80-\x9f]", text)  # nothing a terminal acts on


def test_json_file_pieces_join_to_json_text_redacted_and_inert() -> None:
    import json
    import random
    import re

    from retrieval_gate.core import redaction
    from retrieval_gate.core.wording import json_file_pieces, json_text

    rng = random.Random(1)
    alphabet = [
        '"',
        "\\",
        "\n",
        "\x00",
        "\x1b[31m",
        "\x85",
        "\u2028",
        "中",
        "::error::",
        "tok-9f8e7d6c",
    ]
    document = {
        "scores": {"ndcg@10": [rng.random() for _ in range(30_000)]},  # several pieces
        "ids": ["".join(rng.choices(alphabet, k=3)) for _ in range(500)],
        "nested": [[[{"deep": "".join(rng.choices(alphabet, k=5))}]] * 3],
    }
    redaction.register("tok-9f8e7d6c")
    try:
        pieces = list(json_file_pieces(document))
        text = json_text(document)
        plain = json.dumps(redaction.scrubbed(document), indent=2, ensure_ascii=False)
    finally:
        redaction.forget()
    assert len(pieces) > 1
    assert "".join(pieces) == text + "\n"
    assert "tok-9f8e7d6c" not in text
    assert not re.search("[\x00-\x09\x0b-\x1f\x80-\x9f]", text)
    assert text == re.sub("[\x80-\x9f]", lambda c: f"\\u{ord(c.group()):04x}", plain)


@pytest.mark.parametrize(
    "mark", ["\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2069"]
)
def test_bidirectional_overrides_are_shown_not_obeyed(mark: str) -> None:
    text = f"access{mark}nimda"
    assert visible_controls(text) == "access?nimda"
    assert one_line(text) == "access?nimda"
    assert console_text(text) == "access?nimda"
