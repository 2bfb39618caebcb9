"""A small rules-based classifier of unsafe requests, for a documentation assistant's front door.

It covers requests for instructions that cause serious harm: weapons and explosives, malware,
self-harm, sexual content involving minors, synthesis of hard drugs, violence against people, and
breaking into other people's accounts. Each rule needs an intent (a verb of making or doing) joined
to a harmful object, so technical questions with alarming words pass: `kill` a process, a `child`
process, `execute` a job, `exploit` a feature, a `zip bomb` check, a `virus scan` stage.

Not covered (say so rather than pretend): hate speech and harassment, adult sexual content,
misinformation, privacy requests, and anything phrased without these words. A model-based safety
classifier is the route for those; it would fail open like every optional safety classifier.
"""

from __future__ import annotations

import re

_MAKE = (
    r"(?:make|making|build|building|create|creating|construct|assemble|manufacture|produce|synthesi[sz]e|"
    r"cook|brew|prepare|3d[- ]print|design|write|writing|code|develop|program|generate|get|obtain|buy)"
)
_HOW = r"(?:how\s+(?:do|can|could|would|should|to)\s+(?:i|we|you|one|someone)?\s*|ways?\s+to\s+|steps?\s+to\s+|guide\s+to\s+)"

# (category, pattern) over lower-cased text.
RULES: list[tuple[str, re.Pattern[str]]] = [
    (
        "weapons",
        re.compile(
            rf"\b{_MAKE}\b[^.?!\n]{{0,30}}?\b(?<!zip\s)(?<!fork\s)(?<!xml\s)(?<!logic\s)(?<!billion\s)"
            r"(?:(?:pipe\s+|nail\s+|car\s+|dirty\s+|fertili[sz]er\s+)?bombs?|explosives?|ied|molotov|grenades?|"
            r"nerve\s+(?:agent|gas)|sarin|vx\s+gas|ricin|anthrax|chemical\s+weapons?|bio-?weapons?|"
            r"biological\s+weapons?|napalm|ghost\s+guns?|untraceable\s+(?:gun|firearm)s?|"
            r"(?:gun|firearm)\s+(?:silencer|suppressor)s?|detonators?)\b"
        ),
    ),
    (
        "malware",
        re.compile(
            rf"\b{_MAKE}\b[^.?!\n]{{0,25}}?\b(?:a\s+|an\s+|some\s+|my\s+own\s+)?(?:\w+\s+)?"
            r"(?:ransomware|keyloggers?|trojans?|rootkits?|botnets?|computer\s+virus(?:es)?|"
            r"credential\s+stealers?|password\s+stealers?|info-?stealers?|spyware|cryptojackers?|malware|"
            r"worms?\s+that\s+spreads?)\b(?!\s+(?:scan|scanner|scanning|detection|detector|protection|signatures?|"
            r"checks?|tests?|analysis|removal))|"
            r"\b(?:steal|harvest|exfiltrate|dump)\b[^.?!\n]{0,20}?\b(?:passwords?|credentials|cookies|session\s+tokens?|"
            r"credit\s+cards?)\b[^.?!\n]{0,20}?\b(?:from|of)\s+(?:users|victims|people|someone|other\s+people|my\s+\w+)\b"
        ),
    ),
    (
        "account_intrusion",
        re.compile(
            r"\b(?:hack|break|get)\s+into\s+(?:someone|somebody|my\s+(?:ex|neighbou?r|wife|husband|girlfriend|boyfriend|"
            r"boss|partner|coworker|colleague)|an?other\s+person|other\s+people)(?:'s)?\b|"
            r"\b(?:access|read|spy\s+on)\s+(?:someone|somebody|my\s+(?:ex|wife|husband|girlfriend|boyfriend|partner))(?:'s|\s+else's)?"
            r"\s+(?:email|emails|messages|phone|account|whatsapp|instagram)\b"
        ),
    ),
    (
        "self_harm",
        re.compile(
            r"\b(?:kill|hurt|harm|cut|hang|poison|shoot|end)\s+myself\b|\bend\s+my\s+(?:own\s+)?life\b|"
            r"\bsuicide\s+(?:method|methods|note|plan)\b|\b(?:best|painless|easiest|quickest)\s+way\s+to\s+(?:die|kill\s+myself)\b|"
            r"\bi\s+want\s+to\s+die\b|\blethal\s+dose\b[^.?!\n]{0,40}\b(?:kill|die|myself|suicide)\b|"
            r"\bhow\s+many\s+(?:pills|tablets|sleeping\s+pills)\b[^.?!\n]{0,40}\b(?:die|kill|overdose|lethal)\b"
        ),
    ),
    (
        "sexual_minors",
        re.compile(
            r"\b(?:sexual|sexually|sex|nude|nudes|naked|porn\w*|erotic|nsfw|lewd)\b[^.?!\n]{0,40}?"
            r"\b(?:child|children|minors?|kids?|underage|preteens?|little\s+(?:girls?|boys?)|"
            r"(?:1[0-7]|[1-9])[- ]?(?:yo|years?[- ]old))\b(?!\s+process)|"
            r"\b(?:child|children|minors?|kids?|underage|preteens?)\b(?!\s+process)[^.?!\n]{0,40}?"
            r"\b(?:sexual|sexually|nude|nudes|naked|porn\w*|erotic|nsfw|lewd)\b"
        ),
    ),
    (
        "drugs",
        re.compile(
            rf"\b(?:{_MAKE}|extract|grow)\b[^.?!\n]{{0,25}}?\b(?:meth|methamphetamine|crystal\s+meth|fentanyl|heroin|"
            r"cocaine|crack\s+cocaine|lsd|mdma|ecstasy|ghb)\b"
        ),
    ),
    (
        "violence",
        re.compile(
            rf"\b{_HOW}(?:kill|murder|poison|strangle|stab|shoot|kidnap|torture)\s+(?:a\s+|my\s+|the\s+|some\s+)?"
            r"(?:someone|somebody|person|people|human|humans|him|her|wife|husband|boss|neighbou?r|mother|father|"
            r"teacher|classmate|coworker|colleague|child|baby|president)\b|"
            r"\b(?:get\s+away\s+with|dispose\s+of\s+(?:a|the)\s+body)\b[^.?!\n]{0,20}\b(?:murder|killing|body)\b"
        ),
    ),
]


def unsafe_category(text: str) -> str | None:
    """The category of harm the request asks for, or None."""
    lowered = " ".join(text.casefold().split())
    for category, pattern in RULES:
        if pattern.search(lowered):
            return category
    return None
