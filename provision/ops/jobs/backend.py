"""The job backend contract: where a job's ranks run and who supervises them.

A backend starts each rank under the nodes' own process supervisor and reads the job's state back
from the nodes; it never keeps state in this process. Implementations:

* :class:`~provision.ops.jobs.systemd.SystemdBackend`: VM nodes over SSH, one systemd unit per node;
* :class:`~provision.ops.jobs.local.LocalBackend`: a mocked cluster, each node a local process tree
  under :mod:`provision.ops.jobs.supervise` (systemd's unit semantics, for CI rehearsals).

* :mod:`~provision.ops.jobs.slurm`: ``sbatch`` / ``squeue`` / ``scancel`` on a Slurm cluster;
* :class:`~provision.ops.jobs.kubernetes.KubernetesBackend`: a TrainJob on GKE, EKS, AKS or ACK (kubectl).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from provision.ops.jobs.model import JobSpec, JobStatus

if TYPE_CHECKING:
    from provision.planning.runtime_plan import RuntimePlan

#: ``on_line(rank, line)``: one line of a rank's log.
LogCallback = Callable[[int, str], None]


class Backend(Protocol):
    """What ``launch --detach``, ``jobs``, ``logs`` and ``cancel`` need of an engine."""

    name: str

    def job_dir(self, rank: int, job_id: str) -> str:
        """The folder holding the job's files for ``rank`` (on the node, or the shared filesystem)."""
        ...

    def submit(self, spec: JobSpec, runtime: RuntimePlan | None = None) -> None:
        """Start every rank of ``spec`` under the supervisor and return without waiting for them
        (``runtime``: prepare it once per node first, e.g. pull the job image)."""
        ...

    def resume(self, spec: JobSpec, rank: int, restarts: int, runtime: RuntimePlan | None = None) -> None:
        """Start rank ``rank``, lost with its node, again on the node now behind that rank, as restart number
        ``restarts + 1`` (``$PROVISION_RESUME_FROM`` set), within what is left of ``spec.max_restarts``."""
        ...

    def statuses(self, job_id: str | None = None) -> list[JobStatus]:
        """Every job known to the nodes (or only ``job_id``), read from the nodes."""
        ...

    def logs(
        self, spec: JobSpec, ranks: Sequence[int], *, follow: bool, tail: int | None, on_line: LogCallback
    ) -> None:
        """Send the ranks' log lines to ``on_line``; with ``follow``, until every chosen rank stopped."""
        ...

    def cancel(self, spec: JobSpec) -> None:
        """Stop every rank of ``spec`` (and every process it started); it reads back as ``cancelled``."""
        ...
