"""The ``provision`` command line (see :mod:`provision.cli.app`)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

#: Exit code of an interrupted command (128 + SIGINT), as ``provision.cli.common.EXIT_INTERRUPTED``.
_INTERRUPTED = 130


def main() -> None:
    """Console-script entry point; imports the app only when called.

    A Ctrl-C that lands while the app is still importing (before its own handlers exist) still ends
    in exit 130, with the interrupted JSON document under ``--json`` (the same one
    ``provision.cli.common.interrupted_doc`` writes), not in a traceback or a bare signal exit. One
    that lands after the command finished (its output written, the interpreter shutting down) ends
    the process with the command's own exit code instead of dying from the signal (exit -2).
    """
    with interrupts_not_lost():
        _run()


def _run() -> None:
    try:
        from provision.cli.app import main as run

        run()
    except KeyboardInterrupt:
        if "--json" in sys.argv[1:]:
            import json

            doc = {"error": "Interrupted", "message": "interrupted (Ctrl-C or SIGINT)", "problems": []}
            sys.stdout.write(json.dumps({**doc, "exit_code": _INTERRUPTED}, indent=2) + "\n")
        else:
            sys.stderr.write("interrupted\n")
        _late_interrupt_exits_with(_INTERRUPTED)
        sys.exit(_INTERRUPTED)
    except SystemExit as done:
        code = done.code
        _late_interrupt_exits_with(code if isinstance(code, int) else (0 if code is None else 1))
        raise


@contextmanager
def interrupts_not_lost() -> Iterator[None]:
    """Inside the block, a ``KeyboardInterrupt`` that Python could not raise is delivered again.

    An exception in a finalizer, a weakref callback or a C extension's callback cannot propagate: Python prints
    "Exception ignored in" and drops it (pydantic-core compiling a model's pattern while a command imports its
    models is one such place), and a Ctrl-C that lands there was lost: the command ran on, to exit 0. The hook
    takes such an interrupt without printing it and arms a profile function for one event: the main thread's next
    call or return outside the hook raises the ``KeyboardInterrupt`` again (a call from the same extension may drop
    it again; it is then armed again), and the command ends with exit 130. Other unraisable exceptions go to the
    hook that was in place, and the profile function that was in place (cProfile's) is put back.
    """
    previous = sys.unraisablehook
    profilers: list[Any] = []  # the profile function in place when an interrupt was taken

    def hook(unraisable: sys.UnraisableHookArgs) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            profilers.append(sys.getprofile())
            sys.setprofile(raise_on_next_event)
        else:
            previous(unraisable)

    def raise_on_next_event(frame: FrameType, event: str, arg: object) -> None:
        if frame.f_code is hook.__code__ or frame.f_code is raise_on_next_event.__code__:
            return  # an exception raised in the hook itself would be dropped again
        sys.setprofile(profilers[0])  # whoever profiled before the first interrupt (cProfile), or no one
        profilers.clear()
        raise KeyboardInterrupt

    sys.unraisablehook = hook
    try:
        yield
    finally:
        sys.unraisablehook = previous
        if profilers:  # taken after the last event of the block: nothing is left to interrupt
            sys.setprofile(profilers[0])


def _late_interrupt_exits_with(code: int) -> None:
    """The command's result is out: a Ctrl-C from now on must not turn ``code`` into a signal death.

    Python restores SIGINT's default action while it finalizes (after joining threads), so a late
    Ctrl-C killed the process (exit -2) after the JSON was printed. Until then a Ctrl-C exits at once
    with ``code``; SIG_IGN is what finalization keeps (CPython restores only handlers other than the
    default and ignore ones), so it covers the last stretch. SIGTERM still ends a stuck shutdown.
    """
    import contextlib
    import os
    import signal

    def finish(signum: int, frame: object) -> None:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
        os._exit(code)

    with contextlib.suppress(ValueError):  # not the main thread: nothing to arrange
        signal.signal(signal.SIGINT, finish)
        import atexit

        atexit.register(signal.signal, signal.SIGINT, signal.SIG_IGN)
