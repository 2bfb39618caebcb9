"""A question's spoken language (`QueryService.answer(language=...)`) steers the language gate: used when
the transcriber is sure enough, set aside for the words' when not, and keyed into the exact and semantic caches only
when it gives the answer phase another language than the words would."""

from __future__ import annotations

from pipelines.guardrails.screen import question_language
from pipelines.text.language import SpokenLanguage
from tests.query_graph.front_fixtures import (  # noqa: F401 (fixtures)
    RETRIEVAL_AND_GENERATION,
    FrontEnv,
    ServiceFactory,
    front_env,
    make_service,
)

ENGLISH = "How long does harbor keep build logs?"
GERMAN = "Wie lange bewahrt harbor die Build-Protokolle auf?"
PARAPHRASE = "Harbor: how long does it keep the build logs?"


def test_the_spoken_language_is_used_only_when_the_transcriber_is_sure() -> None:
    sure = question_language(ENGLISH, SpokenLanguage("de", 0.9), 0.5)
    assert (sure.language, sure.confidence, sure.source, sure.text_language) == ("de", 0.9, "speech", "en")
    assert sure.overrides_text
    unsure = question_language(ENGLISH, SpokenLanguage("de", 0.3), 0.5)
    assert (unsure.language, unsure.source) == ("en", "text") and unsure.spoken == SpokenLanguage("de", 0.3)
    assert not unsure.overrides_text
    stated = question_language("What port?", SpokenLanguage("pt-BR"), 0.5)  # too short for the words alone
    assert (stated.language, stated.confidence, stated.source, stated.text_language) == ("pt", 1.0, "request", None)
    agreeing = question_language(ENGLISH, SpokenLanguage("EN_us", 0.8), 0.5)
    assert agreeing.language == "en" and not agreeing.overrides_text
    assert question_language(ENGLISH, None, 0.5).source == "text"


def test_a_language_outside_the_index_is_refused_like_a_typed_question_in_it(
    front_env: FrontEnv,  # noqa: F811
    make_service: ServiceFactory,  # noqa: F811
) -> None:
    service = make_service()
    reply = service.answer(ENGLISH, language="xx")
    assert reply["status"] == "refused", reply
    guardrail = reply["guardrail"]
    assert guardrail["rule"] == "language.unsupported" and guardrail["language"] == "xx"
    assert guardrail["language_source"] == "request" and guardrail["index_languages"] == ["en"]
    assert "Questions in 'xx' are not supported" in reply["answer"]
    assert not (RETRIEVAL_AND_GENERATION | {"exact_cache_lookup"}) & set(reply["timings_ms"])

    typed = service.answer(GERMAN)  # the same gate, the same words, for a typed German question
    spoken = service.answer(ENGLISH, language="de", language_probability=0.97)
    assert typed["status"] == spoken["status"] == "refused"
    assert typed["answer"] == spoken["answer"] and typed["guardrail"]["rule"] == spoken["guardrail"]["rule"]
    assert (typed["guardrail"]["language_source"], spoken["guardrail"]["language_source"]) == ("text", "speech")
    assert front_env.redis_keys(service.settings.cache_prefix) == []  # refusals are never cached

    routed = make_service(language_gate="route").answer(ENGLISH, language="xx")
    assert routed["guardrail"]["decision"] == "allowed" and routed["guardrail"]["rule"] == "language.routed"
    assert routed["guardrail"]["language"] == "xx" and "dense_hits" in routed["timings_ms"]


def test_an_unsure_spoken_language_falls_back_to_the_words(make_service: ServiceFactory) -> None:  # noqa: F811
    reply = make_service().answer(ENGLISH, language="xx", language_probability=0.2)
    assert reply["status"] != "refused"
    assert reply["guardrail"] == {
        "decision": "allowed",
        "rule": None,
        "language": "en",
        "language_source": "text",
        "speech_language": "xx",
        "speech_probability": 0.2,
    }


def test_the_exact_cache_keys_the_language_only_when_it_overrides_the_words(
    make_service: ServiceFactory,  # noqa: F811
) -> None:
    service = make_service(language_gate="route")
    assert service.answer(ENGLISH)["cache"] == "miss"
    confirmed = service.answer(ENGLISH, language="en", language_probability=0.9)
    assert confirmed["cache"] == "hit" and confirmed["guardrail"]["language_source"] == "speech"
    overriding = service.answer(ENGLISH, language="de", language_probability=0.9)
    assert overriding["cache"] == "miss" and overriding["guardrail"]["language"] == "de"
    assert service.answer(ENGLISH, language="de", language_probability=0.95)["cache"] == "hit"
    assert service.answer(ENGLISH)["cache"] == "hit"  # the typed entry is still its own


def test_the_semantic_cache_keys_the_language_like_the_exact_cache(
    make_service: ServiceFactory,  # noqa: F811
) -> None:
    """An answer given under a language that overrides the words is reused only under that language; a
    spoken language the words confirm shares the typed questions' entries."""
    service = make_service(language_gate="route", semantic_cache_threshold=0.85)
    german = service.answer(ENGLISH, language="de", language_probability=0.9)
    assert german["status"] == "answered" and german["cache_detail"]["semantic"] == "miss", german
    confirmed = service.answer(PARAPHRASE, language="en", language_probability=0.9)
    assert confirmed["guardrail"]["language"] == "en" and confirmed["status"] == "answered"
    assert confirmed["cache_detail"] == {"exact": "miss", "semantic": "miss", "similarity": None}
    again = service.answer(PARAPHRASE, language="de", language_probability=0.95)
    assert again["cache"] == "semantic_hit" and again["cache_detail"]["similarity"] >= 0.85, again["cache_detail"]
    assert again["answer"] == german["answer"] and again["guardrail"]["language"] == "de"
    typed = service.answer(ENGLISH)  # the typed entries: the paraphrase asked under its words' language
    assert typed["cache"] == "semantic_hit" and typed["answer"] == confirmed["answer"]
