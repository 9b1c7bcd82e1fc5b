"""A psycopg2 connection to the PostgreSQL that holds the results (the distributed profiles).

The results IO manager and the score journal write through it; the results workspace reads
through it. psycopg2 comes with the ``distributed`` extra and is imported on first connect.
"""

from __future__ import annotations

from typing import Any


def psycopg2_connection(url: str, application_name: str) -> Any:
    """A psycopg2 connection to ``url`` (SQLAlchemy's form or libpq's), named for the server."""
    try:
        import psycopg2
    except ImportError as error:  # pragma: no cover - depends on the install
        raise ImportError(
            "the distributed profile keeps results and journals in PostgreSQL through "
            "psycopg2: pip install 'n8n-deepeval-pipeline[distributed]'"
        ) from error
    return psycopg2.connect(libpq_url(url), application_name=application_name)


def libpq_url(url: str) -> str:
    """The URL without SQLAlchemy's driver part (``postgresql+psycopg2://`` → ``postgresql://``)."""
    scheme, separator, rest = url.partition("://")
    return f"{scheme.split('+', 1)[0]}{separator}{rest}"
