"""Strict AKS: the input rules of managed clusters and agent pools that ARM (the AKS resource provider) enforces.

Enums come from pulumi-azure-native's generated types like every other Azure type (``strict.enum_rules``);
what is checked here is what those types carry only as plain strings and numbers. Each rule names its
source: the REST spec's patterns and ranges as pulumi-azure-native quotes them (``SDK``: the installed
``pulumi_azure_native.containerservice`` property descriptions, API version 2025-09-01; ``tests/test_strict_aks.py``
checks each quote is still there), azure-rest-api-specs ``specification/containerservice`` (``SPEC``), and the
AKS documentation on learn.microsoft.com/azure/aks (``AKS``).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from provision.clouds.strict import Resource, Violation

if TYPE_CHECKING:
    from provision.clouds.mocking import MockContext

CLUSTER = "azure-native:containerservice:ManagedCluster"
AGENT_POOL = "azure-native:containerservice:AgentPool"
FEDERATED = "azure-native:managedidentity:FederatedIdentityCredential"
KNOWN = frozenset({CLUSTER, AGENT_POOL, FEDERATED})
#: learn.microsoft.com/entra/workload-id/workload-identity-federation-considerations ("Important considerations
#: and restrictions for federated identity credentials"): name 3-120 alphanumerics, - and _, first alphanumeric;
#: issuer and subject at most 600 characters; the issuer an https URL.
FEDERATION_SOURCE = "learn.microsoft.com/entra/workload-id/workload-identity-federation-considerations"
FEDERATED_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{2,119}")

SDK = "pulumi-azure-native containerservice (generated from azure-rest-api-specs, API 2025-09-01)"
SPEC = "azure-rest-api-specs specification/containerservice/resource-manager/Microsoft.ContainerService/aks"
AKS = "learn.microsoft.com/azure/aks/"

#: Quotes from the installed SDK's property descriptions (kept verbatim; a test checks they are still there).
COUNT_QUOTE = (
    "Allowed values must be in the range of 0 to 1000 (inclusive) for user pools and in the range of 1 to 1000 "
    "(inclusive) for system pools."
)
VERSION_QUOTE = "Both patch version <major.minor.patch> (e.g. 1.20.13) and <major.minor> (e.g. 1.20) are supported."
SSH_KEYS_QUOTE = "A maximum of 1 key may be specified."
DNS_IP_QUOTE = "It must be within the Kubernetes service address range specified in serviceCidr."
SERVICE_CIDR_QUOTE = "It must not overlap with any Subnet IP ranges."
LOCAL_ACCOUNTS_QUOTE = "This must only be used on Managed Clusters that are AAD enabled."
SYSTEM_POOL_QUOTE = "A cluster must have at least one 'System' Agent Pool at all times."
SPOT_PRICE_QUOTE = "Possible values are any decimal value greater than zero or -1"

#: SPEC managedClusters.json: the agentPoolName path parameter's pattern (Linux pools); AKS create-node-pools:
#: "Linux node pools ... 1-12 characters", lowercase alphanumerics starting with a letter.
POOL_NAME = re.compile(r"[a-z][a-z0-9]{0,11}")
#: SPEC: the managed cluster resourceName pattern.
CLUSTER_NAME = re.compile(r"[a-zA-Z0-9]|[a-zA-Z0-9][-_a-zA-Z0-9]{0,61}[a-zA-Z0-9]")
#: SPEC: ManagedClusterProperties.dnsPrefix pattern (1-54 characters).
DNS_PREFIX = re.compile(r"[a-zA-Z0-9]|[a-zA-Z0-9][-a-zA-Z0-9]{0,52}[a-zA-Z0-9]")
VERSION = re.compile(r"\d+\.\d+(?:\.\d+)?")
#: AKS azure-cni-overlay / configure-azure-cni "Maximum pods per node": 10 to 250 with Azure CNI.
MAX_PODS = (10, 250)
#: SPEC ContainerServiceOSDisk: minimum 0, maximum 2048 (GB).
OS_DISK_GB = (0, 2048)
#: AKS api-server-authorized-ip-ranges: "you can specify up to 200 authorized IP ranges".
AUTHORIZED_RANGES_MAX = 200
#: Kubernetes taint effects (kubernetes.io "Taints and Tolerations"); AKS takes key=value:Effect.
TAINT = re.compile(r"[A-Za-z0-9./_-]+(?:=[A-Za-z0-9._-]*)?:(?:NoSchedule|PreferNoSchedule|NoExecute)")
#: AKS use-node-labels: "kubernetes.azure.com" labels are reserved; AKS refuses them as custom labels.
RESERVED_LABEL_PREFIX = "kubernetes.azure.com/"


def _num(value: Any) -> float | None:
    """A number input (the engine sends integers as floats), else None."""
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _pools(res: Resource) -> list[tuple[str, Mapping[str, Any]]]:
    """(input path, pool inputs) of every pool in this registration."""
    if res.type == AGENT_POOL:
        return [("", res.inputs)]
    profiles = res.inputs.get("agentPoolProfiles") or []
    return [(f"agentPoolProfiles[{i}].", p) for i, p in enumerate(profiles) if isinstance(p, Mapping)]


def _pool_rules(res: Resource, path: str, pool: Mapping[str, Any]) -> list[Violation]:
    out: list[Violation] = []
    name_key = "agentPoolName" if res.type == AGENT_POOL else "name"
    name = pool.get(name_key)
    linux = pool.get("osType", "Linux") == "Linux"
    if isinstance(name, str) and linux and not POOL_NAME.fullmatch(name):
        out.append(
            res.violation(
                path + name_key,
                name,
                "a Linux agent pool name: 1-12 lowercase letters and digits, starting with a letter",
                f"{SPEC} managedClusters.json agentPoolName pattern ^[a-z][a-z0-9]{{0,11}}$; {AKS}create-node-pools",
            )
        )
    system = pool.get("mode") == "System"
    count = _num(pool.get("count"))
    low = 1 if system else 0
    if count is not None and not low <= count <= 1000:
        out.append(
            res.violation(
                path + "count", count, f"{low} to 1000 for a {pool.get('mode')} pool", f"{SDK}: {COUNT_QUOTE!r}"
            )
        )
    if system and not linux:
        out.append(
            res.violation(
                path + "osType",
                pool.get("osType"),
                "Linux: system pools run on Linux",
                f'{SDK} AgentPoolMode.SYSTEM: "System agent pools osType must be Linux."',
            )
        )
    pods = _num(pool.get("maxPods"))
    if pods is not None and not MAX_PODS[0] <= pods <= MAX_PODS[1]:
        out.append(
            res.violation(
                path + "maxPods",
                pods,
                f"{MAX_PODS[0]} to {MAX_PODS[1]} pods per node with Azure CNI",
                f"{AKS}azure-cni-overlay (maximum pods per node)",
            )
        )
    disk = _num(pool.get("osDiskSizeGB"))
    if disk is not None and not OS_DISK_GB[0] <= disk <= OS_DISK_GB[1]:
        out.append(res.violation(path + "osDiskSizeGB", disk, "0 to 2048 GB", f"{SPEC} ContainerServiceOSDisk"))
    version = pool.get("orchestratorVersion")
    if isinstance(version, str) and not VERSION.fullmatch(version):
        out.append(
            res.violation(
                path + "orchestratorVersion", version, "major.minor or major.minor.patch", f"{SDK}: {VERSION_QUOTE!r}"
            )
        )
    for i, taint in enumerate(pool.get("nodeTaints") or []):
        if not (isinstance(taint, str) and TAINT.fullmatch(taint)):
            out.append(
                res.violation(
                    f"{path}nodeTaints[{i}]",
                    taint,
                    "key=value:NoSchedule|PreferNoSchedule|NoExecute",
                    f'{SDK} nodeTaints ("For example, key=value:NoSchedule"); kubernetes.io taint effects',
                )
            )
    for label in pool.get("nodeLabels") or {}:
        if isinstance(label, str) and label.startswith(RESERVED_LABEL_PREFIX):
            out.append(
                res.violation(
                    f"{path}nodeLabels.{label}",
                    label,
                    f"not a reserved {RESERVED_LABEL_PREFIX} label",
                    f"{AKS}use-node-labels (reserved system labels)",
                )
            )
    spot = pool.get("scaleSetPriority") == "Spot"
    if pool.get("scaleSetEvictionPolicy") is not None and not spot:
        out.append(
            res.violation(
                path + "scaleSetEvictionPolicy",
                pool.get("scaleSetEvictionPolicy"),
                "set only on a Spot pool (scaleSetPriority Spot)",
                f"{AKS}spot-node-pool",
            )
        )
    price = _num(pool.get("spotMaxPrice"))
    if price is not None and not (price == -1 or price > 0):
        out.append(res.violation(path + "spotMaxPrice", price, "-1 or greater than 0", f"{SDK}: {SPOT_PRICE_QUOTE!r}"))
    return out


def _subnet_prefix(ctx: MockContext, subnet_id: Any) -> str | None:
    if not isinstance(subnet_id, str):
        return None
    for r in ctx.find("azure-native:network:Subnet"):
        if r.id.lower() == subnet_id.lower():
            return str(r.inputs.get("addressPrefix"))
    return None


def _subnet_has_nat(ctx: MockContext, subnet_id: Any) -> bool | None:
    if not isinstance(subnet_id, str):
        return None
    for r in ctx.find("azure-native:network:Subnet"):
        if r.id.lower() == subnet_id.lower():
            return bool(r.inputs.get("natGateway"))
    return None


def _network_rules(res: Resource, ctx: MockContext) -> list[Violation]:
    net = res.inputs.get("networkProfile") or {}
    out: list[Violation] = []
    service, dns = net.get("serviceCidr"), net.get("dnsServiceIP")
    subnets = [p.get("vnetSubnetID") for _, p in _pools(res)]
    prefixes = [p for p in (_subnet_prefix(ctx, s) for s in subnets) if p]
    for key in ("serviceCidr", "podCidr"):
        cidr = net.get(key)
        if not isinstance(cidr, str):
            continue
        try:
            net_cidr = ipaddress.ip_network(cidr, strict=True)
        except ValueError:
            out.append(res.violation(f"networkProfile.{key}", cidr, "a CIDR range (network address)", f"{SDK} {key}"))
            continue
        clash = [p for p in prefixes if ipaddress.ip_network(p, strict=False).overlaps(net_cidr)]
        if clash:
            out.append(
                res.violation(
                    f"networkProfile.{key}",
                    cidr,
                    f"no overlap with the node subnet {clash[0]}",
                    f"{SDK}: {SERVICE_CIDR_QUOTE!r}; {AKS}azure-cni-overlay (pod CIDR outside the VNet)",
                )
            )
    if isinstance(service, str) and isinstance(dns, str):
        try:
            inside = ipaddress.ip_address(dns) in ipaddress.ip_network(service, strict=False)
            first = ipaddress.ip_address(dns) == ipaddress.ip_network(service, strict=False).network_address + 1
        except ValueError:
            inside, first = False, False
        if not inside or first:
            out.append(
                res.violation(
                    "networkProfile.dnsServiceIP",
                    dns,
                    f"an address inside {service}, not its first (.1)",
                    f"{SDK}: {DNS_IP_QUOTE!r}; {AKS}configure-azure-cni (don't use the first address)",
                )
            )
    if net.get("outboundType") == "userAssignedNATGateway":
        for path, pool in _pools(res):
            if _subnet_has_nat(ctx, pool.get("vnetSubnetID")) is False:
                out.append(
                    res.violation(
                        f"{path}vnetSubnetID",
                        pool.get("vnetSubnetID"),
                        "a subnet with a NAT gateway (outboundType userAssignedNATGateway)",
                        f"{AKS}nat-gateway",
                    )
                )
    return out


def _cluster_rules(res: Resource, ctx: MockContext) -> list[Violation]:
    inputs = res.inputs
    out: list[Violation] = []
    name = inputs.get("resourceName")
    if isinstance(name, str) and not CLUSTER_NAME.fullmatch(name):
        out.append(
            res.violation(
                "resourceName",
                name,
                "1-63 letters, digits, - and _; start and end alphanumeric",
                f"{SPEC} managedClusters.json resourceName pattern",
            )
        )
    prefix = inputs.get("dnsPrefix")
    if isinstance(prefix, str) and not DNS_PREFIX.fullmatch(prefix):
        out.append(
            res.violation(
                "dnsPrefix",
                prefix,
                "1-54 letters, digits and -; start and end alphanumeric",
                f"{SPEC} ManagedClusterProperties.dnsPrefix pattern; {AKS}create-cluster (DNS name prefix)",
            )
        )
    version = inputs.get("kubernetesVersion")
    if isinstance(version, str) and not VERSION.fullmatch(version):
        out.append(
            res.violation("kubernetesVersion", version, "major.minor or major.minor.patch", f"{SDK}: {VERSION_QUOTE!r}")
        )
    pools = _pools(res)
    if not any(p.get("mode") == "System" for _, p in pools):
        out.append(
            res.violation(
                "agentPoolProfiles",
                [p.get("name") for _, p in pools],
                "at least one pool with mode System",
                f"{SDK} AgentPoolMode: {SYSTEM_POOL_QUOTE!r}",
            )
        )
    if inputs.get("disableLocalAccounts") and not inputs.get("aadProfile"):
        out.append(
            res.violation(
                "disableLocalAccounts",
                True,
                "only with aadProfile (Microsoft Entra ID integration)",
                f"{SDK}: {LOCAL_ACCOUNTS_QUOTE!r}",
            )
        )
    keys = ((inputs.get("linuxProfile") or {}).get("ssh") or {}).get("publicKeys") or []
    if len(keys) > 1:
        out.append(
            res.violation("linuxProfile.ssh.publicKeys", len(keys), "at most 1 key", f"{SDK}: {SSH_KEYS_QUOTE!r}")
        )
    ranges = (inputs.get("apiServerAccessProfile") or {}).get("authorizedIPRanges") or []
    if len(ranges) > AUTHORIZED_RANGES_MAX:
        out.append(
            res.violation(
                "apiServerAccessProfile.authorizedIPRanges",
                len(ranges),
                f"at most {AUTHORIZED_RANGES_MAX} ranges",
                f"{AKS}api-server-authorized-ip-ranges",
            )
        )
    group = inputs.get("nodeResourceGroup")
    if isinstance(group, str) and not (1 <= len(group) <= 80 and re.fullmatch(r"[-\w.()]*[-\w()]", group)):
        out.append(
            res.violation(
                "nodeResourceGroup",
                group,
                "1-80 letters, digits, _ ( ) - and .; not ending in .",
                f"{AKS}faq (node resource group name: up to 80 characters); resource group naming rules",
            )
        )
    return out + _network_rules(res, ctx)


def _federation_rules(res: Resource) -> list[Violation]:
    out: list[Violation] = []
    name = res.inputs.get("federatedIdentityCredentialResourceName")
    if isinstance(name, str) and not FEDERATED_NAME.fullmatch(name):
        out.append(
            res.violation(
                "federatedIdentityCredentialResourceName",
                name,
                "3-120 letters, digits, - and _; first a letter or digit",
                FEDERATION_SOURCE,
            )
        )
    for key in ("issuer", "subject"):
        value = res.inputs.get(key)
        if isinstance(value, str) and len(value) > 600:
            out.append(res.violation(key, value, "at most 600 characters", FEDERATION_SOURCE))
    issuer = res.inputs.get("issuer")
    if isinstance(issuer, str) and not issuer.startswith("https://"):
        out.append(res.violation("issuer", issuer, "an https URL (the cluster's OIDC issuer)", FEDERATION_SOURCE))
    return out


def check(res: Resource, ctx: MockContext) -> list[Violation]:
    """Every AKS rule for one registration (none for other types)."""
    if res.type not in KNOWN:
        return []
    if res.type == FEDERATED:
        return _federation_rules(res)
    out = _cluster_rules(res, ctx) if res.type == CLUSTER else []
    for path, pool in _pools(res):
        out += _pool_rules(res, path, pool)
    return out
