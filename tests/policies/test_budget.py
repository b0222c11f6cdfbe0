"""policies.budget: what is left of a job's budget, or that it is exhausted."""

from __future__ import annotations

from decimal import Decimal

from gpuopt.policies.budget import BudgetExhausted, budget_left


def test_no_budget_is_no_limit() -> None:
    assert budget_left(None, 10**12) is None


def test_the_rest_in_exact_usd() -> None:
    assert budget_left(5_000_000, 1_250_001) == Decimal("3.749999")
    assert budget_left(5_000_000, 0) == Decimal(5)


def test_spent_all_or_more_is_exhausted_with_the_figures() -> None:
    for spent in (5_000_000, 5_000_001, 9_000_000):
        got = budget_left(5_000_000, spent)
        assert isinstance(got, BudgetExhausted)
        assert "of $5;" in got.reason and "raise `budget`" in got.reason
    got = budget_left(5_000_000, 5_000_000)
    assert isinstance(got, BudgetExhausted) and got.reason.startswith(
        "budget exhausted: spent $5 of $5")
