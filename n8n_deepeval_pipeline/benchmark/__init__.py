"""A benchmark as its file describes it: workflow, dataset, target, metrics, checks."""
