"""The checkpoint steps that run on the nodes (:mod:`provision.ops.checkpoints` holds what they run and why):
``run --save-checkpoint``'s copy and ``down``'s warning about files written lately."""

from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING, Any

from provision.ops.checkpoints import (
    RECENT_MINUTES,
    checkpoint_dir,
    kept_by,
    recent_line,
    save_destination,
    save_line,
    shared_root,
)
from provision.ops.exec import run_on_nodes
from provision.spec.errors import CloudError

if TYPE_CHECKING:
    from provision.ops.access import Cluster


def save_checkpoint(cluster: Cluster) -> dict[str, Any]:
    """Copy the newest checkpoint to where it outlives the cluster (module docs); what was saved, as a dict.

    Returns:
        ``{"saved": path on the nodes | None, "uri": bucket URI | None, "error": why not | None}``.

    Raises:
        SpecError: the spec keeps nothing (:func:`save_problems`).
    """
    source = checkpoint_dir(cluster)
    dest, uri = save_destination(cluster)
    assert source is not None  # save_destination checked the mount
    line = save_line(source, dest, archive=cluster.spec.cloud == "azure")
    result = run_on_nodes(cluster, line, nodes="head", timeout=3600)[0]
    if not result.ok:
        why = result.error or result.stderr.strip() or f"exit code {result.exit_code}"
        return {"saved": None, "uri": None, "error": why}
    saved = result.stdout.strip().splitlines()[-1]
    name = posixpath.basename(saved)
    if uri:  # GCP exports with an API call (the other clouds' links export on their own)
        from provision.ops.datalink import export_saved

        try:
            export_saved(cluster, saved, f"{uri}/{name}")
        except CloudError as e:
            return {"saved": saved, "uri": None, "error": e.message}
    return {"saved": saved, "uri": f"{uri}/{name}" if uri else None, "error": None}


def down_warning(cluster: Cluster) -> dict[str, Any] | None:
    """Files ``down`` is about to delete with the cluster's own filesystem, as ``{"message", "files", "count"}``.

    ``None`` when nothing recent would be lost (no shared filesystem, a kept one, no recent file) or when the
    nodes cannot be read (a half-gone cluster must still come down).
    """
    try:
        root = shared_root(cluster)
    except Exception:  # no outputs: nothing is up
        return None
    if root is None or kept_by(cluster.spec) is not None:
        return None
    skip = [posixpath.join(root, "provision")]  # the jobs' own records
    store = cluster.spec.storage.shared.object_store if cluster.spec.storage.shared else None
    if store is not None and store.export_path is not None:
        skip.append(posixpath.join(root, posixpath.normpath(store.export_path).lstrip("/")))
    try:
        result = run_on_nodes(cluster, recent_line(root, skip), nodes="head", timeout=60)[0]
    except Exception:
        return None
    lines = result.stdout.strip().splitlines()
    if not result.ok or not lines or not lines[-1].isdigit() or int(lines[-1]) == 0:
        return None
    count, files = int(lines[-1]), lines[:-1]
    fix = (
        "copy them into the exported folder " + str(skip[-1])
        if len(skip) > 1
        else "link a bucket (storage.shared.object_store with export_path) and use `provision run --save-checkpoint`"
    )
    message = (
        f"the shared filesystem holds {count} file(s) written in the last {RECENT_MINUTES} minutes "
        f"(newest: {', '.join(files)}), and `down` deletes it with the cluster. To keep them: {fix}, attach a "
        "volume (storage.shared.volume: NAME, see `provision volume create`) or set storage.shared.retain: true "
        "and run `provision up` before `down`"
    )
    return {"message": message, "files": files, "count": count}
