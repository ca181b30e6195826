"""Accuracy evidence: per-sample statistics of a baseline against a quantized run (``stats.py``),
the readers of lm-eval / JSONL result files (``evidence.py``, I/O), and the published priors the
recommender's accuracy veto applies (``priors.py``, rows of data/accuracy.yaml)."""
