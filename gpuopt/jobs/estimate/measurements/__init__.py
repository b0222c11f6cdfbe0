"""Published measurements (peak memory, throughput) with provenance, one file per
source: the corpus the estimate's fitted constants come from and are scored on
(jobs/estimate/corpus.py, benchmarks/estimate_accuracy.py, docs/estimates.md)."""
