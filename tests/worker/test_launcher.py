"""Every child process is started one way: sanitised, in a scratch folder, watched, on time.

The child here is ``tests.worker.fake_child``, a test double that speaks the messages."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from n8n_deepeval_pipeline.worker.launcher import Child, ChildFailed, ChildSpec, launched

FAKE = "tests.worker.fake_child"
SECRET = "sk-launcher-SECRET-7f3a"


@pytest.fixture(autouse=True)
def home(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("N8N_DEEPEVAL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("MY_JUDGE_KEY", SECRET)  # a credential under a name of its own
    return tmp_path / "home"


def spec(behaviour: str, deadline_s: float = 60.0) -> ChildSpec:
    return ChildSpec(name="the fake", module=FAKE, args=(behaviour,), deadline_s=deadline_s)


def test_a_child_answers_in_typed_messages_and_leaves_nothing_behind(home):
    with launched(spec("echo"), [SECRET]) as child:
        scratch = child.scratch
        child.send("ask", {"question": 42})
        assert [child.receive().body, child.receive().body] == ["half-way", {"question": 42}]
        child.finish()
    assert scratch is not None and not scratch.exists()  # its working folder is gone
    assert not home.exists()  # and its log, which nothing failed to need


def test_a_failed_child_keeps_its_log_in_the_home_and_says_its_exit_code_redacted(home):
    with pytest.raises(ChildFailed) as failed, launched(spec("fail"), [SECRET]) as child:
        scratch = child.scratch
        child.send("ask", SECRET)
        child.receive()
    error = failed.value
    assert (error.exit_code, error.error_kind) == (1, "judge_auth")
    assert error.headline.startswith("the fake failed: the judge refused [redacted] (exit code 1)")
    (log,) = (home / "logs").iterdir()  # not the system's temporary folder
    assert error.log_path == log and oct(log.stat().st_mode & 0o777) == "0o600"
    said = log.read_text()
    assert f"cwd {scratch}" in said  # it ran in its scratch folder (DeepEval writes there)
    assert "MY_JUDGE_KEY" not in said and SECRET not in said  # the workers' environment
    assert SECRET not in error.message


def test_a_child_that_dies_is_a_failure_with_its_code_and_last_lines(home):
    with pytest.raises(ChildFailed) as died, launched(spec("crash"), [SECRET]) as child:
        child.send("ask", SECRET)
        child.receive()
    assert died.value.exit_code == 5
    assert "ended before its result (exit code 5)" in died.value.headline
    assert died.value.tail[-1] == "RuntimeError: the worker broke holding [redacted]"


def test_a_child_that_aborts_after_its_answer_is_never_a_success(home):
    with pytest.raises(ChildFailed) as aborted, launched(spec("abort")) as child:
        child.send("ask", "x")
        assert child.receive().kind == "done"
        child.finish()
    assert aborted.value.exit_code == -6
    assert "ended abnormally after its work (exit code -6, SIGABRT)" in aborted.value.headline


def test_a_child_past_its_deadline_is_killed(home):
    started = time.monotonic()
    with pytest.raises(ChildFailed) as late, launched(spec("hang", deadline_s=1.0)) as child:
        child.send("ask", "x")
        child.receive()
    assert time.monotonic() - started < 15
    assert "did not finish in 1 s (exit code -9, SIGKILL)" in late.value.headline


def test_a_child_exits_when_its_parent_dies(tmp_path):
    # The parent here is a process of its own, killed while its child waits.
    import subprocess
    import sys

    code = (
        "from n8n_deepeval_pipeline.worker.launcher import Child, ChildSpec\n"
        f"child = Child(ChildSpec(name='fake', module={FAKE!r}, args=('orphan',), deadline_s=60))\n"
        "child.send('ask', None)\n"
        "print(child.receive().body, flush=True)\n"
        "import time; time.sleep(60)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    orphan = int(parent.stdout.readline())
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 10
    while _alive(orphan) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(orphan)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def test_a_child_started_with_this_process_s_environment_keeps_its_working_folder(home):
    own = ChildSpec(name="the fake", module=FAKE, args=("crash",), deadline_s=60,
                    sanitised=False, scratch=False)  # fmt: skip
    child = Child(own)
    try:
        child.send("ask", "x")
        with pytest.raises(ChildFailed):
            child.receive()
    finally:
        child.stop()
    said = child.log_path.read_text()
    assert f"cwd {os.getcwd()}" in said and "MY_JUDGE_KEY" in said


def test_a_child_started_ahead_is_given_the_first_work_of_its_kind_with_its_deadline(
    home, started_children
):
    from n8n_deepeval_pipeline.worker.launcher import started_ahead

    with started_ahead(spec("hang", deadline_s=None)):
        (ahead,) = started_children
        with launched(spec("echo")) as other:  # another kind: a child of its own
            other.send("ask", "x")
            assert other.receive().body == "half-way"
        started = time.monotonic()
        with pytest.raises(ChildFailed) as late, launched(spec("hang", 1.0), [SECRET]) as child:
            assert child is ahead
            child.send("ask", "x")
            child.receive()
    assert time.monotonic() - started < 15  # the work's deadline, from when it was given
    assert "did not finish in 1 s" in late.value.headline
    assert len(started_children) == 2 and child.secrets == [SECRET]  # redacted with the work's


def test_a_kept_child_goes_back_to_its_block_and_an_untaken_one_is_stopped_with_it(
    home, started_children
):
    from n8n_deepeval_pipeline.worker.launcher import started_ahead

    with started_ahead(spec("orphan", deadline_s=None)):
        with launched(spec("orphan"), keep=True) as child:
            child.send("ask", None)
            assert child.receive().body == child.pid
        with launched(spec("orphan"), keep=True) as again:
            assert again is child  # kept between works while the block lasts
        (ahead,) = started_children
        assert ahead.process.poll() is None
    assert ahead.process.poll() is not None  # stopped with the block
    assert ahead.scratch is not None and not ahead.scratch.exists()
    assert not home.exists()  # nothing failed: no log kept
    with launched(spec("echo"), keep=True) as alone:
        alone.send("ask", "x")
        assert alone.receive().body == "half-way"
    assert alone.process.poll() is not None  # no block: stopped at the end of its work
