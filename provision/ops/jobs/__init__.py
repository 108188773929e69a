"""Jobs as objects on the nodes' own process supervisor: submit detached, list, read logs, cancel.

    >>> from provision.ops import jobs
    >>> spec = jobs.submit(cluster, "torchrun", ["train.py", "--lr", "3e-4"], max_restarts=2)
    >>> [j.state for j in jobs.list_jobs(cluster)]          # read from the nodes, not from memory
    >>> jobs.cancel(cluster, spec.id)

The job's state lives on the nodes (see :mod:`provision.ops.jobs.model` for its files); the engine is
the nodes' own (:mod:`provision.ops.jobs.systemd` on VMs, :mod:`provision.ops.jobs.local` for a mocked
cluster); on a ``scheduler: kubernetes`` cluster a job is a TrainJob (:mod:`provision.ops.jobs.kubernetes`).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Any

from provision.ops.jobs.backend import Backend, LogCallback
from provision.ops.jobs.model import JobSpec, JobStatus, new_job_id, sort_jobs
from provision.planning.launch import RUNS_ON, SOURCE_ENV
from provision.spec.errors import Problem, SpecError, UnsupportedError

#: What the rank script exports for the job (passed into its container on real nodes).
JOB_ENV = (
    "PROVISION_JOB_ID",
    "PROVISION_JOB_RANK",
    "PROVISION_RESTART_COUNT",
    "PROVISION_CHECKPOINT_DIR",
    "PROVISION_RESUME_FROM",
)
#: ``kind`` of a job that runs the words after ``--`` on every node as they are (the env file sourced).
CMD = "cmd"

__all__ = ["CMD", "Backend", "JobSpec", "JobStatus", "backend", "cancel", "find", "list_jobs", "logs", "submit"]


def backend(cluster: Any) -> Backend:
    """The engine that runs ``cluster``'s jobs."""
    if cluster.spec.scheduler.kind == "slurm":
        from provision.ops.jobs.slurm import slurm_backend

        return slurm_backend(cluster)
    if cluster.spec.scheduler.kind == "kubernetes":
        from provision.ops.jobs.kubernetes import KubernetesBackend

        return KubernetesBackend(cluster)
    if cluster.mock:
        from provision.ops.jobs.local import LocalBackend

        return LocalBackend(cluster)
    from provision.ops.jobs.systemd import SystemdBackend

    return SystemdBackend(cluster)


def job_line(cluster: Any, kind: str, words: Sequence[str]) -> tuple[str, tuple[int, ...]]:
    """The shell line a job's ranks run and the ranks it runs on."""
    from provision.ops.access import cluster_hosts
    from provision.ops.launch import launch_command

    nodes = len(cluster_hosts(cluster))
    if kind == CMD:
        # One word is a shell line (as OpenSSH passes it); several are quoted as words.
        body = words[0] if len(words) == 1 else shlex.join(words)
        return f"{SOURCE_ENV} && {body}", tuple(range(nodes))
    cmd = launch_command(cluster, kind, words[0], *words[1:])
    return str(cmd["line"]), tuple(range(nodes)) if RUNS_ON[cmd["kind"]] == "all" else (0,)


#: Launchers that start the other nodes' ranks over SSH (pdsh, OpenMPI's ssh agent): on a node that runs jobs in
#: a container, the remote side lands on the node itself, outside the image that holds the launcher and the code.
SSH_LAUNCHERS = {
    "deepspeed": (
        "deepspeed's default pdsh runner starts `deepspeed.launcher.launch` on every other node over SSH "
        "(https://www.deepspeed.ai/getting-started/#resource-configuration-multi-node), and that SSH session runs on "
        "the node itself, outside the job container, where there is no DeepSpeed and no code; "
        "to fix: run DeepSpeed under torchrun, one launcher per node inside its container "
        "(`provision launch TARGET --torchrun --detach -- train.py --deepspeed --deepspeed_config ds.json`: "
        "deepspeed.initialize reads torchrun's RANK/WORLD_SIZE/MASTER_ADDR), "
        "or set `runtime: {kind: node}` to run pdsh in the node image's own Python"
    ),
    "mpirun": (
        "mpirun starts its daemons on the other nodes over SSH "
        "(https://docs.open-mpi.org/en/v5.0.x/launching-apps/ssh.html), which run on the node itself, outside the job "
        "container; to fix: use --torchrun (one launcher per node inside its container), "
        "or set `runtime: {kind: node}` to run mpirun in the node image's own environment"
    ),
}


def refuse_ssh_launcher(cluster: Any, kind: str) -> None:
    """Refuse a launcher whose remote ranks would start outside the job container (before anything runs).

    Raises:
        UnsupportedError: ``kind`` is deepspeed or mpirun on more than one node and the plan's runtime is a container.
    """
    runtime = cluster.plan().runtime
    if kind not in SSH_LAUNCHERS or runtime is None or runtime.kind != "container" or cluster.plan().nodes < 2:
        return
    raise UnsupportedError(
        f"--{kind} --detach cannot start its ranks inside the job container on {cluster.spec.name}",
        [Problem(f"--{kind}", "runtime: container", *SSH_LAUNCHERS[kind].split("; to fix: ", 1))],
    )


def submit(
    cluster: Any,
    kind: str,
    words: Sequence[str],
    *,
    max_restarts: int = 0,
    checkpoint_dir: str | None = None,
    workdir: str | None = None,
    label: str | None = None,
) -> JobSpec:
    """Start a job on ``cluster`` under its nodes' supervisor and return at once (the nodes are prepared first).

    Args:
        kind: a launcher (``torchrun``, ``deepspeed``, ``mpirun``, ``accelerate``) or :data:`CMD`.
        words: the script and its arguments (or the command).
        max_restarts: restarts of a failed rank. checkpoint_dir: a restarted rank's ``$PROVISION_RESUME_FROM``
            is this folder's newest entry (default: the cluster's folder on the shared filesystem,
            :func:`provision.ops.checkpoints.checkpoint_dir`, when it has one). workdir: the folder the
            ranks start in (on the nodes).
        label: what ``provision jobs`` shows for the job instead of its command (e.g. a generated script).
    """
    from provision.ops.launch import ensure_prepared

    if max_restarts < 0:
        raise SpecError(problems=[Problem("--max-restarts", max_restarts, "is negative", "use 0 or more")])
    if cluster.spec.scheduler.kind == "kubernetes":  # a TrainJob; ``workdir`` is a local folder sent with it
        from provision.ops.jobs import kubernetes

        return kubernetes.submit(
            cluster, kind, words, max_restarts=max_restarts, checkpoint_dir=checkpoint_dir, workdir=workdir
        )
    refuse_ssh_launcher(cluster, kind)
    if checkpoint_dir is None:
        from provision.ops.checkpoints import checkpoint_dir as shared_checkpoints

        checkpoint_dir = shared_checkpoints(cluster)
    line, ranks = job_line(cluster, kind, words)
    engine = backend(cluster)
    ensure_prepared(cluster)
    runtime = None
    if not cluster.mock:  # real nodes: the line runs in the plan's runtime (the mock's nodes are this machine)
        from provision.planning.runtime import container_line

        runtime = cluster.plan().runtime
        if runtime is not None and runtime.kind == "container":
            mount = (cluster.outputs.get("shared_fs") or {}).get("mount_point")
            mounts = [m for m in (mount, getattr(engine, "root", None), workdir, checkpoint_dir) if m]
            line = container_line(runtime, line, mounts, workdir, pass_env=JOB_ENV)
    spec = JobSpec(
        id=new_job_id(),
        cluster=cluster.spec.name,
        kind=kind,
        line=line,
        ranks=ranks,
        command=tuple(words),
        max_restarts=max_restarts,
        checkpoint_dir=checkpoint_dir,
        workdir=workdir,
        label=label,
    )
    engine.submit(spec, runtime)
    return spec


def list_jobs(cluster: Any) -> list[JobStatus]:
    """Every job on the cluster's nodes, newest first."""
    return sort_jobs(backend(cluster).statuses())


def find(cluster: Any, job_id: str | None = None) -> JobStatus:
    """The job ``job_id`` (or a unique prefix of it); without one, the newest job.

    Raises:
        SpecError: no such job (names the jobs there are).
    """
    jobs = list_jobs(cluster)
    if job_id is None and jobs:
        return jobs[0]
    matches = [j for j in jobs if job_id is not None and j.spec.id.startswith(job_id)]
    if len(matches) == 1:
        return matches[0]
    known = ", ".join(j.spec.id for j in jobs[:8]) or "none yet"
    rule = "matches several jobs" if matches else f"is not a job of {cluster.spec.name}"
    raise SpecError(
        problems=[Problem("JOB", job_id or "(newest)", rule, f"use one of: {known} (provision jobs TARGET)")]
    )


def logs(
    cluster: Any,
    job_id: str | None,
    on_line: LogCallback,
    *,
    rank: int | None = None,
    follow: bool = False,
    tail: int | None = None,
) -> JobStatus:
    """Send the job's per-rank log lines to ``on_line(rank, line)`` (``follow``: until its ranks stop)."""
    job = find(cluster, job_id)
    if rank is not None and rank not in job.spec.ranks:
        raise SpecError(
            problems=[
                Problem("--rank", rank, f"is not a rank of job {job.spec.id}", f"use one of {list(job.spec.ranks)}")
            ]
        )
    ranks = [rank] if rank is not None else list(job.spec.ranks)
    backend(cluster).logs(job.spec, ranks, follow=follow, tail=tail, on_line=on_line)
    return job


def cancel(cluster: Any, job_id: str) -> JobStatus:
    """Stop every rank of the job; returns its state read back afterwards (``cancelled`` once the job is gone,
    as a deleted TrainJob is)."""
    from dataclasses import replace

    job = find(cluster, job_id)
    engine = backend(cluster)
    engine.cancel(job.spec)
    gone = JobStatus(job.spec, tuple(replace(r, state="cancelled") for r in job.ranks))
    return next(iter(engine.statuses(job.spec.id)), gone)
