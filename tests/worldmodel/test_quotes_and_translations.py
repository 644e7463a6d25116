"""The rules backend's quotes agree with themselves; its translations bill their text and leave the answer drawn."""

from __future__ import annotations

from typing import Any

import pytest

from servers.population import Population
from worldmodel.catalog import simulated_services

SERVICES = {s.name: s for s in simulated_services(routed=False)}


def _call(service: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    found = SERVICES[service].call(SERVICES[service].seed_state(0), tool, arguments)
    assert found["success"], found
    data: dict[str, Any] = found["data"]
    return data


@pytest.mark.parametrize("ticker", ["ABCD", "ZBTV", "QBUCP", "GORZC", "MSFT", "SAPX"])
def test_a_quote_s_figures_follow_from_its_price(ticker: str) -> None:
    quote = _call("stocks", "get_quote", {"ticker": ticker})
    price, change, percent = quote["price"], quote["change"], quote["change_percent"]
    assert quote["previous_close"] == pytest.approx(price - change, abs=0.011)
    assert change == 0 or (change > 0) == (percent > 0)
    assert abs(percent) <= 10.01
    assert percent == pytest.approx(change / quote["previous_close"] * 100, abs=0.01)
    assert quote["day_low"] <= min(price, quote["open"]) <= max(price, quote["open"]) <= quote["day_high"]


def test_an_offline_translation_bills_its_text_and_cannot_be_written_without_the_tool() -> None:
    text = "Sign up through the link below."
    done = _call("translate", "translate_text", {"text": text, "target_language": "de"})
    assert (done["source_language"], done["target_language"], done["characters_billed"]) == ("en", "de", len(text))
    assert done["glossary_terms_applied"] <= len(text.split())
    assert text not in done["translated_text"]  # the answer a lookup reports is not derivable from its question
    given = _call("translate", "translate_text", {"text": text, "target_language": "es", "source_language": "fr"})
    assert given["source_language"] == "fr"


def test_a_ticker_found_for_a_company_is_the_one_its_quote_and_profile_name() -> None:
    world = Population.generate(0)
    for company in world.companies[:6]:
        found = _call("stocks", "find_ticker", {"company_name": company.name})
        quote = _call("stocks", "get_quote", {"ticker": found["ticker"]})
        profile = _call("stocks", "get_company_profile", {"ticker": found["ticker"]})
        assert quote["company_name"] == profile["company_name"] == company.name
        assert quote["exchange"] == profile["exchange"] == found["exchange"]
        assert quote["currency"] == found["currency"]
        if company.country == "US":
            assert (found["exchange"], found["currency"]) in {("NASDAQ", "USD"), ("NYSE", "USD")}
