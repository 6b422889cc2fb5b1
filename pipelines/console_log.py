"""The console logger of aesforge's jobs: Dagster's coloured console, minus the failure events when the caller
prints failures itself.

``aesforge run`` prints each failed step once, with its innermost message, after the run; Dagster's console
would print the same failure again as a STEP_FAILURE event with its traceback, and once more as RUN_FAILURE. The
event log keeps every failure and its traceback either way (events are stored whatever the console shows); a
run started from the UI keeps Dagster's default (``print_failures: true``).
"""

from __future__ import annotations

import logging

from dagster import DagsterEventType, Field, logger

FAILURE_EVENTS = frozenset({DagsterEventType.STEP_FAILURE.value, DagsterEventType.RUN_FAILURE.value})


def is_failure_event(record: logging.LogRecord) -> bool:
    """Whether ``record`` carries a Dagster step or run failure event."""
    event = (getattr(record, "dagster_meta", None) or {}).get("dagster_event")
    return getattr(event, "event_type_value", None) in FAILURE_EVENTS


@logger(
    {
        "log_level": Field(str, is_required=False, default_value="INFO", description="The logger's threshold."),
        "name": Field(str, is_required=False, default_value="dagster", description="The logger's name."),
        "print_failures": Field(bool, is_required=False, default_value=True,
                                description="Print step and run failure events (false: the caller prints them)."),
    },
    description="Dagster's coloured console logger; failure events optional.",
)
def console_logger(init_context) -> logging.Logger:
    from dagster._utils.log import create_console_logger

    config = init_context.logger_config
    console = create_console_logger(name=config["name"], level=config["log_level"])
    if not config["print_failures"]:
        console.addFilter(lambda record: not is_failure_event(record))
    return console
