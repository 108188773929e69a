"""Run a command on a cluster's nodes in parallel: over SSH (asyncssh), or locally for a mocked cluster.

    >>> from provision import Cluster
    >>> from provision.ops.exec import run_on_nodes, worst_exit
    >>> results = run_on_nodes(Cluster("llm-train"), "nvidia-smi -L", nodes="all", timeout=60)
    >>> worst_exit(results)            # 0 when every node succeeded

* **Real**: one SSH connection per node through the cluster's generated ``ssh_config`` (its
  ``ProxyCommand`` / ``ProxyJump`` / ``IdentityFile``; see :mod:`provision.ops.access`), at most
  ``fanout`` at once, each bounded by ``timeout`` seconds. Host keys are pinned per cluster: the
  first connection to a node records its key under the node's alias, later ones must match.
* **Mock** (``cluster.mock``): the command runs locally once per node, through ``bash -c``, with
  that node's environment (``NODE_RANK``, ``MASTER_ADDR``, ... and ``PROVISION_ENV_FILE`` pointing at
  a local copy of its ``/etc/provision/env``), so launch scripts can be tested offline.

Each output line is passed to ``on_line(result, stream, line)`` as it arrives (the CLI prints it
prefixed with the node's name); then a result keeps only the last :data:`TAIL_LINES` lines per stream,
so memory stays bounded however much the nodes print. A node's exit code is the command's; a node that could not be
reached gets 255 (as ``ssh``), one that timed out 124 (as ``timeout``).
"""

from __future__ import annotations

import asyncio
import os
import shlex
import threading
import time
from collections import deque
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from provision.spec.errors import CloudError, Problem, SpecError

if TYPE_CHECKING:
    from provision.ops.access import Cluster

#: Exit codes for nodes without one of their own (OpenSSH's and coreutils timeout's conventions).
UNREACHABLE = 255
TIMED_OUT = 124
#: Connections opened at once by default: proxies (SSM, IAP) are processes; keep the laptop responsive.
DEFAULT_FANOUT = 32
#: Lines of each stream a node keeps in its :class:`NodeResult` when an ``on_line`` callback gets them all.
TAIL_LINES = 200
#: The longest line read at once from a local process (asyncio's default limit is 64 KiB).
_LINE_LIMIT = 1 << 20

T = TypeVar("T")
LineCallback = Callable[["NodeResult", str, str], None]


@dataclass
class NodeResult:
    """One node's run.

    Attributes:
        node: the node's ssh alias (``<cluster>-<rank>``).
        rank: its rank (0 = head node).
        host: its private IP.
        exit_code: the command's exit code; 255 unreachable, 124 timed out.
        stdout, stderr: what it printed: everything, or the last :data:`TAIL_LINES` lines when an
            ``on_line`` callback received every line (so a long run's output is not held in memory).
        error: why it could not run (unreachable, timed out), else ``None``.
    """

    node: str
    rank: int
    host: str
    exit_code: int = 0
    stdout: str = ""
    stderr: str = ""
    error: str | None = None
    seconds: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "rank": self.rank,
            "host": self.host,
            "exit_code": self.exit_code,
            "stdout": self.stdout,
            "stderr": self.stderr,
            "error": self.error,
            "seconds": round(self.seconds, 3),
        }


def worst_exit(results: Sequence[NodeResult]) -> int:
    """The exit code of the worst node: 0 only when all succeeded; else the largest non-zero code."""
    return max((r.exit_code for r in results), default=0)


def select_nodes(count: int, nodes: str | Sequence[int] = "all") -> list[int]:
    """Ranks for ``all``, ``head``, ``"0,2"`` or a list of ranks.

    Raises:
        SpecError: an unknown selector or a rank outside the cluster.
    """
    if isinstance(nodes, str):
        text = nodes.strip().lower()
        if text == "all":
            return list(range(count))
        if text == "head":
            return [0] if count else []
        try:
            ranks = [int(p) for p in text.split(",") if p.strip()]
        except ValueError:
            raise SpecError(
                problems=[Problem("--nodes", nodes, "is not all, head or a list of ranks", "use e.g. all, head or 0,2")]
            ) from None
    else:
        ranks = [int(r) for r in nodes]
    bad = [r for r in ranks if not 0 <= r < count]
    if bad or not ranks:
        raise SpecError(
            problems=[
                Problem("--nodes", nodes, f"names no node of a {count}-node cluster", f"use ranks 0..{count - 1}")
            ]
        )
    return sorted(set(ranks))


def run_on_nodes(
    cluster: Cluster,
    command: str | Sequence[str],
    *,
    nodes: str | Sequence[int] = "all",
    timeout: float | None = None,
    fanout: int = DEFAULT_FANOUT,
    on_line: LineCallback | None = None,
    stdin: Callable[[int], str] | None = None,
) -> list[NodeResult]:
    """Run ``command`` on the chosen nodes in parallel; blocks until every node finished or timed out.

    Args:
        cluster: a cluster that is up (or mocked and up).
        command: a shell line, or words (quoted for the node's shell).
        nodes: ``all``, ``head``, ``"0,2"`` or ranks.
        timeout: seconds per node (``None``: no limit).
        fanout: nodes at once.
        on_line: called with each line of output as it arrives.
        stdin: ``rank -> text`` fed to the command's standard input (for files to write).

    Returns:
        One :class:`NodeResult` per chosen node, by rank.

    Raises:
        CloudError: the cluster is not up. SpecError: a bad ``nodes`` selector.
    """
    from provision.ops import access

    line = command if isinstance(command, str) else shlex.join(command)
    hosts = access.cluster_hosts(cluster)
    ranks = select_nodes(len(hosts), nodes)
    results = [NodeResult(node=f"{cluster.spec.name}-{r}", rank=r, host=hosts[r]) for r in ranks]
    if cluster.mock:
        env_files = access.mock_env_files(cluster)
        runner = _local_runner(cluster, env_files)
    else:
        from provision.ops.hostkeys import pin_from_cloud

        known_hosts = access.known_hosts_path(cluster)
        pin_from_cloud(cluster, known_hosts)  # the cloud's keys before any first contact
        runner = _ssh_runner(access.write_ssh_config(cluster), known_hosts)
    sem_size = max(1, fanout)

    async def main() -> None:
        sem = asyncio.Semaphore(sem_size)

        async def one(result: NodeResult) -> None:
            async with sem:
                started = time.monotonic()
                data = stdin(result.rank) if stdin else None
                try:
                    await asyncio.wait_for(runner(result, line, data, on_line), timeout)
                except asyncio.TimeoutError:
                    result.exit_code, result.error = TIMED_OUT, f"timed out after {timeout:g} s"
                except (OSError, _ssh_errors()) as e:
                    result.exit_code, result.error = UNREACHABLE, f"cannot reach {result.node}: {e}"
                result.seconds = time.monotonic() - started

        await asyncio.gather(*(one(r) for r in results))
        # Let finished subprocess transports run their close callbacks before asyncio.run closes the loop.
        await asyncio.sleep(0.01)

    run_async(main())
    return results


def _ssh_errors() -> type[BaseException]:
    try:
        import asyncssh
    except ImportError:  # pragma: no cover - only without the ssh extra, where _ssh_runner raised already
        return OSError
    return asyncssh.Error


async def _pump(stream: Any, result: NodeResult, name: str, on_line: LineCallback | None) -> str:
    """Read ``stream`` line by line. With ``on_line`` each line goes there and only the last
    :data:`TAIL_LINES` are kept (bounded memory for long runs); without it, everything is kept."""
    chunks: deque[str] | list[str] = deque(maxlen=TAIL_LINES) if on_line is not None else []
    while True:
        try:
            raw = await stream.readline()
        except ValueError:  # a line longer than the stream's limit: take what is buffered as one line
            raw = await stream.read(_LINE_LIMIT)
        if not raw:
            break
        text = raw.decode(errors="replace") if isinstance(raw, bytes) else raw
        chunks.append(text)
        if on_line is not None:
            on_line(result, name, text.rstrip("\n"))
    return "".join(chunks)


def _local_runner(cluster: Cluster, env_files: dict[int, tuple[Path, dict[str, str]]]) -> Any:
    async def run(result: NodeResult, line: str, data: str | None, on_line: LineCallback | None) -> None:
        path, env = env_files[result.rank]
        proc = await asyncio.create_subprocess_exec(
            "bash",
            "-c",
            line,
            stdin=asyncio.subprocess.PIPE if data is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, **env, "PROVISION_ENV_FILE": str(path), "PROVISION_NODE": result.node},
            start_new_session=True,
            limit=_LINE_LIMIT,
        )
        try:
            if data is not None and proc.stdin is not None:
                proc.stdin.write(data.encode())
                await proc.stdin.drain()
                proc.stdin.close()
            out, err = await asyncio.gather(
                _pump(proc.stdout, result, "stdout", on_line), _pump(proc.stderr, result, "stderr", on_line)
            )
            result.stdout, result.stderr = out, err
            result.exit_code = await proc.wait()
        except asyncio.CancelledError:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
            raise

    return run


def _ssh_runner(config: Path, known_hosts: Path) -> Any:
    try:
        import asyncssh
    except ImportError:
        raise CloudError(
            "provision exec needs asyncssh. To fix: pip install 'provision[ssh]'", code="MissingDependency"
        ) from None
    from provision.ops.access import known_host_aliases, record_host_key

    lock = asyncio.Lock()

    async def run(result: NodeResult, line: str, data: str | None, on_line: LineCallback | None) -> None:
        known = result.node in known_host_aliases(known_hosts)
        async with asyncssh.connect(
            result.node, config=[str(config)], known_hosts=str(known_hosts) if known else None
        ) as conn:
            if not known:
                key = conn.get_server_host_key()
                if key is not None:
                    async with lock:
                        record_host_key(known_hosts, result.node, key.export_public_key().decode())
            proc = await conn.create_process(line, encoding="utf-8", errors="replace")
            try:
                if data is not None:
                    proc.stdin.write(data)
                proc.stdin.write_eof()
                out, err = await asyncio.gather(
                    _pump(proc.stdout, result, "stdout", on_line), _pump(proc.stderr, result, "stderr", on_line)
                )
                completed = await proc.wait()
            finally:
                proc.close()
            result.stdout, result.stderr = out, err
            status = completed.exit_status
            result.exit_code = UNREACHABLE if status is None else (status if status >= 0 else 128 + 9)

    return run


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion, also from inside a running event loop (a Jupyter cell): then in a thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as e:  # noqa: BLE001  # re-raised in the caller's thread
            box["error"] = e

    t = threading.Thread(target=work, name="provision-exec")
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]
