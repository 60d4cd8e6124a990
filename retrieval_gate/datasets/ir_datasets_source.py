"""Labelled sets named by an ir_datasets id (`dataset: {ir_datasets: cranfield}`), as PyTerrier
and ir_measures name them, read through ir_datasets' own API and cache (IR_DATASETS_HOME,
default ~/.ir_datasets). ir_datasets is an optional extra, imported only here.

Queries: each query's text is its `text` field, else its `title` (TREC topics have no `text`);
an explicit `dataset.query_field` picks another field. Every other string field of the query
becomes metadata (for slicing); other fields are skipped. Qrels: `query_id`, `doc_id` and
`relevance` as ir_datasets gives them. Documents (for the bm25 retriever): `title` and `text`
(or the document's `default_text()` when it has no `text`); `dataset.corpus` replaces them
with a local corpus.jsonl.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from retrieval_gate.core.judgments import Judgments
from retrieval_gate.core.model import Document, Query
from retrieval_gate.datasets.dataset import DataWarning, Labels
from retrieval_gate.datasets.files import QueryIds, field_corpus
from retrieval_gate.errors import GateError, InputError

if TYPE_CHECKING:
    from retrieval_gate.config.schema import DatasetConfig

LAYOUT = "ir_datasets"
INSTALL = "pip install 'retrieval-gate[ir-datasets]'"
FIELD = "dataset.ir_datasets"
_EXCLUSIVE = ("path", "queries", "qrels", "format", "split")
"""Fields that describe files: an ir_datasets id replaces them (dataset.corpus may stay)."""
_DETAIL = 300
"""Characters of an ir_datasets error message quoted in an InputError."""

CRANFIELD_GRADES = DataWarning(
    "ir_datasets_grades",
    "ir_datasets' cranfield qrels keep Cleverdon's codes as relevance (1 = complete answer "
    "... 4 = minimum interest, per cranqrel.readme; -1 = the query's source paper), so "
    "graded metrics such as nDCG rank the least relevant documents highest; binary metrics "
    "(recall, AP, precision) are unaffected. `retrieval-gate datasets fetch cranfield` "
    "converts them to grade = 5 - code",
    0,
    (),
)
"""Warned for the `cranfield` id (checked in ir_datasets 0.6.3)."""


def load_ir_datasets(spec: DatasetConfig, base_dir: Path) -> Labels:
    """The labelled set `spec.ir_datasets` names, read through ir_datasets (its cache first,
    downloading what is missing); an InputError when it cannot be read."""
    name = (spec.ir_datasets or "").strip()
    if not name:
        raise InputError(f"{FIELD}: give an ir_datasets id, e.g. cranfield or beir/scifact/test")
    given = [key for key in _EXCLUSIVE if key in spec.model_fields_set]
    if given:
        raise InputError(
            f"{FIELD} names the whole labelled set; remove "
            f"{', '.join(f'dataset.{key}' for key in given)} (only dataset.corpus may be "
            "given beside it, to replace its documents)"
        )
    irds = _import()
    dataset = _open(irds, name)
    for part, has in (("queries", dataset.has_queries), ("qrels", dataset.has_qrels)):
        if not has():
            raise InputError(
                f"{FIELD}: {name!r} has no {part}; name a dataset with queries and qrels "
                "(often a split, e.g. beir/scifact/test rather than beir/scifact)"
            )
    chosen = spec.query_field if "query_field" in spec.model_fields_set else None
    with _reading(irds, name, "queries"):
        seen = QueryIds(f"{FIELD} {name}")
        queries = [seen.first(_query(row, chosen, name)) for row in dataset.queries_iter()]
    with _reading(irds, name, "qrels"):
        judgments = _judgments(dataset.qrels_iter(), f"ir_datasets:{name}")
    corpus: dict[str, Document] | None = None
    if spec.corpus:
        corpus = field_corpus(spec, base_dir)
    elif dataset.has_docs():
        with _reading(irds, name, "documents"):
            corpus = _corpus_of(dataset.docs_iter(), name)
    notes = (CRANFIELD_GRADES,) if name == "cranfield" else ()
    source = f"ir_datasets:{name}"
    return Labels(queries, judgments, corpus, source=source, layout=LAYOUT, notes=notes)


def _import() -> Any:
    try:  # by name: ir_datasets ships no type information, and need not be installed
        return importlib.import_module("ir_datasets")
    except ImportError as error:
        raise InputError(
            f"{FIELD} needs the ir_datasets package, which is not installed ({error}); "
            f"install it with: {INSTALL}"
        ) from None


def _open(irds: Any, name: str) -> Any:
    """ir_datasets' Dataset for `name`; an InputError naming the id (and close ids) if unknown."""
    try:
        return irds.load(name)
    except KeyError:
        pass
    except Exception as error:
        raise InputError(f"{FIELD}: ir_datasets cannot open {name!r}: {_detail(error)}") from None
    known = [str(key) for key in irds.registry]
    lowered = {key.lower(): key for key in known}
    close = [lowered[key] for key in difflib.get_close_matches(name.lower(), lowered, n=3)]
    part = name.lower().strip("/")  # `scifact` -> beir/scifact, beir/scifact/test, ...
    close += [key for key in known if part in key.lower().split("/")]
    close = list(dict.fromkeys(close))[:4]
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    raise InputError(
        f"{FIELD}: {name!r} is not an ir_datasets id{hint} (ir_datasets "
        f"{getattr(irds, '__version__', '?')} knows {len(known)} ids, listed at "
        "https://ir-datasets.com)"
    )


@contextmanager
def _reading(irds: Any, name: str, part: str) -> Iterator[None]:
    """Turn whatever ir_datasets raises while reading (a failed download, a file it cannot
    parse, a dataset that must be obtained by hand) into an InputError."""
    try:
        yield
    except GateError:
        raise
    except Exception as error:
        try:
            home = str(irds.util.home_path())
        except Exception:
            home = "IR_DATASETS_HOME"
        raise InputError(
            f"{FIELD}: cannot read the {part} of {name!r} through ir_datasets: "
            f"{_detail(error)}\nir_datasets reads its copy under {home} (set by "
            "IR_DATASETS_HOME) and downloads what is missing; check the network connection "
            "(IR_DATASETS_DL_TIMEOUT and IR_DATASETS_DL_TRIES set its download timeout and "
            "retries), or place the files there as https://ir-datasets.com describes for "
            "this dataset"
        ) from None


def _detail(error: BaseException, limit: int = _DETAIL) -> str:
    """`Type: message`, shortened; ir_datasets' 'All download sources failed' lists each source."""
    args: tuple[Any, ...] = tuple(getattr(error, "args", ()))
    if (
        len(args) == 2
        and isinstance(args[1], list)
        and all(isinstance(item, tuple) and len(item) == 2 for item in args[1])
    ):
        sources = "; ".join(
            f"{getattr(source, 'url', source)}: {_detail(cause, 100)}" for source, cause in args[1]
        )
        return f"{args[0]} ({sources})"
    text = " ".join(str(error).split())
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _query(row: Any, chosen: str | None, name: str) -> Query:
    fields = _fields(row)
    key = chosen or next(
        (key for key in ("text", "title") if isinstance(fields.get(key), str)), None
    )
    if key is None or not isinstance(fields.get(key), str):
        strings = sorted(k for k, v in fields.items() if isinstance(v, str) and k != "query_id")
        wanted = f"no {key!r} field" if chosen else "no text or title field"
        raise InputError(
            f"{FIELD}: the queries of {name!r} have {wanted}; set dataset.query_field to one "
            f"of: {', '.join(strings) or '(none)'}"
        )
    metadata = {
        k: v for k, v in fields.items() if k not in ("query_id", key) and isinstance(v, str)
    }
    return Query(str(fields["query_id"]), fields[key], metadata)


def _judgments(rows: Iterator[Any], source: str) -> Judgments:
    queries: list[str] = []
    docs: list[str] = []
    grades: list[float] = []
    for row in rows:
        queries.append(str(row.query_id))
        docs.append(str(row.doc_id))
        grades.append(float(row.relevance))
    return Judgments.from_rows(queries, docs, grades, source=source)


def _corpus_of(rows: Iterator[Any], name: str) -> dict[str, Document]:
    corpus: dict[str, Document] = {}
    for row in rows:
        doc_id = str(row.doc_id)
        if doc_id in corpus:
            raise InputError(f"{FIELD}: document {doc_id!r} appears twice in {name!r}")
        text = getattr(row, "text", None)
        if not isinstance(text, str):
            text = str(row.default_text())
        title = getattr(row, "title", "")
        corpus[doc_id] = Document(doc_id, title if isinstance(title, str) else "", text)
    return corpus


def _fields(row: Any) -> dict[str, Any]:
    as_dict = getattr(row, "_asdict", None)
    return dict(as_dict()) if callable(as_dict) else dict(vars(row))
