"""What judging costs: token estimates before the calls, the spend of the calls, the budget."""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from retrieval_gate.config.judge import JudgeConfig, Prices
from retrieval_gate.errors import RetrieverError

BUDGET_SPENT = "the judging budget"
"""How a call the budget refused begins its error."""
CHARS_PER_TOKEN = 4
"""The estimate's rule of thumb for English text; the spend uses the endpoint's own count."""


def estimated_prompt_tokens(messages: Sequence[Mapping[str, str]]) -> int:
    """Prompt tokens of `messages`, estimated as characters / 4 (rounded up)."""
    return math.ceil(sum(len(message["content"]) for message in messages) / CHARS_PER_TOKEN)


def cost_of(prices: Prices, prompt_tokens: int, completion_tokens: int) -> float:
    """The price of these tokens (prices are per million)."""
    return (prompt_tokens * prices.input + completion_tokens * prices.output) / 1_000_000


@dataclass(frozen=True)
class Budget:
    """The most one run may spend: calls and money (None: no limit)."""

    calls: int | None = None
    cost: float | None = None

    @classmethod
    def of(cls, config: JudgeConfig, calls: int | None = None, cost: float | None = None) -> Budget:
        """judge.budget, with `calls` and `cost` (the command line's) taking precedence."""
        return cls(
            config.budget.calls if calls is None else calls,
            config.budget.cost if cost is None else cost,
        )

    def describe(self) -> str:
        parts = [f"{self.calls} calls"] if self.calls is not None else []
        parts += [f"a cost of {self.cost:g}"] if self.cost is not None else []
        return " and ".join(parts) or "no limit"


class BudgetSpentError(RetrieverError):
    """A call the budget does not allow: not made, the pair left for a later run."""

    def __init__(self, message: str) -> None:
        super().__init__(message, kind="judging budget reached")


class Ledger:
    """Calls made and tokens paid, shared by the runner's workers. A call reserves its
    estimated cost before it is sent and is charged the endpoint's `usage` after, so calls
    in flight at once cannot together pass the budget (by more than an estimate's error)."""

    def __init__(self, prices: Prices, budget: Budget, completion_estimate: int) -> None:
        self.prices = prices
        self.budget = budget
        self.completion_estimate = completion_estimate
        self.calls = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.refused = 0
        self._reserved = 0.0
        self._stopped = False
        self._lock = threading.Lock()

    @property
    def cost(self) -> float:
        """Money spent on the tokens the endpoint counted."""
        return cost_of(self.prices, self.prompt_tokens, self.completion_tokens)

    def reserve(self, prompt_tokens: int) -> float:
        """Count a call about to be sent, with its estimated cost (returned); past the budget
        raise BudgetSpentError instead, and refuse every later call too."""
        estimate = cost_of(self.prices, prompt_tokens, self.completion_estimate)
        with self._lock:
            budget = self.budget
            over_calls = budget.calls is not None and self.calls + 1 > budget.calls
            over_cost = budget.cost is not None and (
                self.cost + self._reserved + estimate > budget.cost
            )
            if self._stopped or over_calls or over_cost:
                self._stopped = True
                self.refused += 1
                raise BudgetSpentError(f"{BUDGET_SPENT} ({budget.describe()}) is spent")
            self.calls += 1
            self._reserved += estimate
        return estimate

    def charge(self, estimate: float, prompt_tokens: int, completion_tokens: int) -> None:
        """Replace a call's reserved estimate by the tokens the endpoint counted (0 and 0 for
        a call that failed before an answer)."""
        with self._lock:
            self._reserved -= estimate
            self.prompt_tokens += prompt_tokens
            self.completion_tokens += completion_tokens

    @property
    def stopped(self) -> bool:
        """Whether the budget refused a call."""
        with self._lock:
            return self._stopped
