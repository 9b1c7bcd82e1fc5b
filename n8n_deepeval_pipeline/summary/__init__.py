"""A version's stored tables summed up: pass rates, errors, judge spend, the printed summary."""
