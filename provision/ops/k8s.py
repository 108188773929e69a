"""Training jobs on ``scheduler: kubernetes`` clusters: the kubeconfig, and a TrainJob built and submitted.

:func:`launch` is the ``--k8s`` submit path: ``provision k8s-launch TARGET -- SCRIPT ARGS`` today, and the
hook for ``provision launch TARGET --k8s -- SCRIPT ARGS`` (call ``launch(cluster, script, args, ...)``).
The job comes from the plan's job profile (:mod:`provision.clouds.k8s.jobs`): every node's GPUs and
fabric devices, the fabric's NCCL environment, the cluster's Kueue queue and training runtime.

Checkpoints: when the pods have the shared filesystem's claim, the job's env has ``PROVISION_CHECKPOINT_DIR``,
``<mount>/checkpoints/<cluster>`` as the pods see it (the VM path's folder,
:func:`provision.ops.checkpoints.pod_checkpoint_dir`), and torchrun starts through a POSIX shell that makes the
folder and sets ``PROVISION_RESUME_FROM`` to its newest entry, as a VM rank's script does
(:func:`provision.ops.checkpoints.resume_lines`). Every pod start runs it again, so a pod that Kubernetes
re-creates (the Job's ``backoffLimit``, a JobSet restart) resumes from the newest checkpoint. Trainer's torch
plugin gives torchrun its ``PET_*`` settings as environment variables, whatever the container's command is (it
looks at the command only for torchtune: kubeflow/trainer ``pkg/runtime/framework/plugins/torch/torch.go``).
Without a shared claim (and without ``checkpoint_dir``) the job runs ``torchrun`` as it is and no pod gets the
variables, as on VMs without a shared filesystem.

Submitting runs ``kubectl apply -f -`` with the cluster's kubeconfig (written to a private temporary
file; it holds no credential: GKE and EKS kubeconfigs authenticate through ``gke-gcloud-auth-plugin`` /
``aws eks get-token``). A mocked cluster does not submit from ``k8s-launch``: the job is returned (and printed)
only; the jobs backend (``launch --detach``) sends it to whatever ``kubectl`` is on ``PATH``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import Any

from provision.clouds.k8s import jobs
from provision.ops.checkpoints import pod_checkpoint_dir, resume_lines
from provision.spec.errors import CloudError, Problem, UnsupportedError

#: A cluster handle (provision.ops.cluster.Cluster, not imported: the cluster's job commands import this module).
Cluster = Any

Runner = Callable[..., "subprocess.CompletedProcess[str]"]
#: Labels on every TrainJob provision submits: the cluster's name and the job's id (what ``provision jobs`` lists
#: and ``logs`` / ``cancel`` take; :func:`provision.ops.jobs.model.new_job_id`, a valid label value).
CLUSTER_LABEL = "provision.dev/cluster"
JOB_ID_LABEL = "provision.dev/job-id"
#: The trainer's command when the pods get a checkpoint folder: ``sh -c LINES torchrun ARGS...`` (``$0`` is
#: ``torchrun``, the TrainJob's ``args`` are ``"$@"``).
SHELL = ("/bin/sh", "-c")


def _not_kubernetes(cluster: Cluster) -> UnsupportedError:
    return UnsupportedError(
        f"cluster {cluster.stack!r} runs no Kubernetes",
        [
            Problem(
                "scheduler.kind",
                cluster.spec.scheduler.kind,
                "is not kubernetes, so there is no kubeconfig and no job queue",
                "set scheduler: {kind: kubernetes} in the spec (GKE or EKS), or use `provision launch` on the VMs",
            )
        ],
    )


def kubeconfig(cluster: Cluster) -> str:
    """The cluster's kubeconfig (from the stack outputs).

    Raises:
        UnsupportedError: the spec has no Kubernetes scheduler (exit 2).
        CloudError: the cluster is not up.
    """
    if cluster.spec.scheduler.kind != "kubernetes":
        raise _not_kubernetes(cluster)
    k8s = cluster.outputs.get("kubernetes") or {}
    config = k8s.get("kubeconfig")
    if not config:
        raise CloudError(
            f"cluster {cluster.stack!r} has no kubeconfig: it is not up. To fix: run `provision up {cluster.stack}`"
            + (" --mock" if cluster.mock else "")
        )
    return str(config)


def build_job(
    cluster: Cluster,
    script: str,
    args: Sequence[str] = (),
    *,
    image: str | None = None,
    nodes: int | None = None,
    name: str | None = None,
    env: dict[str, str] | None = None,
    now: datetime | None = None,
    job_id: str | None = None,
    checkpoint_dir: str | None = None,
) -> dict[str, Any]:
    """The ``TrainJob`` for ``torchrun SCRIPT ARGS`` on this cluster (pure: nothing is sent), labelled with the
    cluster's name and ``job_id`` (a new one by default).

    ``checkpoint_dir``: the pods' checkpoint folder (``launch --detach --checkpoint-dir``, a path in the pods);
    by default the cluster's folder on the shared claim (module docstring), none without one.

    Raises:
        UnsupportedError: the spec has no Kubernetes scheduler, or the job's values are invalid (exit 2).
    """
    plan = cluster.plan()
    if plan.kubernetes is None:
        raise _not_kubernetes(cluster)
    job_name = name or jobs.job_name(plan.name, now or datetime.now(timezone.utc))
    profile = plan.kubernetes.job
    mount = profile.shared_mount if profile.shared_claim else None
    folder = checkpoint_dir or pod_checkpoint_dir(mount, cluster.spec.name)
    if folder:
        env = {**(env or {}), "PROVISION_CHECKPOINT_DIR": folder}
    try:
        doc = jobs.train_job(profile, name=job_name, script=script, args=list(args), image=image, nodes=nodes, env=env)
    except ValueError as e:
        raise UnsupportedError(f"cannot build the training job: {e}") from None
    if folder:
        trainer = doc["spec"]["trainer"]
        trainer["command"] = [*SHELL, resume_lines(folder) + 'exec torchrun "$@"\n', "torchrun"]
    from provision.ops.jobs.model import new_job_id

    doc["metadata"]["labels"] |= {CLUSTER_LABEL: plan.name, JOB_ID_LABEL: job_id or new_job_id()}
    return doc


def _need_kubectl() -> None:
    if shutil.which("kubectl") is None:
        raise UnsupportedError(
            "kubectl is not installed; to fix: install it (https://kubernetes.io/docs/tasks/tools/) "
            "or print the job with --print and apply it yourself"
        )


@contextmanager
def config_file(config: str) -> Iterator[str]:
    """``config`` in a private temporary file (mode 0600) for ``kubectl --kubeconfig``, removed afterwards."""
    fd, path = tempfile.mkstemp(prefix="provision-kubeconfig-", suffix=".yaml")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(config)
        os.chmod(path, 0o600)
        yield path
    finally:
        os.unlink(path)


def kubectl(
    cluster: Cluster, args: Sequence[str], *, input: str | None = None, run: Runner = subprocess.run
) -> subprocess.CompletedProcess[str]:
    """``kubectl ARGS`` against ``cluster`` with its kubeconfig (the answer, whatever its exit code).

    Raises:
        UnsupportedError: not a Kubernetes cluster, or kubectl is not installed (exit 2).
        CloudError: the cluster is not up.
    """
    config = kubeconfig(cluster)
    if run is subprocess.run:
        _need_kubectl()
    with config_file(config) as path:
        return run(
            ["kubectl", "--kubeconfig", path, *args],
            input=input,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )


@contextmanager
def kubectl_stream(cluster: Cluster, args: Sequence[str]) -> Iterator[subprocess.Popen[str]]:
    """``kubectl ARGS`` running, its output a pipe read line by line (bounded memory); stopped on exit."""
    config = kubeconfig(cluster)
    _need_kubectl()
    with config_file(config) as path:
        proc = subprocess.Popen(
            ["kubectl", "--kubeconfig", path, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
        )
        try:
            yield proc
        finally:
            if proc.poll() is None:
                proc.terminate()
            proc.wait()
            for pipe in (proc.stdout, proc.stderr):
                if pipe is not None:
                    pipe.close()


def submit(
    doc: dict[str, Any], config: str, *, run: Runner = subprocess.run, before: Sequence[dict[str, Any]] = ()
) -> str:
    """``kubectl apply`` the job with ``config`` (``before``: objects applied with it, first); kubectl's output.

    Raises:
        UnsupportedError: kubectl is not installed (exit 2, with how to install it).
        CloudError: kubectl refused the job (its message included).
    """
    if run is subprocess.run:
        _need_kubectl()
    with config_file(config) as path:
        done = run(
            ["kubectl", "--kubeconfig", path, "apply", "-f", "-"],
            input="---\n".join(jobs.to_yaml(d) for d in [*before, doc]),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    if done.returncode != 0:
        raise CloudError(f"kubectl apply failed: {(done.stderr or done.stdout).strip()}")
    return (done.stdout or "").strip()


def launch(
    cluster: Cluster,
    script: str,
    args: Sequence[str] = (),
    *,
    image: str | None = None,
    nodes: int | None = None,
    name: str | None = None,
    print_only: bool = False,
    run: Runner = subprocess.run,
    workdir: str | None = None,
    job_id: str | None = None,
    submit_mocked: bool = False,
    checkpoint_dir: str | None = None,
) -> dict[str, Any]:
    """Build the job and submit it (unless ``print_only``, or the cluster is mocked and not ``submit_mocked``).

    ``workdir``: a local folder every pod gets at ``/workspace`` and starts in (:mod:`provision.ops.k8s_workdir`).
    ``job_id``: the job's id label (a new one by default). ``submit_mocked``: a mocked cluster's job goes to
    whatever ``kubectl`` is on ``PATH`` too (the jobs backend; tests answer with a fake kubectl).
    ``checkpoint_dir``: the pods' checkpoint folder instead of the shared claim's (:func:`build_job`).

    Returns:
        ``{"job": <TrainJob>, "yaml": str, "submitted": bool, "kubectl": str | None, "requests_per_node": {...}}``.
    """
    doc = build_job(
        cluster, script, args, image=image, nodes=nodes, name=name, job_id=job_id, checkpoint_dir=checkpoint_dir
    )
    before = []
    if workdir:
        from pathlib import Path

        from provision.ops.k8s_workdir import attach

        before.append(attach(doc, Path(workdir).expanduser()))
    out: dict[str, Any] = {
        "job": doc,
        "objects": before,
        "yaml": "---\n".join(jobs.to_yaml(d) for d in [*before, doc]),
        "submitted": False,
        "kubectl": None,
        "requests_per_node": jobs.requested(doc),
    }
    if print_only or (cluster.mock and not submit_mocked):
        return out
    out["kubectl"] = submit(doc, kubeconfig(cluster), run=run, before=before)
    out["submitted"] = True
    return out
