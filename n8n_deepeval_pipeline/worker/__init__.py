"""Process machinery that runs DeepEval: the pool, the zygote, and one evaluation in a worker."""
