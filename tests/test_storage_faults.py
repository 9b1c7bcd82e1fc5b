"""A storage fault is named only for the errors that are one, and the others are left alone."""

import shutil

import click
from click.testing import CliRunner

from n8n_deepeval_pipeline.console.exits import Refused, storage_faults_refused
from n8n_deepeval_pipeline.storage_faults import error_messages, storage_fault


def test_a_refusal_with_its_exit_code_is_not_taken_for_a_storage_fault(tmp_path, monkeypatch):
    monkeypatch.setenv("N8N_DEEPEVAL_HOME", str(tmp_path))
    message = "dataset.dataTable: n8n answered 'database or disk is full'"

    @click.command()
    @storage_faults_refused
    def refusing() -> None:
        raise Refused(message, 2)

    done = CliRunner().invoke(refusing)
    assert (done.exit_code, done.stderr) == (2, f"Error: {message}\n")


def test_an_error_raised_from_none_is_not_followed_to_the_one_it_hid():
    try:
        try:
            raise OSError(28, "No space left on device")
        except OSError:
            raise ValueError("row 3: not a number") from None
    except ValueError as error:
        assert error_messages(error) == ["ValueError: row 3: not a number"]


def test_the_disks_are_looked_at_only_for_an_error_that_may_be_a_full_disk(tmp_path, monkeypatch):
    looked_at = []

    def unreadable(path):
        looked_at.append(path)
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(shutil, "disk_usage", unreadable)
    database = tmp_path / "results.duckdb"
    assert storage_fault(["KeyError: 'refund'"], database, [tmp_path]) is None
    assert looked_at == []
    monkeypatch.undo()
    full = storage_fault(["OSError: [Errno 28] No space left on device"], database, [tmp_path])
    assert full == (
        f"no space left under {tmp_path}: free some space and run again "
        "(the rows stored before are kept)"
    )
    assert storage_fault(["OperationalError: disk I/O error"], database, [tmp_path]) is None
