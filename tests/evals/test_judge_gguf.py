"""The answer judge with a real model: the packaged Qwen2.5-Coder-1.5B GGUF behind llama-cpp-python's server
(tests/llm_gguf.py). The judge's word counts for nothing without a quote the code finds in the cited passage,
so what is asserted holds whatever a small model writes: verdicts come back (in JSON mode, which llama.cpp
enforces with a grammar), and the control run (each answer judged against another question's passages)
comes out unfaithful. About four minutes on 2 cores: eight verdicts, each read and written at about 30 s."""

from __future__ import annotations

import pytest

from evals.answers import run_answers
from evals.golden import load_golden
from evals.judge import Judge
from pipelines.profiles import Stores
from pipelines.settings import Settings
from query_graph.service import QueryService
from tests.evals.test_eval_cli import GOLDEN
from tests.llm_gguf import GgufServer


# One backend is enough here: the stores are not what this test is about, and every run costs model time.
@pytest.mark.parametrize("backend", ["configured"], indirect=True)
def test_the_packaged_model_judges_and_its_control_run_is_unfaithful(
    settings: Settings,
    stores: Stores,
    built,  # type: ignore[no-untyped-def]
    gguf_llm: GgufServer,
) -> None:
    service = QueryService(settings, stores)
    index = service.active()[1]
    # 768 tokens hold a verdict on these one-sentence answers; the bound keeps a rambling reply to ~40 s.
    judge = Judge(gguf_llm.model, gguf_llm.api_base, max_tokens=768)
    overall = run_answers(load_golden(GOLDEN), service.answer, index, judge).overall()
    judge = overall["judge"]
    # A verdict that does not parse is reported and left out (evals/judge.py), never scored.
    assert judge["answers_judged"] >= 3 and judge["answers_judged"] + judge["judge_errors"] == 4, judge
    assert overall["faithfulness"] is not None and overall["citation_precision"] is not None
    control = judge["control"]
    assert control["answers"] >= 2 and control["unfaithful_as_expected"], control
