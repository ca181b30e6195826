"""The recommender: candidate schemes (``options.py``, with the one ranking) walk the decision tree
(``tree.py``) through its nodes — the checkpoint as shipped (``native.py``), fit and KV (``fit.py``),
engine and accuracy (``veto.py``), speed (``speed.py``) — and come out as a typed
:class:`~quantadvise.advisor.result.Recommendation` with a deploy plan (``plan.py``) that respects
each engine's context limit (``limits.py``). Engine verdicts (``verdict.py``) come from engine data
passed in as values."""
