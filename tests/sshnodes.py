"""Real SSH servers on 127.0.0.1 standing in for a cluster's nodes (asyncssh), for exec / launch tests.

Each node is an asyncssh server with its own host key that accepts one client key and runs every
command with ``bash -c`` in a node folder, with ``PROVISION_TEST_NODE=<rank>``, ``HOME`` set to that
folder and ``PROVISION_ROOT`` to its ``root/`` (where the node's ``/etc/ssh`` host key is); stdin,
stdout, stderr and the exit status pass through.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncssh


@dataclass
class FakeNodes:
    ports: list[int]
    client_key: Path
    host_keys: list[str]
    homes: list[Path]
    loop: asyncio.AbstractEventLoop
    servers: list[Any] = field(default_factory=list)
    #: Commands each node ran, in order.
    commands: list[list[str]] = field(default_factory=list)
    #: Commands still running (a client that gave up does not stop them, as under sshd without a tty).
    running: set[asyncio.subprocess.Process] = field(default_factory=set)


async def _handle(
    process: Any, rank: int, home: Path, log: list[str], running: set[asyncio.subprocess.Process]
) -> None:
    command = process.command or "true"
    log.append(command)
    env = {**os.environ, "HOME": str(home), "PROVISION_TEST_NODE": str(rank), "PROVISION_ROOT": str(home / "root")}
    proc = await asyncio.create_subprocess_exec(
        "bash",
        "-c",
        command,
        cwd=home,
        env=env,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,  # its own process group, which the fixture kills at the end
    )
    running.add(proc)

    async def feed() -> None:
        assert proc.stdin is not None
        try:
            async for chunk in process.stdin:
                proc.stdin.write(chunk.encode() if isinstance(chunk, str) else chunk)
                await proc.stdin.drain()
        except (asyncssh.Error, BrokenPipeError, ConnectionResetError):
            pass
        proc.stdin.close()

    async def drain(src: Any, dst: Any) -> None:
        while True:
            data = await src.read(4096)
            if not data:
                break
            dst.write(data)

    try:
        await asyncio.gather(feed(), drain(proc.stdout, process.stdout), drain(proc.stderr, process.stderr))
        process.exit(await proc.wait())
    finally:
        running.discard(proc)


@contextmanager
def fake_nodes(tmp_path: Path, count: int) -> Iterator[FakeNodes]:
    """``count`` SSH servers on 127.0.0.1 (background event loop); yields ports, the client key and host keys."""
    client = asyncssh.generate_private_key("ssh-ed25519")
    key_path = tmp_path / "client_key"
    key_path.write_bytes(client.export_private_key())
    key_path.chmod(0o600)
    authorized = asyncssh.import_authorized_keys(client.export_public_key().decode())
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    nodes = FakeNodes([], key_path, [], [], loop)

    async def start() -> None:
        for rank in range(count):
            host_key = asyncssh.generate_private_key("ssh-ed25519")
            home = tmp_path / f"node{rank}"
            home.mkdir()
            pub = host_key.export_public_key().decode()
            (home / "root" / "etc" / "ssh").mkdir(parents=True)
            (home / "root" / "etc" / "ssh" / "ssh_host_ed25519_key.pub").write_text(pub)
            log: list[str] = []

            def factory(process: Any, rank: int = rank, home: Path = home, log: list[str] = log) -> Any:
                return _handle(process, rank, home, log, nodes.running)

            server = await asyncssh.listen(
                "127.0.0.1",
                0,
                server_host_keys=[host_key],
                authorized_client_keys=authorized,
                process_factory=factory,
                encoding=None,
            )
            nodes.servers.append(server)
            nodes.ports.append(server.sockets[0].getsockname()[1])
            nodes.host_keys.append(host_key.export_public_key().decode().strip())
            nodes.homes.append(home)
            nodes.commands.append(log)

    asyncio.run_coroutine_threadsafe(start(), loop).result(30)
    try:
        yield nodes
    finally:

        async def stop() -> None:
            for s in nodes.servers:
                s.close()
                await s.wait_closed()
            # Commands a client gave up on: killed with their children, and their handlers let finish, so no
            # process outlives the test and no subprocess transport outlives this loop.
            for proc in list(nodes.running):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
            handlers = asyncio.all_tasks() - {asyncio.current_task()}
            if handlers:
                await asyncio.wait(handlers, timeout=10)

        asyncio.run_coroutine_threadsafe(stop(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
