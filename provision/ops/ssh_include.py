"""``provision ssh-config --install``: every cluster's ssh_config in ``~/.ssh/config``, for ``ssh`` and VS Code.

OpenSSH reads ``Include`` files in place; an ``Include`` before the first ``Host`` line applies to every
host (ssh_config(5), "Include"). One line covers all clusters, present and future, since each cluster's
file is ``$PROVISION_HOME/ssh/<stack>/config`` (written by ``provision ssh``/``exec``/``launch``, and by
``ssh-config`` itself for the clusters in the state). VS Code Remote-SSH reads ``~/.ssh/config``, so the
nodes (``<cluster>-<rank>``) appear there.
"""

from __future__ import annotations

import os
from pathlib import Path

MARK = "# provision: every cluster's ssh_config (provision ssh-config --install)"


def include_line() -> str:
    from provision.engine.automation import provision_home

    return f"Include {provision_home() / 'ssh' / '*' / 'config'}"


def install(config: Path | None = None) -> tuple[Path, bool]:
    """Add the ``Include`` line at the top of ``~/.ssh/config`` (made 0600 in a 0700 folder) unless present.

    Returns ``(path, changed)``.
    """
    path = config or Path.home() / ".ssh" / "config"
    line = include_line()
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    if any(existing.strip() == line for existing in text.splitlines()):
        return path, False
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(f"{MARK}\n{line}\n\n{text}")
    os.replace(tmp, path)
    return path, True
