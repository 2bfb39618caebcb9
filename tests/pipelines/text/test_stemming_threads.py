"""Stemming from many threads at once (a server's query threads): the Snowball stemmers keep their state in the
instance, so one shared between threads mixes two words' state and fails or stems wrongly."""

from __future__ import annotations

import random
import string
from concurrent.futures import ThreadPoolExecutor

import snowballstemmer

from pipelines.text.analysis import stem


def test_threads_stem_as_one_thread_does() -> None:
    rng = random.Random(3)
    # Unique words (the stem cache must not answer for the stemmer), long enough to reach the later steps.
    words = ["".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(6, 14))) + suffix
             for suffix in ("ational", "ization", "fulness", "ement", "ing", "ously") for _ in range(3000)]  # fmt: skip
    alone = snowballstemmer.stemmer("english")
    expected = [alone.stemWord(w) for w in words]
    with ThreadPoolExecutor(8) as pool:
        chunks = [words[i::8] for i in range(8)]
        results = list(pool.map(lambda part: [stem("english", w) for w in part], chunks))
    got = {w: s for part, stems in zip(chunks, results, strict=True) for w, s in zip(part, stems, strict=True)}
    assert [got[w] for w in words] == expected
