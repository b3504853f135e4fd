"""Errors that describe a problem with the user's input and how to fix it.

The engine speaks of *settings* (``mode``, ``device``, ``max_disparity``), not of command-line
flags or window controls: a message names one with ``setting(name, value)``, and each front
end words it its own way through ``UserError.worded`` (the command line as ``--device cpu``,
the window as ``Device: cpu``; ``app.vocabulary`` has both wordings).
"""

from __future__ import annotations

import re
from collections.abc import Callable

_OPEN, _CLOSE = "\x1e", "\x1f"  # ASCII record/unit separators: never in a user's text
_MARK = re.compile(f"{_OPEN}(\\w+)(?:=([^{_CLOSE}]*))?{_CLOSE}")

Wording = Callable[[str, "str | None"], str]


def setting(name: str, value: object | None = None) -> str:
    """A reference to the setting ``name`` (optionally set to ``value``) inside a message."""
    return f"{_OPEN}{name}" + ("" if value is None else f"={value}") + _CLOSE


def plain_words(name: str, value: str | None) -> str:
    """The neutral wording: ``max_disparity 96``."""
    return name if value is None else f"{name} {value}"


def word_settings(text: str, words: Wording) -> str:
    """``text`` with every ``setting(...)`` reference worded by ``words``."""
    return _MARK.sub(lambda m: words(m[1], m[2]), text)


class Interrupted(Exception):
    """Raised inside an engine when the caller asked it to stop (a newer frame, a closing window)."""


class Terminated(KeyboardInterrupt):
    """SIGTERM (a service manager, ``docker stop``, ``kill``) raised where Ctrl-C would be, so a
    command closes what it writes and says what it kept, as after Ctrl-C (Python's default ends
    the process at once, silently)."""


class UserError(Exception):
    """Bad input: the message is one line saying what is wrong and what to do.

    The command line prints it and exits with status 2; the UI shows it as a message. Both
    word the settings it names their own way (``worded``); ``str()`` gives the neutral wording.
    """

    @property
    def raw(self) -> str:
        """The message with its setting references still unworded (to be worded later)."""
        return " ".join(str(a) for a in self.args)

    def worded(self, words: Wording) -> str:
        return word_settings(self.raw, words)

    def __str__(self) -> str:
        return self.worded(plain_words)


class BudgetTooLow(UserError):
    """A latency budget below the fastest answer of a measured frame size; ``minimum_ms`` is the
    least budget that answers (the window moves its slider there)."""

    def __init__(self, message: str, minimum_ms: float) -> None:
        super().__init__(message)
        self.minimum_ms = minimum_ms


class DiskFailure(UserError):
    """The disk refused a write (full, a quota, a file-size limit): a failure while running, not
    bad input, so the command line exits with status 1, not the usage errors' 2. The message
    still says what to do (free space, write elsewhere), and what was saved before stays whole."""
