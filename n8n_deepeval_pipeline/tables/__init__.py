"""The stored tables: one row model each, the step that builds it, and their DataFrame form."""
