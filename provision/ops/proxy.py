"""``provision proxy azure-bastion``: an ssh ``ProxyCommand`` through Azure Bastion's native-client tunnel.

``az network bastion tunnel`` forwards a *local port* to a VM, but ssh's ``ProxyCommand`` needs a
command whose stdin/stdout is the connection. This starts the tunnel on a free local port, waits
until it accepts connections, and relays stdin/stdout to it; the tunnel stops with the session.

The target is the node's private IP (``--target-ip-address``: the Bastion has IP connect on) or,
for a host name, the resource id of the scale-set instance whose computer name it is
(``az vmss list-instances``). Source: Microsoft Learn, "Connect to a VM using Bastion and the Linux
native client" (``az network bastion tunnel``, Standard SKU, native client support).
"""

from __future__ import annotations

import contextlib
import io
import ipaddress
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from typing import BinaryIO

from provision.spec.errors import CloudError

#: Seconds to wait for the tunnel's local port.
TUNNEL_WAIT_S = 60.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _target(host: str, resource_group: str, scale_sets: Sequence[str]) -> list[str]:
    try:
        ipaddress.ip_address(host)
        return ["--target-ip-address", host]
    except ValueError:
        pass
    name = host.split(".", 1)[0]
    for entry in scale_sets:
        # ``group/name`` names a scale set in another group than the Bastion's (Azure: a retained file system puts
        # the network and the Bastion in the data group, the scale sets stay in the cluster's); neither an ARM
        # group nor a scale-set name may contain ``/``.
        group, _, vmss = entry.rpartition("/")
        query = f"[?osProfile.computerName=='{name}'].id | [0]"
        found = subprocess.run(
            ["az", "vmss", "list-instances", "-g", group or resource_group, "-n", vmss, "--query", query, "-o", "tsv"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
        if found:
            return ["--target-resource-id", found]
    raise CloudError(f"no scale-set instance named {name!r} in {', '.join(scale_sets) or 'the cluster'}")


def _die_with_parent() -> None:  # pragma: no cover - runs in the forked child
    """Linux: the tunnel gets SIGTERM when this relay dies, even by SIGKILL (asyncssh kills its ProxyCommand).

    ``prctl(PR_SET_PDEATHSIG, SIGTERM)``, prctl(2). Elsewhere a no-op: the signal handlers below cover
    SIGTERM and SIGHUP (OpenSSH's), not SIGKILL.
    """
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM))  # 1 = PR_SET_PDEATHSIG


def _exit_on_signal(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def _read_some(src: BinaryIO) -> bytes:
    """What ``src`` has, up to 64 KiB, in one read: ``read1`` of a buffered stream, ``read`` of a raw one (``b""``
    at its end)."""
    read1 = getattr(src, "read1", None)
    return bytes((read1(65536) if read1 is not None else src.read(65536)) or b"")


def _pump(src: BinaryIO | socket.socket, dst: BinaryIO | socket.socket) -> None:
    try:
        while True:
            data = src.recv(65536) if isinstance(src, socket.socket) else _read_some(src)
            if not data:
                break
            if isinstance(dst, socket.socket):
                dst.sendall(data)
            else:
                dst.write(data)
                dst.flush()
    except OSError:
        pass
    finally:
        if isinstance(dst, socket.socket):
            with contextlib.suppress(OSError):
                dst.shutdown(socket.SHUT_WR)


def azure_bastion(
    name: str,
    resource_group: str,
    host: str,
    port: int = 22,
    scale_sets: Sequence[str] = (),
    stdin: BinaryIO | None = None,
    stdout: BinaryIO | None = None,
) -> int:
    """Relay ``stdin``/``stdout`` to ``host:port`` through Bastion ``name``; returns when the session ends.

    Raises:
        CloudError: ``az`` is missing, the tunnel did not come up, or the host is unknown.
    """
    if shutil.which("az") is None:
        raise CloudError(
            "the Azure CLI (`az`) is needed to reach Azure nodes through Bastion. "
            "To fix: install it and run `az extension add --name bastion`"
        )
    local = _free_port()
    argv = ["az", "network", "bastion", "tunnel", "--name", name, "--resource-group", resource_group]
    argv += [*_target(host, resource_group, scale_sets), "--resource-port", str(port), "--port", str(local)]
    previous = {}
    if threading.current_thread() is threading.main_thread():  # the session's end runs `finally` below
        previous = {sig: signal.signal(sig, _exit_on_signal) for sig in (signal.SIGTERM, signal.SIGHUP)}
    linux = sys.platform.startswith("linux")
    tunnel = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=_die_with_parent if linux else None,  # noqa: PLW1509 - no threads exist yet in this process
    )
    try:
        deadline = time.monotonic() + TUNNEL_WAIT_S
        while True:
            if tunnel.poll() is not None:
                err = tunnel.stderr.read().decode(errors="replace") if tunnel.stderr else ""
                raise CloudError(f"az network bastion tunnel stopped: {err.strip()[-500:]}")
            try:
                conn = socket.create_connection(("127.0.0.1", local), timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise CloudError(f"the Bastion tunnel to {host} did not open within {TUNNEL_WAIT_S:g} s") from None
                time.sleep(0.2)
        conn.settimeout(None)
        with conn:
            # stdin unbuffered: the interpreter's exit (SIGTERM, SIGHUP) closes sys.stdin.buffer, which waits for the
            # lock a read in the pump thread holds, then aborts ("Fatal Python error: _enter_buffered_busy")
            inp = stdin or io.FileIO(sys.stdin.fileno(), "rb", closefd=False)
            out = stdout or sys.stdout.buffer
            up = threading.Thread(target=_pump, args=(inp, conn), daemon=True)
            up.start()
            _pump(conn, out)
        return 0
    finally:
        tunnel.terminate()
        try:
            tunnel.wait(timeout=10)
        except subprocess.TimeoutExpired:
            tunnel.kill()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
