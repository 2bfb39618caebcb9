"""`hit_rules`: the one place a rule variant (feedback, bridge hop, distinct passages, asks, release notes) becomes
the retrieval plan's behaviour, for the query graph, the served retrieval and the evaluations alike."""

from __future__ import annotations

import dataclasses

from pipelines.retrieval.feedback import Feedback
from pipelines.retrieval.retriever import RULE_SETTINGS, RetrievalPlan, hit_rules, rule_settings
from pipelines.settings import Settings


def test_every_rule_is_a_setting_and_the_rules_set_fields_of_the_plan() -> None:
    settings = Settings()
    assert set(rule_settings(settings)) == set(RULE_SETTINGS) <= set(Settings.model_fields)
    fields = {f.name for f in dataclasses.fields(RetrievalPlan)}
    assert set(hit_rules("hybrid", settings.top_k, **rule_settings(settings))) <= fields


def test_variant_names_become_behaviour() -> None:
    on = dict(bm25_feedback="on", bridge_hop="on", distinct_passages="on", sub_queries="asks", release_notes="defer")
    rules = hit_rules("hybrid", 7, **on, passages_per_page=2, bm25_feedback_docs=4, bridge_hop_sources=5)
    assert rules == {
        "feedback": Feedback(4, 20, 0.2),
        "bridge_depth": 7,
        "bridge_sources": 5,
        "distinct": True,
        "sub_queries": True,
        "per_page": 2,
        "release_notes": True,
        "release_notes_first": False,
    }
    first = hit_rules("hybrid", 7, **{**on, "release_notes": "defer_but_first"})
    assert first["release_notes"] and first["release_notes_first"]
    off = dict(bm25_feedback="off", bridge_hop="off", distinct_passages="off", sub_queries="off", release_notes="keep")
    rules = hit_rules("hybrid", 7, **off)
    assert not rules["feedback"].on and rules["bridge_depth"] == 0 and not rules["distinct"]
    assert not rules["sub_queries"] and not rules["release_notes"] and not rules["release_notes_first"]
    # The second hop follows hybrid retrieval only: dense or BM25 alone never runs it.
    assert hit_rules("dense", 7, **on)["bridge_depth"] == 0


def test_the_settings_defaults_are_what_the_plan_reads() -> None:
    settings = Settings()
    rules = hit_rules("hybrid", settings.top_k, **rule_settings(settings))
    assert rules["release_notes"] == (settings.release_notes == "defer")
    assert rules["distinct"] == (settings.distinct_passages == "on")
    assert rules["feedback"] == Feedback.from_settings(settings)
