"""Benchmark n8n AI workflows with DeepEval, orchestrated by Dagster.

The names most users need (none of them imports Dagster or DeepEval), listed in
``__init__.pyi``; the Dagster code location is
``n8n_deepeval_pipeline.orchestration.definitions``. Each name is imported on first use:
the benchmark models and the metric catalog take ~0.7 s to build, and ``n8n-deepeval
--help``, whose first import this package is, needs neither.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
