"""A text rewritten by DeepEval's own ``PromptOptimizer`` against examples and objectives.

DeepEval's optimiser (GEPA, MIPROv2, COPRO, SIMBA) runs in a process of its own
(``process``, ``deepeval_search``: the only modules that import it), started and served by
``launcher`` from the calling process: every answer of a candidate text and every score of
an answer is asked of the caller, who also holds the budget (``spend``). What crosses is in
``request``; none of it assumes the text is a workflow's prompt. A workflow's prompt is one
use (``workflow_search``: candidates answered by the workflow's harness copies,
``workflow_answers``, and scored by the benchmark's metrics in the worker pool,
``pool_scoring``); a judge metric's criteria aligned with human labels can be another.
"""
