"""AWS inputs that force a new resource (pulumi-aws bridges terraform-provider-aws: its schema's ``ForceNew``).

Read by :mod:`provision.clouds.replacement` so a ``--mock`` diff says "replace" where a real ``up`` replaces.
Sources are the provider's resource files (``hashicorp/terraform-provider-aws``, ``internal/service/...``) and the
Pulumi registry pages derived from them; only the types this project registers are listed.
"""

from __future__ import annotations

from provision.clouds.replacement import ForceNew

_TF = "hashicorp/terraform-provider-aws internal/service/{} (schema ForceNew)"

FORCE_NEW: dict[str, ForceNew] = {
    "aws:ec2/vpc:Vpc": ForceNew(("cidrBlock", "instanceTenancy"), _TF.format("ec2/vpc_.go")),
    "aws:ec2/subnet:Subnet": ForceNew(
        ("vpcId", "cidrBlock", "availabilityZone", "availabilityZoneId"), _TF.format("ec2/vpc_subnet.go")
    ),
    "aws:ec2/internetGateway:InternetGateway": ForceNew((), _TF.format("ec2/vpc_internet_gateway.go")),
    "aws:ec2/eip:Eip": ForceNew(("domain", "publicIpv4Pool"), _TF.format("ec2/ec2_eip.go")),
    "aws:ec2/natGateway:NatGateway": ForceNew(
        ("allocationId", "subnetId", "connectivityType", "privateIp"), _TF.format("ec2/vpc_nat_gateway.go")
    ),
    "aws:ec2/routeTable:RouteTable": ForceNew(("vpcId",), _TF.format("ec2/vpc_route_table.go")),
    "aws:ec2/route:Route": ForceNew(
        ("routeTableId", "destinationCidrBlock", "destinationIpv6CidrBlock"), _TF.format("ec2/vpc_route.go")
    ),
    "aws:ec2/routeTableAssociation:RouteTableAssociation": ForceNew(
        ("subnetId",), _TF.format("ec2/vpc_route_table_association.go")
    ),
    "aws:ec2/vpcEndpoint:VpcEndpoint": ForceNew(
        ("vpcId", "serviceName", "vpcEndpointType"), _TF.format("ec2/vpc_endpoint.go")
    ),
    "aws:ec2/securityGroup:SecurityGroup": ForceNew(
        ("name", "namePrefix", "description", "vpcId"), _TF.format("ec2/vpc_security_group.go")
    ),
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule": ForceNew(
        ("securityGroupId",), _TF.format("vpc/security_group_ingress_rule.go")
    ),
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule": ForceNew(
        ("securityGroupId",), _TF.format("vpc/security_group_egress_rule.go")
    ),
    "aws:ec2/placementGroup:PlacementGroup": ForceNew(
        ("name", "strategy", "partitionCount", "spreadLevel"), _TF.format("ec2/ec2_placement_group.go")
    ),
    "aws:ec2/keyPair:KeyPair": ForceNew(("keyName", "keyNamePrefix", "publicKey"), _TF.format("ec2/ec2_key_pair.go")),
    # A launch template's data changes make a new version (an update); only the name replaces it.
    "aws:ec2/launchTemplate:LaunchTemplate": ForceNew(("name", "namePrefix"), _TF.format("ec2/ec2_launch_template.go")),
    # An instant fleet is a one-shot request: ModifyFleet supports only type "maintain" (botocore ec2
    # ModifyFleet documentation), so every change but tags replaces it; the program's replace_on_changes says
    # so too (provision/clouds/aws/nodes.py).
    "aws:ec2/fleet:Fleet": ForceNew(
        (
            "type",
            "onDemandOptions",
            "spotOptions",
            "terminateInstancesWithExpiration",
            "replaceUnhealthyInstances",
            "validFrom",
            "validUntil",
            "targetCapacitySpecification.defaultTargetCapacityType",
        ),
        _TF.format("ec2/ec2_fleet.go"),
    ),
    "aws:fsx/lustreFileSystem:LustreFileSystem": ForceNew(
        (
            "subnetIds",
            "deploymentType",
            "storageType",
            "securityGroupIds",
            "importPath",
            "exportPath",
            "importedFileChunkSize",
            "kmsKeyId",
            "driveCacheType",
            "efaEnabled",
            "fileSystemTypeVersion",
        ),
        _TF.format("fsx/lustre_file_system.go"),
    ),
    "aws:iam/role:Role": ForceNew(("name", "namePrefix", "path"), _TF.format("iam/role.go")),
    "aws:iam/instanceProfile:InstanceProfile": ForceNew(
        ("name", "namePrefix", "path"), _TF.format("iam/instance_profile.go")
    ),
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment": ForceNew(
        ("role", "policyArn"), _TF.format("iam/role_policy_attachment.go")
    ),
    "aws:autoscaling/group:Group": ForceNew(("name", "namePrefix"), _TF.format("autoscaling/group.go")),
    "aws:autoscaling/schedule:Schedule": ForceNew(
        ("scheduledActionName", "autoscalingGroupName"), _TF.format("autoscaling/schedule.go")
    ),
    "aws:resourcegroups/group:Group": ForceNew(("name",), _TF.format("resourcegroups/group.go")),
    "aws:resourcegroups/resource:Resource": ForceNew(
        ("groupArn", "resourceArn"), _TF.format("resourcegroups/resource.go")
    ),
    "aws:eks/cluster:Cluster": ForceNew(
        (
            "name",
            "roleArn",
            "kubernetesNetworkConfig.serviceIpv4Cidr",
            "kubernetesNetworkConfig.ipFamily",
            "accessConfig.bootstrapClusterCreatorAdminPermissions",
            "encryptionConfig",
        ),
        _TF.format("eks/cluster.go"),
    ),
    "aws:eks/nodeGroup:NodeGroup": ForceNew(
        (
            "clusterName",
            "nodeGroupName",
            "nodeGroupNamePrefix",
            "nodeRoleArn",
            "subnetIds",
            "amiType",
            "capacityType",
            "diskSize",
            "instanceTypes",
            "remoteAccess",
            "launchTemplate.id",
            "launchTemplate.name",
        ),
        _TF.format("eks/node_group.go"),
    ),
    "aws:eks/addon:Addon": ForceNew(("clusterName", "addonName"), _TF.format("eks/addon.go")),
    "aws:eks/podIdentityAssociation:PodIdentityAssociation": ForceNew(
        ("clusterName", "namespace", "serviceAccount"), _TF.format("eks/pod_identity_association.go")
    ),
    # The Slurm controller: placement, image and network attachment are fixed at launch (user data and the
    # instance type change with a stop and start unless user_data_replace_on_change is set).
    "aws:ec2/instance:Instance": ForceNew(
        (
            "ami",
            "availabilityZone",
            "subnetId",
            "associatePublicIpAddress",
            "privateIp",
            "keyName",
            "placementGroup",
            "tenancy",
            "ebsBlockDevices",
            "ephemeralBlockDevices",
            "networkInterfaces",
        ),
        _TF.format("ec2/ec2_instance.go"),
    ),
    "aws:iam/rolePolicy:RolePolicy": ForceNew(("name", "namePrefix", "role"), _TF.format("iam/role_policy.go")),
    "aws:ssm/parameter:Parameter": ForceNew(("name",), _TF.format("ssm/parameter.go")),
}

#: Types whose replacement deletes and recreates GPU nodes.
NODES = frozenset({"aws:ec2/fleet:Fleet", "aws:autoscaling/group:Group", "aws:eks/nodeGroup:NodeGroup"})
