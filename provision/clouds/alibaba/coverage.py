"""How the strict Alibaba cloud accounts for every input leaf: what it checks and what it waives (with the reason).

:func:`account` counts a leaf *checked* when a rule of :mod:`provision.clouds.alibaba.strict` or
:mod:`provision.clouds.alibaba.strict_api` names it, *waived* when a reason below covers it, else *unchecked*.
"""

from __future__ import annotations

from typing import Any

from provision.clouds.alibaba.strict import rule_paths
from provision.clouds.alibaba.strict_ack import WAIVED as ACK_WAIVED
from provision.clouds.alibaba.strict_api import (
    ACCESS_GROUP_SOURCE,
    API_ENUMS,
    API_RANGES,
    DS_NAME_SOURCE,
    EIP_SOURCE,
    INSTANCE,
    NAS,
    NAS_API,
    NAS_CIDR_SOURCE,
    NAS_DESCRIPTION_SOURCE,
    RELEASE_SOURCE,
    SG_CIDR_SOURCE,
    SPOT_SET_SOURCE,
    STORAGE_SOURCE,
    TAG_SOURCE,
    VPC_CIDR_SOURCE,
    VSWITCH_SOURCE,
)
from provision.clouds.alibaba.strict_datalink import WAIVED as DATALINK_WAIVED
from provision.clouds.strict import Coverage, Leaf, Resource
from provision.clouds.strict import account as account_leaves

_REF = "the id or name of a resource this program created (an output of the mocked cloud), not a value it writes"
_PLACE = "the plan's zone, checked at plan time against the catalog's zones (provision/catalog)"
_USER_DATA = (
    "the node bootstrap body: opaque to the API (base64 cloud-config); rendered from checked values and validated "
    "by cloud-init schema in the suite (tests/test_node_bootstrap.py)"
)
_IMAGE = "the image id or name: the plan resolves or pins it (images/alibaba.yaml); the API checks existence"
_CAPACITY = (
    "checked at plan time against the catalog's sizes per storage type, with their sources "
    "(provision/catalog/data/alibaba.yaml: CPFS and Extreme NAS minimum, step and maximum)"
)
_TEXT = "free text (a description) the provider passes through; Alibaba documents no limit beyond 256 characters"

#: Every Alibaba type.
COMMON = Coverage(
    checked={"tags": TAG_SOURCE, "volumeTags": TAG_SOURCE},
    waived={"description": _TEXT, "zoneId": _PLACE, "availabilityZone": _PLACE},
)

COVERAGE: dict[str, Coverage] = {
    INSTANCE: Coverage(
        checked={
            "deploymentSetId": SPOT_SET_SOURCE,
            "autoReleaseTime": RELEASE_SOURCE,
            **{path: src for (t, path), (_, src) in API_ENUMS.items() if t == INSTANCE},
            **{path: src for (t, path), (_, _, src) in API_RANGES.items() if t == INSTANCE},
        },
        waived={
            "userData": _USER_DATA,
            "imageId": _IMAGE,
            "securityGroups": _REF,
            "vswitchId": _REF,
            "roleName": _REF + "; the RAM role rules check it names a role of this stack that trusts ECS",
            "networkInterfaces.securityGroupIds": _REF,
            "networkInterfaces.vswitchId": _REF,
            "keyName": _REF,
        },
    ),
    NAS: Coverage(
        waived={"capacity": _CAPACITY},
        checked={
            "description": NAS_DESCRIPTION_SOURCE,
            "vpcId": STORAGE_SOURCE,
            "vswitchId": STORAGE_SOURCE,
            "encryptType": STORAGE_SOURCE,
        },
    ),
    "alicloud:ecs/ecsDeploymentSet:EcsDeploymentSet": Coverage(checked={"deploymentSetName": DS_NAME_SOURCE}),
    "alicloud:ecs/eipAddress:EipAddress": Coverage(
        checked={"bandwidth": EIP_SOURCE, "isp": API_ENUMS[("alicloud:ecs/eipAddress:EipAddress", "isp")][1]}
    ),
    "alicloud:ecs/eipAssociation:EipAssociation": Coverage(
        checked={"instanceType": API_ENUMS[("alicloud:ecs/eipAssociation:EipAssociation", "instanceType")][1]},
        waived={"allocationId": _REF, "instanceId": _REF},
    ),
    "alicloud:ecs/ecsKeyPair:EcsKeyPair": Coverage(
        waived={
            "publicKey": "checked at plan time: an RSA or ECDSA OpenSSH key, the types ECS ImportKeyPair takes "
            "(provision/clouds/alibaba/plan.py KEY_PAIR_TYPES)"
        }
    ),
    "alicloud:vpc/switch:Switch": Coverage(checked={"cidrBlock": VSWITCH_SOURCE}, waived={"vpcId": _REF}),
    "alicloud:vpc/network:Network": Coverage(checked={"cidrBlock": VPC_CIDR_SOURCE}),
    "alicloud:ecs/securityGroup:SecurityGroup": Coverage(waived={"vpcId": _REF}),
    "alicloud:ecs/securityGroupRule:SecurityGroupRule": Coverage(
        checked={"cidrIp": SG_CIDR_SOURCE}, waived={"securityGroupId": _REF}
    ),
    "alicloud:vpc/natGateway:NatGateway": Coverage(waived={"vpcId": _REF, "vswitchId": _REF}),
    "alicloud:vpc/snatEntry:SnatEntry": Coverage(
        waived={"snatTableId": _REF, "sourceVswitchId": _REF, "snatIp": _REF + " (the EIP's address)"}
    ),
    "alicloud:nas/protocolService:ProtocolService": Coverage(
        waived={"fileSystemId": _REF, "vpcId": _REF, "vswitchId": _REF}
    ),
    "alicloud:nas/protocolMountTarget:ProtocolMountTarget": Coverage(
        waived={
            "fileSystemId": _REF,
            "protocolServiceId": _REF,
            "vpcId": _REF,
            "vswitchId": _REF,
            "accessGroupName": _REF,
            "path": "the export path '/' (the file system's root), fixed in provision/clouds/alibaba/storage.py",
        }
    ),
    "alicloud:nas/mountTarget:MountTarget": Coverage(
        checked={"networkType": NAS_API + "CreateMountTarget NetworkType"},
        waived={"fileSystemId": _REF, "vpcId": _REF, "vswitchId": _REF, "accessGroupName": _REF},
    ),
    "alicloud:nas/accessRule:AccessRule": Coverage(
        checked={"sourceCidrIp": NAS_CIDR_SOURCE, "fileSystemType": NAS_API + "CreateAccessRule FileSystemType"},
        waived={"accessGroupName": _REF},
    ),
    "alicloud:nas/accessGroup:AccessGroup": Coverage(
        checked={
            "accessGroupName": ACCESS_GROUP_SOURCE,
            "accessGroupType": NAS_API + "CreateAccessGroup AccessGroupType",
            "fileSystemType": NAS_API + "CreateAccessGroup FileSystemType",
        }
    ),
    **{t: Coverage(waived=reasons) for t, reasons in DATALINK_WAIVED.items()},
    **{t: Coverage(waived=reasons) for t, reasons in ACK_WAIVED.items()},
}


def account(res: Resource, ctx: Any) -> list[Leaf]:
    """How every input leaf of one registration is accounted for."""
    return account_leaves(res, {}, Coverage(checked=rule_paths(res)), COVERAGE.get(res.type), COMMON)
