"""Lookups: a step that asks the outside world a question (a simulated service) and reports the answer."""

from __future__ import annotations

import random

import pytest

from hub.core import Hub
from hub.rubric import ReportCriterion
from taskgen.coverage import service_patterns
from taskgen.flowmodel import Flow
from taskgen.instantiate import instantiate
from taskgen.oracle import run_plan
from taskgen.pattern import Pattern, load_patterns
from taskgen.story import compose_flow
from taskgen.task import Task
from taskgen.walk import WalkError, walker_for
from taskgen.workflow import Workflows


def _lookup(**overrides: object) -> dict[str, object]:
    return {
        "id": "currency",
        "op": ["lookup"],
        "answer": ["currency_code"],
        "inputs": {"country_code": "trigger.country_code"},
        "ask": ["Tell me the currency of the contractor's country (report it as {key})."],
        **overrides,
    }


def _pattern(first: dict[str, object]) -> Pattern:
    return Pattern.model_validate(
        {
            "id": "probe",
            "category": "people",
            "personas": ["Sam, payroll"],
            "trigger": {"entity": ["contractor"], "state": [], "situation": ["'{anchor}' joined us."]},
            "reactions": [
                first,
                {"id": "other", "op": ["create"], "entity": ["task"], "ask": ["Open a task for it."]},
            ],
        }
    )


def test_a_lookup_names_its_report_key_and_writes_nothing() -> None:
    assert _pattern(_lookup()).reactions[0].lookup
    with pytest.raises(ValueError, match="says \\{key\\}"):
        _pattern(_lookup(ask=["Tell me the currency."]))
    with pytest.raises(ValueError, match="writes nothing"):
        _pattern(_lookup(entity=["currency"]))
    with pytest.raises(ValueError, match="for lookups"):
        _pattern({"id": "mail", "op": ["send"], "entity": ["message"], "ask": ["Email them ({key})."]})


def test_a_lookup_joins_the_services_that_can_answer_it(hub: Hub) -> None:
    joined = service_patterns(hub.registry, [_pattern(_lookup())])
    assert joined["fx"] == ["probe"]  # get_country_currency answers it from a country code
    assert joined["contractor_payments"] == ["probe"]  # its contractors carry one country code
    unanswerable = _pattern(_lookup(answer=["stocks.ticker"]))
    assert service_patterns(hub.registry, [unanswerable])["fx"] == []


@pytest.fixture(scope="module")
def looked_up(hub: Hub) -> tuple[Flow, Task]:
    workflows = Workflows(hub, walker_for(hub, 0))
    pattern = next(p for p in load_patterns() if p.id == "contractor_payout_currency")
    for index in range(20):
        try:
            flow = instantiate(workflows, pattern, random.Random(f"lookup:{index}"), rule=False, chain=False)
        except WalkError:
            continue
        if any(s.model is not None for s in flow.stages):
            flow.close()
            continue
        try:
            return flow, compose_flow(flow, "lookup", 0, random.Random(index), [])
        finally:
            flow.close()
    pytest.fail("the lookup pattern made no task")


def test_the_answer_is_reported_under_the_key_the_ask_names(looked_up: tuple[Flow, Task]) -> None:
    flow, task = looked_up
    done = next(d for d in flow.all_done if d.answer is not None)
    field, value = done.answer or ("", None)
    step = task.plan[done.steps[0]]
    assert step.tool == "fx__get_country_currency" and field == "currency_code"
    reports = [c for c in task.rubric.criteria if isinstance(c, ReportCriterion) and c.value == value]
    assert len(reports) == 1 and task.expected_report[reports[0].field] == value
    assert f"(report it as `{reports[0].field}`)" in task.instruction
    assert str(value) not in task.instruction  # learnt only by asking


def test_the_oracle_earns_the_reward_and_a_guess_does_not(hub: Hub, looked_up: tuple[Flow, Task]) -> None:
    flow, task = looked_up
    done = next(d for d in flow.all_done if d.answer is not None)
    answer = next(
        c for c in task.rubric.criteria if isinstance(c, ReportCriterion) and done.answer and c.value == done.answer[1]
    )
    run = run_plan(hub, task.plan, task.seed, task.mounted, record=False)
    try:
        assert run.world.score(task.rubric, report=task.expected_report).net_score == 1.0
        guessed = {**task.expected_report, answer.field: "XYZ" if answer.value != "XYZ" else "ABC"}
        assert run.world.score(task.rubric, report=guessed).score < 1.0
    finally:
        run.world.close()


def test_a_lookup_can_ask_about_an_earlier_lookup_s_answer(hub: Hub) -> None:
    # the ticker found for the customer's company is then quoted: a second question to the same
    # service, carried from the first one's answer, both reported
    workflows = Workflows(hub, walker_for(hub, 0))
    pattern = next(p for p in load_patterns() if p.id == "prospect_deal_share_price")
    for index in range(20):
        try:
            flow = instantiate(workflows, pattern, random.Random(f"chain:{index}"), rule=False, chain=False)
        except WalkError:
            continue
        try:
            if any(s.model is not None for s in flow.stages):
                continue
            ticker, price = (
                next(d for d in flow.all_done if d.reaction.id == key) for key in ("ticker", "share_price")
            )
            assert ticker.service == price.service == "stocks" and ticker.answer and price.answer
            quote = flow.steps[price.steps[0]]
            assert quote.entry.qualified == "stocks__get_quote"
            assert quote.carried["ticker"].step == ticker.steps[0]  # the ticker comes from the first answer
            assert quote.resolved["ticker"] == ticker.answer[1]
            task = compose_flow(flow, "chain", 0, random.Random(index), [])
            reported = {c.value for c in task.rubric.criteria if isinstance(c, ReportCriterion)}
            assert {ticker.answer[1], price.answer[1]} <= reported
            return
        finally:
            flow.close()
    pytest.fail("the chained lookup pattern made no task")
