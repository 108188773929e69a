"""The way into a cluster's private nodes, and the ``ssh_config`` that uses it (pure, no Pulumi).

Nodes have no public address unless the spec opts in. Each cloud has one private path, chosen
by :func:`access_path` from the plan and rendered by :func:`render_ssh_config`:

========  ================================================================  =============================
cloud     path                                                              local tools it needs
========  ================================================================  =============================
AWS       SSM Session Manager: ``ProxyCommand aws ssm start-session``       ``aws`` CLI v2 + the Session
          with the ``AWS-StartSSHSession`` document to the instance id      Manager plugin
          (nodes carry the AmazonSSMManagedInstanceCore role)
GCP       IAP TCP forwarding: ``ProxyCommand gcloud compute                 ``gcloud``, and IAM
          start-iap-tunnel NAME %p --listen-on-stdin`` (firewall allows     ``roles/iap.tunnelResourceAccessor``
          35.235.240.0/20 on tcp:22: ``gcp.allow_iap_ssh``, on by default)
Azure     Bastion (Standard, native client tunnel, IP connect), opt-in      ``az`` with the ``bastion``
          ``azure.bastion: true``: ``ProxyCommand provision proxy           extension (and ``provision``
          azure-bastion ...`` (relays ``az network bastion tunnel``)        on PATH)
Alibaba   an opted-in public head node (EIP), ``access.public_head_node``   ``ssh``
any       ``access.public_head_node``: node 0 by its public IP, the others  ``ssh``
          with ``ProxyJump`` through it
========  ================================================================  =============================

Without any of them (``direct``) the config names private IPs, reachable over a VPN or peering.

Sources: AWS Systems Manager user guide, "Allow and control permissions for SSH connections through
Session Manager"; Google Cloud, "Using IAP for TCP forwarding" and ``gcloud compute start-iap-tunnel``;
Microsoft Learn, "Connect to a VM using Bastion and the Linux native client" (Standard SKU, tunneling,
IP-based connection).
"""

from __future__ import annotations

import ipaddress
import shlex
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from provision.catalog import cloud_facts

if TYPE_CHECKING:
    from provision.catalog.models import PrivatePath
    from provision.planning.plan import ClusterPlan
    from provision.spec import ClusterSpec

#: The placeholder public key the bundled stacks and `size --write-spec` carry (its body decodes to
#: "...provision-example-key-do-not-use"): nobody has its private half.
EXAMPLE_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHByb3Zpc2lvbi1leGFtcGxlLWtleS1kby1ub3QtdXNl provision-example"
EXAMPLE_KEY_BODY = EXAMPLE_KEY.split()[1]

#: The local command-line tools each path needs (docs and `provision ssh` errors).
NEEDS = {
    "ssm": "the AWS CLI v2 and the Session Manager plugin (docs.aws.amazon.com/systems-manager/latest/userguide/"
    "session-manager-working-with-install-plugin.html)",
    "iap": "the gcloud CLI (cloud.google.com/sdk/docs/install) and the IAM role roles/iap.tunnelResourceAccessor",
    "bastion": "the Azure CLI with the bastion extension (az extension add --name bastion)",
    "head": "only ssh",
    "direct": "a network path to the private IPs (VPN, peering or a host in the network)",
}

#: Ranges a VPN, peering or interconnect reaches a VNet/VPC from (RFC 1918 and the RFC 6598 shared space).
#: A public range in allowed_cidrs cannot route to a node's private address (review 2026-12-01, gcp.md B6).
PRIVATE_RANGES = tuple(
    ipaddress.IPv4Network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10")
)


def private_path_on(cloud: str, options: Any) -> PrivatePath | None:
    """The cloud's private path (``facts.private_path`` of ``catalog/data/<cloud>.yaml``) when ``options`` turn it
    on (SSM is always on; IAP and Bastion are opt-in), else ``None``."""
    private = cloud_facts(cloud).private_path
    if private is None or (private.option is not None and not getattr(options, private.option, False)):
        return None
    return private


def access_path(plan: ClusterPlan) -> dict[str, Any]:
    """The plan's way in: ``{"via", "user", "region", "zone", "project"?, "bastion"?}`` (pure).

    ``via`` is ``head`` when the spec opts into a public head node, else the cloud's private path
    (``ssm``, ``iap``, ``bastion``), else ``direct``.
    """
    opts = plan.options
    path: dict[str, Any] = {"user": plan.access.ssh_user, "region": plan.region, "zone": plan.zone}
    private = private_path_on(plan.cloud, opts)
    if plan.access.public_head_node:
        path["via"] = "head"
    elif private is not None and private.via == "ssm":
        path["via"] = "ssm"
    elif private is not None and private.via == "iap":
        tunnel = plan.extra.iap_tunnel()
        path["via"] = "iap"
        path["project"] = tunnel.project if tunnel else None
        path["zone"] = (tunnel.zone if tunnel else None) or plan.zone
    elif private is not None and private.via == "bastion" and (bastion := plan.extra.managed_bastion()) is not None:
        path["via"] = "bastion"
        path["bastion"] = {
            "name": bastion.name,
            "resource_group": bastion.resource_group,
            "scale_sets": list(bastion.scale_sets),
        }
    else:
        path["via"] = "direct"
    if plan.cloud == "gcp" and getattr(opts, "os_login", False):
        # OS Login makes one POSIX user per Google account (user_example_com): no fixed user to name here.
        path["os_login"] = True
    path["needs"] = NEEDS[path["via"]]
    return path


def login_warnings(spec: ClusterSpec) -> list[str]:
    """Why nobody would be able to log in to the planned cluster (review 2026-12-01, ux.md friction 2), or ``[]``.

    The example key of the bundled stacks has no private half anywhere; a spec with no key at all (AWS accepts
    one) leaves ``provision ssh``, ``exec`` and ``launch`` nothing to log in with. GCP with OS Login (the default)
    takes the keys from the users' OS Login profiles instead, so no key in the spec is fine there. Private nodes
    with no private path on and SSH admitted only from public ranges cannot be reached at all (review gcp.md B6).
    """
    out = _way_in_warnings(spec)
    if spec.cloud == "gcp" and getattr(spec.cloud_options(), "os_login", False):
        return out  # OS Login installs no spec key: its own warning says how people log in
    keys = spec.access.ssh_public_keys
    if any(key.split()[1:2] == [EXAMPLE_KEY_BODY] for key in keys):
        return out + [
            "access.ssh_public_keys holds the documentation's EXAMPLE key (provision-example), whose private half "
            "nobody has: nobody can log in to these nodes. Replace it with your own public key (~/.ssh/id_ed25519.pub)."
        ]
    if not keys:
        return out + [
            "no access.ssh_public_keys: nobody can log in over SSH, so `provision ssh`, `exec` and `launch` cannot "
            "reach the nodes. Add your public key (~/.ssh/id_ed25519.pub) to access.ssh_public_keys."
        ]
    return out


def _way_in_warnings(spec: ClusterSpec) -> list[str]:
    """The ``direct`` path (see :func:`access_path`) with SSH admitted only from public ranges: no way in."""
    if spec.access.public_head_node or private_path_on(spec.cloud, spec.cloud_options()) is not None:
        return []
    cidrs = [ipaddress.IPv4Network(c, strict=False) for c in spec.access.allowed_cidrs if ":" not in c]
    if any(c.subnet_of(r) for c in cidrs for r in PRIVATE_RANGES):
        return []  # some SSH comes from a network that reaches private addresses (VPN, peering)
    private = cloud_facts(spec.cloud).private_path
    fix = f"{spec.cloud}.{private.option}: true" if private and private.option else "access.public_head_node: true"
    admitted = ", ".join(spec.access.allowed_cidrs) or "no network"
    return [
        f"the nodes have private addresses only and there is no way in from outside the cluster's network: SSH is "
        f"admitted from {admitted}, which cannot route to them, and no private path is on. Set {fix}, or list "
        "the range of a VPN or peered network in access.allowed_cidrs."
    ]


def node_names(hosts: Sequence[str], path: Mapping[str, Any]) -> list[str]:
    """Per rank, the instance name IAP needs, from GCP internal DNS names (``NAME.ZONE.c.PROJECT.internal``).

    Other paths name nodes otherwise (AWS: instance ids from the component), so this is ``[]`` for them.
    """
    if path.get("via") != "iap":
        return []
    return [h.split(".", 1)[0] if not h[:1].isdigit() else h for h in hosts]


def _proxy_command(path: Mapping[str, Any], node_id: str | None) -> str | None:
    via = path.get("via")
    if via == "ssm" and node_id:
        words = ["aws", "ssm", "start-session", "--target", node_id, "--document-name", "AWS-StartSSHSession"]
        words += ["--parameters", "portNumber=%p", "--region", str(path["region"])]
        return " ".join(shlex.quote(w) if "%" not in w else w for w in words)
    if via == "iap" and node_id:
        words = ["gcloud", "compute", "start-iap-tunnel", node_id, "%p", "--listen-on-stdin"]
        words += ["--zone", str(path["zone"])]
        if path.get("project"):
            words += ["--project", str(path["project"])]
        words += ["--verbosity=warning"]
        return " ".join(shlex.quote(w) if "%" not in w else w for w in words)
    if via == "bastion":
        bastion = path.get("bastion") or {}
        # The local ssh_config names this installation's interpreter (ssh runs ProxyCommand with the user's PATH,
        # where a venv's `provision` may be missing); the stack output keeps the portable `provision`.
        words = [
            *path.get("provision_argv", ["provision"]),
            "proxy",
            "azure-bastion",
            "--name",
            str(bastion.get("name")),
        ]
        words += ["--resource-group", str(bastion.get("resource_group"))]
        for vmss in bastion.get("scale_sets") or []:
            words += ["--scale-set", str(vmss)]
        words += ["--host", "%h", "--port", "%p"]
        return " ".join(shlex.quote(w) if "%" not in w else w for w in words)
    return None


#: What a GCP OS Login ssh_config says instead of a ``User`` line (each person has their own POSIX user).
OS_LOGIN_USER_HINT = "your OS Login name (user_example_com for user@example.com); `provision ssh` sets it"


def render_ssh_config(
    name: str,
    hosts: Sequence[str],
    path: Mapping[str, Any],
    *,
    node_ids: Sequence[str] = (),
    head_public_ip: str | None = None,
    identity_file: str | None = None,
    known_hosts: str | None = None,
    ports: Sequence[int] = (),
    hostnames: Sequence[str] = (),
    pinned: Collection[str] = (),
) -> str:
    """An ``~/.ssh/config`` fragment: ``Host <name>-<rank>`` per node, by rank.

    Args:
        hosts: private IPs by rank.
        path: :func:`access_path` (``via``, ``user``, ...).
        node_ids: per rank, the id the proxy needs (AWS instance id, GCP instance name).
        head_public_ip: node 0's public IP (``via == "head"``).
        identity_file: the private key to log in with (``IdentityFile``).
        known_hosts: this cluster's own known_hosts file (``UserKnownHostsFile``). Host keys are
            recorded under the node's alias (``HostKeyAlias``) at the first connection
            (``accept-new``) and must match afterwards, so a recycled private IP never clashes.
        ports: per rank, the SSH port when not 22 (tests point nodes at local servers).
        hostnames: per rank, the address to connect to when it is not the private IP.
        pinned: aliases whose host key is already in ``known_hosts`` (read from the cloud before the
            first connection): ``StrictHostKeyChecking yes`` for them, so OpenSSH never learns a key.
    """
    lines: list[str] = []
    user = str(path.get("user") or "ubuntu")
    for rank, ip in enumerate(hosts):
        public = path.get("via") == "head" and head_public_ip
        lines.append(f"Host {name}-{rank}")
        address = hostnames[rank] if rank < len(hostnames) else ip
        lines.append(f"  HostName {head_public_ip if public and rank == 0 else address}")
        if path.get("os_login"):
            lines.append(f"  # User: {OS_LOGIN_USER_HINT}")
        else:
            lines.append(f"  User {user}")
        if rank < len(ports) and ports[rank] != 22:
            lines.append(f"  Port {ports[rank]}")
        if identity_file:
            lines.append(f"  IdentityFile {identity_file}")
            lines.append("  IdentitiesOnly yes")
        lines.append(f"  HostKeyAlias {name}-{rank}")
        if known_hosts:
            lines.append(f"  UserKnownHostsFile {known_hosts}")
        lines.append(f"  StrictHostKeyChecking {'yes' if f'{name}-{rank}' in pinned else 'accept-new'}")
        if public and rank > 0:
            lines.append(f"  ProxyJump {name}-0")
        proxy = _proxy_command(path, node_ids[rank] if rank < len(node_ids) else None)
        if proxy and not public:
            lines.append(f"  ProxyCommand {proxy}")
        lines.append("")
    return "\n".join(lines)
