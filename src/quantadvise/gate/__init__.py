"""The CI gate (``quantadvise check``), pure except ``files.py``: the rule table (``rules.py``), one
module per rule family (``engine``, ``speed``, ``memory``, ``accuracy``, ``drift``), the finding
collector (``findings.py``), one deployment derived and judged (``target.py``), the result
(``result.py``), the schema of quantadvise.yaml (``config.py``) and the reading of it (``files.py``)."""
