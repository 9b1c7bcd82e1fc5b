"""A provider's settings: Azure's deployment apart from its model, Bedrock's region and AWS
keys, what a judge of another provider leaves behind, and the extra a missing SDK names."""

import sys

import pytest

from n8n_deepeval_pipeline.judging.providers import ProviderError, build_provider
from n8n_deepeval_pipeline.judging.spec import (
    JudgeChoice,
    JudgeConfigError,
    JudgeSpec,
    choose_judge,
    judge_settings,
)

AZURE = {
    "provider": "azure-openai",
    "model": "gpt-4o",
    "deployment": "my-gpt-4o-deployment",
    "base_url": "https://my-resource.openai.azure.com",
    "api_version": "2024-10-21",
    "api_key": "azure-secret",
}
ENVIRON = {"AWS_ID": "AKIAEXAMPLE", "AWS_SECRET": "aws-secret", "AWS_TOKEN": "aws-session"}


def test_azure_keeps_the_deployment_apart_from_the_model_it_runs():
    spec = choose_judge(AZURE, None, {})
    assert (spec.model, spec.deployment, spec.label) == (
        "gpt-4o",
        "my-gpt-4o-deployment",
        "azure-openai:gpt-4o",
    )
    other = choose_judge(AZURE, JudgeChoice(deployment="judge-2"), {})
    assert (other.model, other.deployment) == ("gpt-4o", "judge-2")
    assert other.identity != spec.identity  # limited and broken apart


def test_a_bedrock_judge_from_a_benchmark_reads_its_aws_keys_from_the_variables_it_names():
    choice = JudgeChoice.model_validate(
        {
            "provider": "bedrock",
            "model": "anthropic.claude-sonnet-4-5-20250929-v1:0",
            "region": "eu-west-1",
            "apiKeyEnv": "AWS_SECRET",
            "awsAccessKeyIdEnv": "AWS_ID",
            "awsSessionTokenEnv": "AWS_TOKEN",
        }
    )
    spec = choose_judge(AZURE, choice, ENVIRON)
    assert spec.region == "eu-west-1"
    assert [
        spec.secret(name) for name in ("api_key", "aws_access_key_id", "aws_session_token")
    ] == [
        "aws-secret",
        "AKIAEXAMPLE",
        "aws-session",
    ]
    # another vendor: nothing of Azure's comes along
    assert (spec.deployment, spec.base_url, spec.api_version) == (None, None, None)
    assert set(spec.secrets) == {"aws-secret", "AKIAEXAMPLE", "aws-session"}
    # and the keys survive being the default another choice is layered on
    again = choose_judge(judge_settings(spec), JudgeChoice(model="other"), {})
    assert again.secret("aws_session_token") == "aws-session"


def test_a_judge_of_another_provider_takes_none_of_the_aws_keys():
    bedrock = {"provider": "bedrock", "model": "m", "region": "us-east-1", "api_key": "aws-secret"}
    bedrock |= {"aws_access_key_id": "AKIAEXAMPLE", "aws_session_token": "aws-session"}
    spec = choose_judge(bedrock, JudgeChoice(provider="gemini", model="gemini-2.5-flash"), {})
    assert spec.secrets == [] and spec.region is None


def test_bedrock_needs_a_region():
    with pytest.raises(JudgeConfigError, match="bedrock judge needs region"):
        choose_judge({"provider": "bedrock", "model": "m"}, None, {})


@pytest.mark.parametrize(
    ("provider", "sdk", "extra"),
    [
        ("gemini", "google.genai", "gemini"),
        ("ollama", "ollama", "ollama"),
        ("bedrock", "aiobotocore", "bedrock"),
    ],
)
def test_a_judge_whose_sdk_is_missing_names_the_extra_that_installs_it(
    monkeypatch, provider, sdk, extra
):
    monkeypatch.setitem(sys.modules, sdk, None)  # as if not installed
    spec = JudgeSpec(provider=provider, model="m", region="us-east-1")
    with pytest.raises(
        ProviderError, match=rf"pip install 'n8n-deepeval-pipeline\[{extra}\]'"
    ) as error:
        build_provider(spec)
    assert not error.value.retryable
