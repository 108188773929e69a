"""``k8s-launch --workdir DIR`` (and ``launch --k8s --workdir``): the user's code in every pod of a TrainJob.

The folder's files, minus what git ignores (:func:`provision.ops.workdir.workdir_files`), are packed into one
gzipped tarball that travels with the job as a ConfigMap (``binaryData``), applied in the same ``kubectl apply``
as the TrainJob. Each training pod gets an init container (the job's own image, so ``tar`` is there) that unpacks
it into an ``emptyDir`` mounted at :data:`MOUNT`, and the trainer starts there (``workingDir``). Nothing needs a
registry push, a shared filesystem or a secret, and every pod sees the same snapshot of the code, even a pod
restarted later on another node.

Limits: a ConfigMap holds at most 1 MiB (https://kubernetes.io/docs/concepts/configuration/configmap/#motivation),
and ``binaryData`` is base64 in the API object, so the tarball may be :data:`MAX_TARBALL_BYTES` compressed; a larger
tree is refused with the ways out (bake the code into ``--image``, or keep data and checkpoints out of the code
folder: ``.gitignore`` them). The ConfigMap is labelled with the job's name (:data:`JOB_LABEL`) and is not deleted
with the TrainJob: ``kubectl delete configmap -l provision.dev/trainjob=NAME`` removes it.
"""

from __future__ import annotations

import gzip
import io
import tarfile
from pathlib import Path
from typing import Any

from provision.clouds.k8s.jobs import NODE, PATCH_MANAGER
from provision.spec.errors import Problem, SpecError

#: Where the code is unpacked in every pod, and where the trainer starts.
MOUNT = "/workspace"
#: The packed folder's largest size: base64 (4/3) of it plus the object's metadata stays under the 1 MiB cap.
MAX_TARBALL_BYTES = 700 * 1024
#: The ConfigMap's label naming its TrainJob.
JOB_LABEL = "provision.dev/trainjob"
_KEY = "workdir.tar.gz"
_SRC = "/provision/workdir-src"


def pack(src: Path) -> tuple[bytes, int]:
    """The folder as a gzipped tarball (the same bytes for the same files: no timestamps in the gzip header) and
    how many files it holds."""
    from provision.ops.workdir import workdir_files

    files = workdir_files(src)
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for rel in files:
            tar.add(src / rel, arcname=rel, recursive=False)
    return gzip.compress(raw.getvalue(), mtime=0), len(files)


def attach(job: dict[str, Any], src: Path) -> dict[str, Any]:
    """Add the folder to ``job`` (a TrainJob, changed in place) and return the ConfigMap that carries it.

    Raises:
        SpecError: the packed folder is over :data:`MAX_TARBALL_BYTES`.
    """
    import base64

    blob, count = pack(src)
    if len(blob) > MAX_TARBALL_BYTES:
        raise SpecError(
            problems=[
                Problem(
                    "--workdir",
                    str(src),
                    f"packs to {len(blob) / 1024:.0f} KiB ({count} files), over the {MAX_TARBALL_BYTES // 1024} KiB "
                    "a ConfigMap can carry (Kubernetes caps one at 1 MiB)",
                    "keep data, checkpoints and build outputs out of it (.gitignore them), or bake the code into an "
                    "image and pass --image",
                )
            ]
        )
    name = job["metadata"]["name"]
    config_map: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": f"{name}-workdir",
            "namespace": job["metadata"]["namespace"],
            "labels": {JOB_LABEL: name},
        },
        "binaryData": {_KEY: base64.b64encode(blob).decode()},
    }
    image = job["spec"]["trainer"]["image"]
    pod = {
        "volumes": [
            {"name": "provision-workdir-src", "configMap": {"name": f"{name}-workdir"}},
            {"name": "provision-workdir", "emptyDir": {}},
        ],
        "initContainers": [
            {
                "name": "provision-workdir",
                "image": image,
                "command": ["tar", "-xzf", f"{_SRC}/{_KEY}", "-C", MOUNT],
                "volumeMounts": [
                    {"name": "provision-workdir-src", "mountPath": _SRC, "readOnly": True},
                    {"name": "provision-workdir", "mountPath": MOUNT},
                ],
            }
        ],
        "containers": [
            {"name": NODE, "workingDir": MOUNT, "volumeMounts": [{"name": "provision-workdir", "mountPath": MOUNT}]}
        ],
    }
    _pod_patch(job).update(pod)
    return config_map


def _pod_patch(job: dict[str, Any]) -> dict[str, Any]:
    """The training pods' spec in this tool's runtime patch (one entry per manager: created when missing)."""
    patches = job["spec"].setdefault("runtimePatches", [])
    mine = next((p for p in patches if p.get("manager") == PATCH_MANAGER), None)
    if mine is None:
        mine = {"manager": PATCH_MANAGER, "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": []}}}}
        patches.append(mine)
    replicated = mine["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    node = next((r for r in replicated if r.get("name") == NODE), None)
    if node is None:
        node = {"name": NODE, "template": {"spec": {"template": {}}}}
        replicated.append(node)
    template = node["template"]["spec"]["template"]
    return template.setdefault("spec", {})  # type: ignore[no-any-return]
