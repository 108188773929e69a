"""Strict mocked Azure, AKS: agent pool names and sizes, versions, the system pool, network ranges, one SSH key."""

from __future__ import annotations

import inspect

import pytest
from pulumi_azure_native import containerservice, network, resources
from strict_helpers import one, run, violations_of

from provision.clouds.azure import strict_aks
from provision.clouds.mocking import StrictViolationError

CLUSTER, POOL = strict_aks.CLUSTER, strict_aks.AGENT_POOL
BASE = {"resourceGroupName": "rg", "location": "eastus"}
SYSTEM = {"name": "system", "mode": "System", "count": 2, "vmSize": "Standard_D4s_v5", "osType": "Linux"}


def cluster(**over: object) -> dict:
    return {**BASE, "resourceName": "c", "dnsPrefix": "c", "agentPoolProfiles": [dict(SYSTEM)], **over}


@pytest.mark.parametrize("name", ["GPU", "gpu-pool", "gpupoolnumber1", "1gpu"])
def test_linux_agent_pool_names_are_1_to_12_lowercase_alphanumerics(name: str) -> None:
    v = one(violations_of(POOL, "p", {**BASE, "resourceName": "c", "agentPoolName": name}), "agentPoolName")
    assert "12 lowercase" in v.rule and "agentPoolName pattern" in v.source


def test_system_pool_name_inside_the_cluster_is_checked_too() -> None:
    pools = [{**SYSTEM, "name": "system_pool"}]
    assert one(violations_of(CLUSTER, "c", cluster(agentPoolProfiles=pools)), "agentPoolProfiles[0].name")


@pytest.mark.parametrize(
    ("field", "value", "mode"),
    [("count", 1001, "User"), ("count", 0, "System"), ("maxPods", 251, "User"), ("maxPods", 9, "User")],
)
def test_pool_counts_and_pods_per_node_have_their_ranges(field: str, value: int, mode: str) -> None:
    inputs = {**BASE, "resourceName": "c", "agentPoolName": "gpu", "mode": mode, field: value}
    assert one(violations_of(POOL, "p", inputs), field)


def test_versions_taints_spot_settings_and_reserved_labels() -> None:
    inputs = {
        **BASE,
        "resourceName": "c",
        "agentPoolName": "gpu",
        "orchestratorVersion": "v1.34",
        "nodeTaints": ["nvidia.com/gpu=true:NoScheduleEver"],
        "nodeLabels": {"kubernetes.azure.com/mode": "x"},
        "scaleSetPriority": "Regular",
        "scaleSetEvictionPolicy": "Delete",
        "spotMaxPrice": 0,
    }
    found = violations_of(POOL, "p", inputs)
    for field in ("orchestratorVersion", "nodeTaints[0]", "nodeLabels.kubernetes.azure.com/mode"):
        assert one(found, field)
    assert one(found, "scaleSetEvictionPolicy") and one(found, "spotMaxPrice")


def test_cluster_needs_a_system_pool_a_valid_prefix_and_aad_for_no_local_accounts() -> None:
    inputs = cluster(
        dnsPrefix="-bad",
        kubernetesVersion="latest",
        disableLocalAccounts=True,
        agentPoolProfiles=[{**SYSTEM, "mode": "User"}],
        linuxProfile={"adminUsername": "u", "ssh": {"publicKeys": [{"keyData": "a"}, {"keyData": "b"}]}},
    )
    found = violations_of(CLUSTER, "c", inputs)
    for field in ("dnsPrefix", "kubernetesVersion", "disableLocalAccounts", "agentPoolProfiles"):
        assert one(found, field)
    assert "at most 1" in one(found, "linuxProfile.ssh.publicKeys").rule


def test_dns_service_ip_must_be_inside_the_service_range_and_not_its_first_address() -> None:
    for dns in ("10.97.0.10", "10.96.0.1"):
        inputs = cluster(networkProfile={"serviceCidr": "10.96.0.0/16", "dnsServiceIP": dns})
        assert one(violations_of(CLUSTER, "c", inputs), "networkProfile.dnsServiceIP")


def test_federated_credential_name_and_issuer_follow_entras_restrictions() -> None:
    inputs = {
        "resourceGroupName": "rg",
        "resourceName": "id",
        "federatedIdentityCredentialResourceName": "-x",
        "issuer": "http://issuer",
        "subject": "system:serviceaccount:kube-system:sa",
        "audiences": ["api://AzureADTokenExchange"],
    }
    found = violations_of(strict_aks.FEDERATED, "f", inputs)
    assert one(found, "federatedIdentityCredentialResourceName") and "https" in one(found, "issuer").rule


def _cluster_program(*, service_cidr: str, nat: bool) -> None:
    rg = resources.ResourceGroup("t-rg", resource_group_name="t-rg", location="eastus")
    vnet = network.VirtualNetwork(
        "t-vnet",
        resource_group_name=rg.name,
        virtual_network_name="t-vnet",
        location="eastus",
        address_space=network.AddressSpaceArgs(address_prefixes=["10.0.0.0/16"]),
    )
    gateway = None
    if nat:
        gateway = network.NatGateway(
            "t-nat",
            nat_gateway_name="t-nat",
            resource_group_name=rg.name,
            location="eastus",
            sku=network.NatGatewaySkuArgs(name="Standard"),
        )
    subnet = network.Subnet(
        "t-nodes",
        resource_group_name=rg.name,
        virtual_network_name=vnet.name,
        subnet_name="nodes",
        address_prefix="10.0.0.0/22",
        nat_gateway=network.SubResourceArgs(id=gateway.id) if gateway else None,
    )
    containerservice.ManagedCluster(
        "t-aks",
        resource_name_="t-aks",
        resource_group_name=rg.name,
        location="eastus",
        dns_prefix="t-aks",
        agent_pool_profiles=[
            containerservice.ManagedClusterAgentPoolProfileArgs(
                name="system", mode="System", count=1, vm_size="Standard_D4s_v5", vnet_subnet_id=subnet.id
            )
        ],
        network_profile=containerservice.ContainerServiceNetworkProfileArgs(
            network_plugin="azure",
            network_plugin_mode="overlay",
            pod_cidr="10.244.0.0/16",
            service_cidr=service_cidr,
            dns_service_ip=service_cidr.split("/")[0][:-1] + "10",
            outbound_type="userAssignedNATGateway",
        ),
    )


def test_service_range_overlapping_the_node_subnet_and_a_subnet_without_nat_are_refused() -> None:
    with pytest.raises(StrictViolationError) as err:
        run(lambda: _cluster_program(service_cidr="10.0.0.0/16", nat=False), region="eastus")
    assert "node subnet 10.0.0.0/22" in one(err.value.violations, "networkProfile.serviceCidr").rule
    assert "NAT gateway" in one(err.value.violations, "agentPoolProfiles[0].vnetSubnetID").rule


def test_cluster_in_its_own_subnet_with_a_nat_gateway_passes() -> None:
    mocks = run(lambda: _cluster_program(service_cidr="10.96.0.0/16", nat=True), region="eastus")
    assert any(r.type == CLUSTER for r in mocks.ledger)


@pytest.mark.parametrize(
    "quote",
    [
        strict_aks.COUNT_QUOTE,
        strict_aks.VERSION_QUOTE,
        strict_aks.SSH_KEYS_QUOTE,
        strict_aks.DNS_IP_QUOTE,
        strict_aks.SERVICE_CIDR_QUOTE,
        strict_aks.LOCAL_ACCOUNTS_QUOTE,
        strict_aks.SYSTEM_POOL_QUOTE,
        strict_aks.SPOT_PRICE_QUOTE,
    ],
)
def test_quoted_limits_are_still_in_the_installed_sdk(quote: str) -> None:
    sources = (containerservice.agent_pool, containerservice.managed_cluster, containerservice._inputs)
    assert any(quote in inspect.getsource(m) for m in (*sources, containerservice._enums))
