"""What the commands print and check: run summary, comparison, validate, init."""
