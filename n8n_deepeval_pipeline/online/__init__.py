"""Production executions scored as they happen: cursor, sampling, sessions, windows."""
