"""What judging costs: the token estimate, the price of tokens, the budget and its ledger."""

from __future__ import annotations

import pytest

from retrieval_gate.config.judge import JudgeBudget, JudgeConfig, Prices
from retrieval_gate.judging.spend import (
    BUDGET_SPENT,
    Budget,
    BudgetSpentError,
    Ledger,
    cost_of,
    estimated_prompt_tokens,
)

PRICES = Prices(input=2.5, output=10.0)


def test_prompt_tokens_are_estimated_as_characters_over_four_rounded_up() -> None:
    messages = [{"role": "system", "content": "abcdef"}, {"role": "user", "content": "wxyz"}]
    assert estimated_prompt_tokens(messages) == 3  # 10 characters: 2.5 tokens, rounded up
    assert estimated_prompt_tokens([{"role": "user", "content": "x" * 8}]) == 2
    assert estimated_prompt_tokens([]) == 0


def test_the_price_of_tokens_is_per_million() -> None:
    # 1,000 prompt tokens at 2.5 and 200 completion tokens at 10 a million: 0.0025 + 0.002.
    assert cost_of(PRICES, 1_000, 200) == pytest.approx(0.0045, rel=1e-12)
    assert cost_of(PRICES, 0, 0) == 0.0


def test_the_command_line_budget_takes_precedence_over_the_config() -> None:
    config = JudgeConfig(
        base_url="http://127.0.0.1:9/v1", model="m", budget=JudgeBudget(calls=50, cost=2.0)
    )
    assert Budget.of(config) == Budget(50, 2.0)
    assert Budget.of(config, calls=7) == Budget(7, 2.0)
    assert Budget.of(config, cost=0.5) == Budget(50, 0.5)
    assert Budget.of(JudgeConfig(base_url="http://127.0.0.1:9/v1", model="m")) == Budget()


def test_a_budget_describes_its_limits() -> None:
    assert Budget(10, 1.5).describe() == "10 calls and a cost of 1.5"
    assert Budget(10).describe() == "10 calls"
    assert Budget(cost=0.25).describe() == "a cost of 0.25"
    assert Budget().describe() == "no limit"


def test_a_new_ledger_has_spent_nothing() -> None:
    ledger = Ledger(PRICES, Budget(), completion_estimate=16)
    assert (ledger.calls, ledger.prompt_tokens, ledger.completion_tokens) == (0, 0, 0)
    assert (ledger.refused, ledger.cost, ledger.stopped) == (0, 0.0, False)


def test_the_call_budget_allows_exactly_its_calls_then_refuses_every_later_one() -> None:
    ledger = Ledger(PRICES, Budget(calls=2), completion_estimate=16)
    ledger.reserve(100)
    ledger.reserve(100)
    assert ledger.calls == 2
    with pytest.raises(BudgetSpentError, match=f"^{BUDGET_SPENT} \\(2 calls\\) is spent$"):
        ledger.reserve(100)
    with pytest.raises(BudgetSpentError):
        ledger.reserve(100)
    assert (ledger.calls, ledger.refused, ledger.stopped) == (2, 2, True)


def test_a_reservation_is_the_estimated_cost_and_is_replaced_by_the_counted_tokens() -> None:
    ledger = Ledger(PRICES, Budget(), completion_estimate=100)
    estimate = ledger.reserve(1_000)
    # 1,000 prompt tokens at 2.5 and 100 completion tokens at 10 a million.
    assert estimate == pytest.approx(0.0035, rel=1e-12)
    ledger.charge(estimate, 800, 3)
    ledger.charge(0.0, 200, 7)
    assert (ledger.prompt_tokens, ledger.completion_tokens) == (1_000, 10)
    assert ledger.cost == pytest.approx((1_000 * 2.5 + 10 * 10.0) / 1e6, rel=1e-12)


def test_the_cost_budget_counts_what_was_paid_and_what_is_in_flight() -> None:
    # Each call is estimated at 0.0035 (1,000 prompt and 100 completion tokens).
    ledger = Ledger(PRICES, Budget(cost=0.0105), completion_estimate=100)
    first = ledger.reserve(1_000)
    ledger.reserve(1_000)  # in flight: 0.007 reserved
    ledger.charge(first, 1_000, 100)  # paid 0.0035, 0.0035 still reserved
    ledger.reserve(1_000)  # 0.0035 + 0.0035 + 0.0035 = the budget itself: allowed
    assert ledger.calls == 3
    with pytest.raises(BudgetSpentError, match=r"\(a cost of 0\.0105\) is spent"):
        ledger.reserve(1)  # past it by the smallest estimate
    assert ledger.stopped


def test_a_call_that_failed_frees_its_reservation() -> None:
    ledger = Ledger(PRICES, Budget(cost=0.004), completion_estimate=100)
    estimate = ledger.reserve(1_000)  # 0.0035 of 0.004
    ledger.charge(estimate, 0, 0)  # failed before an answer: nothing paid
    assert ledger.reserve(1_000) == pytest.approx(0.0035, rel=1e-12)
    assert ledger.cost == 0.0
