"""The public collections `datasets fetch` knows: their URLs, pinned checksums and converters."""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from retrieval_gate.datasets.convert import convert_beir, convert_cranfield
from retrieval_gate.errors import GateError


@dataclass(frozen=True)
class Checksum:
    """The pinned digest of one file: a download (named as in its URL) or a file inside it."""

    file: str
    algorithm: Literal["md5", "sha256"]
    expected: str
    strip_cr: bool = False  # the digest of the content with every carriage return removed

    def label(self) -> str:
        """How the digest is taken, e.g. `sha256 (carriage returns removed)`."""
        return self.algorithm + (" (carriage returns removed)" if self.strip_cr else "")


Converter = Callable[[Path, Path], None]
"""(folder the downloads were unpacked into, output folder to create as a BEIR folder)."""


@dataclass(frozen=True)
class Collection:
    """A public collection: its downloads, their pinned checksums, and its converter."""

    name: str
    urls: tuple[str, ...]
    checksums: tuple[Checksum, ...]
    convert: Converter
    description: str
    checksum_source: str
    notes: tuple[str, ...] = ()


def _cranfield_collection() -> Collection:
    # ir_datasets pins the archive itself (md5 1730f7be572d95a5a4b56c59a7b900a5, 506,960 bytes;
    # allenai/ir_datasets ir_datasets/etc/downloads.json, "cranfield"), but no sha256 of it is
    # published and a repacked archive with the same files would fail it. The files that are
    # used are pinned instead: sha256 of their content with carriage returns removed (upstream
    # has CRLF line endings), taken from a copy of the distributed files
    # (github.com/noramtboraas/information-retrieval, commit 9e359c7), which agrees with two
    # other copies once whitespace is normalised (each of those has its own corruption). The
    # archive's own md5 and sha256 are recorded in the marker file.
    return Collection(
        name="cranfield",
        urls=("http://ir.dcs.gla.ac.uk/resources/test_collections/cran/cran.tar.gz",),
        checksums=(
            Checksum(
                "cran.all.1400",
                "sha256",
                "b234544b6ceccd131520df4a3cb6d42aee6576eb577933d047e722bbfe7b0b09",
                strip_cr=True,
            ),
            Checksum(
                "cran.qry",
                "sha256",
                "dd9b1419f678874daf66d5239ca372193722d74f5ea749f3b0f46a6b37cd9274",
                strip_cr=True,
            ),
            Checksum(
                "cranqrel",
                "sha256",
                "92e54b58dac0b980152178f350d892fae66c8a239b8a11715b835fb8d2f6bc0e",
                strip_cr=True,
            ),
        ),
        convert=convert_cranfield,
        description="Cranfield 1400: 1,400 aeronautics abstracts, 225 queries (0.5 MB)",
        checksum_source="sha256 of the Glasgow files, carriage returns removed",
        notes=(
            "query ids are positions in cran.qry (1-225), as cranqrel numbers them",
            "grade = 5 - Cleverdon code (code 1 'complete answer' -> 4, code 4 -> 1)",
            "code -1 rows (the query's source paper) are kept as grade 0: judged, not relevant",
        ),
    )


BEIR_URL = "https://public.ukp.informatik.tu-darmstadt.de/thakur/BEIR/datasets/{}.zip"
# md5 of each zip as BEIR publishes it (beir-cellar/beir README.md, "Available Datasets"); the
# same values are pinned by allenai/ir_datasets in ir_datasets/etc/downloads.json ("beir").
# BEIR publishes md5 only, so md5 is what is checked; the sha256 is recorded in the marker.
# Left out: cqadupstack (twelve sub-collections, not one BEIR folder), and the sets BEIR does
# not host (bioasq, signal1m, trec-news, robust04).
BEIR_MD5 = {
    "msmarco": ("444067daf65d982533ea17ebd59501e4", "8.8M passages, 43 test queries (1.1 GB)"),
    "trec-covid": ("ce62140cb23feb9becf6270d0d1fe6d1", "171K articles, 50 queries (74 MB)"),
    "nfcorpus": ("a89dba18a62ef92f7d323ec890a0d38d", "3.6K documents, 323 queries (2.4 MB)"),
    "nq": ("d4d3d2e48787a744b6f6e691ff534307", "2.7M passages, 3,452 queries (498 MB)"),
    "hotpotqa": ("f412724f78b0d91183a0e86805e16114", "5.2M passages, 7,405 queries (654 MB)"),
    "fiqa": ("17918ed23cd04fb15047f73e6c3bd9d9", "57K posts, 648 queries (18 MB)"),
    "arguana": ("8ad3e3c2a5867cdced806d6503f29b99", "8.7K arguments, 1,406 queries (3.8 MB)"),
    "webis-touche2020": (
        "46f650ba5a527fc69e0a6521c5a23563",
        "382K arguments, 49 queries (227 MB)",
    ),
    "quora": ("18fb154900ba42a600f84b839c173167", "523K questions, 10,000 queries (16 MB)"),
    "dbpedia-entity": ("c2a39eb420a3164af735795df012ac2c", "4.6M entities, 400 queries (639 MB)"),
    "scidocs": ("38121350fc3a4d2f48850f6aff52e4a9", "25K papers, 1,000 queries (142 MB)"),
    "fever": ("5a818580227bfb4b35bb6fa46d9b6c03", "5.4M passages, 6,666 queries (1.2 GB)"),
    "climate-fever": (
        "8b66f0a9126c521bae2bde127b4dc99d",
        "5.4M passages, 1,535 queries (1.2 GB)",
    ),
    "scifact": ("5f7d1de60b170fc8027bb7898e2efca1", "5K abstracts, 300 queries (2.8 MB)"),
}


def beir_collection(name: str, md5: str, description: str) -> Collection:
    """The Collection of BEIR set `name`: one zip holding a `{name}/` BEIR folder."""
    return Collection(
        name=f"beir/{name}",
        urls=(BEIR_URL.format(name),),
        checksums=(Checksum(f"{name}.zip", "md5", md5),),
        convert=lambda unpacked, out: convert_beir(unpacked / name, out),
        description=f"BEIR {name}: {description}",
        checksum_source="md5 published by BEIR (beir-cellar/beir README.md)",
    )


COLLECTIONS: dict[str, Collection] = {
    "cranfield": _cranfield_collection(),
    **{
        f"beir/{name}": beir_collection(name, md5, description)
        for name, (md5, description) in BEIR_MD5.items()
    },
}


def lookup(name: str) -> Collection:
    """The registered collection `name`; a GateError listing the known ones otherwise."""
    if name in COLLECTIONS:
        return COLLECTIONS[name]
    known = sorted(COLLECTIONS)
    tails = {known_name.rsplit("/", 1)[-1]: known_name for known_name in known}
    tail = name.rsplit("/", 1)[-1].lower()
    close = [tails[match] for match in difflib.get_close_matches(tail, tails, n=3, cutoff=0.75)]
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    raise GateError(f"unknown dataset {name!r}{hint}\nknown datasets: {', '.join(known)}")


def default_directory(name: str) -> Path:
    """Where `name` goes by default: `datasets/<name>` under the working directory."""
    return Path("datasets", *name.split("/"))
