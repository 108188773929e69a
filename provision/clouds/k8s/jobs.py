"""Training-job documents for ``scheduler: kubernetes`` clusters (pure: no Pulumi, no cloud).

Two documents, both Kubeflow Trainer v2 (``trainer.kubeflow.org/v1alpha1``):

* :func:`training_runtime`: the ``ClusterTrainingRuntime`` each cluster is created with. It holds
  what every pod on this cluster needs and a user should not have to know: the fabric's pod
  annotations (GKE multi-networking, device injection), the fabric daemon sidecar, host library
  and device mounts, ``/dev/shm``, the shared filesystem claim, tolerations and the GPU pool.
* :func:`train_job`: one ``TrainJob`` for ``torchrun SCRIPT ARGS``: all nodes, every GPU and
  every fabric device of each node (requests = limits), the NCCL environment, the Kueue queue.

Field names follow the Trainer API (kubeflow/trainer ``pkg/apis/trainer/v1alpha1``:
``TrainJobSpec.runtimeRef``, ``Trainer.{image,command,args,env,numNodes,resourcesPerNode}``,
``TrainingRuntimeSpec.{mlPolicy,template}``). The trainer overrides the replicated job named
``node`` whose template carries the label ``trainer.kubeflow.org/trainjob-ancestor-step: trainer``,
container ``node`` (the layout of Trainer's own torch runtimes). Kueue picks a job up by the
``kueue.x-k8s.io/queue-name`` label (Kueue "Run A TrainJob").
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

import yaml

from provision.planning.kubernetes import JobProfile

API_VERSION = "trainer.kubeflow.org/v1alpha1"
#: The replicated job and container Trainer's torch plugin fills in.
NODE = "node"
ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
#: Owner of the job's runtime patch (Trainer RuntimePatch.manager).
PATCH_MANAGER = "provision.dev/fabric"
#: TrainJob names: RFC 1035 labels of at most 63 characters (a CEL rule on the TrainJob CRD).
_NAME = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


def training_runtime(profile: JobProfile, cluster: str) -> dict[str, Any]:
    """The ``ClusterTrainingRuntime`` named ``profile.runtime`` (see the module docstring)."""
    pod_spec: dict[str, Any] = {
        "serviceAccountName": profile.service_account,
        "nodeSelector": dict(profile.node_selector),
        "tolerations": [dict(t) for t in profile.tolerations],
        "containers": [
            {
                "name": NODE,
                "image": profile.image,
                "command": ["torchrun"],
                "volumeMounts": [dict(m) for m in profile.mounts],
                **({"securityContext": dict(profile.security_context)} if profile.security_context else {}),
            }
        ],
        "volumes": [dict(v) for v in profile.volumes],
    }
    if profile.sidecars:
        pod_spec["initContainers"] = [dict(s) for s in profile.sidecars]
    pod_template: dict[str, Any] = {"spec": pod_spec}
    if profile.annotations:
        pod_template["metadata"] = {"annotations": dict(profile.annotations)}
    return {
        "apiVersion": API_VERSION,
        "kind": "ClusterTrainingRuntime",
        "metadata": {
            "name": profile.runtime,
            "labels": {"trainer.kubeflow.org/framework": "torch", "provision-cluster": cluster},
        },
        "spec": {
            "mlPolicy": {"numNodes": profile.nodes, "torch": {}},
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": NODE,
                            "template": {
                                "metadata": {"labels": {ANCESTOR_LABEL: "trainer"}},
                                "spec": {"template": pod_template},
                            },
                        }
                    ]
                }
            },
        },
    }


def job_name(cluster: str, now: datetime) -> str:
    """``<cluster>-<yyyymmdd-hhmmss>``: a valid, sortable TrainJob name."""
    stamp = now.strftime("%Y%m%d-%H%M%S")
    return f"{cluster[: 63 - len(stamp) - 1].rstrip('-')}-{stamp}"


def train_job(
    profile: JobProfile,
    *,
    name: str,
    script: str,
    args: list[str] | tuple[str, ...] = (),
    image: str | None = None,
    nodes: int | None = None,
    env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A ``TrainJob`` running ``torchrun SCRIPT ARGS`` on ``nodes`` nodes (all of the pool by default).

    Every node requests all its GPUs and every fabric device (requests = limits, as extended
    resources require) and carries the fabric's NCCL environment; ``env`` adds to or overrides it.

    Raises:
        ValueError: a bad job name, an empty script, or a node count outside 1..pool size.
    """
    if not _NAME.match(name) or len(name) > 63:
        raise ValueError(f"job name {name!r} is not an RFC 1035 label of at most 63 characters")
    if not script:
        raise ValueError("the job needs a script to run")
    count = profile.nodes if nodes is None else nodes
    if not 1 <= count <= profile.nodes:
        raise ValueError(f"nodes must be between 1 and {profile.nodes} (the GPU pool), not {count}")
    merged = {**profile.env, **(env or {})}
    resources = dict(profile.resources)
    spec: dict[str, Any] = {
        "runtimeRef": {"name": profile.runtime, "apiGroup": "trainer.kubeflow.org", "kind": "ClusterTrainingRuntime"},
        "trainer": {
            "image": image or profile.image,
            "command": ["torchrun"],
            "args": [script, *args],
            "numNodes": count,
            "resourcesPerNode": {"requests": dict(resources), "limits": dict(resources)},
            "env": [{"name": k, "value": v} for k, v in sorted(merged.items())],
        },
    }
    if profile.annotations:
        # Fabric devices that are pod interfaces, not extended resources (GKE multi-networking): the job
        # itself names every GPU NIC through a runtime patch (Trainer v2.2 RuntimePatches: pod metadata).
        spec["runtimePatches"] = [
            {
                "manager": PATCH_MANAGER,
                "trainingRuntimeSpec": {
                    "template": {
                        "spec": {
                            "replicatedJobs": [
                                {
                                    "name": NODE,
                                    "template": {
                                        "spec": {"template": {"metadata": {"annotations": dict(profile.annotations)}}}
                                    },
                                }
                            ]
                        }
                    }
                },
            }
        ]
    return {
        "apiVersion": API_VERSION,
        "kind": "TrainJob",
        "metadata": {"name": name, "namespace": profile.namespace, "labels": {QUEUE_LABEL: profile.queue}},
        "spec": spec,
    }


def to_yaml(doc: dict[str, Any]) -> str:
    """One YAML document, keys in the order built (what ``kubectl apply -f -`` reads)."""
    return yaml.safe_dump(doc, sort_keys=False, default_flow_style=False)


def requested(doc: dict[str, Any]) -> dict[str, str]:
    """The per-node limits of a ``TrainJob`` (for checks and summaries)."""
    return dict(doc["spec"]["trainer"]["resourcesPerNode"]["limits"])


def pod_annotations(doc: dict[str, Any]) -> dict[str, str]:
    """The pod annotations a ``TrainJob`` patches into its runtime (GKE pod networks), if any."""
    out: dict[str, str] = {}
    for patch in doc["spec"].get("runtimePatches") or []:
        for job in patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]:
            out.update(job["template"]["spec"]["template"]["metadata"].get("annotations") or {})
    return out
