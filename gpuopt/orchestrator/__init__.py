"""Everything with a clock or a database: store, config, reconcile, daemon, ledger, report, CLI."""
