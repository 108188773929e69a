"""Jobs on a Slurm cluster: ``sbatch`` submits, ``squeue`` says what is alive, ``scancel`` cancels.

One job is one Slurm batch job over all the cluster's nodes (``--exclusive``); its batch script runs
the job's ranks as one ``srun`` step, one task per node, each the same rank script
(:func:`~provision.ops.jobs.units.rank_script`) the other backends run, so the job's files are the
same (``job.json``, ``rank-R.sh``, ``rank-R.log``, ``.started``, ``.exit``, ...; see
:mod:`provision.ops.jobs.model`), plus ``batch.sh``, ``slurm.jobid`` and Slurm's own ``slurm-JOBID.out``.
A failed step is run again up to ``max_restarts`` times. The job folder is on the filesystem every
node shares (``<mount>/provision/jobs/ID``): Slurm writes each rank's log where the rank runs.

Every command runs through a :class:`Runner`: on a real cluster, over SSH on the login node
(:class:`SshRunner`); on a mocked cluster or in tests, here against a local Slurm (:class:`LocalRunner`).
Commands: sbatch(1) https://slurm.schedmd.com/sbatch.html, srun(1) https://slurm.schedmd.com/srun.html,
squeue(1) https://slurm.schedmd.com/squeue.html, scancel(1) https://slurm.schedmd.com/scancel.html.
"""

from __future__ import annotations

import base64
import os
import re
import shlex
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from provision.ops.jobs.backend import LogCallback
from provision.ops.jobs.model import STATUS_FILES, JobSpec, JobStatus, rank_status
from provision.ops.jobs.systemd import parse_status
from provision.ops.jobs.units import RESTART_SEC, rank_script
from provision.spec.errors import CloudError, UnsupportedError

#: Bytes of a log read per round trip (logs stream with bounded memory).
CHUNK = 1 << 20
#: How long ``cancel`` waits for Slurm to end the job (KillWait is 30 s in the rendered slurm.conf).
CANCEL_WAIT_S = 90.0
#: Seconds between two looks at a followed job (its state, then its logs' new bytes: round trips to the login node).
FOLLOW_POLL_S = 1.0
#: Seconds between two looks at a cancelled job until Slurm has ended it.
CANCEL_POLL_S = 0.5
#: A job Slurm no longer lists (it forgets an ended job after MinJobAge, 300 s by default).
GONE = "GONE"
#: squeue's states of a job that ended ("JOB STATE CODES" in https://slurm.schedmd.com/squeue.html); any
#: other state (PENDING, CONFIGURING, RUNNING, COMPLETING, SUSPENDED, REQUEUED, ...) is still alive.
ENDED = frozenset(
    {
        GONE,
        "BOOT_FAIL",
        "CANCELLED",
        "COMPLETED",
        "DEADLINE",
        "FAILED",
        "NODE_FAIL",
        "OUT_OF_MEMORY",
        "PREEMPTED",
        "REVOKED",
        "TIMEOUT",
    }
)

#: Per job folder under ``$1``: the small files as ``F <job> <name> <base64>`` and the Slurm job's
#: state as ``A <job> <STATE>``: ``GONE`` once Slurm no longer knows the job (``Invalid job id``), ``UNKNOWN``
#: when squeue could not answer (a busy or restarting slurmctld), which reads as still alive, never as ended.
#: squeue is asked before the files are read: a job that ends between the two reads then shows its rank's
#: ``exit`` file (written before the step ends), never "ended without an exit code" (read as lost, failed).
#: ``$1`` is the jobs root; ``$2``, when given, the one job to read (a followed or cancelled job is looked at
#: every poll: one squeue for it, not one for every job the cluster still has a folder of).
STATUS_SCRIPT = r"""J="$1"; [ -d "$J" ] || exit 0
for d in "$J"/${2:-*}/; do id=$(basename "$d"); [ -f "$d/job.json" ] || continue
  s=GONE
  if [ -s "$d/slurm.jobid" ]; then
    if o=$(squeue -h -j "$(cat "$d/slurm.jobid")" -o %T 2>&1); then s=$(printf '%s\n' "$o" | head -n 1); s=${s:-GONE}
    else case "$o" in *"Invalid job id"*) s=GONE ;; *) s=UNKNOWN ;; esac; fi
  fi
  for f in "$d"job.json "$d"cancelled "$d"rank-*.started "$d"rank-*.pid "$d"rank-*.restarts "$d"rank-*.exit; do
    [ -f "$f" ] && printf 'F %s %s %s\n' "$id" "$(basename "$f")" "$(head -c 65536 "$f" | base64 -w0)"
  done
  printf 'A %s %s\n' "$id" "$s"
done"""


@dataclass(frozen=True)
class Ran:
    code: int
    stdout: str
    stderr: str


class Runner(Protocol):
    """Runs a shell line where the Slurm client commands work (the login node, or here)."""

    def __call__(self, line: str, *, stdin: str | None = None, timeout: float | None = 120) -> Ran: ...


class LocalRunner:
    """Runs lines on this machine with ``env`` (e.g. ``SLURM_CONF`` of a local Slurm)."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = dict(env)

    def __call__(self, line: str, *, stdin: str | None = None, timeout: float | None = 120) -> Ran:
        try:
            done = subprocess.run(  # noqa: S603  # bash, with a line this module wrote
                ["/bin/bash", "-c", line],
                input=stdin,
                capture_output=True,
                text=True,
                timeout=timeout,
                env=self.env,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return Ran(124, "", f"timed out after {timeout} s")
        return Ran(done.returncode, done.stdout, done.stderr)


class SshRunner:
    """Runs lines on one node of the cluster over its SSH (the login node: rank 0 until the controller
    is reachable as a node of its own)."""

    def __init__(self, cluster: Any, rank: int = 0) -> None:
        self.cluster, self.rank = cluster, rank

    def __call__(self, line: str, *, stdin: str | None = None, timeout: float | None = 120) -> Ran:
        from provision.ops.exec import run_on_nodes

        text = stdin
        (r,) = run_on_nodes(
            self.cluster, line, nodes=[self.rank], timeout=timeout, stdin=None if text is None else lambda _: text
        )
        return Ran(r.exit_code, r.stdout, r.error or r.stderr)


def batch_script(spec: JobSpec, folder: str, nodes: int, partition: str | None = None) -> str:
    """The ``sbatch`` script of ``spec``: the whole cluster, one ``srun`` step of one task per rank's node,
    run again (up to ``max_restarts`` times) when it fails and the job was not cancelled."""
    d = shlex.quote(folder)
    n = len(spec.ranks)
    part = f"#SBATCH --partition={partition}\n" if partition else ""
    return (
        "#!/bin/bash\n"
        f"#SBATCH --job-name=provision-{spec.id}\n"
        f"#SBATCH --nodes={nodes}\n"
        "#SBATCH --ntasks-per-node=1\n"
        "#SBATCH --exclusive\n"
        f"#SBATCH --output={folder}/slurm-%j.out\n"
        f"{part}"
        f"# provision job {spec.id} ({spec.kind}); written by `provision launch --detach`.\n"
        f"D={d}\n"
        "attempt=0\n"
        "while :; do\n"
        f"  srun --nodes={n} --ntasks={n} --ntasks-per-node=1 --kill-on-bad-exit=1 --open-mode=append "
        f'--output="$D/rank-%n.log" /bin/bash -c \'exec /bin/bash "$0/rank-$SLURM_NODEID.sh"\' "$D"\n'
        "  rc=$?\n"
        f'  if [ "$rc" -eq 0 ] || [ -e "$D/cancelled" ] || [ "$attempt" -ge {spec.max_restarts} ]; then\n'
        '    exit "$rc"\n'
        "  fi\n"
        f"  attempt=$((attempt + 1)); sleep {RESTART_SEC}\n"
        "done\n"
    )


def _records(files: dict[str, str]) -> str:
    return "".join(f"{p}\n{base64.b64encode(t.encode()).decode()}\n" for p, t in files.items())


class SlurmBackend:
    """A job as one Slurm batch job (see the module docs)."""

    name = "slurm"

    def __init__(self, cluster: Any, run: Runner, root: str, *, nodes: int, partition: str | None = None) -> None:
        self.cluster, self.run, self.root, self.nodes, self.partition = cluster, run, root, nodes, partition

    def job_dir(self, rank: int, job_id: str) -> str:
        return f"{self.root}/{job_id}"

    def _check(self, ran: Ran, what: str) -> Ran:
        if ran.code != 0:
            raise CloudError(f"{what} failed (exit {ran.code}): {ran.stderr.strip()[-500:]}")
        return ran

    def submit(self, spec: JobSpec, runtime: Any = None) -> None:
        """sbatch ``spec`` (the :class:`~provision.ops.jobs.backend.JobBackend` signature; ``runtime`` is not used:
        the batch step runs on the nodes as they are, a container through pyxis' ``srun --container-image``)."""
        folder = self.job_dir(0, spec.id)
        files = {
            f"{folder}/job.json": spec.to_json(),
            f"{folder}/batch.sh": batch_script(spec, folder, self.nodes, self.partition),
        }
        files.update({f"{folder}/rank-{r}.sh": rank_script(spec, r, folder) for r in spec.ranks})
        q = shlex.quote(folder)
        script = (
            f"set -eu; umask 022; mkdir -p {q}; "
            'while IFS= read -r p && IFS= read -r b; do printf %s "$b" | base64 -d > "$p.tmp"; mv "$p.tmp" "$p"; done; '
            f"cd {q}; j=$(sbatch --parsable batch.sh); printf '%s\\n' \"${{j%%;*}}\" > slurm.jobid"
        )
        self._check(self.run(f"bash -c {shlex.quote(script)}", stdin=_records(files)), f"sbatch of job {spec.id}")

    def _slurm_states(self, job_id: str | None = None) -> tuple[dict[str, dict[str, str]], dict[str, str]]:
        line = f"bash -c {shlex.quote(STATUS_SCRIPT)} status {shlex.quote(self.root)}"
        if job_id is not None and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", job_id):  # a folder name, never a glob
            line += f" {job_id}"
        ran = self._check(self.run(line), "squeue")
        return parse_status(ran.stdout)

    def statuses(self, job_id: str | None = None) -> list[JobStatus]:
        files, states = self._slurm_states(job_id)
        out = []
        for jid, names in files.items():
            if (job_id is not None and jid != job_id) or "job.json" not in names:
                continue
            spec = JobSpec.from_json(names["job.json"])
            state = states.get(jid, GONE)
            alive = state not in ENDED
            cancelled = "cancelled" in names or state == "CANCELLED"  # scancel'd from the login node too
            ranks = []
            for rank in spec.ranks:
                found = {k: names[f"rank-{rank}.{k}"] for k in STATUS_FILES if f"rank-{rank}.{k}" in names}
                ranks.append(rank_status(rank, found, alive=alive, cancelled=cancelled))
            out.append(JobStatus(spec, tuple(ranks)))
        return out

    def _alive(self, spec: JobSpec) -> bool:
        return any(s.spec.id == spec.id and s.state in ("pending", "running") for s in self.statuses(spec.id))

    def _chunk(self, path: str, offset: int) -> bytes:
        line = f"tail -c +{offset + 1} {shlex.quote(path)} 2>/dev/null | head -c {CHUNK} | base64 -w0"
        return base64.b64decode(self._check(self.run(line), f"reading {path}").stdout.strip() or b"")

    def logs(
        self, spec: JobSpec, ranks: Sequence[int], *, follow: bool, tail: int | None, on_line: LogCallback
    ) -> None:
        folder = self.job_dir(0, spec.id)
        state: dict[int, list[Any]] = {}
        for rank in ranks:
            path = f"{folder}/rank-{rank}.log"
            offset = 0
            if tail is not None:
                q = shlex.quote(path)
                ran = self.run(f"[ -f {q} ] && {{ wc -c < {q}; tail -n {int(tail)} {q}; }}")
                first, _, rest = ran.stdout.partition("\n")
                offset = int(first) if first.strip().isdigit() else 0
                for text in rest.splitlines():
                    on_line(rank, text)
            state[rank] = [path, offset, ""]
        while True:
            alive = follow and self._alive(spec)  # asked before reading: nothing written after is missed
            for rank, h in state.items():
                while True:
                    data = self._chunk(h[0], h[1])
                    h[1] += len(data)
                    *lines, h[2] = (h[2] + data.decode(errors="replace")).split("\n")
                    for text in lines:
                        on_line(rank, text)
                    if len(data) < CHUNK:
                        break
            if not alive:
                for rank, h in state.items():
                    if h[2]:
                        on_line(rank, h[2])
                return
            time.sleep(FOLLOW_POLL_S)

    def resume(self, spec: JobSpec, rank: int, restarts: int, runtime: Any = None) -> None:
        """Not done here: Slurm owns a job whose node failed (it drains the node and ends or requeues the job)."""
        from provision.spec.errors import UnsupportedError

        raise UnsupportedError(
            f"job {spec.id} runs under Slurm, which handles a failed node itself; "
            "to fix: submit it again (`provision launch TARGET --detach ...`) once `sinfo` shows the node back"
        )

    def cancel(self, spec: JobSpec) -> None:
        q = shlex.quote(self.job_dir(0, spec.id))
        self._check(
            self.run(f'touch {q}/cancelled && if [ -s {q}/slurm.jobid ]; then scancel "$(cat {q}/slurm.jobid)"; fi'),
            f"scancel of job {spec.id}",
        )
        end = time.monotonic() + CANCEL_WAIT_S
        while self._alive(spec) and time.monotonic() < end:
            time.sleep(CANCEL_POLL_S)


def slurm_backend(cluster: Any) -> SlurmBackend:
    """The Slurm backend of ``cluster``: a mocked cluster's jobs run on the local Slurm of
    :mod:`provision.ops.slurm_local` (started on first use), a real one's on its login node."""
    from provision.ops.access import cluster_hosts
    from provision.spec.slurm import SlurmSpec

    opts = cluster.spec.scheduler.slurm or SlurmSpec()
    nodes = len(cluster_hosts(cluster))
    if cluster.mock:
        from provision.ops.access import mock_env_files
        from provision.ops.slurm_local import mock_slurm
        from provision.planning.images import images_dir

        if nodes != 1:
            raise UnsupportedError(
                f"a mocked Slurm cluster runs its jobs on this machine's one slurmd, so it has one node "
                f"({cluster.spec.name} has {nodes}); to fix: set nodes: 1 for the --mock rehearsal"
            )
        local = mock_slurm(cluster)
        path, env = mock_env_files(cluster)[0]
        fakes = images_dir() / "fake-node" / "bin"
        run_env = {
            **os.environ,
            **local.env(),
            **env,
            "PROVISION_ENV_FILE": str(path),
            "PATH": os.pathsep.join([str(fakes), os.environ.get("PATH", "")]),
        }
        return SlurmBackend(cluster, LocalRunner(run_env), str(local.folder / "jobs"), nodes=local.nodes)
    mount = (cluster.outputs.get("shared_fs") or {}).get("mount_point")
    if not mount:
        raise CloudError(
            f"{cluster.spec.name} has no shared filesystem, where Slurm jobs keep their scripts and logs; "
            "to fix: add storage.shared to the spec, or run `provision launch` without --detach"
        )
    return SlurmBackend(
        cluster, SshRunner(cluster), f"{mount.rstrip('/')}/provision/jobs", nodes=nodes, partition=opts.partition
    )
