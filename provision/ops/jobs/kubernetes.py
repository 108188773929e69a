"""Jobs on a ``scheduler: kubernetes`` cluster (GKE, EKS, AKS, ACK): a job is a Kubeflow ``TrainJob``.

``launch --detach`` (and ``k8s-launch`` / ``launch --k8s``) submit the TrainJob :func:`provision.ops.k8s.launch`
builds, labelled with the cluster's name and the job's id (:data:`~provision.ops.k8s.CLUSTER_LABEL`,
:data:`~provision.ops.k8s.JOB_ID_LABEL`); the cluster keeps the job, so nothing is kept here:

* ``jobs``: ``kubectl get trainjobs -l provision.dev/cluster=NAME -o json``, each job's state from its status
  conditions (:func:`train_job_state`);
* ``logs [-f] [--rank N]``: ``kubectl logs`` of the job's pods, streamed line by line; a rank is the pod's
  completion index in the ``node`` replicated job (Trainer's torch plugin gives node rank N to index N);
* ``cancel``: ``kubectl delete`` of the TrainJob (its JobSet and pods go with it, by owner reference) and of
  the ``--workdir`` ConfigMap submitted with it (:mod:`provision.ops.k8s_workdir`).

Every call runs kubectl with the cluster's kubeconfig (:func:`provision.ops.k8s.kubectl`). A mocked cluster
has no API server: its calls go to whatever ``kubectl`` is on ``PATH`` (the tests put a fake one there).
Sources: Trainer's TrainJob status (kubeflow/trainer ``pkg/apis/trainer/v1alpha1/trainjob_types.go``:
conditions ``Created``, ``Suspended``, ``Complete``, ``Failed``; ``jobsStatus[].{active,ready,succeeded,failed}``),
JobSet's pod labels (kubernetes-sigs/jobset ``api/jobset/v1alpha2/jobset_types.go``: ``jobset.sigs.k8s.io/
jobset-name``, ``jobset.sigs.k8s.io/replicatedjob-name``), Indexed Jobs' completion index label
(https://kubernetes.io/docs/reference/labels-annotations-taints/#batch-kubernetes-io-job-completion-index),
``kubectl logs`` (https://kubernetes.io/docs/reference/kubectl/generated/kubectl_logs/).
"""

from __future__ import annotations

import json
import re
import shlex
import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from provision.ops.jobs.backend import LogCallback
from provision.ops.jobs.model import JobSpec, JobState, JobStatus, RankStatus
from provision.spec.errors import CloudError, Problem, SpecError, UnsupportedError

if TYPE_CHECKING:
    from provision.planning.runtime_plan import RuntimePlan

#: The Trainer API's TrainJob resource (group-qualified, so no other ``trainjobs`` CRD answers).
TRAINJOBS = "trainjobs.trainer.kubeflow.org"
#: JobSet labels every pod of the TrainJob's JobSet (named as the TrainJob) and its replicated job.
JOBSET_LABEL = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB_LABEL = "jobset.sigs.k8s.io/replicatedjob-name"
#: An Indexed Job's pod: its completion index (label since Kubernetes 1.28; the annotation before).
INDEX_KEY = "batch.kubernetes.io/job-completion-index"
#: The container Trainer's torch plugin runs the trainer in (:data:`provision.clouds.k8s.jobs.NODE`).
CONTAINER = "node"
#: Characters of a log line read at once (a line without a newline cannot grow without bound).
LINE_CHARS = 1 << 16
#: Launchers a TrainJob runs: torchrun on every node (``--k8s`` is the same launcher).
K8S_KINDS = ("torchrun", "k8s")


def _time(text: str | None) -> float | None:
    """Epoch seconds of a Kubernetes timestamp (RFC 3339, ``2026-12-02T02:21:04Z``)."""
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _conditions(doc: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The TrainJob's conditions that are ``True``, by type."""
    found = (doc.get("status") or {}).get("conditions") or []
    return {str(c.get("type")): c for c in found if str(c.get("status")) == "True"}


def train_job_state(doc: Mapping[str, Any]) -> JobState:
    """The job's state from a TrainJob (``kubectl get -o json``).

    Being deleted: ``cancelled``. ``Complete``: ``succeeded``. ``Failed``: ``failed``. ``Suspended`` (Kueue holds a
    job suspended until it admits it): ``pending``. ``Running``, or a child Job with active or ready pods:
    ``running``. Otherwise (``Created``, or no status yet): ``pending``.
    """
    if (doc.get("metadata") or {}).get("deletionTimestamp"):
        return "cancelled"
    true = _conditions(doc)
    if "Complete" in true:
        return "succeeded"
    if "Failed" in true:
        return "failed"
    if "Suspended" in true:
        return "pending"
    children = (doc.get("status") or {}).get("jobsStatus") or []
    if "Running" in true or any((j.get("active") or 0) + (j.get("ready") or 0) > 0 for j in children):
        return "running"
    return "pending"


def job_status(doc: Mapping[str, Any], cluster: str) -> JobStatus:
    """A TrainJob as a job: its id label (the name without one), ``torchrun ARGS``, one rank per node."""
    from provision.ops.k8s import JOB_ID_LABEL, SHELL

    meta = doc.get("metadata") or {}
    trainer = (doc.get("spec") or {}).get("trainer") or {}
    args = tuple(str(a) for a in trainer.get("args") or ())
    command = list(trainer.get("command") or ["torchrun"])
    if tuple(command[: len(SHELL)]) == SHELL:  # torchrun behind the checkpoint folder's lines: ``$0`` is its name
        command = command[-1:]
    created = _time(meta.get("creationTimestamp")) or time.time()
    spec = JobSpec(
        id=str((meta.get("labels") or {}).get(JOB_ID_LABEL) or meta.get("name")),
        cluster=cluster,
        kind="torchrun",
        line=shlex.join([*command, *args]),
        ranks=tuple(range(int(trainer.get("numNodes") or 1))),
        command=args,
        created=created,
    )
    state = train_job_state(doc)
    true = _conditions(doc)
    end = true.get("Complete") or true.get("Failed")
    ended = _time(end.get("lastTransitionTime")) if end else None
    started = None if state == "pending" else created
    code = 0 if state == "succeeded" else None
    ranks = tuple(RankStatus(r, state, started, ended, code) for r in spec.ranks)
    return JobStatus(spec, ranks)


def pod_rank(pod: Mapping[str, Any]) -> int | None:
    """The node rank of one of the job's pods (its completion index), or ``None`` (not a trainer pod)."""
    meta = pod.get("metadata") or {}
    labels = meta.get("labels") or {}
    if labels.get(REPLICATED_JOB_LABEL, CONTAINER) != CONTAINER:
        return None
    index = labels.get(INDEX_KEY) or (meta.get("annotations") or {}).get(INDEX_KEY)
    return int(str(index)) if str(index).isdigit() else None


#: ``kubectl logs --prefix`` puts ``[pod/NAME/CONTAINER] `` before each line.
_PREFIX = re.compile(r"^\[pod/([^/\]]+)/[^\]]*\] ?")


class KubernetesBackend:
    """The jobs of a ``scheduler: kubernetes`` cluster, read from its API server through kubectl."""

    name = "kubernetes"

    def __init__(self, cluster: Any) -> None:
        self.cluster = cluster
        self.namespace = cluster.plan().kubernetes.job.namespace

    def _kubectl(self, *args: str, input: str | None = None) -> str:
        from provision.ops.k8s import kubectl

        done = kubectl(self.cluster, ["-n", self.namespace, *args], input=input)
        if done.returncode != 0:
            raise CloudError(f"kubectl {args[0]} failed: {(done.stderr or done.stdout).strip()}")
        return done.stdout or ""

    def job_dir(self, rank: int, job_id: str) -> str:
        """Nothing of a TrainJob is a folder: its pods' logs are the API server's."""
        return f"{TRAINJOBS}/{job_id}"

    def _train_jobs(self, job_id: str | None = None) -> list[dict[str, Any]]:
        from provision.ops.k8s import CLUSTER_LABEL, JOB_ID_LABEL

        selector = f"{CLUSTER_LABEL}={self.cluster.spec.name}"
        if job_id:
            selector += f",{JOB_ID_LABEL}={job_id}"
        out = self._kubectl("get", TRAINJOBS, "-l", selector, "-o", "json")
        try:
            return list(json.loads(out or "{}").get("items") or [])
        except json.JSONDecodeError as e:
            raise CloudError(f"kubectl get {TRAINJOBS} answered no JSON ({e})") from None

    def _name(self, spec: JobSpec) -> str:
        found = self._train_jobs(spec.id)
        if not found:
            raise CloudError(f"job {spec.id} is no longer a TrainJob of {self.cluster.spec.name} (deleted)")
        return str(found[0]["metadata"]["name"])

    def statuses(self, job_id: str | None = None) -> list[JobStatus]:
        return [job_status(doc, self.cluster.spec.name) for doc in self._train_jobs(job_id)]

    def submit(self, spec: JobSpec, runtime: RuntimePlan | None = None) -> None:
        raise UnsupportedError("a Kubernetes job is a TrainJob: submit it with provision.ops.jobs.kubernetes.submit")

    def resume(self, spec: JobSpec, rank: int, restarts: int, runtime: RuntimePlan | None = None) -> None:
        raise UnsupportedError("Kubernetes reschedules a TrainJob's pods itself (JobSet failure policy)")

    def pods(self, name: str) -> dict[str, int]:
        """The job's trainer pods: name to node rank."""
        out = self._kubectl("get", "pods", "-l", f"{JOBSET_LABEL}={name}", "-o", "json")
        found = json.loads(out or "{}").get("items") or []
        ranks = {str(p["metadata"]["name"]): pod_rank(p) for p in found}
        return {pod: rank for pod, rank in ranks.items() if rank is not None}

    def logs(
        self, spec: JobSpec, ranks: Sequence[int], *, follow: bool, tail: int | None, on_line: LogCallback
    ) -> None:
        """``kubectl logs --prefix`` of the chosen ranks' pods, one line at a time (``-f``: until they stop)."""
        from provision.ops.k8s import kubectl_stream

        name = self._name(spec)
        pods = {pod: rank for pod, rank in self.pods(name).items() if rank in ranks}
        if not pods:
            return  # no pod yet (queued, or its nodes are coming up): nothing has logged
        selector = f"{JOBSET_LABEL}={name},{INDEX_KEY} in ({','.join(str(r) for r in sorted(set(pods.values())))})"
        # With a selector kubectl shows only the last 10 lines unless told (--tail's default is -1 without one).
        args = ["-n", self.namespace, "logs", "-l", selector, "-c", CONTAINER, "--prefix"]
        args += [f"--tail={-1 if tail is None else tail}", f"--max-log-requests={len(pods)}"]
        if follow:
            args.append("--follow")
        with kubectl_stream(self.cluster, args) as proc:
            assert proc.stdout is not None and proc.stderr is not None
            while line := proc.stdout.readline(LINE_CHARS):
                match = _PREFIX.match(line)
                rank = pods.get(match.group(1)) if match else None
                if rank is None:  # a pod started after the listing, or a line kubectl wrote itself
                    rank = min(pods.values()) if len(set(pods.values())) == 1 else -1
                on_line(rank, line[match.end() if match else 0 :].rstrip("\n"))
            err = proc.stderr.read(LINE_CHARS)
            if proc.wait() != 0:
                raise CloudError(f"kubectl logs failed: {err.strip()}")

    def cancel(self, spec: JobSpec) -> None:
        """Delete the TrainJob (its JobSet and pods follow by owner reference) and its workdir ConfigMap."""
        from provision.ops.k8s_workdir import JOB_LABEL

        name = self._name(spec)
        self._kubectl("delete", TRAINJOBS, name, "--ignore-not-found")
        self._kubectl("delete", "configmaps", "-l", f"{JOB_LABEL}={name}", "--ignore-not-found")


def submit(
    cluster: Any,
    kind: str,
    words: Sequence[str],
    *,
    max_restarts: int = 0,
    checkpoint_dir: str | None = None,
    workdir: str | None = None,
) -> JobSpec:
    """Submit ``torchrun SCRIPT ARGS`` as a TrainJob labelled with a new job id; return at once.

    Raises:
        SpecError: a launcher other than torchrun, or ``--max-restarts`` (the VM supervisor's) (exit 2).

    ``checkpoint_dir``: the pods' checkpoint folder (default: the shared claim's, :func:`provision.ops.k8s.build_job`).
    """
    from provision.ops.jobs.model import new_job_id
    from provision.ops.k8s import launch

    problems = []
    if kind not in K8S_KINDS:
        problems.append(
            Problem(
                f"--{kind}",
                kind,
                "does not run on Kubernetes: a job there is a TrainJob, torchrun on every node",
                "use --torchrun (or --k8s)",
            )
        )
    if max_restarts:
        problems.append(
            Problem(
                "--max-restarts",
                max_restarts,
                "is the VM supervisor's; on Kubernetes the TrainJob's runtime re-creates failed pods",
                "drop it; a re-created pod gets $PROVISION_RESUME_FROM (the newest checkpoint) like a restarted rank",
            )
        )
    if problems:
        raise SpecError(problems=problems)
    job_id = new_job_id()
    out = launch(
        cluster,
        words[0],
        list(words[1:]),
        workdir=workdir,
        job_id=job_id,
        submit_mocked=True,
        checkpoint_dir=checkpoint_dir,
    )
    return job_status({**out["job"], "status": {}}, cluster.spec.name).spec
