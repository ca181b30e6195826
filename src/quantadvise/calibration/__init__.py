"""Getting a profile: the contract with the timing backends (``contract.py``), measuring the GPU
(``run.py``, ``backends.py``, ``engine_ops.py``), fitting (``fit.py``, ``kernel_fit.py``), validating
(``validate.py``, ``heldout.py``) and importing published per-kernel tables (``aiconfigurator.py``).
The speed model that uses a profile is ``perf/``."""
