"""Goldens synthesized by DeepEval's own ``Synthesizer`` where a workflow has no dataset yet.

The domain (the styling read off a workflow, the seeds read from files, the golden rows
with their provenance) lives here beside the process that drives the Synthesizer: that
one module imports DeepEval, and it runs in a process of its own, never in the CLI's.
"""
