"""Preparing the nodes for launches: env file, hostfile and the node-to-node SSH key, over SSH.

:func:`prepare_nodes` reads each node's host key, then sends every node its files on stdin (nothing
on a command line, nothing in user data or state), written by one small root script.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from provision.ops.access import Cluster, cluster_key, facts, login_user, mock_env_files
from provision.planning.launch import ENV_DIR, ENV_FILE, HOSTFILE, ClusterFacts, node_env, render_env_file
from provision.planning.outputs import render_hostfile
from provision.spec.errors import CloudError


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
    f: ClusterFacts,
    rank: int,
    key: tuple[str, str],
    host_keys: dict[int, str],
    ips: dict[int, str],
    extra_env: dict[str, str] | None = None,
) -> str:
    """The files node ``rank`` gets, as ``path\\nbase64\\n`` records (see :func:`prepare_script`).

    * ``/etc/provision/env`` (with ``extra_env``: the checkpoint folder) and ``/etc/provision/hostfile``;
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
        ENV_FILE: render_env_file({**node_env(f, rank), **(extra_env or {})}),
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


_ED25519 = re.compile(r"^ssh-ed25519 AAAAC3NzaC1lZDI1NTE5[A-Za-z0-9+/]{40,80}={0,2}$")


def vetted_reports(cluster: Cluster, f: ClusterFacts, read: list[Any]) -> tuple[dict[int, str], dict[int, str]]:
    """Each node's address and host key from what it printed, trusting nothing it says about itself.

    The address is the cloud's (the cluster's outputs) when that is an IP; a node reached by a DNS
    name may name its address, which must then be one IP (no list, no quote, no option). The host
    key must be one ``ssh-ed25519`` key and the very key this machine verified when it connected
    (pinned in the cluster's known_hosts), so a node cannot vouch for another key.

    Raises:
        CloudError: a node printed something else (names the node and what was wrong).
    """
    import ipaddress

    from provision.ops.access import known_hosts_path

    pinned = {}
    try:
        for line in known_hosts_path(cluster).read_text(encoding="utf-8").splitlines():
            alias, _, key = line.partition(" ")
            pinned[alias] = " ".join(key.split()[:2])
    except OSError:
        pass
    hosts = list(f.hosts)
    ips, keys, bad = {}, {}, []
    for r in read:
        words = r.stdout.split()
        host = hosts[r.rank]
        try:
            ips[r.rank] = str(ipaddress.ip_address(host))
        except ValueError:
            try:
                ips[r.rank] = str(ipaddress.ip_address(words[0] if words else ""))
            except ValueError:
                bad.append(f"{r.node} (reported address {(words or [''])[0][:60]!r} is not one IP address)")
        key = " ".join(words[1:3])
        if not _ED25519.match(key):
            bad.append(f"{r.node} (its host key is not one ssh-ed25519 key)")
        elif pinned.get(r.node, key) != key:
            bad.append(f"{r.node} (reported a host key other than the one it presented to this machine)")
        keys[r.rank] = key
    if bad:
        raise CloudError("refusing what the nodes report about themselves: " + ", ".join(bad))
    return ips, keys


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
    ips, host_keys = vetted_reports(cluster, f, read)
    private, public = cluster_key(cluster)
    key = (private.read_text(encoding="utf-8"), public)
    user = login_user(cluster)
    script = f"{sudo} bash -c {shlex.quote(prepare_script(user))}".strip()
    from provision.ops.checkpoints import checkpoint_env

    extra = checkpoint_env(cluster)
    wrote = run_on_nodes(
        cluster, script, timeout=timeout, stdin=lambda rank: prepare_payload(f, rank, key, host_keys, ips, extra)
    )
    failed = [r for r in wrote if not r.ok]
    if failed:
        raise CloudError("cannot prepare " + ", ".join(f"{r.node} ({r.error or r.stderr.strip()})" for r in failed))
    return wrote
