"""The gpuopt daemon: one long-running process that polls prices, reconciles jobs, sends
the weekly report and compacts the price history, on a schedule.

- ``schedule.register_jobs``: the one place every scheduled job is declared.
- ``tasks.DaemonTasks``: what each job does (each step commits before side effects).
- ``leadership``: who does the work (SQLite: one daemon, a lock file; PostgreSQL: one
  leader among many, a session-level advisory lock).
- ``runner.run_daemon``: the main loop (leadership, heartbeats, signals, shutdown).
- ``metrics``: ``/healthz`` and Prometheus ``/metrics`` read from the store at scrape time.
- ``logs``: text or JSON-lines logging, with credentials in URLs masked.
"""
