"""Errors that describe a problem with the user's input and how to fix it."""


class Interrupted(Exception):
    """Raised inside an engine when the caller asked it to stop (a newer frame, a closing window)."""


class UserError(Exception):
    """Bad input: the message is one line saying what is wrong and what to do.

    The command line prints it and exits with status 2; the UI shows it as a message.
    """
