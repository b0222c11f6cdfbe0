"""What `gpuopt status/jobs/logs`, the API and the dashboard show of stored jobs.

- ``jobs``: plain, JSON-ready views of jobs and attempts;
- ``job_status``: one job with its plan, attempts, events and spot policy;
- ``job_logs``: an attempt's output, the job's secret values hidden;
- ``spot_policy``: why a ``spot: auto`` job holds what it holds.
"""
