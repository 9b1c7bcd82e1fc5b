"""The names a trace's spans carry: OpenTelemetry's GenAI conventions, and the project's own.

Attribute names come from ``opentelemetry-semantic-conventions`` (its incubating GenAI
attributes) wherever the convention names one, so a receiver that knows the conventions
(Phoenix, Langfuse, LangSmith, Jaeger's search) reads them without glue. What the
conventions do not name (a run's ids, a metric's threshold, a judge call's cost) carries
the ``n8n_deepeval.`` prefix.
"""

from __future__ import annotations

from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
from opentelemetry.semconv.attributes import error_attributes

OPERATION = gen_ai.GEN_AI_OPERATION_NAME
INVOKE_WORKFLOW = gen_ai.GenAiOperationNameValues.INVOKE_WORKFLOW.value
EXECUTE_TOOL = gen_ai.GenAiOperationNameValues.EXECUTE_TOOL.value
CHAT = gen_ai.GenAiOperationNameValues.CHAT.value
WORKFLOW_NAME = gen_ai.GEN_AI_WORKFLOW_NAME
CONVERSATION_ID = gen_ai.GEN_AI_CONVERSATION_ID
PROVIDER_NAME = gen_ai.GEN_AI_PROVIDER_NAME
REQUEST_MODEL = gen_ai.GEN_AI_REQUEST_MODEL
INPUT_TOKENS = gen_ai.GEN_AI_USAGE_INPUT_TOKENS
OUTPUT_TOKENS = gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS
TOOL_NAME = gen_ai.GEN_AI_TOOL_NAME
TOOL_CALL_ID = gen_ai.GEN_AI_TOOL_CALL_ID
TOOL_TYPE = gen_ai.GEN_AI_TOOL_TYPE
TOOL_ARGUMENTS = gen_ai.GEN_AI_TOOL_CALL_ARGUMENTS
TOOL_RESULT = gen_ai.GEN_AI_TOOL_CALL_RESULT
INPUT_MESSAGES = gen_ai.GEN_AI_INPUT_MESSAGES
OUTPUT_MESSAGES = gen_ai.GEN_AI_OUTPUT_MESSAGES
EVALUATION_NAME = gen_ai.GEN_AI_EVALUATION_NAME
EVALUATION_SCORE = gen_ai.GEN_AI_EVALUATION_SCORE_VALUE
EVALUATION_LABEL = gen_ai.GEN_AI_EVALUATION_SCORE_LABEL
EVALUATION_EXPLANATION = gen_ai.GEN_AI_EVALUATION_EXPLANATION
ERROR_TYPE = error_attributes.ERROR_TYPE
# The event the conventions define for a score (events.yaml); the package has no constant
# for event names. It is recorded as a span event on the evaluated operation's span.
EVALUATION_RESULT_EVENT = "gen_ai.evaluation.result"

# The judge's providers (judging.spec) as the conventions' gen_ai.provider.name; the
# others (openai-compatible, ollama, openrouter, local, dry-run) keep their own name.
PROVIDERS = {
    "openai": gen_ai.GenAiProviderNameValues.OPENAI.value,
    "azure-openai": gen_ai.GenAiProviderNameValues.AZURE_AI_OPENAI.value,
    "anthropic": gen_ai.GenAiProviderNameValues.ANTHROPIC.value,
    "gemini": gen_ai.GenAiProviderNameValues.GCP_GEMINI.value,
    "bedrock": gen_ai.GenAiProviderNameValues.AWS_BEDROCK.value,
    "deepseek": gen_ai.GenAiProviderNameValues.DEEPSEEK.value,
}

# The project's own attributes.
BENCHMARK = "n8n_deepeval.benchmark"
WORKFLOW_HASH = "n8n_deepeval.workflow_hash"
VERSION = "n8n_deepeval.version"
DAGSTER_RUN = "n8n_deepeval.dagster_run_id"
RUNS = "n8n_deepeval.runs"
TRACE_SPANS = "n8n_deepeval.trace.spans"
PASS_RATE = "n8n_deepeval.pass_rate"
RUN_ID = "n8n_deepeval.run_id"
CASE_ID = "n8n_deepeval.case_id"
ROW_ID = "n8n_deepeval.row_id"
RUN_INDEX = "n8n_deepeval.run_index"
RUN_PASSED = "n8n_deepeval.run.passed"
OVERALL_SCORE = "n8n_deepeval.run.overall_score"
OUTPUT_SOURCE = "n8n_deepeval.output.source"
METRIC = "n8n_deepeval.metric"
METRIC_SLUG = "n8n_deepeval.metric.slug"
THRESHOLD = "n8n_deepeval.metric.threshold"
DIRECTION = "n8n_deepeval.metric.direction"
ERROR_KIND = "n8n_deepeval.error_kind"
JUDGE = "n8n_deepeval.judge"
JUDGE_CALLS = "n8n_deepeval.judge.calls"
CACHED = "n8n_deepeval.judge.cached"
RETRIES = "n8n_deepeval.judge.retries"
COST_USD = "n8n_deepeval.cost_usd"
