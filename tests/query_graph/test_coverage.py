"""The coverage node on a real index: a question naming what the corpus never mentions gets no answer."""

from __future__ import annotations

from tests.query_graph.harbor import Harbor


def test_an_unknown_name_gets_no_answer_that_says_what_is_missing(harbor: Harbor) -> None:
    question = "How do I run harbor sync from a Jenkins pipeline?"
    reply = harbor.service().answer(question, variants={"coverage_names": "on"})
    assert reply["status"] == "no_answer" and reply["citations"] == []
    assert reply["coverage"]["rule"] == "names" and reply["coverage"]["uncovered_names"] == ["Jenkins"]
    assert "Jenkins" in reply["answer"]
    assert "question_coverage" in reply["timings_ms"]  # timed like every node
    # By default the names rule reads the sentences that ask (docs/decisions/coverage.md): this one is all asking.
    default = harbor.service().answer(question)
    assert default["variants"]["coverage_names"] == "asked" and default["coverage"]["uncovered_names"] == ["Jenkins"]
    off = harbor.service().answer(question, variants={"coverage_names": "off"})
    assert off["coverage"]["rule"] != "names" and off["coverage"]["uncovered_names"] == []


def test_asked_names_skip_the_askers_situation(harbor: Harbor) -> None:
    situation = "Our Jenkins server pings the harbor dashboard. Which port does the harbor dashboard listen on?"
    on = harbor.service().answer(situation, variants={"coverage_names": "on"})
    assert on["status"] == "no_answer" and on["coverage"]["uncovered_names"] == ["Jenkins"]
    asked = harbor.service().answer(situation, variants={"coverage_names": "asked"})
    assert asked["status"] == "answered" and "7420" in asked["answer"] and asked["coverage"]["covered"] is True
    ask = "Which port does the harbor dashboard use for Jenkins?"
    assert harbor.service().answer(ask, variants={"coverage_names": "asked"})["coverage"]["uncovered_names"] == [
        "Jenkins"
    ]


def test_a_covered_question_is_answered_with_the_check_reported(harbor: Harbor) -> None:
    reply = harbor.service().answer("Which port does the harbor dashboard listen on?")
    assert reply["status"] == "answered" and "7420" in reply["answer"]
    assert reply["coverage"]["covered"] is True and reply["coverage"]["rule"] is None


def test_mostly_unknown_words_get_no_answer(harbor: Harbor) -> None:
    reply = harbor.service().answer("What is the boiling point of mercury in kelvin?")
    assert reply["status"] == "no_answer" and reply["coverage"]["rule"] == "vocabulary"


def test_coverage_off_leaves_the_decision_to_crag_and_the_generator(harbor: Harbor) -> None:
    reply = harbor.service().answer("How do I run harbor sync from a Jenkins pipeline?", variants={"coverage": "off"})
    assert reply["coverage"]["covered"] is True and reply["variants"]["coverage"] == "off"
    assert reply["status"] == "answered" and "harbor sync" in reply["answer"]


def test_breadth_asks_back_when_the_one_subject_word_is_on_most_pages(harbor: Harbor) -> None:
    service = harbor.service(breadth="common_word")
    reply = service.answer("harbor?")  # on every page of the three
    assert reply["status"] == "clarify" and reply["citations"] == []
    assert reply["breadth"] == {"broad": True, "word": "harbor", "page_share": 1.0, "sections": []}
    assert "“harbor”" in reply["answer"]
    assert "question_breadth" in reply["timings_ms"]
    named = service.answer("What happens when Harbor is down?")  # the same word written as a name: a subject
    assert named["status"] != "clarify" and named["breadth"]["broad"] is False
    rare = service.answer("retention?")  # on two pages of three: a large share, but too few pages to be broad
    assert rare["status"] == "answered" and rare["breadth"] == {
        "broad": False,
        "word": "retention",
        "page_share": 0.667,
        "sections": [],
    }
    off = harbor.service(breadth="off").answer("harbor?")
    assert off["status"] != "clarify" and off["breadth"]["broad"] is False


def test_a_bare_topic_is_asked_back_offering_the_sections_retrieval_found(harbor: Harbor) -> None:
    service = harbor.service(breadth="bare_topic")
    reply = service.answer("retention?")
    assert reply["status"] == "clarify" and reply["citations"] == [] and reply["breadth"]["broad"] is True
    sections = reply["breadth"]["sections"]
    assert 1 <= len(sections) <= 3 and len(set(sections)) == len(sections)
    assert all(s in reply["answer"] for s in sections) and reply["answer"].startswith("What do you want to know")
    # A question about the same topic, an identifier alone, or a question word: answered as before.
    assert service.answer("How long does Harbor keep build logs?")["status"] == "answered"
    assert service.answer("retention_days")["breadth"]["broad"] is False
    assert service.answer("why retention?")["breadth"]["broad"] is False
    assert harbor.service(breadth="off").answer("retention?")["status"] == "answered"
    # Only a common topic: "harbor" is on every page, "retention" on two (too few to be broad).
    common = harbor.service(breadth="bare_common_topic")
    asked = common.answer("harbor?")
    assert asked["status"] == "clarify" and asked["breadth"]["page_share"] == 1.0 and asked["breadth"]["sections"]
    assert common.answer("retention?")["status"] == "answered"


def test_a_question_naming_only_a_kind_of_thing_is_asked_back_when_the_setting_is_on(harbor: Harbor) -> None:
    question = "Which version should I use?"
    asked = harbor.service(clarify_unnamed=True).answer(question)
    assert asked["status"] == "clarify" and asked["citations"] == []
    assert asked["answer"].startswith("Which version do you mean?")
    assert harbor.service(clarify_unnamed=False).answer(question)["status"] != "clarify"


def test_a_short_complaint_naming_two_things_is_asked_back_when_the_setting_is_two(harbor: Harbor) -> None:
    question = "dashboard port broken"
    asked = harbor.service(clarify_complaint_words=2).answer(question)
    assert asked["status"] == "clarify" and asked["answer"].startswith("What exactly goes wrong?")
    assert harbor.service(clarify_complaint_words=1).answer(question)["status"] != "clarify"
