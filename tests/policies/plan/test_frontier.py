from __future__ import annotations

from gpuopt.policies.plan.frontier import Frontier


def test_a_point_at_least_as_cheap_and_fast_dominates() -> None:
    f: Frontier[str] = Frontier()
    f.add(10.0, 5.0, "a")
    assert f.dominated(10.0, 5.0) and f.dominated(11.0, 6.0)
    assert not f.dominated(9.0, 6.0) and not f.dominated(11.0, 4.0)


def test_adding_drops_what_the_new_point_dominates_and_ignores_a_dominated_one() -> None:
    f: Frontier[str] = Frontier()
    f.add(10.0, 5.0, "a")
    f.add(20.0, 2.0, "b")
    f.add(30.0, 6.0, "dominated")  # slower and dearer than a
    f.add(9.0, 4.0, "c")  # cheaper and faster than a
    assert f.cheapest_first() == ("c", "b")


def test_cheapest_first_breaks_cost_ties_by_hours() -> None:
    f: Frontier[str] = Frontier()
    f.add(30.0, 1.0, "fast")
    f.add(5.0, 9.0, "cheap")
    f.add(12.0, 3.0, "middle")
    assert f.cheapest_first() == ("cheap", "middle", "fast")
