"""Azure deploy blockers and security defaults from the 2026-12-01 review (issues 11 and 12), through the mocked graph.

Each test failed before its fix. The NSG tests evaluate the rules the way Azure does (lowest priority number
first, then the default rules 65000 AllowVnetInBound / 65001 AllowAzureLoadBalancerInBound / 65500
DenyAllInBound; "How network security groups filter network traffic"), so they check what a packet meets,
not how the rules are spelled.
"""

from __future__ import annotations

import base64
import ipaddress
from typing import Any

import pytest
from conftest import preview, shipped_preview
from test_azure_plan import azure_spec

from provision.clouds.azure.adapter import AzureAdapter
from provision.planning.bootstrap import parse
from provision.spec import load_spec
from provision.spec.errors import SpecError

VMSS = "azure-native:compute:VirtualMachineScaleSet"
SUBNET = "azure-native:network:Subnet"
NSG = "azure-native:network:NetworkSecurityGroup"
IDENTITY = "azure-native:managedidentity:UserAssignedIdentity"
VOLUME = "azure-native:netapp:CapacityPoolVolume"
#: A network reached through VNet peering or a VPN gateway: inside the VirtualNetwork service tag, outside the VNet.
PEERED = "172.31.5.9"
DEFAULT_RULES = [
    {"priority": 65000, "access": "Allow", "sourceAddressPrefix": "VirtualNetwork", "destinationPortRange": "*"},
    {"priority": 65001, "access": "Allow", "sourceAddressPrefix": "AzureLoadBalancer", "destinationPortRange": "*"},
    {"priority": 65500, "access": "Deny", "sourceAddressPrefix": "*", "destinationPortRange": "*"},
]


def _in(address: str, prefix: str, vnet: str) -> bool:
    if prefix == "*":
        return True
    if prefix == "VirtualNetwork":  # the VNet's space plus peered and VPN-connected networks
        return ipaddress.ip_address(address) in ipaddress.ip_network(vnet) or address == PEERED
    if prefix[0].isdigit() or ":" in prefix:
        return ipaddress.ip_address(address) in ipaddress.ip_network(prefix, strict=False)
    return False  # other service tags (AzureMonitor, AzureLoadBalancer) are not the test's addresses


def _ports(rule: dict[str, Any]) -> list[str]:
    return list(rule.get("destinationPortRanges") or [rule.get("destinationPortRange", "*")])


def _port_in(port: int, spec: str) -> bool:
    if spec == "*":
        return True
    lo, _, hi = spec.partition("-")
    return int(lo) <= port <= int(hi or lo)


def verdict(result: Any, subnet: str, source: str, dest: str, port: int) -> str:
    """Allow/Deny for inbound TCP ``source -> dest:port`` by the NSG on ``subnet`` (no NSG: Azure allows)."""
    sub = next(r for r in result.of_type(SUBNET) if r.inputs["subnetName"] == subnet)
    nsg_ref = sub.inputs.get("networkSecurityGroup")
    if not nsg_ref:
        return "Allow"
    nsg = next(r for r in result.of_type(NSG) if r.id == nsg_ref["id"])
    vnet = result.plan.extra.vnet_cidr
    rules = [r for r in nsg.inputs.get("securityRules", []) if r["direction"] == "Inbound"] + DEFAULT_RULES
    for rule in sorted(rules, key=lambda r: r["priority"]):
        if rule.get("protocol", "*") not in ("*", "Tcp"):
            continue
        sources = rule.get("sourceAddressPrefixes") or [rule.get("sourceAddressPrefix", "*")]
        dests = rule.get("destinationAddressPrefixes") or [rule.get("destinationAddressPrefix", "*")]
        if (
            any(_in(source, s, vnet) for s in sources)
            and any(_in(dest, d, vnet) for d in dests)
            and any(_port_in(port, p) for p in _ports(rule))
        ):
            return str(rule["access"])
    raise AssertionError("no rule matched, not even the defaults")


def host(cidr: str, n: int) -> str:
    return str(ipaddress.ip_network(cidr)[n])


@pytest.fixture(scope="module")
def amlfs() -> Any:
    return preview(load_spec(azure_spec(lifetime={"ttl": "6h"})))


# ------------------------------------------------------------------ NSGs (A1, C1)


def test_managed_lustre_hosts_reach_each_other_on_every_port_including_ssh(amlfs: Any) -> None:
    fs = amlfs.plan.extra.subnets["filesystem"]
    for port in (22, 988, 1021, 9999):
        assert verdict(amlfs, "filesystem", host(fs, 4), host(fs, 5), port) == "Allow", port


def test_nodes_reach_managed_lustre_and_lustre_calls_back(amlfs: Any) -> None:
    fs, nodes = amlfs.plan.extra.subnets["filesystem"], amlfs.plan.extra.subnets["nodes"]
    for port in (988, 1019, 1023):
        assert verdict(amlfs, "filesystem", host(nodes, 4), host(fs, 4), port) == "Allow"
        assert verdict(amlfs, "nodes", host(fs, 4), host(nodes, 4), port) == "Allow"


def test_nodes_talk_to_each_other_on_every_port(amlfs: Any) -> None:
    nodes = amlfs.plan.extra.subnets["nodes"]
    for port in (22, 29500, 50000):
        assert verdict(amlfs, "nodes", host(nodes, 4), host(nodes, 9), port) == "Allow"


@pytest.mark.parametrize("subnet", ["nodes", "filesystem"])
def test_peered_and_vpn_networks_reach_no_port_of_the_cluster(amlfs: Any, subnet: str) -> None:
    target = host(amlfs.plan.extra.subnets[subnet], 4)
    for port in (22, 988, 8888, 29500):
        assert verdict(amlfs, subnet, PEERED, target, port) == "Deny", port


def test_allowed_cidrs_reach_ssh_only(amlfs: Any) -> None:
    node = host(amlfs.plan.extra.subnets["nodes"], 4)
    assert verdict(amlfs, "nodes", "203.0.113.7", node, 22) == "Allow"
    assert verdict(amlfs, "nodes", "203.0.113.7", node, 8888) == "Deny"


def test_vpn_clients_listed_in_allowed_cidrs_get_ssh_but_nothing_else() -> None:
    result = preview(load_spec(azure_spec(access={"allowed_cidrs": ["172.31.5.0/24"]})))
    node = host(result.plan.extra.subnets["nodes"], 4)
    assert verdict(result, "nodes", PEERED, node, 22) == "Allow"
    assert verdict(result, "nodes", PEERED, node, 6006) == "Deny"


def test_netapp_subnet_is_reachable_from_the_nodes_only() -> None:
    result = preview(load_spec(azure_spec(storage={"shared": {"kind": "netapp", "size_gib": 4096}})))
    fs, nodes = result.plan.extra.subnets["filesystem"], result.plan.extra.subnets["nodes"]
    assert verdict(result, "filesystem", host(nodes, 4), host(fs, 4), 2049) == "Allow"
    assert verdict(result, "filesystem", PEERED, host(fs, 4), 2049) == "Deny"


# ------------------------------------------------------------------ IPv6 CIDRs (A3)


def test_ipv6_allowed_cidrs_are_refused_before_any_resource() -> None:
    spec = load_spec(azure_spec(access={"allowed_cidrs": ["203.0.113.0/24", "2001:db8::/32"]}))
    with pytest.raises(SpecError) as err:
        AzureAdapter().plan(spec)
    (problem,) = [p for p in err.value.problems if p.path.startswith("access.allowed_cidrs")]
    assert problem.path == "access.allowed_cidrs[1]" and "IPv6" in problem.rule


# ------------------------------------------------------------------ encryption at host (A2), identity (C2)


def test_encryption_at_host_is_off_by_default_with_a_warning(amlfs: Any) -> None:
    # Trusted Launch is on (trustedlaunch.py); encryption at host is not, unless asked for.
    assert "encryptionAtHost" not in amlfs.one(VMSS).inputs["virtualMachineProfile"].get("securityProfile", {})
    assert any("encryption_at_host" in w for w in amlfs.plan.warnings)


def test_encryption_at_host_is_an_explicit_choice() -> None:
    result = preview(load_spec(azure_spec(azure={"encryption_at_host": True})))
    assert result.one(VMSS).inputs["virtualMachineProfile"]["securityProfile"]["encryptionAtHost"] is True
    assert any("preflight" in w for w in result.plan.warnings)


def test_nodes_carry_no_identity_without_a_purpose() -> None:
    # No lifetime (no expiry timer) and no shared filesystem (no address to look up): nothing for an identity to do.
    result = preview(load_spec(azure_spec(storage={"shared": None})))
    assert result.of_type(IDENTITY) == []
    assert "identity" not in result.one(VMSS).inputs


def test_the_one_identity_holds_the_delete_only_role_and_reads_only_the_filesystem(amlfs: Any) -> None:
    (identity,) = amlfs.of_type(IDENTITY)
    assert amlfs.one(VMSS).inputs["identity"]["userAssignedIdentities"] == [identity.id]
    assignments = {a.name: a for a in amlfs.of_type("azure-native:authorization:RoleAssignment")}
    assert set(assignments) == {"az-test-expiry-assignment", "az-test-fs-reader"}
    role = amlfs.one("azure-native:authorization:RoleDefinition").inputs
    assert all(a.inputs["principalId"] == identity.outputs["principalId"] for a in assignments.values())
    assert [p["actions"] for p in role["permissions"]] == [["Microsoft.Compute/virtualMachineScaleSets/delete"]]
    reader = assignments["az-test-fs-reader"].inputs
    assert reader["scope"] == amlfs.one("azure-native:storagecache:AmlFilesystem").id  # the one filesystem, no more
    assert reader["roleDefinitionId"].endswith("/roleDefinitions/acdd72a7-3385-48ef-bd42-f606fba81ae7")  # Reader


# ------------------------------------------------------------------ node addresses (issue 11.3, A4)


def test_hostfile_is_the_scale_sets_hostnames_without_a_read_per_node() -> None:
    result = shipped_preview("azure-ndh100-256")
    assert [c for c in result.calls if c[0] == "azure-native:resources:getResource"] == []
    hosts = result.outputs["hosts"]
    assert len(hosts) == len(set(hosts)) == 256
    prefixes = [i.computer_name_prefix for i in result.plan.extra.islands]
    # "{computer-name-prefix}{base-36-instance-id}", six base-36 digits ("Understand names and instance IDs
    # for Azure Virtual Machine Scale Set VMs").
    assert hosts[0] == f"{prefixes[0]}000000"
    assert hosts[35] == f"{prefixes[0]}00000Z" and hosts[36] == f"{prefixes[0]}000010"
    island1 = result.plan.extra.islands[1]
    assert hosts[island1.first_rank] == f"{prefixes[1]}000000"
    assert result.outputs["hostfile"].splitlines()[0] == f"{hosts[0]} slots=8"


# ------------------------------------------------------------------ NetApp and /shared (12.6)


def test_netapp_volume_and_shared_mount_are_not_world_writable() -> None:
    result = preview(load_spec(azure_spec(storage={"shared": {"kind": "netapp", "size_gib": 4096}})))
    volume = result.one(VOLUME).inputs
    mode = int(volume["unixPermissions"], 8)
    assert mode & 0o002 == 0  # no write for others
    doc = parse(base64.b64decode(result.one(VMSS).inputs["virtualMachineProfile"]["osProfile"]["customData"]).decode())
    files = {f["path"]: f["content"] for f in doc["write_files"]}
    assert "SHARED_OWNER=azureuser" in files["/etc/provision/bootstrap.env"]
    step = next(c for p, c in files.items() if p.endswith("-shared-mount.sh"))
    assert 'chown "$SHARED_OWNER": "$mnt"' in step and 'chmod 0755 "$mnt"' in step and "777" not in step
