"""GCP inputs that force a new resource (pulumi-gcp bridges terraform-provider-google: its schema's ``ForceNew``).

Read by :mod:`provision.clouds.replacement` so a ``--mock`` diff says "replace" where a real ``up`` replaces.
Sources are the provider's resource files (``hashicorp/terraform-provider-google``, ``google/services/...``);
only the types this project registers are listed.
"""

from __future__ import annotations

from provision.clouds.replacement import ForceNew

_TF = "hashicorp/terraform-provider-google google/services/{} (schema ForceNew)"

FORCE_NEW: dict[str, ForceNew] = {
    "gcp:compute/network:Network": ForceNew(
        ("name", "project", "autoCreateSubnetworks", "networkProfile"),
        _TF.format("compute/resource_compute_network.go"),
    ),
    "gcp:compute/subnetwork:Subnetwork": ForceNew(
        ("name", "network", "region", "project", "ipv6AccessType", "purpose"),
        _TF.format("compute/resource_compute_subnetwork.go"),
    ),
    "gcp:compute/firewall:Firewall": ForceNew(
        ("name", "network", "project", "direction"), _TF.format("compute/resource_compute_firewall.go")
    ),
    # Labels are set in place (setLabels); everything else forces a new address.
    "gcp:compute/globalAddress:GlobalAddress": ForceNew(
        ("name", "description", "address", "addressType", "purpose", "prefixLength", "network", "ipVersion", "project"),
        _TF.format("compute/resource_compute_global_address.go"),
    ),
    "gcp:compute/router:Router": ForceNew(
        ("name", "network", "region", "project"), _TF.format("compute/resource_compute_router.go")
    ),
    "gcp:compute/routerNat:RouterNat": ForceNew(
        ("name", "router", "region", "project"), _TF.format("compute/resource_compute_router_nat.go")
    ),
    # Instance templates are immutable in the Compute API: every argument forces a new template.
    "gcp:compute/regionInstanceTemplate:RegionInstanceTemplate": ForceNew(
        ("*",), _TF.format("compute/resource_compute_region_instance_template.go") + ": every argument"
    ),
    "gcp:compute/instanceGroupManager:InstanceGroupManager": ForceNew(
        ("name", "zone", "project", "baseInstanceName"),
        _TF.format("compute/resource_compute_instance_group_manager.go"),
    ),
    "gcp:compute/resourcePolicy:ResourcePolicy": ForceNew(
        ("*",), _TF.format("compute/resource_compute_resource_policy.go") + ": every argument"
    ),
    "gcp:compute/resizeRequest:ResizeRequest": ForceNew(
        ("*",), _TF.format("compute/resource_compute_resize_request.go") + ": every argument (immutable)"
    ),
    "gcp:container/cluster:Cluster": ForceNew(
        ("name", "location", "project", "network", "subnetwork", "ipAllocationPolicy", "privateClusterConfig"),
        _TF.format("container/resource_container_cluster.go"),
    ),
    # A node pool's nodeConfig is immutable but for a few fields (labels, taints, resource labels, ...).
    "gcp:container/nodePool:NodePool": ForceNew(
        (
            "name",
            "namePrefix",
            "location",
            "cluster",
            "project",
            "initialNodeCount",
            "placementPolicy",
            "nodeConfig.machineType",
            "nodeConfig.diskSizeGb",
            "nodeConfig.diskType",
            "nodeConfig.guestAccelerators",
            "nodeConfig.imageType",
            "nodeConfig.localNvmeSsdBlockConfig",
            "nodeConfig.ephemeralStorageLocalSsdConfig",
            "nodeConfig.reservationAffinity",
            "nodeConfig.spot",
            "nodeConfig.preemptible",
            "nodeConfig.flexStart",
            "nodeConfig.maxRunDuration",
            "nodeConfig.serviceAccount",
            "nodeConfig.oauthScopes",
            "networkConfig",
        ),
        _TF.format("container/resource_container_node_pool.go") + " and node_config.go",
    ),
    "gcp:filestore/instance:Instance": ForceNew(
        ("name", "location", "zone", "tier", "networks", "fileShares.name", "project", "protocol"),
        _TF.format("filestore/resource_filestore_instance.go"),
    ),
    "gcp:lustre/instance:Instance": ForceNew(
        ("instanceId", "location", "network", "filesystem", "perUnitStorageThroughput", "project"),
        _TF.format("lustre/resource_lustre_instance.go"),
    ),
    "gcp:parallelstore/instance:Instance": ForceNew(
        (
            "instanceId",
            "location",
            "network",
            "capacityGib",
            "deploymentType",
            "fileStripeLevel",
            "directoryStripeLevel",
            "project",
        ),
        _TF.format("parallelstore/resource_parallelstore_instance.go"),
    ),
    "gcp:servicenetworking/connection:Connection": ForceNew(
        ("network", "service"), _TF.format("servicenetworking/resource_service_networking_connection.go")
    ),
    "gcp:projects/iAMCustomRole:IAMCustomRole": ForceNew(
        ("roleId", "project"), _TF.format("resourcemanager/resource_google_project_iam_custom_role.go")
    ),
    "gcp:cloudscheduler/job:Job": ForceNew(
        ("name", "region", "project"), _TF.format("cloudscheduler/resource_cloud_scheduler_job.go")
    ),
    "gcp:serviceaccount/account:Account": ForceNew(
        ("accountId", "project"), _TF.format("resourcemanager/resource_google_service_account.go")
    ),
    "gcp:projects/iAMMember:IAMMember": ForceNew(
        ("project", "role", "member", "condition"),
        "hashicorp/terraform-provider-google tpgiamresource (IAM member: every argument ForceNew)",
    ),
    "gcp:serviceaccount/iAMMember:IAMMember": ForceNew(
        ("serviceAccountId", "role", "member", "condition"),
        "hashicorp/terraform-provider-google tpgiamresource (IAM member: every argument ForceNew)",
    ),
    # storage.shared.object_store (datalink.py): the bucket grant and the service agent it names.
    "gcp:storage/bucketIAMMember:BucketIAMMember": ForceNew(
        ("bucket", "role", "member", "condition"),
        "hashicorp/terraform-provider-google tpgiamresource (IAM member: every argument ForceNew); "
        "storage/iam_storage_bucket.go (bucket)",
    ),
    "gcp:projects/serviceIdentity:ServiceIdentity": ForceNew(
        ("service", "project"), _TF.format("resourcemanager/resource_project_service_identity.go")
    ),
    # The Slurm controller: its name, zone, project and disks are fixed at creation.
    "gcp:compute/instance:Instance": ForceNew(
        ("name", "zone", "project", "bootDisk", "scratchDisks"), _TF.format("compute/resource_compute_instance.go")
    ),
    # The nodes' shared-source entry: the key and project name it; the value is set in place.
    "gcp:compute/projectMetadataItem:ProjectMetadataItem": ForceNew(
        ("key", "project"), _TF.format("compute/resource_compute_project_metadata_item.go")
    ),
}

#: Types whose replacement deletes and recreates GPU nodes.
NODES = frozenset(
    {
        "gcp:compute/instanceGroupManager:InstanceGroupManager",
        "gcp:container/nodePool:NodePool",
        "gcp:compute/resizeRequest:ResizeRequest",
    }
)
