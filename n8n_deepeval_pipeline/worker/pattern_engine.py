r"""Pattern Match's regular expression, matched so that no output can hold a worker for long.

DeepEval's PatternMatchMetric matches with Python's re, a backtracking engine: a pattern
such as ``(a+)+$`` takes time exponential in the output's length, and holds the worker
(whose event loop the match blocks) up to the evaluation's timeout. RE2 (google-re2), an
automaton, matches every pattern of its syntax in time linear in the output. It is used
wherever it gives re's answer: an ASCII pattern without what the two read differently
(``{,n}``, ``[:alpha:]``), on a text where their classes agree (ASCII, or any text for a
pattern without ``\w \d \s \b`` and without ignore-case). Elsewhere (a lookaround or a
backreference, which RE2 cannot take, or a Unicode text its classes read otherwise)
DeepEval's own re matches, stopped after ``PATTERN_TIME_LIMIT_S`` by a timer signal (re
checks for signals as it matches): the evaluation becomes a metric error, not a stalled
worker.
"""

from __future__ import annotations

import contextlib
import re
import signal
import threading
from collections.abc import Iterator
from typing import Any, Literal

import re2

PATTERN_TIME_LIMIT_S = 2.0
Engine = Literal["re2", "re"]

_CLASS_ESCAPE = re.compile(r"\\[wWdDsSbB]")
_INLINE_IGNORE_CASE = re.compile(r"\(\?[a-zA-Z]*i[a-zA-Z]*(?:-[a-zA-Z]*)?[:)]")
_READ_OTHERWISE = ("{,", "[:")  # re: a repeat, a literal set; RE2: literal text, a class
_SPACES_APART = frozenset("\x0b\x1c\x1d\x1e\x1f")  # in re's \s (str.isspace), not RE2's


class PatternTimeout(RuntimeError):
    """re backtracked on this output for longer than the limit."""


class CompiledPattern:
    """What DeepEval's metric calls ``fullmatch`` on: True when the whole text matches."""

    def __init__(self, pattern: str, ignore_case: bool) -> None:
        self._re = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
        self._re2 = _re2_compiled(pattern, ignore_case)
        self._classes_differ_off_ascii = (
            ignore_case
            or _CLASS_ESCAPE.search(pattern) is not None
            or _INLINE_IGNORE_CASE.search(pattern) is not None
        )
        self._dollar = "$" in pattern

    def engine_for(self, text: str) -> Engine:
        """The engine that matches ``text``: RE2 where it answers as re does."""
        if self._re2 is None:
            return "re"
        if self._dollar and text.endswith("\n"):
            return "re"  # re's $ also matches before a last newline, RE2's does not
        if text.isascii():
            return "re" if _SPACES_APART.intersection(text) else "re2"
        if self._classes_differ_off_ascii or not _utf8(text):
            return "re"
        return "re2"

    def fullmatch(self, text: str) -> bool:
        """Whether the whole of ``text`` matches (the engine chosen for it)."""
        if self._re2 is not None and self.engine_for(text) == "re2":
            return self._re2.fullmatch(text) is not None
        with _time_limit():
            return self._re.fullmatch(text) is not None


def compile_pattern(pattern: str, ignore_case: bool) -> CompiledPattern:
    """The pattern for both engines (re's errors are the config's: it was checked there)."""
    return CompiledPattern(pattern, ignore_case)


def _re2_compiled(pattern: str, ignore_case: bool) -> Any:
    """RE2's compiled pattern, or None where RE2 cannot take it or would read it otherwise."""
    if not pattern.isascii() or any(sign in pattern for sign in _READ_OTHERWISE):
        return None
    options = re2.Options()
    options.case_sensitive = not ignore_case
    options.log_errors = False  # a lookaround is no error here: re takes the pattern
    try:
        return re2.compile(pattern, options)
    except re2.error:
        return None


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: RE2 reads UTF-8 only
        return False
    return True


@contextlib.contextmanager
def _time_limit() -> Iterator[None]:
    """Stop re after the limit: a timer signal, raised as PatternTimeout in the match.

    Signals reach the main thread only, where the worker's event loop runs the metric;
    anywhere else the match is not limited.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    armed = True

    def stop(_signal: int, _frame: Any) -> None:
        if armed:  # a signal that arrives after the match has ended is ignored
            raise PatternTimeout(
                f"the pattern was stopped after {PATTERN_TIME_LIMIT_S:g} s on this output: it "
                "backtracks without end on it (Python's re; RE2, which matches in linear "
                "time, cannot take its lookaround or backreference)"
            )

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, PATTERN_TIME_LIMIT_S)
    try:
        yield
    finally:
        armed = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
