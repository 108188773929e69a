"""GPUs first: in every shipped VM graph no GPU node resource waits for the shared filesystem.

A node group that waits for the filesystem (its user data holding the filesystem's address) pays the filesystem's
creation (FSx, Managed Lustre: many minutes) before each capacity request, and its deletion after each stock-out.
"""

from __future__ import annotations

import pytest
from conftest import preview, stack_spec
from graph_deps import recorded_graph

#: Per cloud: the resource types that request or describe GPU nodes, and the shared filesystems.
NODES = {
    "aws": {"aws:ec2/fleet:Fleet", "aws:autoscaling/group:Group", "aws:ec2/launchTemplate:LaunchTemplate"},
    "gcp": {
        "gcp:compute/instanceGroupManager:InstanceGroupManager",
        "gcp:compute/regionInstanceGroupManager:RegionInstanceGroupManager",
        "gcp:compute/instanceTemplate:InstanceTemplate",
        "gcp:compute/regionInstanceTemplate:RegionInstanceTemplate",
        "gcp:compute/resizeRequest:ResizeRequest",
    },
    "azure": {"azure-native:compute:VirtualMachineScaleSet"},
    "alibaba": {"alicloud:ecs/instance:Instance"},
}
FILESYSTEMS = {
    "aws": {"aws:fsx/lustreFileSystem:LustreFileSystem"},
    "gcp": {
        "gcp:lustre/instance:Instance",
        "gcp:filestore/instance:Instance",
        "gcp:parallelstore/instance:Instance",
    },
    "azure": {
        "azure-native:storagecache:AmlFilesystem",
        "azure-native:netapp:Account",
        "azure-native:netapp:CapacityPool",
        "azure-native:netapp:CapacityPoolVolume",
    },
    "alibaba": {
        "alicloud:nas/fileSystem:FileSystem",
        "alicloud:nas/mountTarget:MountTarget",
        "alicloud:nas/protocolService:ProtocolService",
        "alicloud:nas/protocolMountTarget:ProtocolMountTarget",
    },
}
STACKS = [
    "aws-p5-64",
    "aws-p5-16",
    "aws-p5-ci",
    "gcp-a3-64",
    "gcp-a3-ci",
    "gcp-a3high-16",
    "gcp-a3ultra-64",
    "azure-ndh100-64",
    "azure-ndh100-256",
    "azure-ndh100-ci",
    "alibaba-gn8-64",
    "alibaba-gn8-ci",
]


@pytest.mark.parametrize("stack", STACKS)
def test_no_gpu_node_resource_depends_on_the_shared_filesystem(stack: str) -> None:
    spec = stack_spec(stack)
    with recorded_graph() as graph:
        preview(spec)
    nodes = [r for r in graph.by_urn.values() if r.type in NODES[spec.cloud]]
    filesystems = {r.urn: r.name for r in graph.by_urn.values() if r.type in FILESYSTEMS[spec.cloud]}
    assert nodes, f"{stack}: no GPU node resource in the graph"
    if spec.storage is not None and spec.storage.shared is not None:
        assert filesystems, f"{stack}: the spec has shared storage but the graph no filesystem"
    waits = {n.name: sorted(filesystems[u] for u in graph.ancestors(n) if u in filesystems) for n in nodes}
    assert not any(waits.values()), f"{stack}: GPU node resources wait for the filesystem: {waits}"
