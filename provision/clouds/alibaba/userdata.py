"""Alibaba node user data: the common bootstrap plus the GPU driver and eRDMA steps (pure text).

The ECS API takes user data base64-encoded (pulumi_alicloud ``ecs.Instance.user_data``: "It supports to setting a
base64-encoded value, and it is the recommended usage"), at most 32 KiB.

Shared storage: the nodes do not wait for the file system (so no id or domain of it is in the user data): a
``fs-domain`` step finds it by its description and looks its NFS domain up on the node
(``images/alibaba/provision-fs-domain``, with the node's RAM role), waiting until it exists, and writes the domain to
a file; the common ``shared-mount`` step reads that file at every boot.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from provision.clouds.alibaba import ramrole
from provision.clouds.alibaba.plan import AlibabaPlan, Cpfs
from provision.planning.bootstrap import (
    LIB,
    SharedMount,
    Step,
    base_values,
    gzip_base64,
    health_expectations,
    nccl_tests_expectation,
    static_file,
)
from provision.planning.bootstrap import render as render_bootstrap

if TYPE_CHECKING:
    from provision.planning.plan import ClusterPlan

#: ECS user data limit (RunInstances ``UserData``: at most 32 KB after base64 encoding).
MAX_USER_DATA_BYTES = 32 * 1024
#: Used when the image carries no manifest (an image pinned by id without versions).
DEFAULT_VERSIONS = {
    "driver_branch": "570",
    "driver_package": "nvidia-driver-570-server-open",
    "fabricmanager": "nvidia-fabricmanager-570",
    "erdma_installer": "1.5.7",
    "erdma_installer_sha256": "cb44f4c4aaaabfbd81224c85a9e7889732bda26cc832ff70ecc0559bcc14165c",
    "cuda": "12.8",
    "nccl": "2.26.2-1+cuda12.8",
}
#: Alibaba's VPC-internal eRDMA mirror ("Enable eRDMA on an instance": installer download address).
ERDMA_MIRROR = "http://mirrors.cloud.aliyuncs.com/erdma"
#: NVIDIA's CUDA apt repository, per Ubuntu release (CUDA Installation Guide for Linux, "Network Repository
#: Installation": https://developer.download.nvidia.com/compute/cuda/repos/<distro>/<arch>/; read 2026-12-01).
CUDA_REPO = "https://developer.download.nvidia.com/compute/cuda/repos"


def _cuda_repo_distro(os_version: str) -> str:
    """``ubuntu-22.04`` -> ``ubuntu2204``, the repository's name for the release."""
    name, _, release = os_version.partition("-")
    return name + release.replace(".", "")


def _values(plan: ClusterPlan[AlibabaPlan]) -> Any:
    versions = {**DEFAULT_VERSIONS, **plan.image.versions}
    values = base_values(plan)
    values.add("SSH_SUDO", True, "flag", "access.ssh_user")
    values.add("DRIVER_BRANCH", versions["driver_branch"], "version", "image.versions.driver_branch")
    values.add("DRIVER_PACKAGE", versions["driver_package"], "package", "image.versions.driver_package")
    values.add("FABRICMANAGER", versions["fabricmanager"], "package", "image.versions.fabricmanager")
    installer = versions["erdma_installer"]
    values.add("ERDMA_INSTALLER_VERSION", installer, "version", "image.versions.erdma_installer")
    values.add(
        "ERDMA_INSTALLER_URL",
        f"{ERDMA_MIRROR}/erdma_installer-{installer}.tar.gz",
        "url",
        "image.versions.erdma_installer",
    )
    values.add(
        "ERDMA_INSTALLER_SHA256", versions["erdma_installer_sha256"], "digest", "image.versions.erdma_installer_sha256"
    )
    values.add("MTU", str(plan.extra.mtu), "int", "mtu")
    if _builds_nccl_tests(plan):
        values.add("CUDA_VERSION", versions["cuda"], "version", "image.versions.cuda")
        values.add("CUDA_DIR", f"/usr/local/cuda-{versions['cuda']}", "path", "image.versions.cuda")
        values.add("NCCL_VERSION", versions["nccl"], "version", "image.versions.nccl")
        distro = _cuda_repo_distro(versions.get("os") or "ubuntu-22.04")
        values.add("CUDA_REPO_URL", f"{CUDA_REPO}/{distro}/x86_64", "url", "image.versions.os")
    return values


def _builds_nccl_tests(plan: ClusterPlan[AlibabaPlan]) -> bool:
    """GPU nodes whose image has no nccl-tests: the bootstrap builds them, so it needs CUDA and NCCL's headers."""
    expect = nccl_tests_expectation(plan)
    return expect is not None and expect["source"] == "build"


#: Lookup tries at boot: 15, 30, 45 s, then 60 s apart, about 98 minutes in all: CPFS takes 20-40 minutes to reach
#: Running (NAS API, CreateProtocolMountTarget), its protocol service 5-10 minutes (CreateProtocolService), within
#: the 60 + 30 minute create timeouts of clouds/alibaba/storage.py.
FS_LOOKUP_ATTEMPTS = 100
FS_LOOKUP_TIMEOUT_SECONDS = 6600


def render(plan: ClusterPlan[AlibabaPlan]) -> str:
    """The ``#cloud-config`` for every node of ``plan`` (the same before, during and after the file system exists)."""
    steps = [Step("gpu-driver", "alibaba/steps/gpu-driver.sh", timeout=3600)]
    if _builds_nccl_tests(plan):
        # Before the nccl-tests build (a common step after the cloud's); not critical, like that build.
        steps.append(Step("cuda", "alibaba/steps/cuda.sh", critical=False, timeout=1800))
    if plan.fabric == "erdma":
        steps += [
            Step("erdma", "alibaba/steps/erdma.sh", timeout=3600),
            Step("erdma-mode", "alibaba/steps/erdma-mode.sh", every_boot=True),
        ]
    steps.append(Step("network", "alibaba/steps/network.sh", every_boot=True))
    values = _values(plan)
    files = [static_file("/usr/local/lib/provision/provision-net", "alibaba/provision-net", "0755")]
    shared = None
    options = f"{plan.extra.nfs_options},_netdev"
    storage = plan.extra.storage
    if plan.storage is not None and storage is not None:
        values.add("FS_KIND", storage.file_system_type, "token", "storage.file_system_type")
        # An attached volume's file system carries its volume's description (the volume's stack made it).
        owner = plan.storage.volume or plan.name
        values.add("FS_DESCRIPTION", ramrole.fs_description(owner), "token", "name")
        if isinstance(storage, Cpfs):
            values.add("FS_EXPORT_DESCRIPTION", ramrole.export_description(plan.name), "token", "name")
        values.add("FS_RAM_ROLE", storage.lookup_role, "token", "storage.lookup_role")
        values.add("FS_LOOKUP_ATTEMPTS", str(FS_LOOKUP_ATTEMPTS), "int", "storage")
        values.add("NAS_ENDPOINT", storage.nas_endpoint, "url", "storage.nas_endpoint")
        files.append(static_file(f"{LIB}/provision-fs-domain", "alibaba/provision-fs-domain", "0755"))
        # Once (rerun at the next boot while it fails); waits for the file system the nodes were not made to wait for.
        steps.append(Step("fs-domain", "alibaba/steps/fs-domain.sh", timeout=FS_LOOKUP_TIMEOUT_SECONDS))
        shared = SharedMount(
            "",
            plan.storage.mount,
            "nfs",
            options,
            "nfs-common",
            source_file=ramrole.DOMAIN_FILE,
            source_path=storage.export_path,
        )
    return render_bootstrap(
        plan,
        values=values,
        steps=steps,
        files=files,
        shared=shared,
        login_keys=tuple(plan.access.ssh_public_keys),
        # auto_release_time releases the node in the cloud; a guest shutdown would only stop (not delete) it.
        expires_at=None,
        health=health_expectations(plan, shared_fstype="nfs" if shared else None),
    )


def user_data(plan: ClusterPlan[AlibabaPlan]) -> str:
    """The node's user data, base64-encoded.

    Raises:
        ValueError: the user data exceeds the ECS limit, or a value fails its pattern (UnsafeValueError).
    """
    encoded = gzip_base64(render(plan))
    if len(encoded) > MAX_USER_DATA_BYTES:
        raise ValueError(f"user data is {len(encoded)} bytes base64, over the ECS limit of {MAX_USER_DATA_BYTES}")
    return encoded


def mock_user_data(plan: ClusterPlan[AlibabaPlan]) -> str:
    """The user data as the mocked cloud's nodes get it (the same as the real nodes': it names no cloud id)."""
    return render(plan)
