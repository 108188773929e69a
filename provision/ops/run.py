"""``provision run``: an ephemeral cluster around one command, as one step of a CI job.

    $ provision run aws-p5-ci --max-usd 300 --ttl 2h -- pytest tests/multinode
    $ provision run aws-p5-ci --on-cluster -- nvidia-smi -L

1. **Price and refuse** before anything exists: the plan's projected cost over ``--max-usd`` (or
   a cluster without a lifetime or a cap) is a ``BudgetError``, exit 3.
2. **Up** on a stack of its own (:func:`provision.ops.ephemeral.ephemeral_cluster`).
3. **Run** the command locally with the cluster's outputs in its environment
   (:func:`outputs_env`), or with ``--on-cluster`` on the nodes over SSH (streamed, prefixed).
4. **Pass the exit code through** (on the cluster: the worst node's).
5. **Across interruptions** (``--restart-on-interruption N``): when the command fails and a node was
   replaced or cannot be reached (spot preemption, a failed GPU repaired), the cluster is brought up
   again (the spec's failover list applies, as for ``up``), the nodes are prepared again and the
   command runs again with ``PROVISION_RESTART_COUNT`` one higher, at most N times. A plain failure
   (every node there) ends the run as before.
6. **Save the last checkpoint** (``--save-checkpoint``): after the command, whatever its exit code, the newest
   entry of ``$PROVISION_CHECKPOINT_DIR`` is copied where it outlives the cluster: the folder the filesystem's
   object-store link exports (:mod:`provision.ops.checkpoints`). A spec that keeps nothing is refused first.
7. **Always down**: on success, failure, Ctrl-C and SIGTERM (the child gets the signal too and
   is waited for; the teardown then runs). An interrupted run exits 130.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from provision.planning.launch import export_lines

if TYPE_CHECKING:
    from provision.ops.cluster import Cluster
    from provision.ops.exec import LineCallback


def outputs_env(cluster: Cluster, folder: Path) -> dict[str, str]:
    """What a local command gets: the stack, head node, hosts, and files for the hostfile, ssh config and outputs.

    ``PROVISION_STACK``, ``PROVISION_CLUSTER``, ``PROVISION_HEAD_NODE``, ``PROVISION_NODE_IPS``
    (comma-separated, by rank), ``PROVISION_HOSTFILE``, ``PROVISION_SSH_CONFIG`` (``ssh -F``),
    ``PROVISION_OUTPUTS`` (all outputs as JSON), ``PROVISION_NCCL_ENV`` (``export`` lines to source).
    """
    from provision.ops.access import write_ssh_config

    outputs = cluster.outputs
    folder.mkdir(parents=True, exist_ok=True)
    hostfile = folder / "hostfile"
    hostfile.write_text(str(outputs.get("hostfile") or ""), encoding="utf-8")
    doc = folder / "outputs.json"
    doc.write_text(json.dumps(outputs, indent=1, default=str), encoding="utf-8")
    nccl = folder / "nccl.env"
    nccl.write_text(export_lines(dict(outputs.get("nccl_env") or {})), encoding="utf-8")
    return {
        "PROVISION_STACK": cluster.stack,
        "PROVISION_CLUSTER": cluster.spec.name,
        "PROVISION_MOCK": "1" if cluster.mock else "0",
        "PROVISION_HEAD_NODE": str(outputs.get("head_node") or ""),
        "PROVISION_NODE_IPS": ",".join(outputs.get("hosts") or []),
        "PROVISION_HOSTFILE": str(hostfile),
        "PROVISION_SSH_CONFIG": str(write_ssh_config(cluster)),
        "PROVISION_OUTPUTS": str(doc),
        "PROVISION_NCCL_ENV": str(nccl),
    }


def run_local(command: Sequence[str], env: dict[str, str]) -> int:
    """Run ``command`` with ``env`` added; its exit code (128+N when a signal ended it).

    The command runs in a session and process group of its own (``setsid``), and its lifetime is the
    cluster's: on Ctrl-C or
    SIGTERM (turned into ``KeyboardInterrupt`` by the ephemeral block) the whole group is sent SIGTERM,
    waited for (10 s, then killed), and the interrupt re-raised for the teardown; when the command ends,
    what it left running in the background gets SIGTERM too. Signalling only the child left its own
    children (a shell's ``sleep``, a launcher's workers) running, holding the caller's output open, after
    the cluster they talk to was gone. A Ctrl-C at the terminal reaches ``provision`` (the foreground
    group), which passes it on as that SIGTERM.
    """
    proc = subprocess.Popen(list(command), env={**os.environ, **env}, start_new_session=True)  # own group (3.10 too)
    try:
        code = proc.wait()
    except KeyboardInterrupt:
        _signal_group(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            _signal_group(proc.pid, signal.SIGKILL)
            proc.wait()
        _signal_group(proc.pid, signal.SIGKILL)  # stragglers that outlived their parent's SIGTERM
        raise
    _signal_group(proc.pid, signal.SIGTERM)
    return 128 - code if code < 0 else code


def _signal_group(pgid: int, signum: int) -> None:
    """Send ``signum`` to process group ``pgid``, if any member is left."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def run(
    target: Any,
    command: Sequence[str],
    *,
    max_usd: float | None = None,
    ttl: str | None = None,
    mock: bool = False,
    on_cluster: bool = False,
    nodes: str = "all",
    root: Path | None = None,
    display: str = "auto",
    on_line: LineCallback | None = None,
    announce: Callable[[str], None] | None = None,
    restart_on_interruption: int = 0,
    save_checkpoint: bool = False,
) -> int:
    """Bring up a bounded cluster, run ``command``, tear the cluster down; returns the command's exit code.

    ``restart_on_interruption``: how often the command may run again after a node was lost (module docs, 5).
    ``save_checkpoint``: copy the newest checkpoint out before the teardown (module docs, 6).

    Raises:
        SpecError, BudgetError: before anything is created (exit 2 / 3).
        CloudError: ``up`` or the teardown failed (what ``up`` created is torn down first).
        KeyboardInterrupt: Ctrl-C or SIGTERM, after the teardown.
    """
    from provision.ops.ephemeral import ephemeral_cluster

    if save_checkpoint:
        _check_saving(target, root)
    with ephemeral_cluster(target, max_cost_usd=max_usd, ttl=ttl, mock=mock, root=root, display=display) as cluster:
        if announce:
            announce(f"cluster {cluster.spec.name} (stack {cluster.stack}) is up; running {' '.join(command)}")
        code = _run_with_restarts(cluster, command, on_cluster, nodes, on_line, announce, restart_on_interruption)
        if save_checkpoint:
            _save(cluster, announce)
        return code


def _check_saving(target: Any, root: Path | None) -> None:
    """Refuse ``--save-checkpoint`` for a spec that keeps nothing, before anything exists."""
    from provision.ops.checkpoints import save_problems
    from provision.spec.errors import SpecError
    from provision.spec.loading import resolve_target

    spec, _ = resolve_target(target, Path(root) if root else None)
    problems = save_problems(spec)
    if problems:
        raise SpecError(problems=problems)


def _save(cluster: Cluster, announce: Callable[[str], None] | None) -> None:
    """Copy the newest checkpoint out (a failure is said, not raised: the teardown must still run)."""
    from provision.ops.checkpoint_nodes import save_checkpoint

    saved = save_checkpoint(cluster)
    if announce is None:
        return
    if saved["error"]:
        announce(f"no checkpoint saved: {saved['error']}")
    else:
        where = f", exported to {saved['uri']}" if saved["uri"] else " (on the kept filesystem)"
        announce(f"checkpoint saved: {saved['saved']}{where}")


def _run_with_restarts(
    cluster: Cluster,
    command: Sequence[str],
    on_cluster: bool,
    nodes: str,
    on_line: LineCallback | None,
    announce: Callable[[str], None] | None,
    restart_on_interruption: int,
) -> int:
    """The command's attempts (module docs, 5); the last attempt's exit code."""
    restarts = 0
    while True:
        started = time.time()
        code, unreachable = _attempt(cluster, command, on_cluster, nodes, on_line, restarts)
        if code == 0 or restarts >= restart_on_interruption:
            return code
        from provision.ops.jobs.recover import replaced_nodes

        lost = sorted(set(unreachable) | set(replaced_nodes(cluster, started)))
        if not lost:
            return code
        restarts += 1
        if announce:
            names = ", ".join(f"{cluster.spec.name}-{r}" for r in lost)
            announce(
                f"{names} was interrupted (exit code {code}); bringing the cluster back and running again "
                f"(restart {restarts} of {restart_on_interruption})"
            )
        if not cluster.mock:
            cluster.refresh()  # the cloud's view first: a preempted VM is gone from it
        cluster.up(yes=True)
        from provision.ops.access import ssh_dir

        for marker in ssh_dir(cluster).glob("prepared-*"):  # the new node is prepared on the next run
            marker.unlink(missing_ok=True)


def _attempt(
    cluster: Cluster,
    command: Sequence[str],
    on_cluster: bool,
    nodes: str,
    on_line: LineCallback | None,
    restarts: int,
) -> tuple[int, list[int]]:
    """Run the command once: its exit code and the ranks that could not be reached (``--on-cluster``)."""
    import shlex
    import tempfile

    from provision.ops.exec import run_on_nodes, worst_exit

    if on_cluster:
        line = f"export PROVISION_RESTART_COUNT={restarts}; {shlex.join(command)}"
        results = run_on_nodes(cluster, line, nodes=nodes, on_line=on_line)
        lost = [r.rank for r in results if r.error and "timed out" not in r.error]  # unreachable, not slow
        return worst_exit(results), lost
    with tempfile.TemporaryDirectory(prefix="provision-run-") as tmp:
        env = {**outputs_env(cluster, Path(tmp)), "PROVISION_RESTART_COUNT": str(restarts)}
        sys.stdout.flush()
        return run_local(command, env), []
