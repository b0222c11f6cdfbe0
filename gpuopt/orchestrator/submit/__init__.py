"""Submitting a job: the one path the CLI, the API and the simulator share.

- ``service``: read, check, plan, store (and audit) a job;
- ``checks``: what the chosen executor cannot run, refused before anything is stored;
- ``sky_preview``: ``submit --dry-run`` on SkyPilot, the task it would launch;
- ``job_secrets``: a job's ``secrets:`` values, sealed at submit, opened at launch.
"""
