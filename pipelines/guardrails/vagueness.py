"""Deciding that a question is too vague to answer, and the question to ask back.

A question is vague when, after removing function words, question words, pronouns and a closed list
of generic verbs and nouns ("make", "work", "fix", "faster", "problem", "upgrade"), nothing is left
that names a subject: no content word, no identifier, no number. "Can you make this better?" and
"Something is broken, any idea?" leave nothing; "How do I rotate the signing key?" leaves "rotate",
"signing" and "key". Every one of those lists is generic English (and a few words of the other corpus languages),
never words taken from a golden question. For scripts without spaces (CJK), the rule counts
characters instead of words. The rule costs microseconds and runs before any model.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from pipelines.text.analysis import FUNCTION_WORDS

# Verbs and nouns that ask for help without naming what the help is about.
_GENERIC = frozenset(
    """help helps helping work works working worked broken break breaks fail fails failing failed fix fixes fixing
    solve solving wrong issue issues problem problems error errors bug bugs trouble question questions answer
    use using used make making made start started starting stop run running runs set setup configure
    configuring install installing installed upgrade upgrading update updating change changing improve
    improving optimize faster slow slower better quicker quick speed performance easy easier good best right
    properly correctly happen happens happened going go goes want try trying tried see look thing do's guide
    info information documentation docs doc detail details example examples tip tips advice suggestion
    suggestions recommendation recommendations idea ideas""".split()  # noqa: SIM905
)
# A few function words of the other corpus languages, so their questions are judged the same way.
_OTHER_FUNCTION_WORDS = frozenset(
    """el la los las un una de del que qué y o en es por para con cómo como no se lo funciona ayuda hago hacer puedo
    o a os as um uma do da dos das que e em é para com não isso ajuda faço fazer posso der die das ein eine
    und oder ist wie was nicht es mit für funktioniert hilfe mache machen kann ich le la les un une des du et
    ou est comment quoi ne pas ça aide faire fais je""".split()  # noqa: SIM905
)
_WORD = re.compile(r"[^\W_][\w'’.\-/]*", re.UNICODE)
_IDENTIFIER = re.compile(r"[_./(){}\[\]=<>@#:$-]|\d|[a-z][A-Z]")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_CJK_GENERIC = re.compile(
    r"怎么|如何|什么|为什么|帮助|帮忙|不行|不工作|问题|错误|どう|何|ですか|ください|助けて|動かない|エラー"
)


# Nouns documentation uses for a kind of thing: alone, they say what kind of thing is asked about, not which one
# ("Which version should I use?", "How do I set the timeout?").
_KIND = frozenset(
    """setting settings option options config configuration parameter parameters param params argument arguments
    arg args flag flags value values default defaults version versions limit limits format formats time times
    timeout timeouts title titles name names directory directories folder folders path paths file files mode modes
    type types level levels size sizes number numbers thing things stuff way ways one ones two part parts feature
    features function functions method methods command commands variable variables key keys field fields property
    properties attribute attributes behaviour behavior output input result results""".split()  # noqa: SIM905
)
# "it" or "them" with nothing in the question saying what they are.
_UNNAMED_REFERENCE = re.compile(r"\b(?:it|them)\b", re.IGNORECASE)


# A complaint: something is wrong, broken or does not work (not a question about errors as a topic).
_COMPLAINT = re.compile(
    r"\b(?:broken|wrong|weird|fail|fails|failing|failed|crash\w*|bug|bugs|problem|problems|issue|issues)\b|"
    r"\b(?:not|never|stopped)\s+(?:\w+\s+)?work\w*|n't\b|\bdoes not\b|\bis not\b|\bcannot\b"
)


@dataclass(frozen=True)
class Vagueness:
    vague: bool
    content_words: tuple[str, ...]
    reason: str  # "no_subject", "problem_without_subject", "problem_without_detail", "unnamed", "empty" or "specific"


def _words(text: str) -> Iterator[tuple[str, bool]]:
    """Each word of the text, its edge punctuation stripped, and whether it is code: an identifier, a number or a
    command-line option."""
    for match in _WORD.finditer(text):
        raw = match.group(0)
        word = raw.strip(".-/'’").replace("’", "'")
        if word:
            yield word, bool(_IDENTIFIER.search(raw.strip(".?!,;")) or _is_option(text, match.start()))


def content_words(question: str) -> tuple[str, ...]:
    """Words that name a subject: not function words, not generic help words; identifiers always count."""
    kept = []
    for word, code in _words(question):
        if code:
            kept.append(word)
            continue
        lower = word.lower()
        if lower in FUNCTION_WORDS or lower in _GENERIC or lower in _OTHER_FUNCTION_WORDS:
            continue
        if lower.endswith("n't") or len(lower) < 2:
            continue
        kept.append(lower)
    return tuple(kept)


_PROBLEM = re.compile(
    r"\b(?:work|works|working|broken|fail\w*|error\w*|wrong|bug\w*|problem\w*|issue\w*|crash\w*)\b|"
    r"doesn't|does not|won't|isn't|funciona|funktioniert|不行|不工作|動かない|エラー"
)


# Words that make a short query a question ("how?", "is it async?") rather than a bare topic.
_ASKING = frozenset(
    """what what's which who whom whose why when where how how's can could should would will shall do does did is
    are was were may might must""".split()  # noqa: SIM905
)


def bare_topic(question: str, max_words: int = 2) -> tuple[str, ...]:
    """The question's words when it is nothing but a short topic ("transactions", "hooks?", "tab stuff"): at most
    `max_words` words, none an identifier, a command-line option or a number, none asking (a question word, "can",
    "is") and none a function word of the other corpus languages; () otherwise, and for scripts written without
    spaces, whose words cannot be counted this way."""
    text = question.strip()
    if not text or _CJK.search(text):
        return ()
    words = []
    for word, code in _words(text):
        lower = word.lower()
        if code or lower in _ASKING or lower in _OTHER_FUNCTION_WORDS:
            return ()
        words.append(lower)
    return tuple(words) if 1 <= len(words) <= max_words else ()


def _is_option(text: str, start: int) -> bool:
    """A word written as a command-line option ("--help", "-v"): dashes before it, not inside a word."""
    dashes = len(text[:start]) - len(text[:start].rstrip("-"))
    return 1 <= dashes <= 2 and (start == dashes or not text[start - dashes - 1].isalnum())


COMPLAINT_MAX_WORDS = 6  # a complaint naming two things is vague only this short: a longer one carries detail


def judge(question: str, complaints: bool = False, unnamed: bool = False, complaint_words: int = 1) -> Vagueness:
    """`complaints`: a complaint that names one thing and nothing else ("prompt not working", "why is the
    output wrong?") is vague too: no command, setting, identifier or error message says what went wrong. With
    `complaint_words` 2, so is one that names two things in at most `COMPLAINT_MAX_WORDS` words ("tab completion
    broken"), none an identifier.
    `unnamed`: so is a question whose only content word is a kind of thing ("which version?"), or one that acts
    on an "it" or "them" and keeps at most one other content word, not a name ("how do I turn it off?")."""
    text = question.strip()
    if not text:
        return Vagueness(True, (), "empty")
    cjk = _CJK.findall(_CJK_GENERIC.sub("", text))
    words = content_words(_CJK.sub(" ", text))
    if complaints and not cjk and _complaint_without_detail(text, words, complaint_words):
        return Vagueness(True, words, "problem_without_detail")
    if unnamed and words and not cjk and _names_no_instance(text, words):
        return Vagueness(True, words, "unnamed")
    if words or len(cjk) >= 4:
        return Vagueness(False, words, "specific")
    reason = "problem_without_subject" if _PROBLEM.search(text.lower()) else "no_subject"
    return Vagueness(True, words, reason)


def _names_no_instance(text: str, words: tuple[str, ...]) -> bool:
    """Only a kind word, or an unnamed "it"/"them" with at most one other word, none of them a name."""
    if any(_IDENTIFIER.search(w) for w in words):
        return False
    if len(words) == 1 and words[0] in _KIND:
        return True
    others = [w for w in words if w not in _KIND]
    return len(others) <= 1 and bool(_UNNAMED_REFERENCE.search(text)) and not (set(others) & _written_as_names(text))


def _written_as_names(text: str) -> set[str]:
    """Words capitalised after the question's first word, and acronyms, lowercased."""
    names = set()
    for position, raw in enumerate(_WORD.findall(text)):
        word = raw.strip(".-/'’")
        if len(word) >= 2 and ((position > 0 and word[0].isupper()) or word.isupper()):
            names.add(word.lower())
    return names


def _complaint_without_detail(text: str, words: tuple[str, ...], most: int = 1) -> bool:
    if not 1 <= len(words) <= max(1, most) or any(_IDENTIFIER.search(w) for w in words):
        return False
    if len(words) > 1 and len(_WORD.findall(text)) > COMPLAINT_MAX_WORDS:
        return False
    return bool(_COMPLAINT.search(text.lower().replace("’", "'")))


def clarifying_question(vagueness: Vagueness, example_topics: list[str] | None = None) -> str:
    """The question asked back; names a few topics the documents cover when they are known."""
    if vagueness.reason == "problem_without_detail":
        named = vagueness.content_words
        ask = (f"What goes wrong with “{named[0]}”?" if len(named) == 1 else "What exactly goes wrong?") + (
            " Tell me what you ran or configured, what you expected, and what happened instead (the exact error "
            "message helps)."
        )
    elif vagueness.reason == "problem_without_subject":
        ask = (
            "Which part is not working? Tell me what you ran or configured, what you expected, and what happened "
            "instead (the exact error message helps)."
        )
    elif vagueness.reason == "unnamed" and len(vagueness.content_words) == 1 and vagueness.content_words[0] in _KIND:
        ask = (
            f"Which {vagueness.content_words[0]} do you mean? Say which feature, command or page it belongs to, "
            "and what you want to do."
        )
    elif vagueness.reason == "unnamed":
        ask = "What does “it” refer to here? Name the feature, setting or command your question is about."
    else:
        ask = "Could you say which feature, setting, command or page your question is about, and what you want to do?"
    if example_topics:
        ask += " For example: " + "; ".join(example_topics[:3]) + "."
    return ask
