"""``launch --workdir DIR``: a local folder synced to the cluster before a job starts.

The files are the folder's minus what git ignores: ``git ls-files --cached --others --exclude-standard``
in a git work tree (every ``.gitignore``, ``.git/info/exclude`` and the global excludes), else the
patterns of the folder's own ``.gitignore`` (gitignore syntax, through ``pathspec``); ``.git`` never.
They go to the shared filesystem when the cluster has one (``<mount>/provision/workdir/<cluster>``,
seen by every node), else to every node (``~/provision-workdir/<cluster>``). A second sync sends only
what changed: ``rsync`` compares size and modification time (real nodes); the mocked nodes' copy does
the same. Files deleted locally stay on the nodes.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from provision.spec.errors import CloudError, Problem, SpecError


@dataclass(frozen=True)
class SyncResult:
    """Where the folder went (``run_in``: the path a job's ranks start in) and how much was sent."""

    destination: str
    run_in: str
    files: int
    copied: int
    targets: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "destination": self.destination,
            "run_in": self.run_in,
            "files": self.files,
            "copied": self.copied,
            "to": list(self.targets),
        }


def workdir_files(src: Path) -> list[str]:
    """The folder's files (relative POSIX paths, sorted), without what git ignores and without ``.git``.

    Raises:
        SpecError: ``src`` is not a folder.
    """
    if not src.is_dir():
        raise SpecError(problems=[Problem("--workdir", str(src), "is not a folder", "name a local folder")])
    if shutil.which("git") and (
        subprocess.run(  # noqa: S603, S607
            ["git", "-C", str(src), "rev-parse", "--is-inside-work-tree"], capture_output=True, check=False
        ).returncode
        == 0
    ):
        listed = subprocess.run(  # noqa: S603, S607
            ["git", "-C", str(src), "ls-files", "-z", "--cached", "--others", "--exclude-standard", "."],
            capture_output=True,
            check=True,
        ).stdout.decode()
        names = [n for n in listed.split("\0") if n]
    else:
        import pathspec

        ignore = src / ".gitignore"
        patterns = ignore.read_text(encoding="utf-8").splitlines() if ignore.is_file() else []
        spec = pathspec.GitIgnoreSpec.from_lines(patterns)
        names = []
        for root, dirs, files in os.walk(src):
            dirs[:] = [d for d in dirs if d != ".git"]
            for f in files:
                names.append(Path(root, f).relative_to(src).as_posix())
        names = [n for n in names if not spec.match_file(n)]
    return sorted(n for n in names if (src / n).is_file() and not n.startswith(".git/"))


def destination(cluster: Any) -> str:
    """Where the folder goes on the nodes (a path the ranks ``cd`` to; ``~/`` is the login user's home)."""
    mount = (cluster.outputs.get("shared_fs") or {}).get("mount_point")
    name = cluster.spec.name
    return f"{mount.rstrip('/')}/provision/workdir/{name}" if mount else f"~/provision-workdir/{name}"


def _copy_changed(src: Path, names: list[str], dest: Path) -> int:
    copied = 0
    for name in names:
        a, b = src / name, dest / name
        st = a.stat()
        try:
            bt = b.stat()
            if bt.st_size == st.st_size and int(bt.st_mtime) == int(st.st_mtime):
                continue
        except FileNotFoundError:
            pass
        b.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(a, b)
        copied += 1
    return copied


def sync(cluster: Any, src: str | Path) -> SyncResult:
    """Send ``src`` to the cluster (see the module docs); returns where it went.

    Raises:
        SpecError: not a folder. CloudError: rsync is missing or failed.
    """
    from provision.ops.access import cluster_hosts

    folder = Path(src).expanduser().resolve()
    names = workdir_files(folder)
    dest = destination(cluster)
    if cluster.mock:
        from provision.ops.jobs.local import mock_root, node_home, shared_dir

        shared = shared_dir(cluster)
        if shared is not None:
            mount = (cluster.outputs.get("shared_fs") or {})["mount_point"].rstrip("/")
            local = shared / dest[len(mount) + 1 :]
            return SyncResult(dest, str(local), len(names), _copy_changed(folder, names, local), (str(local),))
        copied, targets = 0, []
        for rank in range(len(cluster_hosts(cluster))):
            local = node_home(cluster, rank) / dest[2:]
            copied += _copy_changed(folder, names, local)
            targets.append(str(local))
        mock_root(cluster)
        return SyncResult(dest, dest, len(names), copied, tuple(targets))
    return _rsync(cluster, folder, names, dest)


def rsync_argv(config: str, alias: str, src: Path, dest: str) -> list[str]:
    """The rsync command line that sends the listed files (on stdin) of ``src`` to ``alias:dest``."""
    remote = dest[2:] if dest.startswith("~/") else dest  # rsync's remote paths are relative to the home
    return [
        "rsync",
        "--archive",
        "--compress",
        "--files-from=-",
        "--from0",
        "--mkpath",
        "--rsh",
        f"ssh -F {shlex.quote(config)}",
        f"{src}/",
        f"{alias}:{remote}/",
    ]


def _rsync(cluster: Any, folder: Path, names: list[str], dest: str) -> SyncResult:
    from provision.ops.access import cluster_hosts, login_user, write_ssh_config
    from provision.ops.exec import run_on_nodes

    if shutil.which("rsync") is None:
        raise CloudError("--workdir needs rsync on this machine. To fix: install rsync (apt/brew install rsync)")
    config = str(write_ssh_config(cluster))
    shared = not dest.startswith("~/")
    ranks = [0] if shared else list(range(len(cluster_hosts(cluster))))
    if shared:  # the shared filesystem's root may be root-owned: make the folder the login user's
        user = shlex.quote(login_user(cluster))
        q = shlex.quote(dest)
        run_on_nodes(cluster, f"sudo -n install -d -o {user} {q} 2>/dev/null || mkdir -p {q}", nodes=[0], timeout=120)
    data = "\0".join(names).encode()
    targets = []
    for rank in ranks:
        alias = f"{cluster.spec.name}-{rank}"
        done = subprocess.run(  # noqa: S603
            rsync_argv(config, alias, folder, dest), input=data, capture_output=True, check=False
        )
        if done.returncode != 0:
            raise CloudError(f"rsync to {alias} failed ({done.returncode}): {done.stderr.decode()[-400:].strip()}")
        targets.append(f"{alias}:{dest}")
    return SyncResult(dest, dest, len(names), len(names), tuple(targets))
