"""A benchmark in a team's CI: the pull request's sticky comment, the job's summary."""
