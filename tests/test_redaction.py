"""Credentials are taken out of messages: known keys literally, others by their shape."""

import pytest
from pydantic import SecretStr

from n8n_deepeval_pipeline import JudgeSpec
from n8n_deepeval_pipeline.redaction import redact, url_secrets

KEY = "judge-key-7f3a9c0d"


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        # a key the process knows, wherever it stands
        (f"Invalid key {KEY}.", "Invalid key [redacted]."),
        # any credential, by its shape
        ("Invalid key: Bearer sk-unknown-123", "Invalid key: Bearer [redacted]"),
        ("authorization: bearer abc.def", "authorization: bearer [redacted]"),
        ("api-key: abc123 rejected", "api-key: [redacted] rejected"),
        ("x-api-key: abc123", "x-api-key: [redacted]"),
        ("POST /v1/chat?token=abc&api-version=2", "POST /v1/chat?token=[redacted]&api-version=2"),
        ("?key=a&api_key=b;sig=c", "?key=[redacted]&api_key=[redacted];sig=[redacted]"),
        ('{"token": "abc", "apiKey":"def"}', '{"token": "[redacted]", "apiKey":"[redacted]"}'),
        ("proxy http://me:pass@proxy:3128 down", "proxy http://[redacted]@proxy:3128 down"),
        ("Incorrect API key provided: sk-proj-abcdef123", "Incorrect API key provided: [redacted]"),
        # words a reader needs stay
        ("HTTP 401 Unauthorized", "HTTP 401 Unauthorized"),
        ("Invalid key: the request was refused", "Invalid key: the request was refused"),
        ("missing token in the answer", "missing token in the answer"),
        ("KeyError: 'score'", "KeyError: 'score'"),
    ],
)
def test_redact_removes_known_keys_and_credential_shapes(text, redacted):
    assert redact(text, [KEY, ""]) == redacted


def test_the_judge_spec_names_its_key_and_the_credentials_of_its_url():
    spec = JudgeSpec(
        provider="openai-compatible",
        base_url="https://gw.example/v1?token=url-token&api-version=2024&key=k2",
        api_key=SecretStr(KEY),
    )
    assert spec.secrets == [KEY, "url-token", "k2"]
    assert url_secrets("https://user:pw@gw.example/v1") == ["pw"]
    assert JudgeSpec().secrets == []


def test_personal_redaction_takes_out_e_mails_and_phone_numbers_but_not_dates_or_ids():
    from n8n_deepeval_pipeline.redaction import redact_personal

    text = (
        "jane.doe+shop@example.co.uk, +49 151 1234567, (555) 123-4567, 030 1234 5678, "
        "+4915112345678; order A1234 on 2026-12-01 at 10:55, 6*7=42, v1.2.3, Bearer abcdef123456"
    )
    assert redact_personal(text) == (
        "[redacted e-mail], [redacted phone], [redacted phone], [redacted phone], "
        "[redacted phone]; order A1234 on 2026-12-01 at 10:55, 6*7=42, v1.2.3, Bearer [redacted]"
    )
