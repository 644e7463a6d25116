"""A lookup's answer is drawn from its question: the same question gets the same answer however asked."""

from __future__ import annotations

from hub.core import Hub
from taskgen.generate import default_hub


def _ask(hub: Hub, arguments: dict[str, str]) -> str:
    world = hub.open_world(seed=3, services=["websearch"])
    try:
        envelope = world.call("websearch__find_company_website", arguments)
    finally:
        world.close()
    assert envelope["success"], envelope
    return str(envelope["data"]["domain"])


def test_case_spaces_and_optional_arguments_do_not_change_the_answer() -> None:
    hub = default_hub()
    plain = _ask(hub, {"company_name": "Bishop-Nunez"})
    assert _ask(hub, {"company_name": "  bishop-nunez "}) == plain
    assert _ask(hub, {"company_name": "Bishop-Nunez", "country_code": "DE"}) == plain


def test_another_question_gets_its_own_answer() -> None:
    hub = default_hub()
    answers = {_ask(hub, {"company_name": name}) for name in ("Bishop-Nunez", "Walker Ltd", "Nguyen Inc")}
    assert len(answers) == 3
