"""Getting into a cluster: its local SSH files, the ``ssh`` command line, and node preparation.

Per cluster, under ``$PROVISION_HOME/ssh/<stack>/`` (0700, files 0600):

* ``config``: the cluster's ``ssh_config`` (``Host <cluster>-<rank>`` per node; the cloud's private
  path as ``ProxyCommand``, or ``ProxyJump`` through an opted-in public head node; ``IdentityFile``;
  ``HostKeyAlias`` and ``UserKnownHostsFile`` so host keys are pinned per cluster);
* ``known_hosts``: each node's host key, recorded at the first connection under its alias;
* ``cluster_key`` / ``cluster_key.pub``: the node-to-node key pair (ed25519), made here and
  copied to the nodes over SSH by :func:`prepare_nodes`: never in user data, never in the state;
* ``nodes/<rank>.env``: a mocked cluster's ``/etc/provision/env`` per node.

``provision down`` removes the folder.

The login key (``IdentityFile``) is, in order: ``$PROVISION_SSH_IDENTITY``; the private key next to
the first ``~/.ssh/*.pub`` that matches one of ``access.ssh_public_keys``; none (ssh's defaults).
The login user is ``access.ssh_user``, or ``$PROVISION_SSH_USER`` (GCP OS Login users).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any

from provision.planning.access import NEEDS, render_ssh_config
from provision.planning.launch import ENV_DIR, ENV_FILE, HOSTFILE, ClusterFacts, node_env, render_env_file
from provision.planning.outputs import render_hostfile
from provision.spec.errors import CloudError, Problem, SpecError

if TYPE_CHECKING:
    from provision.ops.cluster import Cluster

IDENTITY_ENV = "PROVISION_SSH_IDENTITY"
#: Overrides the login user of the spec (GCP OS Login gives each person their own POSIX user).
USER_ENV = "PROVISION_SSH_USER"
_SAFE = re.compile(r"[^A-Za-z0-9._-]")


def ssh_dir(cluster: Cluster) -> Path:
    """``$PROVISION_HOME/ssh/<stack>`` (0700)."""
    from provision.engine.automation import private_dir, provision_home

    return private_dir(provision_home() / "ssh" / _SAFE.sub("_", cluster.stack))


def forget(cluster: Cluster) -> None:
    """Remove the cluster's local SSH files (after ``down``)."""
    from provision.engine.automation import provision_home

    shutil.rmtree(provision_home() / "ssh" / _SAFE.sub("_", cluster.stack), ignore_errors=True)


def known_hosts_path(cluster: Cluster) -> Path:
    return ssh_dir(cluster) / "known_hosts"


def _write_private(path: Path, text: str) -> Path:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)
    return path


def cluster_hosts(cluster: Cluster) -> list[str]:
    """The nodes' private IPs by rank.

    Raises:
        CloudError: the cluster is not up.
    """
    hosts = list(cluster.outputs.get("hosts") or [])
    if not hosts:
        mock = " --mock" if cluster.mock else ""
        raise CloudError(
            f"cluster {cluster.stack!r} is not up, so it has no nodes to reach. "
            f"To fix: run `provision up {cluster.stack}{mock}` first"
        )
    return hosts


def facts(cluster: Cluster) -> ClusterFacts:
    return ClusterFacts.from_outputs({**cluster.outputs, "hosts": cluster_hosts(cluster)})


def identity_file(cluster: Cluster) -> str | None:
    """The private key to log in with: ``$PROVISION_SSH_IDENTITY``, else the local key whose .pub is in the spec."""
    explicit = os.environ.get(IDENTITY_ENV)
    if explicit:
        return str(Path(explicit).expanduser())
    wanted = {" ".join(k.split()[:2]) for k in cluster.spec.access.ssh_public_keys}
    ssh_home = Path.home() / ".ssh"
    for pub in sorted(ssh_home.glob("*.pub")) if ssh_home.is_dir() else []:
        try:
            words = pub.read_text(encoding="utf-8").split()
        except OSError:
            continue
        if len(words) >= 2 and f"{words[0]} {words[1]}" in wanted and pub.with_suffix("").exists():
            return str(pub.with_suffix(""))
    return None


def ssh_config_text(cluster: Cluster, *, ports: list[int] | None = None) -> str:
    """The cluster's ``ssh_config`` for this machine (identity and pinned known_hosts included)."""
    outputs = cluster.outputs
    path = dict(outputs.get("access") or {"via": "direct", "user": cluster.spec.access.ssh_user})
    if os.environ.get(USER_ENV):  # e.g. the OS Login user on GCP (user_example_com)
        path["user"] = os.environ[USER_ENV]
    text = render_ssh_config(
        cluster.spec.name,
        cluster_hosts(cluster),
        path,
        node_ids=list(path.get("node_ids") or []),
        head_public_ip=path.get("head_public_ip"),
        identity_file=identity_file(cluster),
        known_hosts=str(known_hosts_path(cluster)),
        ports=ports or list(path.get("ports") or []),
        hostnames=list(path.get("hostnames") or []),
    )
    return text


def write_ssh_config(cluster: Cluster) -> Path:
    """Write ``ssh_dir/config`` from the cluster's outputs; returns its path."""
    return _write_private(ssh_dir(cluster) / "config", ssh_config_text(cluster))


def node_alias(cluster: Cluster, node: str | int | None) -> str:
    """``<cluster>-<rank>`` for a rank, ``head``, an alias or a private IP (default: the head node).

    Raises:
        SpecError: the node is not in the cluster.
    """
    hosts = cluster_hosts(cluster)
    name = cluster.spec.name
    if node is None or str(node).lower() == "head":
        return f"{name}-0"
    text = str(node)
    aliases = [f"{name}-{r}" for r in range(len(hosts))]
    if text in aliases:
        return text
    if text.isdigit() and int(text) < len(hosts):
        return f"{name}-{int(text)}"
    if text in hosts:
        return f"{name}-{hosts.index(text)}"
    raise SpecError(
        problems=[
            Problem("NODE", text, f"is not a node of {name}", f"use a rank 0..{len(hosts) - 1}, head, or {aliases[0]}")
        ]
    )


def ssh_argv(cluster: Cluster, node: str | int | None = None, command: list[str] | None = None) -> list[str]:
    """The ``ssh`` command line into ``node`` through the cluster's way in (writes the config first)."""
    config = write_ssh_config(cluster)
    argv = ["ssh", "-F", str(config), node_alias(cluster, node)]
    if command:
        argv += ["--", *command]
    return argv


def way_in(cluster: Cluster) -> dict[str, Any]:
    """The access path (``via``) and the local tools it needs."""
    path = dict(cluster.outputs.get("access") or {"via": "direct"})
    return {"via": path.get("via", "direct"), "needs": NEEDS.get(path.get("via", "direct"), "")}


# ---------------------------------------------------------------------- host keys


def known_host_aliases(path: Path) -> set[str]:
    try:
        return {line.split()[0] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()}
    except OSError:
        return set()


def record_host_key(path: Path, alias: str, public_key: str) -> None:
    """Append ``alias key`` to a known_hosts file (0600)."""
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    lines.append(f"{alias} {public_key.strip()}")
    _write_private(path, "\n".join(lines) + "\n")


# ---------------------------------------------------------------------- node-to-node key and env files


def cluster_key(cluster: Cluster) -> tuple[Path, str]:
    """The node-to-node key pair (made once, ed25519, 0600): ``(private key path, public key line)``."""
    import asyncssh

    private = ssh_dir(cluster) / "cluster_key"
    public = private.with_name("cluster_key.pub")
    if not private.exists() or not public.exists():
        key = asyncssh.generate_private_key("ssh-ed25519", comment=f"provision-{cluster.spec.name}")
        _write_private(private, key.export_private_key("openssh").decode())
        _write_private(public, key.export_public_key("openssh").decode())
    return private, public.read_text(encoding="utf-8").strip()


def mock_env_files(cluster: Cluster) -> dict[int, tuple[Path, dict[str, str]]]:
    """A mocked cluster's ``/etc/provision/env`` per rank, as local files: ``rank -> (path, env)``."""
    f = facts(cluster)
    folder = ssh_dir(cluster) / "nodes"
    folder.mkdir(mode=0o700, exist_ok=True)
    _write_private(folder / "hostfile", render_hostfile(list(f.hosts), f.gpus_per_node))
    found = {}
    for rank in range(f.nodes):
        env = {**node_env(f, rank), "PROVISION_HOSTFILE": str(folder / "hostfile")}
        found[rank] = (_write_private(folder / f"{rank}.env", render_env_file(env)), env)
    return found


def prepare_script(user: str) -> str:
    """The script each node runs as root to install what :func:`prepare_payload` sends on stdin.

    The payload is a sequence of ``<path>\\n<base64>\\n`` records: paths under ``/etc`` are written
    0644 as root, the others relative to the user's home, 0600 and owned by the user. Idempotent.
    ``$PROVISION_ROOT`` prefixes every path (tests run it in a sandbox folder).
    """
    u = shlex.quote(user)
    return (
        'set -eu; umask 077; R="${PROVISION_ROOT:-}"; '
        f'install -d -m 0755 "$R{ENV_DIR}" "$R/etc/ssh/ssh_config.d"; '
        f'H="$R$(getent passwd {u} | cut -d: -f6)"; install -d -m 0700 "$H/.ssh"; '
        "while IFS= read -r p && IFS= read -r b; do "
        f'case "$p" in /etc/*) p="$R$p"; m=0644; o=root;; *) p="$H/$p"; m=0600; o={u};; esac; '
        'printf %s "$b" | base64 -d > "$p.tmp"; chmod "$m" "$p.tmp"; '
        'if [ "$(id -u)" = 0 ]; then chown "$o" "$p.tmp"; fi; mv "$p.tmp" "$p"; '
        "done"
    )


#: Node-side files of the node-to-node SSH set-up (OpenSSH reads ~/.ssh/authorized_keys2 by default and
#: Ubuntu's /etc/ssh/ssh_config includes /etc/ssh/ssh_config.d/*.conf).
NODE_KNOWN_HOSTS = f"{ENV_DIR}/known_hosts"
NODE_SSH_CONFIG = "/etc/ssh/ssh_config.d/provision.conf"


def prepare_payload(
    f: ClusterFacts, rank: int, key: tuple[str, str], host_keys: dict[int, str], ips: dict[int, str]
) -> str:
    """The files node ``rank`` gets, as ``path\\nbase64\\n`` records (see :func:`prepare_script`).

    * ``/etc/provision/env`` and ``/etc/provision/hostfile``;
    * ``/etc/provision/known_hosts``: every node's host key by IP, and an ssh_config snippet that
      makes it the only trusted source for the cluster's IPs (pinned: no first-use prompts for MPI);
    * ``~/.ssh/id_provision``: the node-to-node key; ``~/.ssh/authorized_keys2`` accepts it only
      ``from=`` the cluster's addresses;
    * ``~/.deepspeed_env``: the fabric variables, which DeepSpeed's pdsh launcher forwards.
    """
    import base64

    private, public = key
    hosts = list(f.hosts)
    # Known by name and address: hosts may be DNS names (GCP, Azure), `from=` needs addresses.
    names = {r: ",".join(dict.fromkeys([hosts[r], ips.get(r, hosts[r])])) for r in range(len(hosts))}
    addresses = ",".join(dict.fromkeys(ips.get(r, hosts[r]) for r in range(len(hosts))))
    patterns = " ".join(dict.fromkeys([*hosts, *ips.values()]))
    records = {
        ENV_FILE: render_env_file(node_env(f, rank)),
        HOSTFILE: render_hostfile(hosts, f.gpus_per_node),
        NODE_KNOWN_HOSTS: "".join(f"{names[r]} {k}\n" for r, k in sorted(host_keys.items())),
        NODE_SSH_CONFIG: f"Host {patterns}\n  IdentityFile ~/.ssh/id_provision\n"
        f"  GlobalKnownHostsFile {NODE_KNOWN_HOSTS}\n  UserKnownHostsFile /dev/null\n  StrictHostKeyChecking yes\n",
        ".ssh/id_provision": private,
        ".ssh/authorized_keys2": f'from="{addresses}",no-agent-forwarding,no-X11-forwarding {public}\n',
        ".deepspeed_env": "".join(f"{k}={v}\n" for k, v in sorted(f.nccl_env.items())),
    }
    return "".join(f"{p}\n{base64.b64encode(t.encode()).decode()}\n" for p, t in records.items())


#: Prints the node's first address and its ed25519 host key (``$PROVISION_ROOT`` as in the script).
HOST_KEY_COMMAND = (
    "printf '%s ' \"$(hostname -I | cut -d' ' -f1)\"; cat \"${PROVISION_ROOT:-}/etc/ssh/ssh_host_ed25519_key.pub\""
)


def prepare_nodes(cluster: Cluster, *, timeout: float = 120, sudo: str = "sudo -n") -> list[Any]:
    """Install ``/etc/provision/env``, the hostfile, the node-to-node key and pinned host keys on every node.

    Two passes over SSH: read each node's ed25519 host key, then send every node its files on
    stdin (nothing on a command line, nothing in user data or state). A mocked cluster gets its
    local env files only.

    Returns:
        The second pass's per-node results (:class:`~provision.ops.exec.NodeResult`).

    Raises:
        CloudError: a node could not be read or written (names the nodes).
    """
    from provision.ops.exec import run_on_nodes

    if cluster.mock:
        mock_env_files(cluster)
        return []
    f = facts(cluster)
    read = run_on_nodes(cluster, HOST_KEY_COMMAND, timeout=timeout)
    failed = [r for r in read if not r.ok]
    if failed:
        raise CloudError(
            "cannot read the host keys of " + ", ".join(f"{r.node} ({r.error or r.stderr.strip()})" for r in failed)
        )
    ips = {r.rank: r.stdout.split()[0] for r in read}
    host_keys = {r.rank: " ".join(r.stdout.split()[1:3]) for r in read}
    private, public = cluster_key(cluster)
    key = (private.read_text(encoding="utf-8"), public)
    user = cluster.spec.access.ssh_user
    script = f"{sudo} bash -c {shlex.quote(prepare_script(user))}".strip()
    wrote = run_on_nodes(
        cluster, script, timeout=timeout, stdin=lambda rank: prepare_payload(f, rank, key, host_keys, ips)
    )
    failed = [r for r in wrote if not r.ok]
    if failed:
        raise CloudError("cannot prepare " + ", ".join(f"{r.node} ({r.error or r.stderr.strip()})" for r in failed))
    return wrote


class NodeAccess:
    """The node-facing part of :class:`~provision.ops.cluster.Cluster`: nodes, ssh, exec, launch.

    Mixed into ``Cluster``, which provides ``spec``, ``stack``, ``mock`` and ``outputs``.
    """

    spec: Any
    stack: str
    mock: bool

    @property
    def outputs(self) -> dict[str, Any]:
        """The stack outputs (provided by ``Cluster``)."""
        raise NotImplementedError

    def nodes(self) -> list[dict[str, Any]]:
        """``[{"name", "rank", "address", "state", "health"}]`` from the state (no node is contacted).

        ``health`` is what the last health check recorded for the node (``None`` when unknown).
        """
        hosts = list(self.outputs.get("hosts") or [])
        health = self.outputs.get("health") or {}
        name = self.spec.name
        return [
            {
                "name": f"{name}-{rank}",
                "rank": rank,
                "address": ip,
                "state": "running",
                "health": health.get(f"{name}-{rank}") if isinstance(health, dict) else None,
            }
            for rank, ip in enumerate(hosts)
        ]

    def ssh_command(self, node: str | int | None = None, command: list[str] | None = None) -> list[str]:
        """The ``ssh`` argv into ``node`` (rank, ``head``, name or IP; default the head node)."""
        return ssh_argv(self, node, command)  # type: ignore[arg-type]

    def run_on_nodes(self, command: str | list[str], **kwargs: Any) -> list[Any]:
        """:func:`provision.ops.exec.run_on_nodes` on this cluster (``nodes=``, ``timeout=``, ``on_line=`` ...)."""
        from provision.ops.exec import run_on_nodes

        return run_on_nodes(self, command, **kwargs)  # type: ignore[arg-type]

    def launch_command(self, kind: str, script: str, *args: str) -> str:
        """The shell line that launches ``script args`` with ``kind`` (torchrun, deepspeed, mpirun, accelerate)."""
        from provision.ops.launch import launch_command

        return str(launch_command(self, kind, script, *args)["line"])  # type: ignore[arg-type]

    def launch(self, kind: str, script: str, *args: str, timeout: float | None = None) -> list[Any]:
        """Run the launch on its nodes (prepares them once); per-node results."""
        from provision.ops.launch import launch

        return launch(self, kind, script, list(args), timeout=timeout)  # type: ignore[arg-type]

    def prepare_nodes(self) -> list[Any]:
        """Install ``/etc/provision/env``, the hostfile and the node-to-node SSH key on every node."""
        return prepare_nodes(self)  # type: ignore[arg-type]

    def forget_access(self) -> None:
        """Remove this cluster's local SSH files (config, known hosts, node-to-node key)."""
        forget(self)  # type: ignore[arg-type]
