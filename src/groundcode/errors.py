"""User-facing errors: the CLI prints their message on one line, never a traceback."""


class GroundcodeError(Exception):
    """An error caused by the user's input (missing file, bad position, ...)."""
