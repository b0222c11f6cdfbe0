"""The weekly cost report: aggregation (pure), rendering (text, JSON, HTML, charts) and e-mail.

Inputs are the ledger's plain records (orchestrator.ledger.records); nothing here reads the
clock or the store by itself except ``source`` (the store-backed loader, imported lazily).
"""
