"""Jobs on VM nodes: one systemd unit per node, over the cluster's SSH (``provision exec``'s fan-out).

``submit`` sends each node its files on stdin (``job.json``, ``rank-R.sh`` and the unit text of
:func:`~provision.ops.jobs.units.unit_text`), installs the unit under ``/run/systemd/system`` and starts
it without waiting (``systemctl start --no-block``). The job's folder is on the shared filesystem when
the cluster has one (``<mount>/provision/jobs/ID``: every rank's log readable from any node), else
``/var/lib/provision/jobs/ID`` on each node. ``jobs`` reads the small files and each unit's
``ActiveState`` back; ``logs`` is ``tail`` (``-F`` while the unit is active); ``cancel`` marks the job
and stops the units (systemd stops every process of a unit's control group).
"""

from __future__ import annotations

import base64
import shlex
from collections.abc import Sequence
from typing import Any

from provision.ops.jobs.backend import LogCallback
from provision.ops.jobs.model import STATUS_FILES, JobSpec, JobStatus, rank_status, unit_name
from provision.ops.jobs.units import rank_script, unit_text
from provision.spec.errors import CloudError

NODE_JOBS = "/var/lib/provision/jobs"
UNIT_DIR = "/run/systemd/system"
#: ActiveState values of a unit that runs, or will run again (auto-restart), per systemctl(1).
LIVE_STATES = ("active", "activating", "deactivating", "reloading")

#: Reads back, per job folder: the small files as ``F <job> <name> <base64>`` and the unit's ActiveState
#: as ``A <job> <state>``. ``$1`` is the jobs root. The unit's state is read before the files, so a rank that
#: ends between the two reads shows its ``exit`` file (written before the unit stops), never "lost".
STATUS_SCRIPT = r"""J="$1"; [ -d "$J" ] || exit 0
for d in "$J"/*/; do id=$(basename "$d"); [ -f "$d/job.json" ] || continue
  a=$(systemctl show -P ActiveState "provision-job-$id.service" 2>/dev/null || echo unknown)
  for f in "$d"job.json "$d"cancelled "$d"rank-*.started "$d"rank-*.pid "$d"rank-*.restarts "$d"rank-*.exit; do
    [ -f "$f" ] && printf 'F %s %s %s\n' "$id" "$(basename "$f")" "$(head -c 65536 "$f" | base64 -w0)"
  done
  printf 'A %s %s\n' "$id" "$a"
done"""


def parse_status(text: str) -> tuple[dict[str, dict[str, str]], dict[str, str]]:
    """``(files by job id by name, ActiveState by job id)`` from :data:`STATUS_SCRIPT`'s output."""
    files: dict[str, dict[str, str]] = {}
    active: dict[str, str] = {}
    for line in text.splitlines():
        words = line.split()
        if len(words) >= 3 and words[0] == "F":
            data = base64.b64decode(words[3]).decode(errors="replace") if len(words) > 3 else ""
            files.setdefault(words[1], {})[words[2]] = data
        elif len(words) == 3 and words[0] == "A":
            active[words[1]] = words[2]
    return files, active


def _records(files: dict[str, str]) -> str:
    return "".join(f"{p}\n{base64.b64encode(t.encode()).decode()}\n" for p, t in files.items())


class SystemdBackend:
    """Ranks as systemd units on the cluster's VM nodes (see the module docs)."""

    name = "systemd"

    def __init__(self, cluster: Any, *, sudo: str = "sudo -n") -> None:
        self.cluster, self.sudo = cluster, sudo
        mount = (cluster.outputs.get("shared_fs") or {}).get("mount_point")
        self.root = f"{mount.rstrip('/')}/provision/jobs" if mount else NODE_JOBS

    def job_dir(self, rank: int, job_id: str) -> str:
        return f"{self.root}/{job_id}"

    def _run(self, command: str, ranks: Sequence[int], **kwargs: Any) -> list[Any]:
        from provision.ops.exec import run_on_nodes

        return run_on_nodes(self.cluster, command, nodes=list(ranks), timeout=kwargs.pop("timeout", 120), **kwargs)

    def submit(self, spec: JobSpec, runtime: Any = None) -> None:
        self._start(spec, runtime, spec.ranks)

    def resume(self, spec: JobSpec, rank: int, restarts: int, runtime: Any = None) -> None:
        """Start lost rank ``rank`` again on its (new) node as restart ``restarts + 1``: its files written again
        (a node without a shared filesystem lost them), its unit limited to what is left of the restart budget."""
        self._start(spec, runtime, [rank], restarts=restarts)

    def _start(self, spec: JobSpec, runtime: Any, ranks: Sequence[int], restarts: int | None = None) -> None:
        from dataclasses import replace

        from provision.ops.access import login_user
        from provision.planning.runtime import runtime_setup_script

        user = login_user(self.cluster)
        container = runtime is not None and runtime.kind == "container"
        setup = runtime_setup_script(runtime) if runtime is not None and (container or runtime.setup) else None
        unit = unit_name(spec.id)
        folder = self.job_dir(0, spec.id)

        # A resumed rank's unit may restart it only as often as the job's budget has left.
        left = spec if restarts is None else replace(spec, max_restarts=max(0, spec.max_restarts - restarts - 1))

        def payload(rank: int) -> str:
            files = {
                f"{folder}/job.json": spec.to_json(),
                f"{folder}/rank-{rank}.sh": rank_script(spec, rank, folder),
                f"{UNIT_DIR}/{unit}": unit_text(left, rank, folder, None if container else user, setup),
            }
            if restarts is not None:  # the next attempt is restart number restarts + 1
                files[f"{folder}/rank-{rank}.restarts"] = f"{restarts}\n"
            return _records(files)

        script = (
            "set -eu; "
            f"install -d -m 0755 -o {shlex.quote(user)} {shlex.quote(folder)}; "
            'while IFS= read -r p && IFS= read -r b; do printf %s "$b" | base64 -d > "$p.tmp"; mv "$p.tmp" "$p"; done; '
            f"chown {shlex.quote(user)} {shlex.quote(folder)}/*; "
            f"systemctl daemon-reload && systemctl reset-failed {unit} 2>/dev/null; systemctl start --no-block {unit}"
        )
        results = self._run(f"{self.sudo} bash -c {shlex.quote(script)}".strip(), ranks, stdin=payload)
        failed = [r for r in results if not r.ok]
        if failed:
            raise CloudError(
                f"job {spec.id} did not start on "
                + ", ".join(f"{r.node} ({r.error or r.stderr.strip()[-300:]})" for r in failed)
            )

    def _read_status(self, ranks: Sequence[int]) -> dict[int, tuple[dict[str, dict[str, str]], dict[str, str]]]:
        line = f"bash -c {shlex.quote(STATUS_SCRIPT)} status {shlex.quote(self.root)}"
        return {r.rank: parse_status(r.stdout) for r in self._run(line, ranks) if r.ok}

    def statuses(self, job_id: str | None = None) -> list[JobStatus]:
        from provision.ops.access import cluster_hosts

        per_node = self._read_status(range(len(cluster_hosts(self.cluster))))
        specs: dict[str, JobSpec] = {}
        for files, _ in per_node.values():
            for jid, names in files.items():
                if (job_id is None or jid == job_id) and "job.json" in names:
                    specs.setdefault(jid, JobSpec.from_json(names["job.json"]))
        out = []
        for spec in specs.values():
            ranks = []
            for rank in spec.ranks:
                files, active = per_node.get(rank, ({}, {}))
                mine = files.get(spec.id, {})
                found = {k: mine[f"rank-{rank}.{k}"] for k in STATUS_FILES if f"rank-{rank}.{k}" in mine}
                alive = active.get(spec.id, "inactive") in LIVE_STATES
                ranks.append(rank_status(rank, found, alive=alive, cancelled="cancelled" in mine))
            out.append(JobStatus(spec, tuple(ranks)))
        return out

    def logs(
        self, spec: JobSpec, ranks: Sequence[int], *, follow: bool, tail: int | None, on_line: LogCallback
    ) -> None:
        from provision.planning.launch import SOURCE_ENV

        folder = shlex.quote(self.job_dir(0, spec.id))
        start = f"-n {int(tail)}" if tail is not None else "-n +1"
        # Each node's own rank (NODE_RANK from its env file); following stops once the unit is no longer live.
        log = f'{folder}/rank-"$NODE_RANK".log'
        if follow:
            live = "|".join(s for s in LIVE_STATES)
            line = (
                f"{SOURCE_ENV} && {{ tail {start} -F {log} 2>/dev/null & t=$!; "
                f"while case $(systemctl show -P ActiveState {unit_name(spec.id)}) in {live}) true;; *) false;; esac; "
                "do sleep 2; done; sleep 1; kill $t; }"
            )
            self._run(line, ranks, timeout=None, on_line=lambda r, _s, text: on_line(r.rank, text))
            return
        for rank in ranks:  # one rank's log after the other
            self._run(
                f"{SOURCE_ENV} && tail {start} {log}", [rank], timeout=None, on_line=lambda r, _s, t: on_line(r.rank, t)
            )

    def cancel(self, spec: JobSpec) -> None:
        folder = shlex.quote(self.job_dir(0, spec.id))
        line = f"{self.sudo} bash -c {shlex.quote(f'touch {folder}/cancelled; systemctl stop {unit_name(spec.id)}')}"
        results = self._run(line.strip(), spec.ranks)
        failed = [r for r in results if not r.ok]
        if failed:
            raise CloudError(
                f"job {spec.id} was not stopped on "
                + ", ".join(f"{r.node} ({r.error or r.stderr.strip()[-300:]})" for r in failed)
            )
