"""Checkpoints on the shared filesystem: where ranks write them, saving the last one, and the warning at ``down``.

* **Where.** A cluster with a shared filesystem gives every rank ``PROVISION_CHECKPOINT_DIR``
  (``<mount>/checkpoints/<cluster>``) in its env file, so ``launch`` (every launcher, ``--cmd``) and detached
  jobs (``launch --detach``, whose restarted ranks resume from its newest entry) write to one folder every
  node sees. A mocked cluster's folder is the local stand-in of its mount (:mod:`provision.ops.jobs.local`).
  On managed Kubernetes (``scheduler: kubernetes``) the folder is on the shared claim's mount in the pods
  (:func:`pod_checkpoint_dir`): every TrainJob (``launch --k8s``, ``launch --detach``, ``k8s-launch``) carries
  it in its env, and each pod, when it starts (again), gets ``PROVISION_RESUME_FROM`` as a restarted VM rank
  does (:func:`resume_lines`). Without a shared filesystem (VM or Kubernetes) no rank gets the variable.
* **Save.** ``provision run --save-checkpoint`` copies the folder's newest entry, before the cluster goes
  down, into ``<mount><export_path>/checkpoints/<cluster>/``, which the filesystem's object-store link exports
  to the bucket (FSx for Lustre's automatic export of new and changed files,
  https://docs.aws.amazon.com/fsx/latest/LustreGuide/autoexport-data-repo-dra.html; Azure Managed Lustre's
  ``lfs hsm_archive``, https://learn.microsoft.com/azure/azure-managed-lustre/export-with-archive-jobs; CPFS
  data flows, https://www.alibabacloud.com/help/en/nas/user-guide/manage-data-flows). A filesystem that
  outlives the cluster (``storage.shared.volume`` or ``retain: true``) already keeps the folder: nothing to
  copy. Anything else is refused before the cluster is created.
* **Warn.** ``down`` of a cluster whose own filesystem is deleted with it (not retained, not an attached
  volume) looks for files written in the last hour (outside provision's own job records and outside the
  exported folder) and warns, naming how to keep them.
"""

from __future__ import annotations

import posixpath
import shlex
from typing import TYPE_CHECKING, Any

from provision.spec.errors import Problem, SpecError

if TYPE_CHECKING:
    from provision.spec.models import ClusterSpec

#: A cluster handle (provision.ops.access.Cluster, not imported: access imports this module).
Cluster = Any

#: The folder under the mount point that holds every cluster's checkpoints.
CHECKPOINTS = "checkpoints"
#: Files written this recently on a filesystem that ``down`` deletes are warned about.
RECENT_MINUTES = 60
#: How many of the recent files the warning names.
SHOWN = 3


def shared_root(cluster: Cluster) -> str | None:
    """The shared filesystem's folder as the nodes see it (a mocked cluster: its local stand-in), or ``None``."""
    mount = (cluster.outputs.get("shared_fs") or {}).get("mount_point")
    if not mount:
        return None
    if cluster.mock:
        from provision.ops.jobs.mocknodes import shared_dir

        return str(shared_dir(cluster))
    return str(mount).rstrip("/") or "/"


def checkpoint_dir(cluster: Cluster) -> str | None:
    """``<mount>/checkpoints/<cluster>``, or ``None`` without a shared filesystem."""
    root = shared_root(cluster)
    return None if root is None else posixpath.join(root, CHECKPOINTS, cluster.spec.name)


def pod_checkpoint_dir(mount: str | None, cluster_name: str) -> str | None:
    """The same folder in a Kubernetes training pod: ``<mount>/checkpoints/<cluster>`` on the shared claim's
    mount (the job profile's ``shared_mount``), or ``None`` when the pods have no shared claim."""
    if not mount:
        return None
    return posixpath.join(mount.rstrip("/") or "/", CHECKPOINTS, cluster_name)


def resume_lines(folder: str) -> str:
    """POSIX shell lines run as a rank (or pod) starts: export ``PROVISION_CHECKPOINT_DIR=folder``, make the
    folder, and export ``PROVISION_RESUME_FROM`` as its newest entry (a folder) when it has one."""
    ck = shlex.quote(folder)
    return (
        f"export PROVISION_CHECKPOINT_DIR={ck}\n"
        f"mkdir -p {ck} 2>/dev/null\n"
        f"latest=$(ls -1dt {ck}/*/ 2>/dev/null | head -n 1)\n"
        'if [ -n "$latest" ]; then export PROVISION_RESUME_FROM="${latest%/}"; fi\n'
    )


def checkpoint_env(cluster: Cluster) -> dict[str, str]:
    """``{"PROVISION_CHECKPOINT_DIR": ...}`` for the env file (empty without a shared filesystem)."""
    folder = checkpoint_dir(cluster)
    return {} if folder is None else {"PROVISION_CHECKPOINT_DIR": folder}


def kept_by(spec: ClusterSpec) -> str | None:
    """What keeps the shared filesystem's files after ``down`` (an attached or retained volume), or ``None``."""
    shared = spec.storage.shared
    if shared is None:
        return None
    if shared.volume:
        return f"volume {shared.volume}"
    if shared.retain:
        return "the retained filesystem (a volume after down)"
    return None


def save_problems(spec: ClusterSpec) -> list[Problem]:
    """Why ``run --save-checkpoint`` cannot keep a checkpoint of ``spec`` (checked before anything exists)."""
    if spec.scheduler.kind == "kubernetes":
        kept = kept_by(spec)
        return [
            Problem(
                "scheduler.kind",
                "kubernetes",
                "--save-checkpoint copies the checkpoint on the nodes over SSH, and the nodes of a managed "
                "Kubernetes cluster are not reached that way (its pods write to $PROVISION_CHECKPOINT_DIR on the "
                "shared claim)",
                f"drop --save-checkpoint: {kept} already keeps $PROVISION_CHECKPOINT_DIR after down"
                if kept
                else "drop --save-checkpoint and keep the folder: attach a volume (storage.shared.volume: NAME) or "
                "set storage.shared.retain: true; or copy the checkpoint to your bucket from the training script",
            )
        ]
    shared = spec.storage.shared
    if shared is None:
        return [
            Problem(
                "storage.shared",
                "(none)",
                "--save-checkpoint needs a shared filesystem for the checkpoints",
                "add a storage.shared section (with object_store.export_path, or volume)",
            )
        ]
    if kept_by(spec) is not None:
        return []
    store = shared.object_store
    if store is None:
        return [
            Problem(
                "storage.shared.object_store",
                "(none)",
                "--save-checkpoint needs somewhere that outlives the cluster",
                "link a bucket (storage.shared.object_store with export_path), attach a volume "
                "(storage.shared.volume: NAME) or set storage.shared.retain: true",
            )
        ]
    if store.export_path is None:
        return [
            Problem(
                "storage.shared.object_store.export_path",
                "(none)",
                "--save-checkpoint copies into the exported folder, and nothing is exported without it",
                f"set export_path to a folder under import_path {store.import_path}, e.g. {store.import_path}",
            )
        ]
    return []


def save_destination(cluster: Cluster) -> tuple[str, str | None]:
    """Where the saved checkpoint goes on the nodes, and the bucket URI it is exported to (``None``: kept in place).

    Raises:
        SpecError: the spec keeps nothing (:func:`save_problems`).
    """
    problems = save_problems(cluster.spec)
    if problems:
        raise SpecError(problems=problems)
    folder = checkpoint_dir(cluster)
    root = shared_root(cluster)
    if folder is None or root is None:
        raise SpecError(
            problems=[Problem("storage.shared", "(not mounted)", "the cluster has no shared filesystem", "run `up`")]
        )
    store = cluster.spec.storage.shared.object_store if cluster.spec.storage.shared else None
    if kept_by(cluster.spec) is not None or store is None or store.export_path is None:
        return folder, None
    exported = posixpath.normpath(store.export_path).lstrip("/")
    dest = posixpath.join(root, exported, CHECKPOINTS, cluster.spec.name)
    inside = posixpath.relpath(posixpath.join("/", exported, CHECKPOINTS, cluster.spec.name), store.import_path)
    return dest, store.uri.rstrip("/") + "/" + inside


def save_line(source: str, dest: str, archive: bool) -> str:
    """The head node's shell line: copy ``source``'s newest entry into ``dest``, print the copy's path.

    Exit 3 when ``source`` holds nothing. ``dest == source``: nothing to copy (the entry is printed).
    ``archive``: also ask Lustre's HSM to export the copy (Azure Managed Lustre exports archived files only).
    """
    s, d = shlex.quote(source), shlex.quote(dest)
    found = (
        f"latest=$(ls -1t {s} 2>/dev/null | head -n 1); "
        f'if [ -z "$latest" ]; then echo {shlex.quote("no checkpoint in " + source)} >&2; exit 3; fi; '
        f'dest={d}/"$latest"; '
    )
    if source == dest:
        return found + 'echo "$dest"'
    hsm = ' && { ! command -v lfs >/dev/null || find "$dest" -type f -exec lfs hsm_archive {} +; }' if archive else ""
    return found + f'mkdir -p {d} && rm -rf "$dest" && cp -a {s}/"$latest" "$dest"{hsm} && echo "$dest"'


def recent_line(root: str, skip: list[str], minutes: int = RECENT_MINUTES) -> str:
    """A shell line printing the count of files under ``root`` modified in the last ``minutes``, then up to
    :data:`SHOWN` of them, newest first (GNU find's ``-mmin``/``-printf``), leaving out the ``skip`` folders."""
    prune = " -o ".join(f"-path {shlex.quote(p)}" for p in skip)
    where = f"\\( {prune} \\) -prune -o " if skip else ""
    return (
        f"find {shlex.quote(root)} {where}-type f -mmin -{minutes} -printf '%T@ %p\\n' 2>/dev/null "
        f"| sort -rn | awk '{{n++; if (n <= {SHOWN}) {{sub(/^[^ ]+ /, \"\"); print}}}} END {{print n+0}}'"
    )


def with_checkpoint_dir(cluster: Cluster, line: str) -> str:
    """``line`` preceded by making the checkpoint folder (the shared mount is writable by all: chmod 1777)."""
    folder = checkpoint_dir(cluster)
    return line if folder is None else f"mkdir -p {shlex.quote(folder)} 2>/dev/null; {line}"
