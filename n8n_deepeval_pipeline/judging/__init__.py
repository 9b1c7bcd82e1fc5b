"""The judge: providers, resilience, cache, limits and cost (the worker side runs it)."""
