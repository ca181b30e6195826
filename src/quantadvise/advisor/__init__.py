"""The recommender: candidate schemes (``options.py``) walk the decision tree (``tree.py``) through
its nodes — fit and KV (``fit.py``), roofline (``speed.py``), engine and accuracy (``veto.py``) — and
come out as a typed :class:`~quantadvise.advisor.result.Recommendation` with a deploy plan
(``plan.py``). Engine verdicts (``verdict.py``) come from engine data passed in as values."""
