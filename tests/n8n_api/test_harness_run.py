"""A harness copy belongs to its run; a run's request carries what the trigger outputs."""

import os
import socket
import subprocess
import sys

import pytest

from n8n_deepeval_pipeline.benchmark.n8n_target import DEFAULT_BODY, WorkflowTarget
from n8n_deepeval_pipeline.n8n_api.harness_run import (
    HARNESS_PREFIX,
    KEPT_PREFIX,
    Owner,
    harness_body,
    harness_problems,
    is_stale,
    mock_answers,
    remove_stale_copies,
)
from n8n_deepeval_pipeline.workflow.harness import MOCKS_FIELD
from tests.workflow.test_harness import CHAT_AGENT


def gone_pid() -> int:
    """The id of a process that has exited (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


class Workflows:
    """The two calls remove_stale_copies makes of the n8n client."""

    def __init__(self, names: list[str]) -> None:
        self.names = dict(enumerate(names))
        self.removed: list[str] = []

    def workflows(self):
        return [{"id": str(key), "name": name} for key, name in self.names.items()]

    def remove_workflow(self, workflow_id):
        self.removed.append(self.names.pop(int(workflow_id)))


def test_another_run_removes_a_copy_only_when_the_run_that_made_it_is_over():
    here, now = socket.gethostname(), 2_000_000_000
    live = f"{HARNESS_PREFIX} bench abc 1 {Owner(here, os.getpid(), now + 60).tag()}"
    dead = f"{HARNESS_PREFIX} bench abc 2 {Owner(here, gone_pid(), now + 60).tag()}"
    late = f"{HARNESS_PREFIX} bench abc 3 {Owner('elsewhere', 1, now - 1).tag()}"
    away = f"{HARNESS_PREFIX} bench abc 4 {Owner('elsewhere', 1, now + 60).tag()}"
    slow = f"{HARNESS_PREFIX} bench abc 5 {Owner(here, os.getpid(), now - 1).tag()}"
    unowned = f"{HARNESS_PREFIX} bench abc dead"  # left by a version that recorded no owner
    # On this host the process decides; a deadline only for copies made elsewhere.
    assert [is_stale(name, now) for name in (live, dead, late, away, slow, unowned)] == [
        False, True, True, False, False, True]  # fmt: skip


def test_the_live_copy_of_an_overlapping_run_is_left_alone():
    mine = Owner.this_process(time_limit_s=60).tag()
    client = Workflows([f"{HARNESS_PREFIX} bench abc 1 {mine}",
                        f"{HARNESS_PREFIX} bench abc dead",
                        f"{HARNESS_PREFIX} other abc dead"])  # fmt: skip
    assert remove_stale_copies(client, "bench") == [f"{HARNESS_PREFIX} bench abc dead"]
    assert sorted(client.names.values()) == [
        f"{HARNESS_PREFIX} bench abc 1 {mine}", f"{HARNESS_PREFIX} other abc dead"]  # fmt: skip


def target(**extra):
    return WorkflowTarget.model_validate(
        {"type": "n8n_workflow", "startNodeName": "AI Agent", "endNodeName": "Format", **extra}
    )


def test_the_body_is_the_triggers_shape_with_the_rows_mock_responses():
    chat = {"sessionId": "{{ sessionId }}", "action": "sendMessage", "chatInput": "{{ input }}"}
    assert harness_body(target(), CHAT_AGENT) == chat
    mocks = {"nodes": {"Send to Slack": {"response": "ok"}, "Calculator": {"column": "calc"}}}
    assert harness_body(target(mocks=mocks), CHAT_AGENT)[MOCKS_FIELD] == {
        "Calculator": '{{ row.get("calc") }}'}  # fmt: skip
    trigger, *others = CHAT_AGENT["nodes"]
    webhook_like = {**CHAT_AGENT, "nodes": [{**trigger, "type": "n8n-nodes-base.webhook"}, *others]}
    assert harness_body(target(mocks=mocks), webhook_like) == {
        **DEFAULT_BODY, MOCKS_FIELD: {"Calculator": '{{ row.get("calc") }}'}}  # fmt: skip


def test_mocking_services_leaves_a_community_model_with_credentials_to_be_measured():
    trigger, agent, model, *others = CHAT_AGENT["nodes"]
    deepseek = {**model, "type": "n8n-nodes-deepseek.lmChatDeepSeek"}  # keeps its credentials
    workflow = {**CHAT_AGENT, "nodes": [trigger, agent, deepseek, *others]}
    services = target(mocks="services")
    assert harness_problems(services, workflow) == []  # the benchmark is not refused
    assert "OpenAI Chat Model" not in mock_answers(services, workflow)


def test_variants_naming_what_the_workflow_lacks_keep_the_target_from_running():
    variants = {
        "cheap": {"OpenAI Chat Model": {"modelName": "gpt-4.1-nano"}},
        "typo": {"OpenAI Chat Modle": {"model": "gpt-4o"}},
    }
    problems = harness_problems(target(variants=variants), CHAT_AGENT)
    assert problems == [
        "variants: node 'OpenAI Chat Model' has no parameter 'modelName' (its parameters: "
        "none) (variants: cheap)",
        "variants: node 'OpenAI Chat Modle' is not in the workflow (variants: typo)",
    ]
    with pytest.raises(ValueError, match=r"variants\.bad name\.\[key\]"):
        target(variants={"bad name": {}})


def test_a_variant_that_is_the_workflow_itself_or_named_base_is_refused():
    kind = {"name": "AI Agent", "parameters": {"options": {"systemMessage": "Be kind."}}}
    nodes = [
        node if node["name"] != "AI Agent" else {**node, **kind} for node in CHAT_AGENT["nodes"]
    ]
    workflow = {**CHAT_AGENT, "nodes": nodes}
    variants = {
        "same": {"AI Agent": {"options.systemMessage": "Be kind."}},
        "terse": {"AI Agent": {"options.systemMessage": "Be terse."}},
    }
    assert harness_problems(target(variants=variants), workflow) == [
        "variants: variant same changes nothing: it is the workflow itself"
    ]
    with pytest.raises(ValueError, match="'base' names the workflow itself"):
        target(variants={"base": {"AI Agent": {"options.systemMessage": "x"}}})


class Copies:
    """The calls harness_webhook makes of the n8n client, and what n8n is left holding."""

    def __init__(self) -> None:
        self.workflows: dict[str, dict] = {}
        self.calls: list[tuple[str, str]] = []

    def create_workflow(self, workflow):
        copy_id = f"copy{len(self.workflows) + 1}"
        self.workflows[copy_id] = {**workflow, "id": copy_id, "active": False}
        return copy_id

    def publish_workflow(self, workflow_id):
        self.calls.append(("publish", workflow_id))
        self.workflows[workflow_id]["active"] = True

    def unpublish_workflow(self, workflow_id):
        self.calls.append(("unpublish", workflow_id))
        self.workflows[workflow_id]["active"] = False

    def remove_workflow(self, workflow_id):
        self.calls.append(("remove", workflow_id))
        del self.workflows[workflow_id]  # n8n deletes its executions with it


def run_through_copy(client, keep, fail=False):
    from n8n_deepeval_pipeline.n8n_api import harness_run

    chat = target(keepHarnessCopy=keep) if keep is not None else target()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(harness_run, "wait_until_served", lambda url: None)
        try:
            with harness_run.harness_webhook(client, "http://n8n", CHAT_AGENT, chat,
                                             "bench 1a2b3c", 60.0) as (copy_id, url):  # fmt: skip
                assert client.workflows[copy_id]["active"] and url.startswith("http://n8n/webhook/")
                if fail:
                    raise RuntimeError("a run that fails half-way")
        except RuntimeError:
            pass
    return copy_id


def test_by_default_a_runs_copy_is_removed_with_its_executions():
    client = Copies()
    copy_id = run_through_copy(client, keep=None)
    assert client.calls == [("publish", copy_id), ("remove", copy_id)]
    assert client.workflows == {}


def test_a_kept_copy_is_unpublished_and_no_later_run_removes_it():
    """A harness run's executions vanished with its copy: nothing was left to inspect."""
    client = Copies()
    copy_id = run_through_copy(client, keep=True)
    failed_id = run_through_copy(client, keep=True, fail=True)  # kept when the run fails too
    assert client.calls == [("publish", copy_id), ("unpublish", copy_id),
                            ("publish", failed_id), ("unpublish", failed_id)]  # fmt: skip
    kept = client.workflows[copy_id]
    assert kept["name"].startswith(f"{KEPT_PREFIX} bench 1a2b3c ") and not kept["active"]

    # a later run of the benchmark, once the process that made them is gone
    gone = Owner(socket.gethostname(), gone_pid(), 0).tag()
    stale = f"{HARNESS_PREFIX} bench 1a2b3c 2 {gone}"
    listing = Workflows([f"{KEPT_PREFIX} bench 1a2b3c 1 {gone}", stale])
    assert remove_stale_copies(listing, "bench") == [stale]
    assert list(listing.names.values()) == [f"{KEPT_PREFIX} bench 1a2b3c 1 {gone}"]
