"""A psycopg2 connection to the PostgreSQL that holds the results (the distributed profiles).

The results IO manager and the score journal write through it; the results workspace reads
through it. psycopg2 comes with the ``distributed`` extra and is imported on first connect.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
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


@contextmanager
def transaction(url: str, application_name: str) -> Iterator[Any]:
    """A connection whose work commits at the end, or rolls back on error; then closed."""
    connection = psycopg2_connection(url, application_name)
    try:
        yield connection
        connection.commit()
    except BaseException:
        connection.rollback()
        raise
    finally:
        connection.close()


def libpq_url(url: str) -> str:
    """The URL without SQLAlchemy's driver part (``postgresql+psycopg2://`` → ``postgresql://``)."""
    scheme, separator, rest = url.partition("://")
    return f"{scheme.split('+', 1)[0]}{separator}{rest}"
