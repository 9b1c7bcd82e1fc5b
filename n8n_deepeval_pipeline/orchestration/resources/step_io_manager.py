"""Where the outputs of in-between steps live (the chunks of ``metric_scores``).

They must outlive their run: re-executing a run from failure reads the outputs of the steps
that succeeded from the failed run. On one machine they are pickles under
``$N8N_DEEPEVAL_HOME/steps/<run id>/<step key>/<output>`` (Dagster's filesystem IO manager);
when steps run on several machines (``distributed``, ``kubernetes``) a step on one machine
reads what a step on another wrote, so they are rows of ``n8n_deepeval.step_outputs`` in the
results' PostgreSQL database, keyed by run, step and output.
"""

from __future__ import annotations

import pickle
from typing import Any

import dagster as dg

from n8n_deepeval_pipeline.tables.postgres_connection import libpq_url

_SCHEMA = "n8n_deepeval"
_CREATE = f"""
create schema if not exists {_SCHEMA};
create table if not exists {_SCHEMA}.step_outputs (
    key text primary key,
    written_at timestamptz not null default now(),
    value bytea not null
)
"""


class PostgresStepIOManager(dg.ConfigurableIOManager):
    """Step outputs pickled into PostgreSQL, readable from any machine of the fleet."""

    url: str
    """SQLAlchemy-style URL (``postgresql+psycopg2://…``), as the results' IO manager takes."""

    def _connect(self) -> Any:
        import psycopg2

        return psycopg2.connect(libpq_url(self.url))

    def handle_output(self, context: dg.OutputContext, obj: Any) -> None:
        """Store (or replace) one step output."""
        key = "/".join(context.get_identifier())
        connection = self._connect()
        try:
            with connection, connection.cursor() as cursor:
                cursor.execute(_CREATE)
                cursor.execute(
                    f"insert into {_SCHEMA}.step_outputs (key, value) values (%s, %s) "
                    "on conflict (key) do update set value = excluded.value, written_at = now()",
                    (key, pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)),
                )
        finally:
            connection.close()

    def load_input(self, context: dg.InputContext) -> Any:
        """The stored output this input reads (of this run, or of the run re-executed)."""
        upstream = context.upstream_output
        if upstream is None:
            raise dg.Failure(f"input {context.name!r} reads no step output")
        key = "/".join(upstream.get_identifier())
        connection = self._connect()
        try:
            with connection.cursor() as cursor:
                cursor.execute(f"select value from {_SCHEMA}.step_outputs where key = %s", (key,))
                row = cursor.fetchone()
        finally:
            connection.close()
        if row is None:
            raise dg.Failure(f"no stored output {key!r} in {_SCHEMA}.step_outputs")
        return pickle.loads(bytes(row[0]))  # written by this IO manager only
