"""The planner (policies.placement.plan_job) as one module per step; see planner.py."""
