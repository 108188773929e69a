"""The nodes' RAM role for the file system lookup: the graph (names, least privilege, every node, only with a
shared file system), the strict mocked cloud's RAM rules (one test per rule,
each against a bad input), and the plan-time name check."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXED_NOW, preview, shipped_preview, stack_spec
from strict_helpers import one, register, violations_of

from provision.clouds.alibaba import ramrole, strict
from provision.clouds.alibaba.adapter import AlibabaAdapter
from provision.clouds.mocking import CloudMocks, StrictViolationError
from provision.clouds.strict import Resource
from provision.spec.errors import SpecError

INSTANCE = "alicloud:ecs/instance:Instance"
ROLE = "alicloud:ram/role:Role"
POLICY = "alicloud:ram/policy:Policy"
ATTACH = "alicloud:ram/rolePolicyAttachment:RolePolicyAttachment"
NODE = {"instanceType": "ecs.gn8v.4xlarge", "imageId": "ubuntu", "vswitchId": "vsw-1", "securityGroups": ["sg-1"]}
GOOD_TRUST = ramrole.trust_policy()
GOOD_POLICY = ramrole.lookup_policy("cn-hangzhou")


@pytest.fixture(scope="module")
def cpfs() -> Any:
    return shipped_preview("alibaba-gn8-64")


# ---------------------------------------------------------------- the graph


def test_cpfs_nodes_carry_a_role_that_may_only_find_the_file_system_and_read_its_export(cpfs: Any) -> None:
    role, policy, attach = cpfs.one(ROLE), cpfs.one(POLICY), cpfs.one(ATTACH)
    assert (role.name, policy.name, attach.name) == (
        "alibaba-gn8-64-nodes-role",
        "alibaba-gn8-64-cpfs-lookup-policy",
        "alibaba-gn8-64-cpfs-lookup-attach",
    )
    assert role.inputs["roleName"] == "alibaba-gn8-64-cn-hangzhou-nodes"
    assert json.loads(role.inputs["assumeRolePolicyDocument"])["Statement"] == [
        {"Action": "sts:AssumeRole", "Effect": "Allow", "Principal": {"Service": ["ecs.aliyuncs.com"]}}
    ]
    fs = cpfs.one("alicloud:nas/fileSystem:FileSystem")
    (statement,) = json.loads(policy.inputs["policyDocument"])["Statement"]
    assert statement == {
        "Action": ["nas:DescribeFileSystems", "nas:DescribeProtocolMountTarget"],
        "Effect": "Allow",
        "Resource": ["acs:nas:cn-hangzhou:*:filesystem/*"],
    }
    assert (attach.inputs["roleName"], attach.inputs["policyName"], attach.inputs["policyType"]) == (
        role.inputs["roleName"],
        policy.inputs["policyName"],
        "Custom",
    )
    nodes = cpfs.of_type(INSTANCE)
    assert len(nodes) == 8 and {n.inputs["roleName"] for n in nodes} == {role.inputs["roleName"]}
    assert all(attach.urn in n.dependencies for n in nodes)  # the policy is attached before a node boots
    shared = cpfs.outputs["shared_fs"]
    assert shared["mounted_at_boot"] is True and role.inputs["roleName"] in shared["boot_lookup"]
    assert fs.id in shared["lookup_command"]  # kept for people


def test_ram_names_follow_the_cluster_and_region_so_two_clusters_never_share_a_role() -> None:
    a = ramrole.role_name("train-a", "cn-hangzhou"), ramrole.policy_name("train-a", "cn-hangzhou")
    b = ramrole.role_name("train-b", "cn-hangzhou"), ramrole.policy_name("train-b", "cn-hangzhou")
    c = ramrole.role_name("train-a", "cn-beijing"), ramrole.policy_name("train-a", "cn-beijing")
    assert len({a, b, c}) == 3


def test_nas_clusters_get_the_same_lookup_role() -> None:
    result = shipped_preview("alibaba-gn8-ci")
    role = result.one(ROLE)
    assert role.inputs["roleName"] == "alibaba-gn8-ci-cn-hangzhou-nodes"
    assert {n.inputs["roleName"] for n in result.of_type(INSTANCE)} == {role.inputs["roleName"]}


def test_clusters_without_a_shared_file_system_get_no_role() -> None:
    from test_alibaba_graph import spec

    result = preview(spec(storage={}))
    assert not [r for r in result.resources if r.type.startswith("alicloud:ram/")]
    assert all("roleName" not in n.inputs for n in result.of_type(INSTANCE))


def test_the_role_is_a_child_of_the_cluster_and_not_retained_with_a_retained_file_system() -> None:
    """`down` deletes the stack's resources except those with retain_on_delete (the plan's storage.retain keeps the
    file system and its network); the RAM resources are plain children of the cluster component."""
    from provision.clouds.alibaba import storage

    spec = stack_spec("alibaba-gn8-64")
    data = spec.model_dump(mode="json", exclude_none=True)
    data["storage"]["shared"]["retain"] = True
    result = preview(type(spec).model_validate(data))
    for token in (ROLE, POLICY, ATTACH):
        assert "provision:alibaba:Cluster$alicloud:ram/" in result.one(token).urn
    source = Path(storage.__file__).read_text()
    lookup = source[source.index("def _lookup_role") :]
    assert "retain_on_delete" not in lookup  # only the file system's options retain


# ---------------------------------------------------------------- strict: one rule each, against a bad input


@pytest.mark.parametrize(
    ("type_token", "inputs", "field", "said"),
    [
        (ROLE, {"roleName": "nodes_role", "assumeRolePolicyDocument": GOOD_TRUST}, "roleName", "letters, digits"),
        (ROLE, {"roleName": "r" * 65, "assumeRolePolicyDocument": GOOD_TRUST}, "roleName", "1-64"),
        (POLICY, {"policyName": "cpfs.lookup", "policyDocument": GOOD_POLICY}, "policyName", "1-128"),
        (
            ROLE,
            {"roleName": "r", "assumeRolePolicyDocument": GOOD_TRUST, "description": "d" * 1025},
            "description",
            "1-1024",
        ),
        (ATTACH, {"policyName": "p", "policyType": "Managed", "roleName": "r"}, "policyType", "System, Custom"),
    ],
)
def test_ram_names_and_lists(type_token: str, inputs: dict[str, Any], field: str, said: str) -> None:
    v = one(violations_of(type_token, "x", inputs), field)
    assert said in v.rule and ("RAM API reference" in v.source or "terraform-provider-alicloud" in v.source)


def _doc(**over: Any) -> str:
    base = json.loads(GOOD_POLICY)
    base.update(over)
    return json.dumps(base)


@pytest.mark.parametrize(
    ("document", "said"),
    [
        (_doc(Version="2012-10-17"), "Version must be '1'"),
        (_doc(Statement=[{"Effect": "Allow", "Action": ["nas:DescribeProtocolMountTarget"]}]), "Resource is required"),
        (_doc(Statement=[{"Effect": "Permit", "Action": "x", "Resource": "*"}]), "Effect must be Allow or Deny"),
        (_doc(Statement=[]), "non-empty list"),
        ("{not json", "not JSON"),
        (_doc(Statement=[{"Effect": "Allow", "Action": "a" * 7000, "Resource": "*"}]), "1-6144 characters"),
    ],
)
def test_permission_policy_documents_must_be_policy_language(document: str, said: str) -> None:
    v = one(violations_of(POLICY, "x", {"policyName": "p", "policyDocument": document}), "policyDocument")
    assert said in v.rule and "CreatePolicy" in v.source


@pytest.mark.parametrize(
    ("document", "said"),
    [
        (json.dumps({"Version": "1", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole"}]}), "Principal"),
        (
            json.dumps(
                {"Version": "1", "Statement": [{"Effect": "Allow", "Action": "ecs:*", "Principal": {"Service": "x"}}]}
            ),
            "must be sts:AssumeRole",
        ),
    ],
)
def test_trust_policies_need_a_principal_and_assume_role(document: str, said: str) -> None:
    v = one(
        violations_of(ROLE, "x", {"roleName": "r", "assumeRolePolicyDocument": document}), "assumeRolePolicyDocument"
    )
    assert said in v.rule


def test_an_attachment_names_a_role_and_a_custom_policy_of_the_stack() -> None:
    with pytest.raises(StrictViolationError) as err:
        register(ATTACH, "a", {"policyName": "p", "policyType": "Custom", "roleName": "nobody"})
    assert {v.field for v in err.value.violations} == {"roleName", "policyName"}
    mocks = register(ROLE, "r", {"roleName": "nodes", "assumeRolePolicyDocument": GOOD_TRUST})
    register(POLICY, "p", {"policyName": "lookup", "policyDocument": GOOD_POLICY}, mocks)
    register(ATTACH, "a", {"policyName": "lookup", "policyType": "Custom", "roleName": "nodes"}, mocks)
    register(ATTACH, "s", {"policyName": "AliyunNASReadOnlyAccess", "policyType": "System", "roleName": "nodes"}, mocks)


def test_a_nodes_role_must_exist_in_the_stack_and_trust_ecs() -> None:
    v = one(violations_of(INSTANCE, "x-node-0", {**NODE, "roleName": "elsewhere"}), "roleName")
    assert "no RAM role created in this stack" in v.rule and "Instance RAM roles" in v.source
    mocks = CloudMocks(region="cn-hangzhou")
    untrusting = json.dumps(
        {
            "Version": "1",
            "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole", "Principal": {"RAM": ["acs:ram::1:root"]}}],
        }
    )
    register(ROLE, "r", {"roleName": "people", "assumeRolePolicyDocument": untrusting}, mocks)
    register(ROLE, "n", {"roleName": "nodes", "assumeRolePolicyDocument": GOOD_TRUST}, mocks)
    bad = strict.role_reference_rules(Resource(INSTANCE, "x", {**NODE, "roleName": "people"}), mocks.ctx)
    assert [v.rule for v in bad] == ["role people does not trust ecs.aliyuncs.com"]
    assert strict.role_reference_rules(Resource(INSTANCE, "x", {**NODE, "roleName": "nodes"}), mocks.ctx) == []


# ---------------------------------------------------------------- plan time


def test_a_ram_name_over_the_limit_is_a_spec_error_on_the_cluster_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """Cluster names (2-40) and today's regions fit; a longer region (cn-shanghai-finance-1) can overflow 64."""
    assert ramrole.name_problems("a" * 40, "cn-wulanchabu") == []
    (field, value, rule, fix) = ramrole.name_problems("a" * 40, "cn-shanghai-finance-1")[0]
    assert field == "name" and "1-64 characters" in rule and "CreateRole" in rule and "by 4 characters" in fix
    monkeypatch.setattr(ramrole, "role_name", lambda cluster, region: f"{cluster}-{region}-" + "x" * 60)
    with pytest.raises(SpecError) as err:
        AlibabaAdapter().plan(stack_spec("alibaba-gn8-64"), now=FIXED_NOW, owner="t", stack="t")
    assert [p.path for p in err.value.problems] == ["name"]


def test_the_nodes_call_the_nas_vpc_endpoint_only_where_the_region_has_one() -> None:
    # Alibaba's CSI driver (pkg/cloud/utils.go regionsCanUseVpcEndpoint) uses nas-vpc.<region> only in the
    # regions it lists; cn-nanjing and cn-fuzhou are not among them, so nas-vpc there would not resolve.
    assert ramrole.nas_endpoint("cn-hangzhou") == "https://nas-vpc.cn-hangzhou.aliyuncs.com"
    assert ramrole.nas_endpoint("cn-wulanchabu") == "https://nas-vpc.cn-wulanchabu.aliyuncs.com"
    assert ramrole.nas_endpoint("cn-nanjing") == "https://nas.cn-nanjing.aliyuncs.com"
    assert ramrole.nas_endpoint("cn-fuzhou") == "https://nas.cn-fuzhou.aliyuncs.com"
