"""One operation at a time per stack: an exclusive file lock, and who holds it.

Two ``up`` runs of one mocked stack used to both succeed, and the first one's resources
vanished from the state; an ``up`` racing a ``down`` resurrected deleted resources. Every
command that changes a stack (``up``, ``down``, ``refresh``, the reaper) now holds
``$PROVISION_HOME/locks/<mode>-<stack>.lock`` (an OS file lock through ``filelock``: released by
the kernel when the holder dies, so a crash never leaves a stale lock). A second command
fails at once with :class:`StackBusyError` naming the holder's pid, command and start time.

The real path also has Pulumi's own backend lock; this local lock gives the same clear error
before the Pulumi CLI starts, and covers the mocked cloud, which has no backend.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from provision.spec.errors import CloudError

_SAFE = re.compile(r"[^A-Za-z0-9._-]")


class StackBusyError(CloudError):
    """Another command holds the stack's lock (exit 1).

    Attributes:
        holder: what the holder recorded: ``pid``, ``command``, ``since`` (may be empty if it is
            still writing it).
    """

    def __init__(self, stack: str, holder: dict[str, Any]) -> None:
        self.stack = stack
        self.holder = holder
        who = (
            f"pid {holder.get('pid', '?')} runs `{holder.get('command', '?')}` since {holder.get('since', '?')}"
            if holder
            else "another process holds its lock"
        )
        super().__init__(
            f"stack {stack!r} is busy: {who}. To fix: wait for that command to finish, then run yours again",
            code="StackBusy",
        )


def _command() -> str:
    from provision.spec.secrets import scrub

    argv = [os.path.basename(sys.argv[0]) if sys.argv else "python", *sys.argv[1:]]
    return scrub(shlex.join(argv), blobs=True)[:300]


def _now() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def lock_path(stack: str, mock: bool, home: Path | None = None) -> Path:
    """The lock file of ``stack`` (mock and real stacks are separate states, so separate locks)."""
    from provision.engine.automation import private_dir, provision_home

    folder = private_dir((home or provision_home()) / "locks")
    return folder / f"{'mock' if mock else 'real'}-{_SAFE.sub('_', stack)}.lock"


@contextmanager
def stack_lock(stack: str, operation: str, mock: bool, home: Path | None = None) -> Iterator[None]:
    """Hold ``stack`` 's lock for the block; raise :class:`StackBusyError` at once when it is held.

    Not re-entrant: an operation that takes the lock must not call another that takes it.
    """
    from filelock import FileLock, Timeout

    path = lock_path(stack, mock, home)
    holder_file = path.with_suffix(".holder.json")
    lock = FileLock(str(path), mode=0o600)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        raise StackBusyError(stack, _holder(holder_file)) from None
    try:
        doc = {"pid": os.getpid(), "command": f"{operation}: {_command()}", "since": _now()}
        tmp = holder_file.with_name(f".{holder_file.name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        os.replace(tmp, holder_file)
        yield
    finally:
        holder_file.unlink(missing_ok=True)
        lock.release()


def _holder(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8")[:4096])
    except (OSError, ValueError):
        return {}
    return doc if isinstance(doc, dict) else {}
