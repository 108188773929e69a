"""Alibaba inputs that force a new resource (pulumi-alicloud bridges terraform-provider-alicloud: ``ForceNew``).

Read by :mod:`provision.clouds.replacement` so a ``--mock`` diff says "replace" where a real ``up`` replaces.
Sources are the provider's resource files (``aliyun/terraform-provider-alicloud``, ``alicloud/...``); only the
types this project registers are listed.
"""

from __future__ import annotations

from provision.clouds.replacement import ForceNew

_TF = "aliyun/terraform-provider-alicloud alicloud/{} (schema ForceNew)"

FORCE_NEW: dict[str, ForceNew] = {
    # ACK: what cannot change after creation (cs.ManagedKubernetes / cs.NodePool docstrings: "Only works for
    # **Create** Operation" or "cannot be modified after creation"; the provider marks them ForceNew).
    "alicloud:ecs/ecsKeyPair:EcsKeyPair": ForceNew(
        ("keyPairName", "keyName", "keyNamePrefix", "publicKey"), _TF.format("resource_alicloud_ecs_key_pair.go")
    ),
    "alicloud:cs/managedKubernetes:ManagedKubernetes": ForceNew(
        ("name", "podCidr", "serviceCidr", "nodeCidrMask", "resourceGroupId"),
        _TF.format("resource_alicloud_cs_managed_kubernetes.go"),
    ),
    "alicloud:cs/nodePool:NodePool": ForceNew(
        ("clusterId",), _TF.format("resource_alicloud_cs_kubernetes_node_pool.go")
    ),
    "alicloud:cs/kubernetesAddon:KubernetesAddon": ForceNew(
        ("clusterId", "name"), _TF.format("resource_alicloud_cs_kubernetes_addon.go")
    ),
    "alicloud:vpc/network:Network": ForceNew(("ipv6Isp",), _TF.format("resource_alicloud_vpc_vpc.go")),
    "alicloud:vpc/switch:Switch": ForceNew(
        ("vpcId", "cidrBlock", "zoneId"), _TF.format("resource_alicloud_vswitch.go")
    ),
    "alicloud:vpc/natGateway:NatGateway": ForceNew(
        ("vpcId", "vswitchId", "natType", "networkType"), _TF.format("resource_alicloud_nat_gateway.go")
    ),
    "alicloud:vpc/snatEntry:SnatEntry": ForceNew(
        ("snatTableId", "sourceVswitchId", "sourceCidr"), _TF.format("resource_alicloud_snat_entry.go")
    ),
    "alicloud:ecs/eipAddress:EipAddress": ForceNew(
        ("isp", "paymentType", "addressName"), _TF.format("resource_alicloud_eip_address.go")
    ),
    "alicloud:ecs/eipAssociation:EipAssociation": ForceNew(
        ("allocationId", "instanceId", "instanceType"), _TF.format("resource_alicloud_eip_association.go")
    ),
    "alicloud:ecs/securityGroup:SecurityGroup": ForceNew(
        ("vpcId", "securityGroupType"), _TF.format("resource_alicloud_security_group.go")
    ),
    "alicloud:ecs/securityGroupRule:SecurityGroupRule": ForceNew(
        (
            "type",
            "ipProtocol",
            "portRange",
            "securityGroupId",
            "cidrIp",
            "sourceSecurityGroupId",
            "nicType",
            "policy",
            "priority",
        ),
        _TF.format("resource_alicloud_security_group_rule.go"),
    ),
    "alicloud:ecs/ecsDeploymentSet:EcsDeploymentSet": ForceNew(
        ("strategy", "domain", "granularity"), _TF.format("resource_alicloud_ecs_deployment_set.go")
    ),
    # An instance's zone, its eRDMA/secondary interfaces and its HPC cluster are fixed at RunInstances.
    "alicloud:ecs/instance:Instance": ForceNew(
        (
            "availabilityZone",
            "hpcClusterId",
            "networkInterfaces",
            "dedicatedHostId",
            "launchTemplateId",
            "launchTemplateName",
        ),
        _TF.format("resource_alicloud_instance.go"),
    ),
    "alicloud:nas/fileSystem:FileSystem": ForceNew(
        ("fileSystemType", "protocolType", "storageType", "zoneId", "encryptType", "vpcId", "vswitchId", "kmsKeyId"),
        _TF.format("resource_alicloud_nas_file_system.go"),
    ),
    "alicloud:nas/accessGroup:AccessGroup": ForceNew(
        ("accessGroupName", "accessGroupType", "fileSystemType"), _TF.format("resource_alicloud_nas_access_group.go")
    ),
    "alicloud:nas/accessRule:AccessRule": ForceNew(
        ("accessGroupName", "fileSystemType"), _TF.format("resource_alicloud_nas_access_rule.go")
    ),
    "alicloud:nas/mountTarget:MountTarget": ForceNew(
        ("fileSystemId", "vpcId", "vswitchId", "networkType"), _TF.format("resource_alicloud_nas_mount_target.go")
    ),
    "alicloud:nas/protocolService:ProtocolService": ForceNew(
        ("fileSystemId", "protocolType", "protocolSpec", "vpcId", "vswitchId"),
        _TF.format("resource_alicloud_nas_protocol_service.go"),
    ),
    "alicloud:nas/protocolMountTarget:ProtocolMountTarget": ForceNew(
        ("fileSystemId", "protocolServiceId", "vpcId", "vswitchId", "accessGroupName"),
        _TF.format("resource_alicloud_nas_protocol_mount_target.go"),
    ),
    "alicloud:ram/role:Role": ForceNew(("roleName", "name"), _TF.format("resource_alicloud_ram_role.go")),
    "alicloud:ram/policy:Policy": ForceNew(("policyName", "name"), _TF.format("resource_alicloud_ram_policy.go")),
    "alicloud:ram/rolePolicyAttachment:RolePolicyAttachment": ForceNew(
        ("roleName", "policyName", "policyType"), _TF.format("resource_alicloud_ram_role_policy_attachment.go")
    ),
}

#: Types whose replacement deletes and recreates GPU nodes.
NODES = frozenset({"alicloud:ecs/instance:Instance"})
