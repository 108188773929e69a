"""scheduler: kubernetes, build half: the GKE and EKS resource graphs under the mocked cloud, goldens, mocks."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
import yaml
from conftest import assert_golden, golden_graph, preview, shipped_preview
from test_kubernetes_plan import variant

from provision.clouds.k8s.mocks import KubernetesApiError, check_object

GKE = "gcp:container/cluster:Cluster"
POOL = "gcp:container/nodePool:NodePool"
EKS = "aws:eks/cluster:Cluster"
NODEGROUP = "aws:eks/nodeGroup:NodeGroup"
LT = "aws:ec2/launchTemplate:LaunchTemplate"
RELEASE = "kubernetes:helm.sh/v3:Release"
PV = "kubernetes:core/v1:PersistentVolume"
NETWORK = "kubernetes:networking.gke.io/v1:Network"
PARAMS = "kubernetes:networking.gke.io/v1:GKENetworkParamSet"


@pytest.fixture(scope="module")
def gke() -> Any:
    return shipped_preview("gcp-a3-64-gke", stack="gcp-a3-64-gke")


@pytest.fixture(scope="module")
def eks() -> Any:
    return shipped_preview("aws-p5-64-eks", stack="aws-p5-64-eks")


@pytest.fixture(scope="module")
def ack() -> Any:
    return shipped_preview("alibaba-gn8-64-ack", stack="alibaba-gn8-64-ack")


@pytest.fixture(scope="module")
def aks() -> Any:
    return shipped_preview("azure-ndh100-64-aks", stack="azure-ndh100-64-aks")


@pytest.mark.parametrize("stack", ["gcp-a3-64-gke", "aws-p5-64-eks", "azure-ndh100-64-aks", "alibaba-gn8-64-ack"])
def test_kubernetes_stack_matches_its_golden_graph(stack: str) -> None:
    assert_golden(stack, golden_graph(shipped_preview(stack, stack=stack)))


def test_gke_cluster_is_private_regional_multi_network_with_workload_identity(gke: Any) -> None:
    c = gke.one(GKE).inputs
    assert c["location"] == "us-central1" and c["privateClusterConfig"]["enablePrivateNodes"] is True
    assert c["datapathProvider"] == "ADVANCED_DATAPATH" and c["enableMultiNetworking"] is True
    assert c["workloadIdentityConfig"]["workloadPool"] == "my-ml-project.svc.id.goog"
    assert c["removeDefaultNodePool"] is True and c["deletionProtection"] is False
    # A3 Mega nodes have GPU NICs in their own VPCs: the Lustre driver stays on the primary NIC.
    lustre = {"enabled": True, "enableLegacyLustrePort": True, "disableMultiNic": True}
    assert c["addonsConfig"]["lustreCsiDriverConfig"] == lustre
    assert [b["cidrBlock"] for b in c["masterAuthorizedNetworksConfig"]["cidrBlocks"]] == ["203.0.113.0/24"]
    # The Lustre instance serves GKE clients (the CSI driver's legacy port matches it).
    assert gke.one("gcp:lustre/instance:Instance").inputs["gkeSupportEnabled"] is True


def test_gke_gpu_pool_has_eight_compact_nodes_with_every_gpu_vpc_as_a_node_network(gke: Any) -> None:
    pools = {r.inputs["name"]: r.inputs for r in gke.of_type(POOL)}
    gpu = pools["gpu"]
    assert gpu["nodeCount"] == 8 and gpu["placementPolicy"] == {"type": "COMPACT"}
    assert gpu["nodeLocations"] == ["us-central1-a"]
    (acc,) = gpu["nodeConfig"]["guestAccelerators"]
    assert acc["type"] == "nvidia-h100-mega-80gb" and acc["count"] == 8
    assert gpu["nodeConfig"]["workloadMetadataConfig"] == {"mode": "GKE_METADATA"}
    subnets = {r.outputs["name"]: r.inputs for r in gke.of_type("gcp:compute/subnetwork:Subnetwork")}
    extra = gpu["networkConfig"]["additionalNodeNetworkConfigs"]
    assert len(extra) == 8 and all(n["subnetwork"] in subnets for n in extra)
    assert pools["system"]["nodeCount"] == 2 and "guestAccelerators" not in pools["system"]["nodeConfig"]


def test_gke_pod_networks_match_the_gpu_vpcs_and_the_job_annotation(gke: Any) -> None:
    vpcs = {r.outputs["name"] for r in gke.of_type("gcp:compute/network:Network")}
    params = {r.inputs["metadata"]["name"]: r.inputs["spec"] for r in gke.of_type(PARAMS)}
    networks = {r.inputs["metadata"]["name"]: r.inputs["spec"] for r in gke.of_type(NETWORK)}
    assert len(params) == len(networks) == 8
    assert all(p["vpc"] in vpcs and p["deviceMode"] == "NetDevice" for p in params.values())
    assert all(n["parametersRef"]["name"] in params and n["type"] == "Device" for n in networks.values())
    annotation = gke.plan.kubernetes.job.annotations["networking.gke.io/interfaces"]
    assert {i["network"] for i in json.loads(annotation)} - {"default"} == set(networks)


def test_gke_installs_the_tcpxo_plugin_and_device_injector_on_the_gpu_pool(gke: Any) -> None:
    ds = {r.inputs["metadata"]["name"]: r.inputs for r in gke.of_type("kubernetes:apps/v1:DaemonSet")}
    assert set(ds) == {"nccl-tcpxo-installer", "device-injector"}
    installer = ds["nccl-tcpxo-installer"]["spec"]["template"]["spec"]
    assert installer["nodeSelector"] == {"provision-pool": "gpu"}
    images = [c["image"] for c in installer["initContainers"]]
    assert any("nccl-plugin-gpudirecttcpx-dev:v1.0.15@sha256:" in i for i in images)


def test_gke_shared_volume_points_the_lustre_csi_driver_at_the_instance(gke: Any) -> None:
    csi = gke.one(PV).inputs["spec"]["csi"]
    assert csi["driver"] == "lustre.csi.storage.gke.io"
    assert csi["volumeHandle"] == "my-ml-project/us-central1-a/llm-train-gke-lustre"
    assert csi["volumeAttributes"]["filesystem"] == "llmtrain"


@pytest.mark.parametrize("fixture", ["gke", "eks", "aks", "ack"])
def test_training_operator_and_queues_are_installed_from_pinned_charts(fixture: str, request: Any) -> None:
    r = request.getfixturevalue(fixture)
    releases = {x.inputs["name"]: x.inputs for x in r.of_type(RELEASE)}
    assert releases["kubeflow-trainer"]["chart"].startswith("oci://") and releases["kubeflow-trainer"]["version"]
    assert (
        "trainer.kubeflow.org/trainjob" in releases["kueue"]["values"]["managerConfig"]["controllerManagerConfigYaml"]
    )
    queue = r.one("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue").inputs["spec"]
    quota = {q["name"]: q["nominalQuota"] for q in queue["resourceGroups"][0]["flavors"][0]["resources"]}
    assert quota["nvidia.com/gpu"] == "64"
    # Every resource a job requests is covered by the queue (Kueue admits nothing else).
    assert set(r.plan.kubernetes.job.resources) <= set(queue["resourceGroups"][0]["coveredResources"])
    runtime = r.one("kubernetes:trainer.kubeflow.org/v1alpha1:ClusterTrainingRuntime").inputs
    assert runtime["metadata"]["name"] == r.plan.kubernetes.job.runtime


def test_eks_cluster_spans_two_zones_and_is_reachable_only_from_allowed_networks(eks: Any) -> None:
    c = eks.one(EKS).inputs
    assert c["version"] == "1.35" and c["accessConfig"]["authenticationMode"] == "API"
    vpc = c["vpcConfig"]
    assert vpc["endpointPrivateAccess"] is True and vpc["publicAccessCidrs"] == ["203.0.113.0/24"]
    subnets = {r.id: r.outputs for r in eks.of_type("aws:ec2/subnet:Subnet")}
    zones = {subnets[s]["availabilityZoneId"] for s in vpc["subnetIds"]}
    assert len(zones) == 2 and c["upgradePolicy"] == {"supportType": "STANDARD"}


def test_eks_control_plane_subnet_is_placed_by_zone_id_never_in_one_eks_refuses(eks: Any) -> None:
    """The mocked account maps us-east-1b (the plan's preferred name) to use1-az3, which EKS refuses."""
    from provision.clouds.aws.mocks import zone_ids

    assert zone_ids("us-east-1")["us-east-1b"] == "use1-az3"
    cp = next(r for r in eks.of_type("aws:ec2/subnet:Subnet") if r.name.endswith("-control-plane"))
    assert "availabilityZone" not in cp.inputs
    assert cp.inputs["availabilityZoneId"] == "use1-az2" and cp.outputs["availabilityZone"] == "us-east-1c"


@pytest.mark.parametrize(
    ("names", "ids", "preferred", "chosen"),
    [
        (["us-east-1a", "us-east-1b", "us-east-1c"], ["use1-az1", "use1-az2", "use1-az4"], "us-east-1b", "use1-az2"),
        (["us-east-1a", "us-east-1c"], ["use1-az1", "use1-az2"], "us-east-1b", "use1-az2"),
        (["ca-central-1a", "ca-central-1b"], ["cac1-az1", "cac1-az3"], "ca-central-1b", None),
    ],
)
def test_control_plane_zone_keeps_the_preferred_name_only_when_eks_accepts_its_id(
    names: list[str], ids: list[str], preferred: str, chosen: str | None
) -> None:
    from provision.clouds.aws.kubeplan import pick_control_plane_zone

    node = names[0]
    if chosen is None:
        with pytest.raises(ValueError, match="no Availability Zone besides"):
            pick_control_plane_zone(names, ids, node, preferred)
    else:
        assert pick_control_plane_zone(names, ids, node, preferred) == chosen


def test_eks_gpu_group_launches_the_full_efa_layout_in_the_placement_group(eks: Any) -> None:
    lt = eks.one(LT).inputs
    nics = lt["networkInterfaces"]
    assert len(nics) == 33 and [n["interfaceType"] for n in nics].count("efa-only") == 32
    assert all("subnetId" not in n for n in nics)  # EKS refuses a subnet in the launch template
    cluster_sg = eks.one(EKS).outputs["vpcConfig"]["clusterSecurityGroupId"]
    assert all(cluster_sg in n["securityGroups"] for n in nics)
    assert lt["placement"]["groupName"] == eks.one("aws:ec2/placementGroup:PlacementGroup").outputs["name"]
    assert "iamInstanceProfile" not in lt and "instanceType" not in lt
    gpu = {r.inputs["nodeGroupName"]: r.inputs for r in eks.of_type(NODEGROUP)}["gpu"]
    assert gpu["scalingConfig"] == {"desiredSize": 8, "maxSize": 8, "minSize": 8}
    assert gpu["capacityType"] == "ON_DEMAND" and gpu["instanceTypes"] == ["p5.48xlarge"]
    assert gpu["launchTemplate"]["id"] == eks.one(LT).id and gpu["amiType"] == "AL2023_x86_64_NVIDIA"


def test_eks_has_device_plugins_pod_identity_fsx_volume_and_an_expiry_schedule(eks: Any) -> None:
    charts = {r.inputs["name"]: r.inputs for r in eks.of_type(RELEASE)}
    assert charts["aws-efa-k8s-device-plugin"]["values"]["nodeSelector"] == {"vpc.amazonaws.com/efa.present": "true"}
    assert charts["nvidia-device-plugin"]["version"] == "0.17.1"
    addons = {r.inputs["addonName"] for r in eks.of_type("aws:eks/addon:Addon")}
    assert {"vpc-cni", "eks-pod-identity-agent", "aws-fsx-csi-driver", "coredns"} <= addons
    assoc = eks.one("aws:eks/podIdentityAssociation:PodIdentityAssociation").inputs
    assert (assoc["namespace"], assoc["serviceAccount"]) == ("training", "trainer")
    csi = eks.one(PV).inputs["spec"]["csi"]
    assert (
        csi["driver"] == "fsx.csi.aws.com"
        and csi["volumeHandle"] == eks.one("aws:fsx/lustreFileSystem:LustreFileSystem").id
    )
    # Every node group (GPU and system) is scaled to 0 at the expiry by a schedule on its own ASG.
    schedules = {r.name: r.inputs for r in eks.of_type("aws:autoscaling/schedule:Schedule")}
    assert set(schedules) == {"aws-p5-64-eks-gpu-expiry", "aws-p5-64-eks-system-expiry"}
    for group in eks.of_type(NODEGROUP):
        schedule = schedules[f"aws-p5-64-eks-{group.inputs['nodeGroupName']}-expiry"]
        assert schedule["desiredCapacity"] == schedule["minSize"] == schedule["maxSize"] == 0
        assert schedule["startTime"] == "2026-11-30T00:00:00Z"
        assert schedule["autoscalingGroupName"] == group.outputs["resources"][0]["autoscalingGroups"][0]["name"]


@pytest.mark.parametrize("stack", ["gcp-a3-64-gke", "aws-p5-64-eks", "azure-ndh100-64-aks"])
def test_resource_count_does_not_grow_with_node_count(stack: str) -> None:
    small = preview(variant(stack, gpus=16), stack=stack)
    large = preview(variant(stack, gpus=512, lifetime={"ttl": "2h"}), stack=stack)
    assert Counter(r.type for r in small.resources) == Counter(r.type for r in large.resources)


def test_eks_capacity_block_and_spot_node_groups() -> None:
    block = preview(
        variant("aws-p5-64-eks", capacity={"type": "capacity-block", "reservation": "cr-0123456789abcdef0"})
    )
    lt = block.one(LT).inputs
    assert lt["instanceType"] == "p5.48xlarge" and lt["instanceMarketOptions"] == {"marketType": "capacity-block"}
    target = lt["capacityReservationSpecification"]["capacityReservationTarget"]
    assert target == {"capacityReservationId": "cr-0123456789abcdef0"}
    gpu = [r.inputs for r in block.of_type(NODEGROUP) if r.inputs["nodeGroupName"] == "gpu"][0]
    assert gpu["capacityType"] == "CAPACITY_BLOCK" and "instanceTypes" not in gpu
    spot = preview(variant("aws-p5-64-eks", capacity={"type": "spot"}))
    assert [r.inputs["capacityType"] for r in spot.of_type(NODEGROUP) if r.inputs["nodeGroupName"] == "gpu"] == ["SPOT"]


def test_gke_flex_start_spot_and_reservation_pools() -> None:
    flex = preview(variant("gcp-a3-64-gke", capacity={"type": "flex-start"}, lifetime={"ttl": "24h"}))
    gpu = [r.inputs for r in flex.of_type(POOL) if r.inputs["name"] == "gpu"][0]
    assert "nodeCount" not in gpu and gpu["autoscaling"]["totalMaxNodeCount"] == 8 and "placementPolicy" not in gpu
    assert gpu["nodeConfig"]["flexStart"] is True and gpu["management"]["autoRepair"] is False
    # Eight nodes: queued provisioning, so all arrive at once; Kueue admits a job once its ProvisioningRequest
    # has every node; the request carries the run duration too.
    assert gpu["queuedProvisioning"] == {"enabled": True} and gpu["nodeConfig"]["maxRunDuration"] == "86400s"
    config = flex.one("kubernetes:kueue.x-k8s.io/v1beta2:ProvisioningRequestConfig").inputs["spec"]
    assert config == {
        "provisioningClassName": "queued-provisioning.gke.io",
        "managedResources": ["nvidia.com/gpu"],
        "parameters": {"maxRunDurationSeconds": "86400"},
    }
    check = flex.one("kubernetes:kueue.x-k8s.io/v1beta2:AdmissionCheck").inputs["spec"]
    assert check["controllerName"] == "kueue.x-k8s.io/provisioning-request"
    queue = flex.one("kubernetes:kueue.x-k8s.io/v1beta2:ClusterQueue").inputs["spec"]
    assert queue["admissionChecksStrategy"] == {"admissionChecks": [{"name": "gpu-pool"}]}
    # One node: plain flex-start with the pool's run duration, no admission check.
    one = preview(variant("gcp-a3-64-gke", gpus=8, capacity={"type": "flex-start"}, lifetime={"ttl": "24h"}))
    gpu1 = [r.inputs for r in one.of_type(POOL) if r.inputs["name"] == "gpu"][0]
    assert gpu1["nodeConfig"]["maxRunDuration"] == "86400s" and "queuedProvisioning" not in gpu1
    assert not one.of_type("kubernetes:kueue.x-k8s.io/v1beta2:AdmissionCheck")
    spot = preview(variant("gcp-a3-64-gke", capacity={"type": "spot"}))
    assert [r.inputs["nodeConfig"].get("spot") for r in spot.of_type(POOL) if r.inputs["name"] == "gpu"] == [True]
    res = preview(variant("gcp-a3-64-gke", capacity={"type": "reservation", "reservation": "a3-res"}))
    gpu = [r.inputs for r in res.of_type(POOL) if r.inputs["name"] == "gpu"][0]
    assert gpu["nodeConfig"]["reservationAffinity"]["values"] == ["a3-res"] and "placementPolicy" not in gpu


def test_gke_a3_ultra_uses_rdma_networks_and_the_gib_plugin() -> None:
    spec = variant("gcp-a3ultra-64", scheduler={"kind": "kubernetes"}, access={"allowed_cidrs": ["203.0.113.0/24"]})
    r = preview(spec)
    params = [x.inputs["spec"] for x in r.of_type(PARAMS)]
    assert len(params) == 8 and {p["deviceMode"] for p in params} == {"RDMA"}
    gpu = [x.inputs for x in r.of_type(POOL) if x.inputs["name"] == "gpu"][0]
    assert len(gpu["networkConfig"]["additionalNodeNetworkConfigs"]) == 9  # 2nd gVNIC + 8 RDMA NICs
    env = r.plan.kubernetes.job.env
    assert env["NCCL_NET"] == "gIB"


def test_mocked_api_server_refuses_what_kubernetes_refuses() -> None:
    with pytest.raises(KubernetesApiError, match="metadata.name"):
        check_object("kubernetes:core/v1:Namespace", "x", {"metadata": {"name": "Training"}})
    with pytest.raises(KubernetesApiError, match="needs metadata.namespace"):
        check_object("kubernetes:core/v1:ServiceAccount", "x", {"metadata": {"name": "trainer"}})
    with pytest.raises(KubernetesApiError, match="cluster-scoped"):
        check_object("kubernetes:core/v1:PersistentVolume", "x", {"metadata": {"name": "pv", "namespace": "a"}})
    with pytest.raises(KubernetesApiError, match="pinned version"):
        check_object("kubernetes:helm.sh/v3:Release", "x", {"name": "kueue", "chart": "oci://k/kueue"})
    check_object("kubernetes:core/v1:Namespace", "x", {"metadata": {"name": "training", "labels": {"a/b": "c"}}})


def test_eks_reservation_targets_the_odcr_without_creating_a_placement_group() -> None:
    spec = variant("aws-p5-64-eks", capacity={"type": "reservation", "reservation": "cr-0123456789abcdef0"})
    r = preview(spec)
    lt = r.one(LT).inputs
    target = lt["capacityReservationSpecification"]["capacityReservationTarget"]
    assert target == {"capacityReservationId": "cr-0123456789abcdef0"} and "instanceMarketOptions" not in lt
    assert not r.of_type("aws:ec2/placementGroup:PlacementGroup") and "placement" not in lt
    gpu = [x.inputs for x in r.of_type(NODEGROUP) if x.inputs["nodeGroupName"] == "gpu"][0]
    assert gpu["capacityType"] == "ON_DEMAND" and gpu["instanceTypes"] == ["p5.48xlarge"]


def test_mocked_gke_and_eks_refuse_pool_settings_the_clouds_refuse() -> None:
    from provision.clouds.aws.mocks import eks_rule_violations
    from provision.clouds.gcp.mocks import node_pool_violations
    from provision.clouds.mocking import MockContext, Registered

    flex = {"nodeCount": 8, "nodeConfig": {"flexStart": True, "spot": True}, "management": {"autoRepair": True}}
    rules = node_pool_violations({**flex, "placementPolicy": {"type": "COMPACT"}, "nodeLocations": ["a", "b"]})
    assert len(rules) == 5  # compact in 2 zones, static count, auto-repair, reservation affinity, spot
    ctx = MockContext()
    lt = {"iamInstanceProfile": {"arn": "x"}, "instanceType": "p5.48xlarge", "networkInterfaces": [{"subnetId": "s"}]}
    ctx.ledger.append(Registered("aws:ec2/launchTemplate:LaunchTemplate", "lt", lt, "lt-1", {}, True))
    group = {
        "scalingConfig": {"minSize": 8, "desiredSize": 4, "maxSize": 8},
        "launchTemplate": {"id": "lt-1"},
        "instanceTypes": ["p5.48xlarge"],
        "capacityType": "CAPACITY_BLOCK",
    }
    found = eks_rule_violations("aws:eks/nodeGroup:NodeGroup", group, ctx)
    assert len(found) == 5 and any("iamInstanceProfile" in f for f in found)
    ctx.ledger.append(
        Registered("aws:ec2/subnet:Subnet", "s", {"availabilityZone": "us-east-1a"}, "subnet-1", {}, True)
    )
    cluster = {"vpcConfig": {"subnetIds": ["subnet-1"]}}
    assert eks_rule_violations("aws:eks/cluster:Cluster", cluster, ctx)  # one AZ only


def test_eks_gpu_nodes_configure_the_lustre_client_for_an_efa_enabled_fsx(eks: Any) -> None:
    """The VM path's fsx-efa-client step, on EKS: without it FSx traffic goes over TCP on one ENA interface."""
    import base64

    from provision.clouds.aws.userdata import FSX_EFA_CLIENT_URL

    assert eks.one("aws:fsx/lustreFileSystem:LustreFileSystem").inputs["efaEnabled"] is True
    text = base64.b64decode(eks.one(LT).inputs["userData"]).decode()
    assert text.startswith("MIME-Version: 1.0") and "text/x-shellscript" in text
    assert "dnf install -y lustre-client" in text and FSX_EFA_CLIENT_URL in text
    assert "bash ./setup.sh" in text and "grep -q '@efa'" in text


AKS = "azure-native:containerservice:ManagedCluster"
AGENT_POOL = "azure-native:containerservice:AgentPool"


def test_aks_cluster_is_entra_only_reachable_from_allowed_networks_with_egress_through_the_nat(aks: Any) -> None:
    c = aks.one(AKS).inputs
    assert c["aadProfile"] == {"managed": True, "enableAzureRBAC": True} and c["disableLocalAccounts"] is True
    # The user's networks and the NAT gateway's address, which the nodes reach the API server from.
    nat_ip = aks.one("azure-native:network:PublicIPAddress").outputs["ipAddress"]
    assert c["apiServerAccessProfile"]["authorizedIPRanges"] == ["203.0.113.0/24", f"{nat_ip}/32"]
    # Overlay pod traffic is not encapsulated: the node subnet's NSG admits the pod range.
    nsg = next(r for r in aks.of_type("azure-native:network:NetworkSecurityGroup") if r.name.endswith("-aks-nsg"))
    rules = {r["name"]: r for r in nsg.inputs["securityRules"]}
    assert rules["allow-pods-inbound"]["sourceAddressPrefixes"] == [aks.plan.kubernetes.extra.pod_cidr]
    assert c["networkProfile"]["outboundType"] == "userAssignedNATGateway"
    assert c["networkProfile"]["networkPluginMode"] == "overlay" and c["sku"]["tier"] == "Standard"
    [system] = c["agentPoolProfiles"]
    assert system["mode"] == "System" and system["count"] == 2 and system["osSKU"] == "Ubuntu2204"
    # The control plane's identity may join nodes to provision's subnet; the deployer administers the cluster.
    scopes = {r.name: r.inputs["scope"] for r in aks.of_type("azure-native:authorization:RoleAssignment")}
    assert scopes["azure-ndh100-64-aks-aks-network"] == aks.one("azure-native:network:VirtualNetwork").id
    assert scopes["azure-ndh100-64-aks-aks-admin"] == aks.one(AKS).id
    # The kubeconfig authenticates through kubelogin with the cluster's CA: no credential in the outputs.
    config = yaml.safe_load(aks.outputs["kubernetes"]["kubeconfig"])
    assert config["clusters"][0]["cluster"]["certificate-authority-data"]
    assert config["users"][0]["user"] == {"exec": {**config["users"][0]["user"]["exec"], "command": "kubelogin"}}
    assert set(config["users"][0]["user"]) == {"exec"}


def test_aks_gpu_pool_is_one_island_in_its_placement_group_with_the_aks_driver_skipped(aks: Any) -> None:
    pool = aks.one(AGENT_POOL).inputs
    assert pool["count"] == 8 and pool["vmSize"] == "Standard_ND96isr_H100_v5" and pool["mode"] == "User"
    assert pool["proximityPlacementGroupID"] == aks.one("azure-native:compute:ProximityPlacementGroup").id
    assert pool["gpuProfile"] == {"driver": "None"} and pool["osSKU"] == "Ubuntu2204"
    assert pool["nodeTaints"] == ["nvidia.com/gpu=true:NoSchedule"]
    subnets = {r.inputs["subnetName"]: r.id for r in aks.of_type("azure-native:network:Subnet")}
    assert pool["vnetSubnetID"] == subnets["nodes"] == aks.one(AKS).inputs["agentPoolProfiles"][0]["vnetSubnetID"]
    # Managed Lustre keeps its own subnet: AKS nodes must not share it.
    assert aks.one("azure-native:storagecache:AmlFilesystem").inputs["filesystemSubnet"] == subnets["filesystem"]


def test_aks_exposes_infiniband_to_pods_through_the_network_operator(aks: Any) -> None:
    charts = {r.inputs["name"]: r.inputs for r in aks.of_type(RELEASE)}
    assert {"network-operator", "gpu-operator", "azurelustre-csi-driver"} <= set(charts)
    assert charts["gpu-operator"]["values"]["driver"]["rdma"]["enabled"] is True
    assert charts["gpu-operator"]["values"]["nfd"]["enabled"] is False
    policy = aks.one("kubernetes:mellanox.com/v1alpha1:NicClusterPolicy").inputs["spec"]
    [device] = json.loads(policy["rdmaSharedDevicePlugin"]["config"])["configList"]
    assert device["resourceName"] == "shared_ib" and device["selectors"]["linkTypes"] == ["infiniband"]
    namespaces = {
        r.inputs["metadata"]["name"]: r.inputs["metadata"] for r in aks.of_type("kubernetes:core/v1:Namespace")
    }
    assert namespaces["network-operator"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    runtime = aks.one("kubernetes:trainer.kubeflow.org/v1alpha1:ClusterTrainingRuntime").inputs["spec"]
    pod = runtime["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert pod["containers"][0]["securityContext"] == {"capabilities": {"add": ["IPC_LOCK"]}}
    assert aks.plan.kubernetes.job.resources == {"nvidia.com/gpu": "8", "rdma/shared_ib": "1"}


def test_aks_shared_volume_points_the_lustre_csi_driver_at_the_file_systems_mgs(aks: Any) -> None:
    csi = aks.one(PV).inputs["spec"]["csi"]
    mgs = aks.one("azure-native:storagecache:AmlFilesystem").outputs["clientInfo"]["mgsAddress"]
    assert csi["driver"] == "azurelustre.csi.azure.com"
    assert csi["volumeAttributes"] == {"mgs-ip-address": mgs, "fs-name": "lustrefs"}


def test_aks_deletes_itself_at_the_expiry_through_workload_identity_and_a_delete_only_role(aks: Any) -> None:
    expiry = aks.plan.expires_at
    job = aks.one("kubernetes:batch/v1:CronJob").inputs
    assert job["spec"]["schedule"] == f"{expiry.minute} {expiry.hour} {expiry.day} {expiry.month} *"
    assert job["spec"]["timeZone"] == "Etc/UTC" and job["metadata"]["namespace"] == "kube-system"
    pod = job["spec"]["jobTemplate"]["spec"]["template"]
    assert pod["metadata"]["labels"] == {"azure.workload.identity/use": "true"}
    cluster = aks.one(AKS)
    assert f"az aks delete --ids {cluster.id} --yes --no-wait" in pod["spec"]["containers"][0]["command"][-1]
    role = next(
        r for r in aks.of_type("azure-native:authorization:RoleDefinition") if r.name.endswith("-aks-expiry-role")
    )
    assert role.inputs["permissions"] == [
        {
            "actions": [
                "Microsoft.ContainerService/managedClusters/read",
                "Microsoft.ContainerService/managedClusters/delete",
            ]
        }
    ]
    assignments = {r.name: r.inputs for r in aks.of_type("azure-native:authorization:RoleAssignment")}
    expiry_assignment = assignments["azure-ndh100-64-aks-aks-expiry-assignment"]
    assert expiry_assignment["scope"] == cluster.id and expiry_assignment["roleDefinitionId"] == role.id
    identity = next(
        r
        for r in aks.of_type("azure-native:managedidentity:UserAssignedIdentity")
        if r.name.endswith("-expiry-identity")
    )
    assert expiry_assignment["principalId"] == identity.outputs["principalId"]
    federation = aks.one("azure-native:managedidentity:FederatedIdentityCredential").inputs
    assert federation["issuer"] == cluster.outputs["oidcIssuerProfile"]["issuerURL"]
    assert federation["subject"] == "system:serviceaccount:kube-system:provision-expiry"
    accounts = {
        r.inputs["metadata"]["name"]: r.inputs["metadata"] for r in aks.of_type("kubernetes:core/v1:ServiceAccount")
    }
    assert accounts["provision-expiry"]["annotations"] == {
        "azure.workload.identity/client-id": identity.outputs["clientId"]
    }
    assert cluster.inputs["securityProfile"]["workloadIdentity"]["enabled"] is True


def test_aks_spot_pool_and_everything_on_it_tolerate_the_taint_aks_puts_on_spot_nodes() -> None:
    spot = preview(variant("azure-ndh100-64-aks", capacity={"type": "spot"}), stack="azure-ndh100-64-aks")
    pool = spot.one(AGENT_POOL).inputs
    assert pool["scaleSetPriority"] == "Spot" and pool["scaleSetEvictionPolicy"] == "Delete"
    assert pool["spotMaxPrice"] == -1
    taint = {
        "key": "kubernetes.azure.com/scalesetpriority",
        "operator": "Equal",
        "value": "spot",
        "effect": "NoSchedule",
    }
    policy = spot.one("kubernetes:mellanox.com/v1alpha1:NicClusterPolicy").inputs["spec"]
    charts = {r.inputs["name"]: r.inputs["values"] for r in spot.of_type(RELEASE)}
    assert taint in policy["tolerations"] and taint in charts["gpu-operator"]["daemonsets"]["tolerations"]
    assert taint in charts["network-operator"]["node-feature-discovery"]["worker"]["tolerations"]
    assert taint in spot.plan.kubernetes.job.tolerations
