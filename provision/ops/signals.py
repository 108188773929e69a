"""SIGTERM as ``KeyboardInterrupt`` around a cluster's lifetime, so a cancelled CI job still tears down."""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class TeardownSignals:
    """Set ``tearing_down`` once the teardown starts: SIGTERM is then ignored."""

    tearing_down = False


@contextmanager
def sigterm_as_interrupt() -> Iterator[TeardownSignals]:
    """Inside the block SIGTERM raises ``KeyboardInterrupt``, and is ignored once ``tearing_down`` is set.

    Only the main thread can set signal handlers; elsewhere this changes nothing.
    """
    signals = TeardownSignals()
    if threading.current_thread() is not threading.main_thread():
        yield signals
        return

    def handler(signum: int, frame: Any) -> None:
        if signals.tearing_down:
            print("provision: SIGTERM during teardown; finishing the teardown", file=sys.stderr, flush=True)
            return
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield signals
    finally:
        signal.signal(signal.SIGTERM, previous)
