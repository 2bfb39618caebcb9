"""The labelled claim-support set: (claim, passage, supported?) pairs built from the corpora themselves.

    python -m evals.verify_set [--seed 26] [--out evals/data/verify_pairs.jsonl]

Each pair starts from a *base*: a prose sentence of a page, with its *passage* (the section that holds it,
cut to a window of about 900 characters of whole blocks around it, as a chunk would be). From each base,
where the sentence allows it:

supported
- `verbatim`: the sentence itself; `other_sentence`: another sentence of the same passage;
- `joined`: the sentence and that other one joined by a semicolon (two claims, both in the passage);
- `compressed`: the sentence with a parenthesis, a leading discourse marker ("For example,"), a trailing
  clause (", which ...", ", but ...") or an adverb ("also", "just") left out: less said, nothing added;
- `paraphrase`: the sentence with phrases swapped for ones of the same meaning ("allows you to" -> "lets you",
  "doesn't" -> "does not"), from a fixed table.

unsupported (every one against the base's own passage: the right topic, every other word there)
- `number`: one number changed to one the passage does not contain;
- `version`: a version (`3.8`, `1.2.0`) with its last part changed;
- `identifier`: a code span swapped for another code span of the same page that the passage lacks;
- `negation`: the claim reversed (a negation taken out, or a `not` put after the first auxiliary verb);
- `antonym`: one word swapped for its opposite (enabled/disabled, before/after, ...), from a fixed table;
- `fused`: the base's subject with the predicate of a sentence from another section of the same page;
- `same_page`: another sentence of the same page, from a section further away (the one sharing most words
  with the passage);
- `neighbour`: a sentence of the neighbouring section (the one sharing most words with the passage).

Sources: ragline's own docs/ (ours: the text is stored in the row), the corpora of `../shared/corpora` and
the committed corpora of evals/corpora/ (stored by reference only: a document path, the character spans of
the pieces a claim is made of, the literal words an edit puts in, and the file's sha256, materialised at load
time by `load_pairs`; their text is never copied into the project). The generation is deterministic for a
seed and the files it reads; ragline's docs change, so after a docs edit a new run draws differently from the docs
source on: the committed JSONL is the set of record (its docs rows carry their text). Pairs split by `pipelines.golden_sets.half_of(id)`: tune on `tuning`, report on `held_out`.

Labels are made by rule, not read one by one: a `same_page` or `neighbour` sentence may now and then be
implied by the passage anyway, and an antonym swap may now and then leave a true claim. Such noise lowers
every verifier's figures alike.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipelines.golden_sets import half_of

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"
OUT = REPO / "evals" / "data" / "verify_pairs.jsonl"
WINDOW = 900  # characters of passage around a sentence, about a chunk's worth

# (source, glob under its root, how many bases); `docs:` rows store their text, the others only references.
SOURCES: list[tuple[str, str, int]] = [
    ("shared:corpora/fastapi-docs/en", "**/*.md", 15),
    ("shared:corpora/gitlab-docs", "**/*.md", 15),
    ("repo:docs", "[!b]*.md", 8),  # not benchmarks.md: figures, and this set's own table
    ("repo:evals/corpora/markdown/docs", "**/*.md", 7),
    ("repo:evals/corpora/coverage/docs", "**/*.rst", 7),
]
_NOT_ENGLISH = re.compile(r"/(?:ja-jp|zh-cn|ko-kr|fr-fr|de-de|es|pt-br|ru-ru)/")


@dataclass(frozen=True)
class Sentence:
    start: int
    end: int
    section: int

    def text(self, raw: str) -> str:
        return raw[self.start : self.end]


@dataclass
class Page:
    source: str  # "shared:..." / "repo:..." path of the file
    raw: str
    sections: list[tuple[int, int]]  # character spans
    blocks: list[tuple[int, int]]  # blank-line separated blocks (prose, code, lists alike)
    sentences: list[Sentence]

    @property
    def stored(self) -> bool:
        """Our own docs: the text goes into the row (they change; a span into them would not last)."""
        return self.source.startswith("repo:docs/")


# --- reading a page ------------------------------------------------------------------------------------------

_FENCE = re.compile(r"^\s*(```|~~~)")
_RST_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+])\1{2,}\s*$")
_NOT_PROSE = re.compile(r"^\s*(?:[|#<{>\[!/:*+-]|\.\.|\d+\.|\S+::|```|~~~)")
_SENTENCE_END = re.compile(r"(?<=[a-z0-9`)\"'][.!?])\s+(?=[A-Z`\"])")
_BAD = re.compile(r"\]\(|\]\[|<|>|\{|\}|\||https?:|:`|`_|\[\^|\\|\*\*|\.\.\.|\b(?:e\.g|i\.e|etc|vs)\.")


def read_page(source: str, raw: str) -> Page:
    lines = raw.splitlines(keepends=True)
    offsets, at = [], 0
    for line in lines:
        offsets.append(at)
        at += len(line)
    heads: list[int] = [0]
    prose: list[tuple[int, int]] = []  # paragraphs of prose lines
    blocks: list[tuple[int, int]] = []
    fenced, front = False, bool(lines) and lines[0].strip() == "---"
    block_start: int | None = None
    para: list[int] = []
    for i, line in enumerate(lines):
        stripped = line.strip()
        if front:
            if i > 0 and stripped == "---":
                front = False
            continue
        if _FENCE.match(line):
            fenced = not fenced
        heading = not fenced and (
            stripped.startswith("#")
            or (i + 1 < len(lines) and _RST_UNDERLINE.match(lines[i + 1]) and stripped and not line[0].isspace())
        )
        if heading:
            heads.append(offsets[i])
        if not stripped:
            if block_start is not None:
                blocks.append((block_start, offsets[i]))
            block_start = None
        elif block_start is None:
            block_start = offsets[i]
        is_prose = (
            not fenced
            and not heading
            and stripped != ""
            and not _RST_UNDERLINE.match(line)
            and not line.startswith(("    ", "\t"))
            and not _NOT_PROSE.match(line)
        )
        if is_prose:
            para.append(i)
        elif para:
            prose.append((offsets[para[0]], offsets[para[-1]] + len(lines[para[-1]])))
            para = []
    if para:
        prose.append((offsets[para[0]], offsets[para[-1]] + len(lines[para[-1]])))
    if block_start is not None:
        blocks.append((block_start, len(raw)))
    heads = sorted(set(heads))
    sections = [(h, heads[j + 1] if j + 1 < len(heads) else len(raw)) for j, h in enumerate(heads)]
    sentences = []
    for start, end in prose:
        for s, e in _split(raw, start, end):
            text = raw[s:e]
            words = len(text.split())
            good = 8 <= words <= 40 and text.endswith(".") and (text[0].isupper() or text.startswith("`"))
            if good and not _BAD.search(text) and text.count("`") % 2 == 0:
                section = max(j for j, (a, _) in enumerate(sections) if a <= s)
                sentences.append(Sentence(s, e, section))
    return Page(source, raw, sections, blocks, sentences)


def _split(raw: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    text = raw[start:end]
    at = 0
    for match in _SENTENCE_END.finditer(text):
        yield start + at, start + match.start()
        at = match.end()
    tail = text[at:].rstrip()
    if tail:
        yield start + at, start + at + len(tail)


def passage_of(page: Page, sentence: Sentence) -> tuple[int, int]:
    """Whole blocks of the sentence's section around it, about WINDOW characters, the sentence inside."""
    lo, hi = page.sections[sentence.section]
    inside = [b for b in page.blocks if b[0] >= lo and b[1] <= hi]
    if not inside:
        return lo, hi
    here = next((k for k, b in enumerate(inside) if b[0] <= sentence.start < b[1]), 0)
    a = b = here
    while True:
        grew = False
        if a > 0 and inside[b][1] - inside[a - 1][0] <= WINDOW:
            a, grew = a - 1, True
        if b + 1 < len(inside) and inside[b + 1][1] - inside[a][0] <= WINDOW:
            b, grew = b + 1, True
        if not grew:
            break
    start, end = inside[a][0], inside[b][1]
    return min(start, sentence.start), max(end, sentence.end)


# --- the edits -----------------------------------------------------------------------------------------------

Piece = tuple[int, int] | str  # a span of the base page, or literal words an edit puts in


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z][a-z0-9_]+", text.lower()) if len(w) > 3}


_NUMBER = re.compile(r"(?<![\w.\-/])\d+(?![\w.\-/])")
_VERSION = re.compile(r"(?<![\w.\-/])v?\d+\.\d+(?:\.\d+)?(?![\w\-/]|\.\d)")
_CODE = re.compile(r"`([^`\n]+)`")
_NEGATED = {"cannot": "can", "can't": "can", "won't": "will", "doesn't": "does", "don't": "do", "isn't": "is",
            "aren't": "are", "never": "always", "not": ""}  # fmt: skip
_NEGATION = re.compile(r"\b(cannot|can't|won't|doesn't|don't|isn't|aren't|never|not)\b ?", re.I)
_AUXILIARY = re.compile(r"\b(is|are|was|were|can|must|should|will|does|do|has|have|may)\b")
_OPPOSITES = [
        ("enabled", "disabled"), ("enable", "disable"), ("true", "false"), ("before", "after"),
        ("required", "optional"), ("increase", "decrease"), ("minimum", "maximum"), ("first", "last"),
        ("include", "exclude"), ("includes", "excludes"), ("synchronous", "asynchronous"), ("start", "stop"),
        ("add", "remove"), ("allow", "prevent"), ("allows", "prevents"), ("always", "never"), ("more", "fewer"),
        ("faster", "slower"), ("older", "newer"), ("lower", "higher"), ("larger", "smaller"),
        ("public", "private"), ("internal", "external"), ("inside", "outside"), ("automatically", "manually"),
        ("same", "different"), ("available", "unavailable"), ("supported", "unsupported"), ("valid", "invalid"),
        ("success", "failure"), ("client", "server"), ("request", "response"), ("input", "output"),
        ("upload", "download"), ("global", "local"), ("open", "close"), ("all", "none"),
        ("above", "below"), ("top", "bottom"), ("start", "end"), ("success", "error"), ("import", "export"),
        ("install", "uninstall"), ("show", "hide"), ("accept", "reject"), ("easy", "hard"), ("before", "after"),
]  # fmt: skip
ANTONYMS = dict(pair for a, b in _OPPOSITES for pair in ((a, b), (b, a)))
PARAPHRASES = [
    ("in order to", "to"), ("allows you to", "lets you"), ("lets you", "allows you to"),
    ("makes it possible to", "lets you"), ("is able to", "can"), ("are able to", "can"), ("a lot of", "many"),
    ("you need to", "you must"), ("you have to", "you must"), ("for example", "for instance"),
    ("such as", "like"), ("instead of", "rather than"), ("multiple", "several"), ("several", "multiple"),
    ("because", "since"), ("so that", "so"), ("doesn't", "does not"), ("don't", "do not"), ("can't", "cannot"),
    ("isn't", "is not"), ("aren't", "are not"), ("it's", "it is"), ("you'll", "you will"), ("won't", "will not"),
    ("whether", "if"), ("quickly", "fast"), ("additional", "extra"), ("in addition to", "besides"),
    ("you can", "it is possible to"), ("make sure", "ensure"), ("ensure", "make sure"), ("contains", "holds"),
    ("provides", "offers"), ("returns", "gives back"), ("uses", "makes use of"),
]  # fmt: skip
_LEADING = re.compile(r"^(?:For example|For instance|In this case|In that case|Also|Now|Then|Here|So|Additionally|"
                      r"In addition|Of course|Similarly|Note that|Notice that|In fact|Basically),? ", re.I)  # fmt: skip
_TRAILING = re.compile(r", (?:which|so|but|as|because|since|for example|such as|while|and then|so that)\b")
_PAREN = re.compile(r" \([^()]{3,}\)")
_ADVERB = re.compile(r"\b(?:also|just|simply|actually|really|now|then|still|even) ")


def _spliced(start: int, end: int, cuts: list[tuple[int, int, str]]) -> list[Piece]:
    """The span start..end with each (a, b, words) cut replaced by its words (offsets into the page)."""
    pieces: list[Piece] = []
    at = start
    for a, b, words in sorted(cuts):
        if a > at:
            pieces.append((at, a))
        if words:
            pieces.append(words)
        at = b
    if end > at:
        pieces.append((at, end))
    return pieces


def compressed(page: Page, s: Sentence) -> list[Piece] | None:
    text = s.text(page.raw)
    if (m := _PAREN.search(text)) is not None:
        return _spliced(s.start, s.end, [(s.start + m.start(), s.start + m.end(), "")])
    if (m := _LEADING.match(text)) is not None and len(text[m.end() :].split()) >= 6:
        rest = text[m.end() :]
        return [rest[0].upper(), (s.start + m.end() + 1, s.end)]
    trailing = list(_TRAILING.finditer(text))
    if trailing and len(text[: trailing[-1].start()].split()) >= 6:
        return _spliced(s.start, s.end, [(s.start + trailing[-1].start(), s.end - 1, "")])
    if (m := _ADVERB.search(text)) is not None and m.start() > 0:
        return _spliced(s.start, s.end, [(s.start + m.start(), s.start + m.end(), "")])
    return None


def paraphrased(page: Page, s: Sentence) -> list[Piece] | None:
    text = s.text(page.raw)
    cuts: list[tuple[int, int, str]] = []
    for old, new in PARAPHRASES:
        for m in re.finditer(rf"\b{re.escape(old)}\b", text, re.I):
            if not any(a < s.start + m.end() and s.start + m.start() < b for a, b, _ in cuts):
                cut = new if not m.group(0)[0].isupper() else new[0].upper() + new[1:]
                cuts.append((s.start + m.start(), s.start + m.end(), cut))
                break
        if len(cuts) == 2:
            break
    return _spliced(s.start, s.end, cuts) if cuts else None


def number_changed(page: Page, s: Sentence, passage: str, rng: random.Random) -> list[Piece] | None:
    text = s.text(page.raw)
    spans = [m for m in _NUMBER.finditer(text) if not _VERSION.match(text, m.start())]
    if not spans:
        return None
    m = rng.choice(spans)
    value = int(m.group(0))
    for new in (value + 1, value * 2 + 1, value + 10, value + 100):
        if not re.search(rf"(?<!\d){new}(?!\d)", passage):
            return _spliced(s.start, s.end, [(s.start + m.start(), s.start + m.end(), str(new))])
    return None


def version_changed(page: Page, s: Sentence, passage: str) -> list[Piece] | None:
    text = s.text(page.raw)
    m = _VERSION.search(text)
    if m is None:
        return None
    head, _, last = m.group(0).rpartition(".")
    for step in (1, 2, 3):
        new = f"{head}.{int(last) + step}"
        if new not in passage:
            return _spliced(s.start, s.end, [(s.start + m.start(), s.start + m.end(), new)])
    return None


def identifier_swapped(page: Page, s: Sentence, passage: tuple[int, int]) -> list[Piece] | None:
    """A code span of the sentence replaced by a code span of the page (a span reference) the passage lacks."""
    text = s.text(page.raw)
    own = list(_CODE.finditer(text))
    if not own:
        return None
    shown = page.raw[passage[0] : passage[1]]
    m = own[0]
    for other in _CODE.finditer(page.raw):
        name = other.group(1)
        if passage[0] <= other.start() < passage[1] or name in shown or len(name) < 3 or " " in name.strip():
            continue
        a, b = s.start + m.start(1), s.start + m.end(1)
        return [(s.start, a), (other.start(1), other.end(1)), (b, s.end)]
    return None


def negated(page: Page, s: Sentence) -> list[Piece] | None:
    text = s.text(page.raw)
    if (m := _NEGATION.search(text)) is not None:
        kept = _NEGATED[m.group(1).lower()]
        return _spliced(s.start, s.end, [(s.start + m.start(), s.start + m.end(), f"{kept} " if kept else "")])
    if (m := _AUXILIARY.search(text)) is not None:
        return _spliced(s.start, s.end, [(s.start + m.end(), s.start + m.end(), " not")])
    return None


def antonym(page: Page, s: Sentence, passage: str) -> list[Piece] | None:
    text = s.text(page.raw)
    lowered = passage.lower()
    for m in re.finditer(r"[A-Za-z]+", text):
        word = m.group(0)
        new = ANTONYMS.get(word.lower())
        if new is None or re.search(rf"\b{new}\b", lowered) or f"`{word}" in text:
            continue
        new = new.capitalize() if word[0].isupper() else new
        return _spliced(s.start, s.end, [(s.start + m.start(), s.start + m.end(), new)])
    return None


def fused(page: Page, s: Sentence, other: Sentence) -> list[Piece] | None:
    """The base's subject (up to its first auxiliary verb) with the other sentence's predicate."""
    mine = _AUXILIARY.search(s.text(page.raw))
    theirs = _AUXILIARY.search(other.text(page.raw))
    if mine is None or theirs is None:
        return None
    tail = other.text(page.raw)[theirs.start() :]
    if len(tail.split()) < 5 or mine.start() < 3:
        return None
    return [(s.start, s.start + mine.start()), (other.start + theirs.start(), other.end)]


def _nearest(page: Page, candidates: list[Sentence], passage: str) -> Sentence | None:
    """The candidate sharing most words with the passage (a hard negative: the right topic), not in it."""
    words = _words(passage)
    flat = " ".join(passage.split()).lower()
    kept = [c for c in candidates if " ".join(c.text(page.raw).split()).lower() not in flat]
    return max(kept, key=lambda c: (len(_words(c.text(page.raw)) & words), -c.start), default=None)


# --- the set -------------------------------------------------------------------------------------------------


def _path(source: str) -> Path:
    kind, _, rel = source.partition(":")
    return (SHARED if kind == "shared" else REPO) / rel


def _pages(source: str, pattern: str) -> list[Page]:
    root = _path(source)
    files = sorted(p for p in root.glob(pattern) if not _NOT_ENGLISH.search("/" + str(p.relative_to(root)) + "/"))
    pages = []
    for f in files:
        rel = f"{source}/{f.relative_to(root)}"
        page = read_page(rel, f.read_text(encoding="utf-8"))
        if len(page.sentences) >= 4 and len({x.section for x in page.sentences}) >= 3:
            pages.append(page)
    return pages


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _row(page: Page, base_id: str, kind: str, claim: list[Piece], passage: tuple[int, int], supported: bool) -> dict:
    pair_id = f"{base_id}-{kind}"
    row: dict[str, Any] = {"id": pair_id, "half": half_of(pair_id), "kind": kind, "supported": supported}
    if page.stored:
        row |= {"source": page.source, "claim": _text(page.raw, claim), "passage": page.raw[passage[0] : passage[1]]}
    else:
        row |= {
            "source": page.source,
            "sha256": _sha(page.raw),
            "claim_pieces": [list(p) if isinstance(p, tuple) else p for p in claim],
            "passage_span": list(passage),
        }
    return row


def _text(raw: str, pieces: list[Piece]) -> str:
    return " ".join("".join(raw[p[0] : p[1]] if isinstance(p, tuple) else p for p in pieces).split())


def generate(seed: int, sources: Sequence[tuple[str, str, int]] = SOURCES) -> list[dict]:
    rng = random.Random(seed)
    rows: list[dict] = []
    for source, pattern, wanted in sources:
        pages = _pages(source, pattern)
        rng.shuffle(pages)
        tag = re.sub(r"[^a-z]+", "", source.split("/")[-2 if source.endswith("/docs") else -1])[:8]
        taken = 0
        for page in pages:
            if taken == wanted:
                break
            # A third of the bases hold a number, a third a code span (the edits wrong answers most often make).
            rich = [x for x in page.sentences if re.search([r"\d", "`", ""][taken % 3], x.text(page.raw))]
            pool = rich or page.sentences
            s = rng.choice(pool)
            base_id = f"vp-{tag}-{taken:02d}"
            span = passage_of(page, s)
            passage = page.raw[span[0] : span[1]]
            outside = [x for x in page.sentences if not (span[0] <= x.start < span[1])]
            near = [x for x in outside if abs(x.section - s.section) == 1]
            far = [x for x in outside if abs(x.section - s.section) > 1]
            if not near or not far:
                continue
            mates = [x for x in page.sentences if span[0] <= x.start < span[1] and x.text(page.raw) != s.text(page.raw)]
            mate = rng.choice(mates) if mates else None
            made: dict[str, tuple[list[Piece] | None, bool]] = {
                "verbatim": ([(s.start, s.end)], True),
                "other_sentence": ([(mate.start, mate.end)] if mate else None, True),
                "joined": ([(s.start, s.end - 1), "; ", (mate.start, mate.end)] if mate else None, True),
                "compressed": (compressed(page, s), True),
                "paraphrase": (paraphrased(page, s), True),
                "number": (number_changed(page, s, passage, rng), False),
                "version": (version_changed(page, s, passage), False),
                "identifier": (identifier_swapped(page, s, span), False),
                "negation": (negated(page, s), False),
                "antonym": (antonym(page, s, passage), False),
                "fused": (fused(page, s, rng.choice(far)), False),
            }
            for kind, pool_of in (("same_page", far), ("neighbour", near)):
                other = _nearest(page, pool_of, passage)
                made[kind] = ([(other.start, other.end)] if other else None, False)
            for kind, (claim, supported) in made.items():
                if claim is None:
                    continue
                if kind != "verbatim" and _text(page.raw, claim) == _text(page.raw, [(s.start, s.end)]):
                    continue
                rows.append(_row(page, base_id, kind, claim, span, supported))
            taken += 1
    return rows


# --- loading -------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LabelledPair:
    id: str
    half: str
    kind: str
    source: str
    claim: str
    passage: str
    supported: bool


def load_pairs(path: Path = OUT) -> list[LabelledPair]:
    """The set's pairs with their text materialised: a referenced file must be the one the row was made from."""
    pages: dict[str, str] = {}
    out = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        row = json.loads(line)
        if "claim" in row:
            claim, passage = row["claim"], row["passage"]
        else:
            source = row["source"]
            if source not in pages:
                pages[source] = _path(source).read_text(encoding="utf-8")
            raw = pages[source]
            if _sha(raw) != row["sha256"]:
                raise ValueError(f"{path}:{number}: {source} is not the file this pair was made from (sha256)")
            pieces = [tuple(p) if isinstance(p, list) else p for p in row["claim_pieces"]]
            claim = _text(raw, pieces)
            a, b = row["passage_span"]
            passage = raw[a:b]
        out.append(LabelledPair(row["id"], row["half"], row["kind"], row["source"], claim, passage, row["supported"]))
    return out


def _source_spec(spec: str) -> tuple[str, str, int]:
    """ "repo:evals/corpora/click/docs:**/*.rst:8" -> ("repo:evals/corpora/click/docs", "**/*.rst", 8)."""
    parts = spec.rsplit(":", 2)
    if len(parts) != 3 or not parts[2].isdigit() or not parts[0].startswith(("repo:", "shared:")):
        raise SystemExit(f"--source {spec!r}: expected repo:PATH:GLOB:BASES or shared:PATH:GLOB:BASES")
    return parts[0], parts[1], int(parts[2])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=26)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument(
        "--source",
        action="append",
        metavar="SOURCE:GLOB:BASES",
        help="a source to draw from instead of the set of record's (repeatable), e.g. "
        "'repo:evals/corpora/click/docs:**/*.rst:8': a fresh set from pages no verifier was tuned on",
    )
    args = parser.parse_args()
    sources = [_source_spec(spec) for spec in args.source] if args.source else SOURCES
    rows = generate(args.seed, sources)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    kinds: dict[str, int] = {}
    for r in rows:
        kinds[r["kind"]] = kinds.get(r["kind"], 0) + 1
    halves = {h: sum(r["half"] == h for r in rows) for h in ("tuning", "held_out")}
    print(json.dumps({"pairs": len(rows), "halves": halves, "kinds": kinds}))


if __name__ == "__main__":
    main()
