"""The schedule's cron check agrees with Dagster's, which builds the schedule."""

import pytest
from dagster._utils.schedules import is_valid_cron_string

from n8n_deepeval_pipeline.config.cron import cron_problem

VALID = [
    "0 2 * * *",
    "*/15 * * * *",
    "0-59/5 0-23 * * 0-6",
    "1,2,3 * * * *",
    "0 0 L * *",
    "0 0 ? * *",
    "0 0 * * 1#2",
    "0 0 * * MON-FRI",
    "0 0 * * sun",
    "0 0 * * 7",
    "0 0 1 JAN *",
    "0 0 * JAN-DEC/2 *",
    "0 0 1-31/2 * *",
    "0 0 29 2 *",
    "@daily",
    "@hourly",
]
INVALID = {
    "61 * * * *": "minute '61': 61 is not in 0-59",
    "0 24 * * *": "hour '24': 24 is not in 0-23",
    "0 0 0 * *": "day of month '0': 0 is not in 1-31",
    "0 0 * 13 *": "month '13': 13 is not in 1-12 or JAN-DEC",
    "0 0 * * 8": "day of week '8': 8 is not in 0-7 or SUN-SAT",
    "0 */0 * * *": "hour '*/0': a step must be at least 1",
    "1,,2 * * * *": "minute '1,,2': '' is not a value, a range or a step",
    "0 0 15W * *": "day of month '15W': 15W is not in 1-31",
    "0 0 * * 1#6": "day of week '1#6': '1#6' is not a value, a range or a step",
    "0 0 30 2 *": "day of month '30': February has no day 30",
    "0 0 * * * *": "must be a 5-field cron expression such as '0 2 * * *'",
    "0 0 31 02 *": "day of month '31': February has no day 31",
    "0 0 30 2/12 *": "day of month '30': February has no day 30",
    "0 0 31 2,2 *": "day of month '31': February has no day 31",
    "0 0 30 Feb *": "day of month '30': February has no day 30",
    "0 0 ? ? *": "month '?': '?' stands only in the day of month or the day of week",
}


@pytest.mark.parametrize("expression", VALID)
def test_what_dagster_takes_is_taken(expression):
    assert is_valid_cron_string(expression)
    assert cron_problem(expression) is None


@pytest.mark.parametrize(("expression", "problem"), INVALID.items())
def test_what_dagster_refuses_is_refused_with_the_field_named(expression, problem):
    assert not is_valid_cron_string(expression)
    assert cron_problem(expression) == problem
