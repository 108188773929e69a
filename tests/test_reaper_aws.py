"""The AWS reaper against moto: expired clusters are found by tag and removed whole."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import boto3
import pytest
from conftest import moto_without_public_amis
from moto import mock_aws

from provision.clouds.aws.sweeper import TAG_RETAIN, AwsSweeper
from provision.clouds.base import TAG_CLUSTER, TAG_EXPIRES, label_time

REGION = "us-east-1"
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc)


def _tags(cluster: str, expires: datetime, **extra: str) -> list[dict[str, str]]:
    tags = {TAG_CLUSTER: cluster, TAG_EXPIRES: label_time(expires), **extra}
    return [{"Key": k, "Value": v} for k, v in tags.items()]


def _cluster(cluster: str, expires: datetime, retain_fs: bool = False) -> dict[str, str]:
    ec2 = boto3.client("ec2", region_name=REGION)
    spec = lambda kind, **extra: [{"ResourceType": kind, "Tags": _tags(cluster, expires, **extra)}]  # noqa: E731
    vpc = ec2.create_vpc(CidrBlock="10.0.0.0/16", TagSpecifications=spec("vpc"))["Vpc"]["VpcId"]
    subnet = ec2.create_subnet(VpcId=vpc, CidrBlock="10.0.0.0/20", TagSpecifications=spec("subnet"))["Subnet"]
    sg = ec2.create_security_group(
        GroupName=f"{cluster}-efa", Description="efa", VpcId=vpc, TagSpecifications=spec("security-group")
    )["GroupId"]
    lt = ec2.create_launch_template(
        LaunchTemplateName=f"{cluster}-lt",
        LaunchTemplateData={"ImageId": "ami-12c6146b", "InstanceType": "p5.48xlarge"},
        TagSpecifications=spec("launch-template"),
    )["LaunchTemplate"]["LaunchTemplateId"]
    ec2.run_instances(
        ImageId="ami-12c6146b",
        MinCount=2,
        MaxCount=2,
        InstanceType="p5.48xlarge",
        SubnetId=subnet["SubnetId"],
        SecurityGroupIds=[sg],
        TagSpecifications=spec("instance"),
    )
    fsx = boto3.client("fsx", region_name=REGION)
    extra = {TAG_RETAIN: "true"} if retain_fs else {}
    fs = fsx.create_file_system(
        FileSystemType="LUSTRE",
        StorageCapacity=1200,
        SubnetIds=[subnet["SubnetId"]],
        LustreConfiguration={"DeploymentType": "PERSISTENT_2", "PerUnitStorageThroughput": 125},
        Tags=_tags(cluster, expires, **extra),
    )["FileSystem"]["FileSystemId"]
    return {"vpc": vpc, "subnet": subnet["SubnetId"], "sg": sg, "lt": lt, "fs": fs}


@pytest.fixture(scope="module")
def boto3_session_per_module():
    """One boto3 default session for this module's tests, dropped after it. A session keeps the service models it
    parsed (EC2's is megabytes of JSON); moto's ``mock_aws`` would start each test with a new one. moto's public AMI
    list is not loaded into each test's EC2 (no test reads images; conftest.moto_without_public_amis)."""
    with pytest.MonkeyPatch.context() as mp, moto_without_public_amis():
        mp.setattr(boto3, "DEFAULT_SESSION", None)
        yield


@pytest.fixture
def aws(boto3_session_per_module):
    """moto's whole lifecycle per test (empty accounts at the start, everything removed at the end), so no test sees
    another's resources; only the boto3 session, which holds no cloud state, is kept for the module."""
    with mock_aws(config={"core": {"reset_boto3_session": False}}):
        yield


def test_reaper_finds_only_expired_clusters(aws) -> None:
    old = _cluster("ci-old", NOW - timedelta(hours=1))
    _cluster("ci-live", NOW + timedelta(hours=5))
    found = AwsSweeper(REGION).find(NOW)
    assert [c.cluster for c in found] == ["ci-old"]
    kinds = {r.split(":")[0] for r in found[0].resources}
    assert {"instance", "fsx", "launch-template", "security-group", "subnet", "vpc"} <= kinds
    assert f"fsx:{old['fs']}" in found[0].resources
    assert found[0].expires_at == NOW - timedelta(hours=1)


def test_reaper_deletes_everything_of_an_expired_cluster_and_nothing_else(aws) -> None:
    _cluster("ci-old", NOW - timedelta(minutes=5))
    live = _cluster("ci-live", NOW + timedelta(hours=5))
    sweeper = AwsSweeper(REGION, sleep=lambda s: None)
    (expired,) = sweeper.find(NOW)
    deleted = sweeper.delete(expired, NOW)
    assert any(d.startswith("instance:") for d in deleted) and any(d.startswith("vpc:") for d in deleted)
    assert sweeper.find(NOW) == []
    ec2 = boto3.client("ec2", region_name=REGION)
    assert [v["VpcId"] for v in ec2.describe_vpcs(Filters=[{"Name": "tag-key", "Values": [TAG_EXPIRES]}])["Vpcs"]] == [
        live["vpc"]
    ]
    fs_ids = [f["FileSystemId"] for f in boto3.client("fsx", region_name=REGION).describe_file_systems()["FileSystems"]]
    assert fs_ids == [live["fs"]]


def test_reaper_keeps_a_retained_filesystem(aws) -> None:
    old = _cluster("ci-old", NOW - timedelta(minutes=5), retain_fs=True)
    sweeper = AwsSweeper(REGION, sleep=lambda s: None)
    (expired,) = sweeper.find(NOW)
    deleted = sweeper.delete(expired, NOW)
    assert f"fsx:{old['fs']}" not in deleted
    fs_ids = [f["FileSystemId"] for f in boto3.client("fsx", region_name=REGION).describe_file_systems()["FileSystems"]]
    assert fs_ids == [old["fs"]]


def test_reaper_retries_a_dependency_violation_then_succeeds(aws) -> None:
    _cluster("ci-old", NOW - timedelta(minutes=5))
    real = boto3.client
    calls = {"n": 0}

    class Flaky:
        def __init__(self, inner):
            self._inner = inner

        def __getattr__(self, name):
            attr = getattr(self._inner, name)
            if name != "delete_security_group":
                return attr

            def flaky(**kw):
                calls["n"] += 1
                if calls["n"] == 1:
                    raise RuntimeError("DependencyViolation: resource sg has a dependent object")
                return attr(**kw)

            return flaky

    waits: list[float] = []
    sweeper = AwsSweeper(REGION, client=lambda svc, reg: Flaky(real(svc, region_name=reg)), sleep=waits.append)
    (expired,) = sweeper.find(NOW)
    sweeper.delete(expired, NOW)
    assert calls["n"] == 2 and waits == [1.0]
    assert sweeper.find(NOW) == []


_LOGS_POLICY = (
    '{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "logs:PutLogEvents", "Resource": "*"}]}'
)


def _iam_identity(cluster: str, expires: datetime) -> tuple[str, str]:
    """The node role and instance profile a cluster creates (as the AWS components do), tagged."""
    iam = boto3.client("iam", region_name=REGION)
    role = f"{cluster}-node-1a2b3c4"
    iam.create_role(
        RoleName=role,
        AssumeRolePolicyDocument='{"Version": "2012-10-17", "Statement": []}',
        Tags=_tags(cluster, expires),
    )
    policy = iam.create_policy(PolicyName=f"{cluster}-logs", PolicyDocument=_LOGS_POLICY)["Policy"]["Arn"]
    iam.attach_role_policy(RoleName=role, PolicyArn=policy)
    iam.put_role_policy(RoleName=role, PolicyName="extra", PolicyDocument=_LOGS_POLICY)
    profile = f"{cluster}-node-5d6e7f8"
    iam.create_instance_profile(InstanceProfileName=profile, Tags=_tags(cluster, expires))
    iam.add_role_to_instance_profile(InstanceProfileName=profile, RoleName=role)
    return role, profile


def test_reaper_finds_and_deletes_the_iam_role_and_instance_profile_of_an_expired_cluster(aws) -> None:
    _cluster("ci-old", NOW - timedelta(minutes=5))
    role, profile = _iam_identity("ci-old", NOW - timedelta(minutes=5))
    live_role, live_profile = _iam_identity("ci-live", NOW + timedelta(hours=5))
    sweeper = AwsSweeper(REGION, sleep=lambda s: None)
    (expired,) = sweeper.find(NOW)
    assert f"iam-role:{role}" in expired.resources
    assert f"instance-profile:{profile}" in expired.resources
    deleted = sweeper.delete(expired, NOW)
    assert deleted.index(f"instance-profile:{profile}") < deleted.index(f"iam-role:{role}")
    iam = boto3.client("iam", region_name=REGION)
    assert [r["RoleName"] for r in iam.list_roles()["Roles"]] == [live_role]
    assert [p["InstanceProfileName"] for p in iam.list_instance_profiles()["InstanceProfiles"]] == [live_profile]
    assert sweeper.find(NOW) == []


def test_reaper_reports_tagged_resources_it_cannot_delete_and_deletes_the_rest(aws) -> None:
    _cluster("ci-old", NOW - timedelta(minutes=5))
    ec2 = boto3.client("ec2", region_name=REGION)
    volume = ec2.create_volume(
        AvailabilityZone=f"{REGION}a",
        Size=10,
        TagSpecifications=[{"ResourceType": "volume", "Tags": _tags("ci-old", NOW - timedelta(minutes=5))}],
    )["VolumeId"]
    sweeper = AwsSweeper(REGION, sleep=lambda s: None)
    (expired,) = sweeper.find(NOW)
    others = [r for r in expired.resources if r.startswith("other:")]
    assert others == [f"other:arn:aws:ec2:{REGION}:123456789012:volume/{volume}"]
    deleted = sweeper.delete(expired, NOW)
    assert not any(d.startswith("other:") for d in deleted)
    assert any(d.startswith("vpc:") for d in deleted)


#: The deletion order the sweeper promises: what holds network interfaces or addresses first,
#: then the network from the inside out, then the global IAM entities (profiles hold roles).
DELETION_ORDER = [
    "instance",
    "eks-pod-identity",
    "eks-addon",
    "eks-nodegroup",
    "eks-cluster",
    "fsx",
    "launch-template",
    "placement-group",
    "nat-gateway",
    "elastic-ip",
    "vpc-endpoint",
    "security-group",
    "subnet",
    "route-table",
    "internet-gateway",
    "vpc",
    "key-pair",
    "ssm-parameter",
    "instance-profile",
    "iam-role",
]
#: The API action that deletes each kind (EC2, FSx and IAM API references).
DELETE_CALLS = {
    "terminate_instances": "instance",
    "delete_file_system": "fsx",
    "delete_launch_template": "launch-template",
    "delete_placement_group": "placement-group",
    "delete_nat_gateway": "nat-gateway",
    "release_address": "elastic-ip",
    "delete_vpc_endpoints": "vpc-endpoint",
    "delete_security_group": "security-group",
    "delete_subnet": "subnet",
    "delete_route_table": "route-table",
    "delete_internet_gateway": "internet-gateway",
    "delete_vpc": "vpc",
    "delete_key_pair": "key-pair",
    "delete_parameter": "ssm-parameter",
    "delete_instance_profile": "instance-profile",
    "delete_role": "iam-role",
    "delete_pod_identity_association": "eks-pod-identity",
    "delete_addon": "eks-addon",
    "delete_nodegroup": "eks-nodegroup",
    "delete_cluster": "eks-cluster",
}


def _every_kind(cluster: str, expires: datetime) -> None:
    """A cluster with tagged resources of every kind the sweeper deletes but placement groups (moto has none)."""
    ids = _cluster(cluster, expires)
    _iam_identity(cluster, expires)
    ec2 = boto3.client("ec2", region_name=REGION)
    spec = lambda kind: [{"ResourceType": kind, "Tags": _tags(cluster, expires)}]  # noqa: E731
    eip = ec2.allocate_address(Domain="vpc", TagSpecifications=spec("elastic-ip"))["AllocationId"]
    ec2.create_nat_gateway(SubnetId=ids["subnet"], AllocationId=eip, TagSpecifications=spec("natgateway"))
    ec2.create_vpc_endpoint(
        VpcId=ids["vpc"],
        ServiceName=f"com.amazonaws.{REGION}.s3",
        VpcEndpointType="Gateway",
        TagSpecifications=spec("vpc-endpoint"),
    )
    ec2.create_route_table(VpcId=ids["vpc"], TagSpecifications=spec("route-table"))
    igw = ec2.create_internet_gateway(TagSpecifications=spec("internet-gateway"))["InternetGateway"]
    ec2.attach_internet_gateway(InternetGatewayId=igw["InternetGatewayId"], VpcId=ids["vpc"])
    ec2.create_key_pair(KeyName=f"{cluster}-key", TagSpecifications=spec("key-pair"))
    tags = [{"Key": t["Key"], "Value": t["Value"]} for t in _tags(cluster, expires)]
    boto3.client("ssm", region_name=REGION).put_parameter(
        Name=f"/provision/{cluster}/shared-source", Value="fs-1.fsx@tcp:/x", Type="String", Tags=tags
    )


def test_reaper_deletes_every_kind_through_its_own_call_in_dependency_order(aws) -> None:
    _every_kind("ci-old", NOW - timedelta(minutes=5))
    calls: list[str] = []

    class Recording:
        def __init__(self, inner):
            self._inner = inner

        def __getattr__(self, name):
            if name in DELETE_CALLS:
                calls.append(name)
            return getattr(self._inner, name)

    real = boto3.client
    sweeper = AwsSweeper(REGION, client=lambda svc, reg: Recording(real(svc, region_name=reg)), sleep=lambda s: None)
    (expired,) = sweeper.find(NOW)
    # No placement groups in moto; EKS has its own test (below).
    present = [k for k in DELETION_ORDER if k != "placement-group" and not k.startswith("eks-")]
    assert {r.split(":")[0] for r in expired.resources} == set(present)
    deleted = sweeper.delete(expired, NOW)
    kinds = [DELETE_CALLS[c] for c in calls]
    assert list(dict.fromkeys(kinds)) == present  # each kind through its own call, in order
    assert kinds == sorted(kinds, key=DELETION_ORDER.index)
    assert [d.split(":")[0] for d in deleted] == kinds
    # What is left: only the key pair, because moto's DeleteKeyPair reads KeyName alone (AWS takes
    # KeyPairId too: API_DeleteKeyPair); a deleted VPC endpoint (state "deleted") is not listed again.
    left = [r.split(":")[0] for c in sweeper.find(NOW) for r in c.resources]
    assert left == ["key-pair"]
    assert tuple(DELETION_ORDER) == AwsSweeper.KINDS


def test_an_expired_eks_cluster_is_found_and_deleted_node_groups_first(aws) -> None:
    """The EKS graph (aws-p5-64-eks) registers a cluster and node groups: the sweep once listed neither (they
    stayed behind, holding ENIs in the VPC). Node groups go before the cluster, which refuses while they exist."""
    tags = {TAG_CLUSTER: "old", TAG_EXPIRES: label_time(NOW - timedelta(hours=1))}
    eks = boto3.client("eks", region_name=REGION)
    role = "arn:aws:iam::123456789012:role/eks"
    eks.create_cluster(name="old", roleArn=role, resourcesVpcConfig={"subnetIds": ["subnet-1"]}, tags=tags)
    eks.create_nodegroup(clusterName="old", nodegroupName="gpu", nodeRole=role, subnets=["subnet-1"], tags=tags)
    sweeper = AwsSweeper(REGION, sleep=lambda s: None)
    (found,) = sweeper.find(NOW)
    assert sorted(found.resources) == ["eks-cluster:old", "eks-nodegroup:old/gpu"]
    assert sweeper.delete(found, NOW) == ["eks-nodegroup:old/gpu", "eks-cluster:old"]
    assert eks.list_clusters()["clusters"] == []


class _ReferencedGroups:
    """EC2 as AWS answers DeleteSecurityGroup (moto deletes regardless): ``DependencyViolation`` while another
    group of the VPC has a rule naming the group (API_DeleteSecurityGroup)."""

    def __init__(self, inner: object) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> object:
        return getattr(self._inner, name)

    def delete_security_group(self, GroupId: str) -> object:  # noqa: N803 - the boto3 keyword
        from botocore.exceptions import ClientError

        for group in self._inner.describe_security_groups()["SecurityGroups"]:  # type: ignore[attr-defined]
            rules = group.get("IpPermissions", []) + group.get("IpPermissionsEgress", [])
            named = {pair["GroupId"] for rule in rules for pair in rule.get("UserIdGroupPairs", [])}
            if group["GroupId"] != GroupId and GroupId in named:
                error = {"Error": {"Code": "DependencyViolation", "Message": f"{GroupId} has a dependent object"}}
                raise ClientError(error, "DeleteSecurityGroup")
        return self._inner.delete_security_group(GroupId=GroupId)  # type: ignore[attr-defined]


def test_security_groups_that_reference_each_other_are_deleted_after_their_rules(aws) -> None:
    """The node and FSx groups reference each other (clouds/aws/network.py); AWS refuses to delete a referenced
    group and no retry clears a mutual reference, so the sweep stopped at the groups and left the network."""
    expires = NOW - timedelta(hours=1)
    ids = _cluster("old", expires)
    ec2 = boto3.client("ec2", region_name=REGION)
    tags = [{"ResourceType": "security-group", "Tags": _tags("old", expires)}]
    fsx_sg = ec2.create_security_group(
        GroupName="old-fsx", Description="fsx", VpcId=ids["vpc"], TagSpecifications=tags
    )["GroupId"]
    for group, other in ((ids["sg"], fsx_sg), (fsx_sg, ids["sg"])):
        ec2.authorize_security_group_ingress(
            GroupId=group, IpPermissions=[{"IpProtocol": "-1", "UserIdGroupPairs": [{"GroupId": other}]}]
        )
    real = boto3.client

    def client(service: str, region: str) -> object:
        inner = real(service, region_name=region)
        return _ReferencedGroups(inner) if service == "ec2" else inner

    sweeper = AwsSweeper(REGION, client=client, sleep=lambda s: None)
    (found,) = sweeper.find(NOW)
    deleted = sweeper.delete(found, NOW)
    assert {f"security-group:{ids['sg']}", f"security-group:{fsx_sg}", f"vpc:{ids['vpc']}"} <= set(deleted)
    assert ec2.describe_vpcs(VpcIds=[]).get("Vpcs", []) == [v for v in ec2.describe_vpcs()["Vpcs"] if v["IsDefault"]]


def test_the_subnet_waits_for_the_file_system_whose_delete_is_asynchronous(aws) -> None:
    """DeleteFileSystem returns at once and the file system stays DELETING for minutes, its ENIs holding the
    subnet (DeleteSubnet: DependencyViolation). The sweep gave up after ~15 s of retries; it now waits for FSx."""
    ids = _cluster("old", NOW - timedelta(hours=1))
    polls = {"left": 0}
    real = boto3.client

    class SlowFsx:
        def __init__(self, inner: object) -> None:
            self._inner = inner

        def __getattr__(self, name: str) -> object:
            return getattr(self._inner, name)

        def delete_file_system(self, FileSystemId: str) -> object:  # noqa: N803 - the boto3 keyword
            polls["left"] = 3  # DELETING for three DescribeFileSystems calls
            return {"FileSystemId": FileSystemId, "Lifecycle": "DELETING"}

        def describe_file_systems(self, **kwargs: object) -> object:
            if kwargs.get("FileSystemIds") and polls["left"] > 0:
                polls["left"] -= 1
                if polls["left"] == 0:
                    self._inner.delete_file_system(FileSystemId=ids["fs"])  # type: ignore[attr-defined]
                return {"FileSystems": [{"FileSystemId": ids["fs"], "Lifecycle": "DELETING"}]}
            return self._inner.describe_file_systems(**kwargs)  # type: ignore[attr-defined]

    class HeldSubnet:
        def __init__(self, inner: object) -> None:
            self._inner = inner

        def __getattr__(self, name: str) -> object:
            return getattr(self._inner, name)

        def delete_subnet(self, SubnetId: str) -> object:  # noqa: N803 - the boto3 keyword
            from botocore.exceptions import ClientError

            if polls["left"] > 0:
                error = {"Error": {"Code": "DependencyViolation", "Message": "the file system's ENIs are in use"}}
                raise ClientError(error, "DeleteSubnet")
            return self._inner.delete_subnet(SubnetId=SubnetId)  # type: ignore[attr-defined]

    def client(service: str, region: str) -> object:
        inner = real(service, region_name=region)
        return {"fsx": SlowFsx, "ec2": HeldSubnet}.get(service, lambda c: c)(inner)

    sleeps: list[float] = []
    sweeper = AwsSweeper(REGION, client=client, sleep=sleeps.append)
    (found,) = sweeper.find(NOW)
    deleted = sweeper.delete(found, NOW)
    assert f"fsx:{ids['fs']}" in deleted and f"subnet:{ids['subnet']}" in deleted and f"vpc:{ids['vpc']}" in deleted
    assert polls["left"] == 0 and sleeps  # it polled (and slept) until the file system was gone


def test_a_sweep_makes_one_client_per_service_and_region(aws) -> None:
    """Making a boto3 client costs tens of milliseconds of CPU, and a sweep calls EC2 at least once per resource:
    the sweeper keeps the clients it made."""
    _every_kind("ci-old", NOW - timedelta(minutes=5))
    made: list[tuple[str, str]] = []
    real = boto3.client

    def client(service: str, region: str) -> object:
        made.append((service, region))
        return real(service, region_name=region)

    sweeper = AwsSweeper(REGION, client=client, sleep=lambda s: None)
    (expired,) = sweeper.find(NOW)
    assert sweeper.delete(expired, NOW)
    assert sweeper.find(NOW)[0].resources == [r for r in expired.resources if r.startswith("key-pair:")]
    assert len(made) == len(set(made)) and ("ec2", REGION) in made
