"""What is left of a job's budget for its next attempt, or that there is none left.

Pure: the caller hands in the budget and what the job's attempts cost so far (integer
micro-dollars, from the ledger).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from gpuopt.core.money import from_micros


@dataclass(frozen=True, slots=True)
class BudgetExhausted:
    reason: str  # for the job's last_error: what was spent of what, and what to do


def budget_left(budget_micros: int | None,
                spent_micros: int) -> Decimal | BudgetExhausted | None:
    """None: the job has no budget; else the USD left, or BudgetExhausted once the
    spending reached the budget (the job fails: no attempt can fit in nothing)."""
    if budget_micros is None:
        return None
    if spent_micros >= budget_micros:
        return BudgetExhausted(f"budget exhausted: spent ${from_micros(spent_micros)} of "
                               f"${from_micros(budget_micros)}; raise `budget` to continue")
    return from_micros(budget_micros - spent_micros)
