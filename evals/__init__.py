"""Evaluation: golden-set scoring of retrieval and answers, per-node A/B, benchmarks and reports."""
