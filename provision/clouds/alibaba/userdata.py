"""Alibaba node user data: the common bootstrap plus the GPU driver and eRDMA steps (pure text).

The ECS API takes user data base64-encoded (pulumi_alicloud ``ecs.Instance.user_data``: "It supports to setting a
base64-encoded value, and it is the recommended usage"), at most 32 KiB.

Shared storage: NAS mounts the mount target's domain, known at deploy time. CPFS exports have no domain in
pulumi-alicloud 4.0, so a ``cpfs-domain`` step looks it up on the node (``images/alibaba/provision-cpfs-domain``,
with the node's RAM role) and writes it to a file; the common ``shared-mount`` step reads that file at every boot.
"""

from __future__ import annotations

from dataclasses import dataclass
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


@dataclass(frozen=True)
class CpfsExport:
    """What the node's CPFS domain lookup needs, known once the export and the role exist."""

    file_system_id: str
    export_id: str
    role_name: str


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


def render(plan: ClusterPlan[AlibabaPlan], mount_source: str | None = None, cpfs: CpfsExport | None = None) -> str:
    """The ``#cloud-config`` for every node of ``plan``.

    ``mount_source`` is the NAS mount source when known at deploy time; ``cpfs`` the CPFS export whose domain the
    nodes look up at boot (then the shared mount reads the looked-up domain).
    """
    steps = [Step("gpu-driver", "alibaba/steps/gpu-driver.sh", timeout=3600)]
    if _builds_nccl_tests(plan):
        # Before the nccl-tests build (a common step after the cloud's); not critical, like that build.
        steps.append(Step("cuda", "alibaba/steps/cuda.sh", critical=False, timeout=1800))
    if plan.fabric == "erdma":
        steps += [
            Step("erdma", "alibaba/steps/erdma.sh"),
            Step("erdma-mode", "alibaba/steps/erdma-mode.sh", every_boot=True),
        ]
    steps.append(Step("network", "alibaba/steps/network.sh", every_boot=True))
    values = _values(plan)
    files = [static_file("/usr/local/lib/provision/provision-net", "alibaba/provision-net", "0755")]
    shared = None
    options = f"{plan.extra.nfs_options},_netdev"
    if plan.storage is not None and cpfs is not None:
        storage = plan.extra.storage
        assert isinstance(storage, Cpfs)  # noqa: S101 - a CPFS export is passed only for a CPFS plan
        values.add("CPFS_FILE_SYSTEM_ID", cpfs.file_system_id, "token", "shared_fs.file_system_id")
        values.add("CPFS_EXPORT_ID", cpfs.export_id, "token", "shared_fs.export_id")
        values.add("CPFS_RAM_ROLE", cpfs.role_name, "token", "storage.lookup_role")
        values.add("NAS_ENDPOINT", storage.nas_endpoint, "url", "storage.nas_endpoint")
        files.append(static_file(f"{LIB}/provision-cpfs-domain", "alibaba/provision-cpfs-domain", "0755"))
        # Once (rerun at the next boot while it fails); the retries inside wait up to ~12 minutes for the export
        # to settle and the role's credentials to reach the metadata service.
        steps.append(Step("cpfs-domain", "alibaba/steps/cpfs-domain.sh", timeout=1800))
        shared = SharedMount(
            "",
            plan.storage.mount,
            "nfs",
            options,
            "nfs-common",
            source_file=ramrole.DOMAIN_FILE,
            source_path=storage.export_path,
        )
    elif plan.storage is not None and mount_source:
        shared = SharedMount(mount_source, plan.storage.mount, "nfs", options, "nfs-common")
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


def user_data(plan: ClusterPlan[AlibabaPlan], mount_source: str | None = None, cpfs: CpfsExport | None = None) -> str:
    """The node's user data, base64-encoded.

    Raises:
        ValueError: the user data exceeds the ECS limit, or a value fails its pattern (UnsafeValueError).
    """
    encoded = gzip_base64(render(plan, mount_source, cpfs))
    if len(encoded) > MAX_USER_DATA_BYTES:
        raise ValueError(f"user data is {len(encoded)} bytes base64, over the ECS limit of {MAX_USER_DATA_BYTES}")
    return encoded


def mock_cpfs_export(plan: ClusterPlan[AlibabaPlan]) -> CpfsExport:
    """The CPFS export as the mocked cloud answers it (the ids of storage.py's logical names, alibaba/mocks.py)."""
    from provision.clouds.alibaba.mocks import cpfs_export_id, cpfs_file_system_id

    assert isinstance(plan.extra.storage, Cpfs)  # noqa: S101 - called only for a CPFS plan
    return CpfsExport(
        cpfs_file_system_id(f"{plan.name}-fs"),
        cpfs_export_id(f"{plan.name}-fs-export"),
        plan.extra.storage.lookup_role,
    )


def mock_user_data(plan: ClusterPlan[AlibabaPlan]) -> str:
    """The user data as the mocked cloud's nodes get it (a NAS mount source in the mocked cloud's format, or the
    mocked CPFS export the nodes look up)."""
    if plan.storage is not None and isinstance(plan.extra.storage, Cpfs):
        return render(plan, cpfs=mock_cpfs_export(plan))
    source = f"0a1b2c3d4e-abc12.{plan.region}.nas.aliyuncs.com:/" if plan.storage is not None else None
    return render(plan, source)
