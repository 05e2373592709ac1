"""Error codes and the one exception type fusilli raises."""

from __future__ import annotations

import enum


class ErrorCode(enum.Enum):
    """What went wrong, as upstream Fusilli spells it."""

    NOT_IMPLEMENTED = "NOT_IMPLEMENTED"
    NOT_VALIDATED = "NOT_VALIDATED"
    NOT_COMPILED = "NOT_COMPILED"
    ATTRIBUTE_NOT_SET = "ATTRIBUTE_NOT_SET"
    INTERNAL_ERROR = "INTERNAL_ERROR"
    INVALID_ATTRIBUTE = "INVALID_ATTRIBUTE"
    INVALID_ARGUMENT = "INVALID_ARGUMENT"
    VARIANT_PACK_ERROR = "VARIANT_PACK_ERROR"
    COMPILE_FAILURE = "COMPILE_FAILURE"
    RUNTIME_FAILURE = "RUNTIME_FAILURE"
    FILE_SYSTEM_FAILURE = "FILE_SYSTEM_FAILURE"


class FusilliError(Exception):
    """Every failure fusilli detects. ``str(err)`` is ``"<CODE>: <message>"``."""

    def __init__(self, code: ErrorCode, message: str):
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.message = message

    def __reduce__(self) -> tuple:
        # Pickled with its code and message (multiprocessing sends a worker's exceptions to the
        # parent; the default rebuilds from ``args``, the one formatted string, and fails).
        return (type(self), (self.code, self.message))


def fail(code: ErrorCode, message: str) -> FusilliError:
    """Logs the error (when logging is on) and returns it for the caller to raise."""
    from fusilli.log import logger

    logger.debug("%s: %s", code.name, message)
    return FusilliError(code, message)


def require(condition: object, code: ErrorCode, message: str) -> None:
    """Raises ``FusilliError(code, message)`` unless ``condition`` holds."""
    if not condition:
        raise fail(code, message)
