"""The ``"fusilli"`` logger and Fusilli's environment switches for it.

``FUSILLI_LOG_INFO=1`` together with ``FUSILLI_LOG_FILE=stdout|stderr|<path>``
turns on INFO logging (upstream's variables); without them the standard
``logging`` configuration of the application decides.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

logger = logging.getLogger("fusilli")

_PREFIX = "[FUSILLI] %(levelname)s: %(message)s"
_env_handler: logging.Handler | None = None


def configure_from_environment() -> None:
    """Installs a handler as FUSILLI_LOG_INFO / FUSILLI_LOG_FILE ask (idempotent)."""
    global _env_handler
    enabled = os.environ.get("FUSILLI_LOG_INFO", "")
    target = os.environ.get("FUSILLI_LOG_FILE")
    if _env_handler is not None:
        logger.removeHandler(_env_handler)
        _env_handler.close() if isinstance(_env_handler, logging.FileHandler) else None
        _env_handler = None
        logger.propagate = True
    if not enabled or enabled.startswith("0") or not target:
        return
    unusable = None
    if target == "stdout":
        handler: logging.Handler = logging.StreamHandler(sys.stdout)
    elif target == "stderr":
        handler = logging.StreamHandler(sys.stderr)
    else:
        try:
            handler = logging.FileHandler(target, encoding="utf-8")
        except OSError as e:  # a missing directory, a directory, no permission: log, never fail the import
            handler = logging.StreamHandler(sys.stderr)
            unusable = e
    handler.setFormatter(logging.Formatter(_PREFIX))
    logger.addHandler(handler)
    # The environment asked for this destination: don't also echo through
    # whatever handlers the root logger has.
    logger.propagate = False
    if logger.level == logging.NOTSET or logger.level > logging.INFO:
        logger.setLevel(logging.INFO)
    _env_handler = handler
    if unusable is not None:
        logger.warning("FUSILLI_LOG_FILE=%r cannot be opened (%s); logging to stderr", target, unusable)


@contextmanager
def timed(what: str) -> Iterator[None]:
    """Logs how long the block took, at INFO."""
    start = time.perf_counter()
    try:
        yield
    finally:
        logger.info("%s took %.1f ms", what, (time.perf_counter() - start) * 1e3)
