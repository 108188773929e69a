"""Getting into a cluster: its local SSH files, the ``ssh`` command line, and node preparation.

Per cluster, under ``$PROVISION_HOME/ssh/<stack>/`` (0700, files 0600):

* ``config``: the cluster's ``ssh_config`` (``Host <cluster>-<rank>`` per node; the cloud's private
  path as ``ProxyCommand``, or ``ProxyJump`` through an opted-in public head node; ``IdentityFile``;
  ``HostKeyAlias`` and ``UserKnownHostsFile`` so host keys are pinned per cluster);
* ``known_hosts``: each node's host key, recorded at the first connection under its alias;
* ``cluster_key`` / ``cluster_key.pub``: the node-to-node key pair (ed25519), made here and
  copied to the nodes over SSH by :func:`provision.ops.prepare.prepare_nodes`: never in user data, never in the state;
* ``nodes/<rank>.env``: a mocked cluster's ``/etc/provision/env`` per node.

Putting files on the nodes is :mod:`provision.ops.prepare`; running commands :mod:`provision.ops.exec`.

``provision down`` removes the folder.

The login key (``IdentityFile``) is, in order: ``$PROVISION_SSH_IDENTITY``; the private key next to
the first ``~/.ssh/*.pub`` that matches one of ``access.ssh_public_keys``; none (ssh's defaults).
The login user (:func:`login_user`) is ``$PROVISION_SSH_USER``; else, on GCP with OS Login, the
POSIX user OS Login gives gcloud's active account (:mod:`provision.ops.oslogin`); else ``access.ssh_user``.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any, Protocol

from provision.planning.access import NEEDS, render_ssh_config
from provision.planning.launch import ClusterFacts, node_env, render_env_file
from provision.planning.outputs import render_hostfile
from provision.spec.errors import CloudError, Problem, SpecError


class Cluster(Protocol):
    """What these helpers need of a cluster (``provision.ops.cluster.Cluster`` has it; tests pass stand-ins)."""

    spec: Any
    stack: str
    mock: bool

    @property
    def outputs(self) -> dict[str, Any]: ...


IDENTITY_ENV = "PROVISION_SSH_IDENTITY"
#: Overrides the login user of the spec (GCP OS Login gives each person their own POSIX user).
USER_ENV = "PROVISION_SSH_USER"
_SAFE = re.compile(r"[^A-Za-z0-9._-]")


def ssh_dir(cluster: Cluster) -> Path:
    """``$PROVISION_HOME/ssh/<stack>`` (0700)."""
    from provision.engine.automation import stack_ssh_dir

    return stack_ssh_dir(cluster.stack)


def forget(cluster: Cluster) -> None:
    """Remove the cluster's local SSH files and its last bench report (after ``down``): a new cluster of the
    same name, even one created within the same second, starts without them."""
    from provision.engine.automation import provision_home, stack_bench_path

    shutil.rmtree(provision_home() / "ssh" / _SAFE.sub("_", cluster.stack), ignore_errors=True)
    stack_bench_path(cluster.stack).unlink(missing_ok=True)


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


def login_user(cluster: Cluster, planned: str | None = None) -> str:
    """Who logs in to the nodes: ``$PROVISION_SSH_USER``, else the OS Login user, else the spec's user.

    On GCP with ``gcp.os_login`` (the default) nodes have no fixed user: OS Login makes one per
    Google account (``user_example_com``, ``sa_<unique id>``), derived here from gcloud's active
    account without running gcloud. ``planned`` is the user the stack outputs name (the spec's).
    """
    explicit = os.environ.get(USER_ENV)
    if explicit:
        return explicit
    spec = cluster.spec
    options = getattr(spec, "cloud_options", None)
    if getattr(spec, "cloud", None) == "gcp" and options is not None and getattr(options(), "os_login", False):
        from provision.ops.oslogin import os_login_user

        derived = os_login_user()
        if derived:
            return derived
    return str(planned or spec.access.ssh_user)


def ssh_config_text(cluster: Cluster, *, ports: list[int] | None = None) -> str:
    """The cluster's ``ssh_config`` for this machine (identity and pinned known_hosts included)."""
    outputs = cluster.outputs
    path = dict(outputs.get("access") or {"via": "direct"})
    path["user"] = login_user(cluster, path.get("user"))
    path["os_login"] = False  # this machine's file names the user OS Login gives (or the override)
    path["provision_argv"] = [sys.executable, "-m", "provision.cli"]  # ProxyCommand by absolute path, not PATH
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
        pinned=known_host_aliases(known_hosts_path(cluster)),
    )
    from provision.ops.slurm_access import controller, controller_ssh_block

    slurm = controller(outputs)
    if slurm is not None and not cluster.mock:  # scheduler: slurm: the controller (login) node
        text += controller_ssh_block(
            cluster.spec.name,
            slurm,
            path,
            identity_file=identity_file(cluster),
            known_hosts=str(known_hosts_path(cluster)),
            pinned=known_host_aliases(known_hosts_path(cluster)),
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
    from provision.ops.slurm_access import controller, is_controller

    slurm = controller(cluster.outputs) is not None and not cluster.mock
    if slurm and (node is None or is_controller(name, str(node))):  # Slurm: ssh lands on the controller (login)
        return f"{name}-ctl"
    if node is None or str(node).lower() == "head":
        return f"{name}-0"
    text = str(node)
    aliases = [f"{name}-{r}" for r in range(len(hosts))]
    if text in aliases:
        return text
    if text.isascii() and text.isdigit() and int(text) < len(hosts):
        return f"{name}-{int(text)}"
    if text in hosts:
        return f"{name}-{hosts.index(text)}"
    raise SpecError(
        problems=[
            Problem("NODE", text, f"is not a node of {name}", f"use a rank 0..{len(hosts) - 1}, head, or {aliases[0]}")
        ]
    )


def remote_command(words: list[str]) -> str:
    """The one command string a node's shell runs for ``words``.

    OpenSSH joins the words after the host with spaces and the node's shell splits them again
    (``ssh(1)``: "command is executed on the remote host instead of a login shell"), so
    ``echo 'a b' ';' id`` would run ``id``. Several words are quoted as ``exec`` quotes them
    (:func:`shlex.join`), so each reaches the program unchanged; one word is a shell line, as
    with OpenSSH (``provision ssh c -- 'ls | wc -l'``).
    """
    import shlex

    return words[0] if len(words) == 1 else shlex.join(words)


def ssh_argv(cluster: Cluster, node: str | int | None = None, command: list[str] | None = None) -> list[str]:
    """The ``ssh`` command line into ``node`` through the cluster's way in (writes the config first)."""
    from provision.ops.hostkeys import pin_from_cloud

    if not getattr(cluster, "mock", False):
        pin_from_cloud(cluster, known_hosts_path(cluster))  # OpenSSH then checks the cloud's key, not first use
    config = write_ssh_config(cluster)  # after the pinning: pinned nodes get StrictHostKeyChecking yes
    argv = ["ssh", "-F", str(config), node_alias(cluster, node)]
    if command:
        argv += ["--", remote_command(command)]
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
    from provision.ops.checkpoints import checkpoint_env

    checkpoints = checkpoint_env(cluster)
    for folder_path in checkpoints.values():  # the mount's stand-in is local: the folder is made here
        Path(folder_path).mkdir(parents=True, exist_ok=True)
    for rank in range(f.nodes):
        env = {**node_env(f, rank), **checkpoints, "PROVISION_HOSTFILE": str(folder / "hostfile")}
        found[rank] = (_write_private(folder / f"{rank}.env", render_env_file(env)), env)
    return found
