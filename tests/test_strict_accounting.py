"""The strict mocked cloud accounts for every input leaf: checked by a vendor-sourced rule, waived with a written
reason, or unchecked; no shipped stack has an unchecked leaf, and ``provision.testing.strict_check`` checks one
resource of a user's own program."""

from __future__ import annotations

import json

import pytest
from conftest import ROOT, shipped_preview

from provision.clouds.strict import CHECKED, UNCHECKED, WAIVED, Resource, path_matches
from provision.testing import strict_check

STACKS = sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in (ROOT / "stacks").glob("Pulumi.*.yaml"))


@pytest.mark.parametrize("stack", STACKS)
def test_every_input_leaf_of_a_shipped_stack_is_checked_or_waived(stack: str) -> None:
    run = shipped_preview(stack, stack=stack, accounting=True)  # the run the stack's policy check reads
    assert run.accounting, "nothing was accounted for"
    unchecked = sorted({f"{x.type} {x.path}" for x in run.accounting if x.status == UNCHECKED})
    assert not unchecked, f"{stack}: {len(unchecked)} input paths no rule checks and no waiver covers:\n" + "\n".join(
        unchecked
    )
    for leaf in run.accounting:
        assert leaf.status in (CHECKED, WAIVED)
        assert leaf.basis, f"{leaf} has no source or reason"


def test_a_leaf_no_rule_knows_is_reported_unchecked() -> None:
    from provision.clouds.mocking import CloudMocks

    mocks = CloudMocks()
    res = Resource("aws:eks/nodeGroup:NodeGroup", "ng", {"scalingConfig": {"minSize": 1}, "madeUpField": "x"})
    status = {leaf.path: leaf.status for leaf in mocks.account(res)}
    assert status == {"scalingConfig.minSize": CHECKED, "madeUpField": UNCHECKED}


def test_path_patterns_cover_children_and_one_segment_wildcards() -> None:
    assert path_matches("tags.team", "tags")
    assert path_matches("disks[].labels.a", "disks[].labels")
    assert path_matches("metadata.labels.app", "metadata.*")
    assert not path_matches("tagsExtra", "tags")


# ---------------------------------------------------------------------- one-resource checks (EKS beyond the named)


@pytest.mark.parametrize(
    ("type_token", "inputs", "field"),
    [
        ("aws:eks/nodeGroup:NodeGroup", {"amiType": "AL2023_x86_64_NVIDIA_GPU"}, "amiType"),
        ("aws:eks/nodeGroup:NodeGroup", {"diskSize": "a"}, None),  # not a number: no range rule fires
        ("aws:eks/nodeGroup:NodeGroup", {"scalingConfig": {"maxSize": 0}}, "scalingConfig.maxSize"),
        (
            "aws:eks/nodeGroup:NodeGroup",
            {"updateConfig": {"maxUnavailablePercentage": 101}},
            "updateConfig.maxUnavailablePercentage",
        ),
        ("aws:eks/nodeGroup:NodeGroup", {"labels": {"k" * 64: "v"}}, "labels." + "k" * 64),
        ("aws:eks/nodeGroup:NodeGroup", {"taints": [{"key": "k", "effect": "NoExecute"}]}, "taints[].effect"),
        (
            "aws:eks/cluster:Cluster",
            {"kubernetesNetworkConfig": {"ipFamily": "IPV4"}},
            "kubernetesNetworkConfig.ipFamily",
        ),
        ("aws:eks/cluster:Cluster", {"enabledClusterLogTypes": ["scheduler", "kubelet"]}, "enabledClusterLogTypes[]"),
        ("aws:eks/addon:Addon", {"resolveConflictsOnUpdate": "REPLACE"}, "resolveConflictsOnUpdate"),
    ],
)
def test_strict_check_refuses_invalid_eks_inputs_with_their_source(
    type_token: str, inputs: dict, field: str | None
) -> None:
    found = strict_check(type_token, inputs)
    if field is None:
        return
    hits = [v for v in found if v.field == field]
    assert hits, f"{type_token} {inputs}: nothing refused ({found})"
    assert all(v.source.startswith("botocore eks") for v in hits)


def test_strict_check_accepts_valid_eks_inputs() -> None:
    ok = {
        "amiType": "AL2023_x86_64_NVIDIA",
        "capacityType": "ON_DEMAND",
        "scalingConfig": {"minSize": 8, "maxSize": 8, "desiredSize": 8},
        "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}],
        "labels": {"provision-pool": "gpu"},
    }
    assert strict_check("aws:eks/nodeGroup:NodeGroup", ok) == []


def test_strict_check_names_what_it_cannot_check() -> None:
    with pytest.raises(ValueError, match="type token"):
        strict_check("mycorp:thing/Thing", {})


# ---------------------------------------------------------------------- the CLI


def test_preview_strict_report_json_counts_and_lists_unchecked_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from provision.cli.app import app

    monkeypatch.chdir(ROOT)
    result = CliRunner().invoke(app, ["preview", "aws-p5-ci", "--strict-report", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert all(isinstance(doc[k], int) for k in ("checked", "waived", "unchecked"))
    assert doc["checked"] > 0 and doc["unchecked"] == 0 and doc["unchecked_paths"] == []
    assert doc["checked"] + doc["waived"] + doc["unchecked"] == len(doc["leaves"])


# ---------------------------------------------------------------------- one-resource checks (GKE node pools)


@pytest.mark.parametrize(
    ("inputs", "field"),
    [
        (
            {"nodeConfig": {"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]}},
            "nodeConfig.taints[].effect",
        ),
        (
            {
                "nodeConfig": {
                    "guestAccelerators": [
                        {
                            "type": "nvidia-h100-80gb",
                            "count": 8,
                            "gpuDriverInstallationConfig": {"gpuDriverVersion": "latest"},
                        }
                    ]
                }
            },
            "nodeConfig.guestAccelerators[].gpuDriverInstallationConfig.gpuDriverVersion",
        ),
        (
            {"nodeConfig": {"reservationAffinity": {"consumeReservationType": "NONE"}}},
            "nodeConfig.reservationAffinity.consumeReservationType",
        ),
        ({"nodeConfig": {"workloadMetadataConfig": {"mode": "GKE"}}}, "nodeConfig.workloadMetadataConfig.mode"),
        ({"nodeConfig": {"maxRunDuration": "12h"}}, "nodeConfig.maxRunDuration"),
        ({"nodeConfig": {"labels": {"bad key": "x"}}}, "nodeConfig.labels.bad key"),
        ({"nodeConfig": {"resourceLabels": {"Team": "x"}}}, "nodeConfig.resourceLabels.Team"),
        ({"nodeConfig": {"metadata": {"bad key": "x"}}}, "nodeConfig.metadata.bad key"),
        ({"upgradeSettings": {"strategy": "ROLLING"}}, "upgradeSettings.strategy"),
        ({"placementPolicy": {"type": "CLUSTERED"}}, "placementPolicy.type"),
    ],
)
def test_strict_check_refuses_invalid_gke_node_pool_inputs_with_their_source(inputs: dict, field: str) -> None:
    hits = [v for v in strict_check("gcp:container/nodePool:NodePool", inputs) if v.field == field]
    assert hits, f"{inputs}: nothing refused"
    assert all(v.source for v in hits)


def test_strict_check_refuses_gke_cluster_network_fields() -> None:
    found = {v.field for v in strict_check("gcp:container/cluster:Cluster", {"datapathProvider": "DATAPATH_V2"})}
    assert "datapathProvider" in found


# ---------------------------------------------------------------------- one-resource checks (Alibaba)

_ECS = "alicloud:ecs/instance:Instance"
_NAS = "alicloud:nas/fileSystem:FileSystem"


@pytest.mark.parametrize(
    ("type_token", "inputs", "field"),
    [
        (_ECS, {"spotStrategy": "SpotAsPriceGo", "deploymentSetId": "ds-1"}, "deploymentSetId"),
        (_ECS, {"autoReleaseTime": "2020-01-01T00:00:00Z"}, "autoReleaseTime"),
        (_ECS, {"tags": {f"k{i}": "v" for i in range(25)}}, "tags"),
        (_ECS, {"tags": {"u": "https://example.com"}}, "tags.u"),
        (_ECS, {"httpTokens": "yes"}, "httpTokens"),
        (_ECS, {"systemDiskSize": 10}, "systemDiskSize"),
        (
            _ECS,
            {"networkInterfaces": {"networkInterfaceTrafficMode": "Fast"}},
            "networkInterfaces.networkInterfaceTrafficMode",
        ),
        (_NAS, {"fileSystemType": "cpfs", "storageType": "Capacity", "vpcId": "v", "vswitchId": "s"}, "storageType"),
        (_NAS, {"fileSystemType": "cpfs", "encryptType": 1, "vpcId": "v", "vswitchId": "s"}, "encryptType"),
        (_NAS, {"fileSystemType": "cpfs", "storageType": "advance_200"}, "vswitchId"),
        (_NAS, {"description": "1 starts with a digit"}, "description"),
        ("alicloud:ecs/ecsDeploymentSet:EcsDeploymentSet", {"deploymentSetName": "1ds"}, "deploymentSetName"),
        (
            "alicloud:ecs/eipAddress:EipAddress",
            {"bandwidth": "5000", "internetChargeType": "PayByTraffic"},
            "bandwidth",
        ),
        ("alicloud:vpc/switch:Switch", {"cidrBlock": "10.0.0.0/30"}, "cidrBlock"),
        ("alicloud:vpc/network:Network", {"cidrBlock": "8.8.0.0/16"}, "cidrBlock"),
        ("alicloud:nas/accessRule:AccessRule", {"sourceCidrIp": "not-a-cidr"}, "sourceCidrIp"),
    ],
)
def test_strict_check_refuses_inputs_alibabas_api_documentation_rules_out(
    type_token: str, inputs: dict, field: str
) -> None:
    hits = [v for v in strict_check(type_token, inputs) if v.field == field]
    assert hits, f"{type_token} {inputs}: nothing refused"
    assert all("Alibaba Cloud" in v.source for v in hits)
