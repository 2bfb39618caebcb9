"""Prompt-injection rules: patterns over the question and over every decoded form of it.

An attacker rarely writes "ignore previous instructions" plainly twice: the same sentence comes in
base64, hex, URL-encoding, ROT13, leetspeak, spaced-out letters, full-width or Cyrillic look-alike
letters, or with zero-width characters inside words. Each of those is undone into a candidate text,
and the same small set of rules runs over every candidate. A rule names an *act* aimed at the
assistant (override its instructions, extract its prompt, give it a new persona, forge a turn), so
documentation questions using the same words ("ignore a file in .gitignore", "the system prompt
setting") do not fire: they lack the object the act needs ("your instructions", "previous rules").
"""

from __future__ import annotations

import base64
import binascii
import codecs
import re
import unicodedata
from dataclasses import dataclass
from urllib.parse import unquote

_ZERO_WIDTH = re.compile("[\u00ad\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff]")
# Latin look-alikes from Cyrillic and Greek, the ones used to dodge keyword filters.
_HOMOGLYPHS = str.maketrans(
    "аеорсхуіјѕԁɡӏАЕОРСХУІЈЅКМНТВοαειυκνρτΟΑΕΙΥΚΝΡΤΒΜΗΖΧ",
    "aeopcxyijsdglAEOPCXYIJSKMHTBoaeiuknptOAEIYKNPTBMHZX",
)
_LEET = str.maketrans("013457@$!|", "oieastasil")
_LEET_L = str.maketrans("013457@$!|", "oleastasil")
_SPACED = re.compile(r"\b(?:[A-Za-z][ .\-_*]{1,3}){3,}[A-Za-z]\b")
_COMMON_WORDS = frozenset(
    [
        "the",
        "a",
        "an",
        "to",
        "of",
        "in",
        "on",
        "for",
        "and",
        "or",
        "is",
        "are",
        "be",
        "it",
        "i",
        "you",
        "my",
        "your",
        "me",
        "we",
        "how",
        "what",
        "why",
        "when",
        "which",
        "can",
        "do",
        "does",
        "with",
        "from",
        "this",
        "that",
        "not",
        "no",
        "if",
        "as",
        "at",
        "by",
    ]
)
_BASE64 = re.compile(r"[A-Za-z0-9+/]{16,}={0,2}")
_HEX = re.compile(r"\b(?:[0-9a-fA-F]{2}){8,}\b")

_VERB_OVERRIDE = (
    r"(?:ignore|disregard|forget|skip|bypass|override|overlook|discard|abandon|neglect|drop|scrap|dismiss|erase|wipe|"
    r"set\s+aside|throw\s+away|(?:stop|quit)\s+(?:following|obeying)|(?:don't|do\s+not|no\s+longer)\s+(?:follow|obey))"
)
_PRIOR = (
    r"(?:previous|prior|preceding|above|earlier|former|original|initial|old|system|developer|safety|your|"
    r"all\s+(?:of\s+)?(?:the\s+|your\s+)?(?:previous|prior|above|earlier|preceding|initial|original)|"
    r"any\s+(?:previous|prior|earlier))"
)
_DIRECTIVES = (
    r"(?:instructions?|prompts?|directions?|directives?|guidelines?|rules|commands?|constraints?|guardrails?|"
    r"restrictions?|programming|policies|policy|orders|training|context|messages?|system\s+prompt)"
)
_ASSISTANT_SECRET = (
    r"(?:system\s+(?:prompt|message|instructions?)|initial\s+(?:prompt|instructions?)|hidden\s+(?:prompt|instructions?)|"
    r"pre-?prompt|developer\s+(?:message|prompt|instructions?)|(?:instructions?|rules|guidelines|prompt)"
    r"(?:\s+and\s+(?:rules|guidelines|instructions?))?)"
)
_PERSONA = (
    r"(?:dan\b|evil|unfiltered|uncensored|unrestricted|jailbroken|unchained|unlocked|amoral|unethical|"
    r"(?:without|with\s+no|free\s+(?:of|from))\s+(?:any\s+|all\s+)?(?:content\s+|ethical\s+|moral\s+)?"
    r"(?:restrictions?|limits?|limitations|filters?|rules|guidelines|morals|ethics|censorship|policies)|"
    r"no\s+(?:content\s+|ethical\s+|moral\s+)?(?:restrictions?|limits?|filters?|rules|guidelines|morals|ethics)|"
    r"not\s+bound\s+by)"
)

# (rule, pattern); patterns run on a lower-cased, look-alike-folded text.
RULES: list[tuple[str, re.Pattern[str]]] = [
    (
        "override",
        re.compile(rf"\b{_VERB_OVERRIDE}\b[^.?!\n]{{0,30}}?\b{_PRIOR}\b[^.?!\n]{{0,30}}?\b{_DIRECTIVES}\b"),
    ),
    (
        "override",
        re.compile(
            r"\b(?:forget|disregard|ignore|scrap|erase|drop|discard)\s+(?:everything|all|anything|what)\b[^.?!\n]{0,40}?"
            r"\b(?:above|before|so\s+far|you\s+(?:were|have\s+been|'ve\s+been)\s+(?:told|given|taught))"
        ),
    ),
    (
        "override",
        re.compile(
            r"(?:^|[.!:\n]\s*)(?:new|updated|real)\s+(?:instructions?|rules?|task)\b[^.?!\n:]{0,25}:|"
            r"\byour\s+(?:new|real|actual)\s+(?:task|instructions?|role|purpose|goal)\s+(?:is|are)\b"
        ),
    ),
    (
        "override",
        re.compile(
            r"\bfrom\s+now\s+on,?\s+(?:you\s+(?:will|must|shall|are|answer|respond|reply|only)|"
            r"(?:answer|respond|reply|only|never|always|ignore|do\s+not|don't))"
        ),
    ),
    (
        "extraction",
        re.compile(
            r"\b(?:reveal|show|print|display|output|repeat|recite|leak|dump|expose|give|tell|share|list|"
            r"write\s+out|copy|spell\s+out|translate|summari[sz]e|paste|what\s+(?:is|are|was|were|does|do))\b"
            rf"[^.?!\n]{{0,25}}?\b(?:your|the\s+(?:assistant|ai|bot|model)'?s?)\s+(?:\w+\s+){{0,2}}?{_ASSISTANT_SECRET}"
        ),
    ),
    (
        "override",
        re.compile(
            r"\b(?:previous|prior|above|earlier|original|old|initial|safety|system|your)\s+(?:instructions?|rules|prompts?|"
            r"guidelines|directions|directives|constraints|restrictions)\s+(?:were|was|are|is|have\s+been)\s+(?:just\s+|now\s+)?"
            r"(?:a\s+test|fake|wrong|void|cancel+ed|obsolete|revoked|lifted|no\s+longer|suspended|disabled|overridden|removed)|"
            r"\b(?:instructions?|rules|constraints?|guidelines)\b[^?\n]{0,40}?[.!:;]\s*(?:now\s+)?"
            r"(?:ignore|disregard|forget|drop)\s+(?:them|it|those|these)\b|"
            r"\b(?:previous|prior)\s+(?:constraints?|restrictions?|rules|instructions)\s+(?:are|have\s+been)\s+"
            r"(?:lifted|removed|void|cancel+ed|disabled)"
        ),
    ),
    (
        "role_play",
        re.compile(
            r"\b(?:pretend|act|roleplay|role-play|you\s+are|you're)\b[^.?!\n]{0,40}?\bwhich\s+stands\s+for\b|"
            r"\b(?:you\s+are\s+(?:now\s+)?in|enter|switch\s+(?:in)?to|activate|enable|turn\s+on)\s+"
            r"(?:the\s+)?(?:opposite|evil|god|unrestricted|jailbreak|dan|sudo|chaos|unfiltered)\s+mode\b|"
            r"\b(?:broken|break|breaking|broke)\s+free\b[^.?!\n]{0,40}?\b(?:confines|restrictions?|rules|limits|"
            r"guidelines|ai|programming)\b|"
            rf"\b(?:ai|assistant|chatbot|llm|chatgpt|gpt)\b[^.?!\n]{{0,25}}?\b{_PERSONA}"
        ),
    ),
    (
        "extraction",
        re.compile(
            r"\b(?:prompt|instructions?|rules)\b[^.?!\n]{0,20}?\byour\s+(?:developers?|creators?|makers?|authors?|"
            r"owners?|operators?|programmers?)\b|"
            r"\b(?:output|print|show|reveal|display|dump|paste|leak|give\s+me|send\s+me|repeat|reproduce|quote)\s+"
            r"(?:me\s+)?the\s+(?:full\s+|exact\s+|complete\s+|original\s+|hidden\s+)?system\s+(?:prompt|message)\b"
            r"(?!\s+(?:setting|option|parameter|variable|field|key|config|template|in\s+the|of\s+(?:the|my)|for\s+(?:the|my)))|"
            r"\b(?:text|content|words|everything|instructions?)\s+(?:that\s+)?(?:precedes?|preceded|comes?\s+before|came\s+before)"
            r"\s+(?:my|this|the\s+user'?s?)\s+(?:message|question|prompt|input)\b|"
            r"\b(?:confidential|secret|hidden|internal)\s+(?:configuration|config|setup|system)\s+"
            r"(?:text|prompt|instructions?|message)\b|"
            r"\b(?:print|show|reveal|display|dump|output|list|give\s+me)\b[^.?!\n]{0,25}?\byour\s+"
            r"(?:context\s+window|context|memory|conversation\s+history)\b"
        ),
    ),
    (
        "extraction",
        re.compile(
            r"\b(?:deinen|dein|deine|tu|tus|seu|sua|ton|votre|vos|il\s+tuo)\s+(?:system-?prompt|systemanweisungen|"
            r"prompt\s+(?:de|del|du)\s+(?:sistema|système|systeme))\b|"
            r"システムプロンプト|系统提示|系統提示"
        ),
    ),
    (
        "extraction",
        re.compile(
            r"\b(?:prompt|instructions?|rules|guidelines|message)\s+(?:that\s+)?you\s+(?:received|got\b|(?:were|have\s+been|'ve\s+been)\s+"
            r"(?:given|told|provided|programmed|configured))|"
            r"\bwhat\s+(?:instructions?|rules|guidelines)\s+(?:were|have)\s+you\b|"
            r"\bwhat\s+were\s+you\s+told\b|"
            r"\bwere\s+you\s+(?:programmed|configured|given|told|trained|set\s+up)\s+with\b"
        ),
    ),
    (
        "extraction",
        re.compile(
            r"\b(?:repeat|print|output|show|copy|recite)\b[^.?!\n]{0,30}?\b(?:everything|all|the\s+(?:text|words)|"
            r"words|text)\b[^.?!\n]{0,15}?\b(?:above|before\s+this|prior\s+to\s+this)\b|"
            r"\bstarting\s+with\s+['\"“]?you\s+are\b|"
            r"\b(?:your|the)\s+(?:full|entire|complete|raw|original)\s+(?:system\s+)?(?:prompt|context|conversation\s+history)\b"
        ),
    ),
    (
        "role_play",
        re.compile(
            r"\b(?:you\s+are\s+(?:now\s+)?|you're\s+(?:now\s+)?|you\s+will\s+be\s+|act\s+as\s+|you\s+play\s+(?:an?\s+)?|"
            r"pretend\s+(?:to\s+be|you\s+are|you're)\s+|role-?\s?play\s+as\s+|play\s+the\s+role\s+of\s+|"
            r"behave\s+(?:as|like)\s+|simulate\s+|imagine\s+(?:you\s+are|you're)\s+|"
            r"from\s+now\s+on\s+you\s+are\s+)"
            rf"[^.?!\n]{{0,40}}?\b{_PERSONA}"
        ),
    ),
    (
        "role_play",
        re.compile(
            r"\bdo\s+anything\s+now\b|\bdeveloper\s+mode\s+(?:enabled|on|activated)\b|\benable\s+developer\s+mode\b|"
            r"\bjailbr(?:eak|oken)\s+(?:mode|prompt|model|version|yourself)\b|\byou\s+are\s+(?:a\s+)?jailbroken\b|"
            r"\b(?:stay|remain)\s+in\s+character\b|\bi\s+want\s+you\s+to\s+(?:act|behave|pretend)\b|"
            r"\bact\s+as\s+my\s+(?:deceased|late|dead|dying)\b|\bpretend\s+(?:to\s+be|you\s+are)\s+my\b"
        ),
    ),
    (
        "delimiter",
        re.compile(
            r"<\|\s*(?:im_start|im_end|system|endoftext|eot_id|start_header_id|end_header_id)\s*\|>|"
            r"\[/?(?:inst|sys)\]|<</?sys>>|</?\s*(?:system|instructions?|context)\s*>[^?]*"
            r"(?:must|now|ignore|answer|reveal|you)\b|"
            r"(?:^|\n)\s*#{2,}\s*(?:system|instructions?|new\s+instructions?)\s*(?::|\n|$)|"
            r"\n\s*(?:system|assistant|developer)\s*:|"
            r"\bend\s+of\s+(?:user\s+)?(?:input|prompt|instructions)\b[^?]{0,40}\b(?:assistant|system)\s*:"
        ),
    ),
    (
        "encoded_instruction",
        re.compile(
            r"\b(?:decode|decrypt|deobfuscate|apply\s+rot13|unscramble|reverse)\b[^.?!\n]{0,40}?"
            r"\b(?:follow|execute|obey|do\s+what|run|carry\s+out|comply)\b|"
            r"\b(?:follow|execute|obey|run)\b[^.?!\n]{0,20}?\b(?:base64|rot13|hex|encoded|decoded)\b"
        ),
    ),
    (
        "override",
        re.compile(
            r"\b(?:ignor(?:a|e|ez|iere|ieren)|vergiss|vergessen|olvida|olvide|olvidad|esqueça|esqueca|oublie|oubliez|"
            r"dimentica)\b[^.?!\n]{0,30}?"
            r"\b(?:instrucciones|instruções|instrucoes|instructions|consignes|directives|règles|anweisungen|anleitungen|"
            r"istruzioni|regole|regeln|reglas|regras)\b|"
            r"(?:忽略|无视|忘记|忽視|無視).{0,12}(?:指令|指示|规则|規則|提示)|"
            r"(?:以前|前)の.{0,8}(?:指示|命令).{0,6}(?:無視|忘れ)"
        ),
    ),
]


# Letters only: catches phrases spelled out with any spacing or punctuation between the letters.
COMPACT_RULES: list[tuple[str, re.Pattern[str]]] = [
    (
        "override",
        re.compile(
            r"(?:ignore|disregard|forget)(?:all)?(?:of)?(?:(?:the|your)?(?:previous|prior|above|earlier)|your)"
            r"(?:instructions?|rules|prompts?|directions|guidelines)"
        ),
    ),
    (
        "extraction",
        re.compile(
            r"(?:reveal|print|show|repeat|output)(?:me)?your(?:system|initial|hidden)"
            r"(?:prompt|instructions?|message)"
        ),
    ),
]


@dataclass(frozen=True)
class InjectionMatch:
    rule: str  # override, extraction, role_play, delimiter, encoded_instruction
    encoding: str  # "plain" or the encoding undone to find it (base64, hex, leetspeak, ...)
    excerpt: str


def fold(text: str) -> str:
    """Lower-case text with full-width letters, look-alike letters and invisible characters undone."""
    text = unicodedata.normalize("NFKC", text)
    text = _ZERO_WIDTH.sub("", text).translate(_HOMOGLYPHS)
    return text.casefold()


def _printable(raw: bytes) -> str | None:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    letters = sum(ch.isalpha() or ch.isspace() for ch in text)
    return text if text and letters / len(text) > 0.8 else None


def decoded_forms(text: str) -> list[tuple[str, str]]:
    """(encoding, text) for the text itself and every decodable form of it."""
    folded = fold(text)
    forms = [("plain", folded)]
    if any(ch.isdigit() for ch in folded) or any(ch in folded for ch in "@$|!"):
        forms.append(("leetspeak", folded.translate(_LEET)))
        forms.append(("leetspeak", folded.translate(_LEET_L)))  # 1 stands for l as often as for i
    spaced = _SPACED.sub(lambda m: " ".join(re.sub(r"(?<=\S)[ .\-_*](?=\S)", "", m.group(0)).split()), folded)
    if spaced != folded:
        forms.append(("spaced", spaced))
    if "%" in text:
        forms.append(("url", fold(unquote(text))))
    for blob in _BASE64.findall(text):
        try:
            decoded = _printable(base64.b64decode(blob + "=" * (-len(blob) % 4), validate=True))
        except (binascii.Error, ValueError):
            decoded = None
        if decoded:
            forms.append(("base64", fold(decoded)))
    for blob in _HEX.findall(text):
        decoded = _printable(bytes.fromhex(blob))
        if decoded:
            forms.append(("hex", fold(decoded)))
    if _looks_scrambled(folded):
        forms.append(("rot13", codecs.decode(folded, "rot13")))
        forms.append(("reversed", folded[::-1]))
    return forms


def _looks_scrambled(folded: str) -> bool:
    """Latin-script text with almost no common English words: worth trying ROT13 and reversal on."""
    words = re.findall(r"[a-z]+", folded)
    if len(words) < 3:
        return False
    common = sum(w in _COMMON_WORDS for w in words)
    return common / len(words) < 0.15


def find_injection(text: str) -> InjectionMatch | None:
    """The first rule that fires on the question or on any decoded form of it, or None."""
    for encoding, form in decoded_forms(text):
        for rule, pattern in RULES:
            match = pattern.search(form)
            if match:
                return InjectionMatch(rule, encoding, match.group(0)[:80])
        compact = re.sub(r"[^a-z]", "", form.translate(_LEET) if encoding == "plain" else form)
        for rule, pattern in COMPACT_RULES:
            match = pattern.search(compact)
            if match:
                return InjectionMatch(rule, "compact" if encoding == "plain" else encoding, match.group(0)[:80])
    return None
