"""Node user data: one ``#cloud-config`` per cluster, made of static step scripts and checked values.

What every node gets (all four clouds):

* ``/usr/local/lib/provision/``: ``lib.sh`` (retries, dpkg-lock wait, checked downloads), the runner
  ``provision-bootstrap`` and the health check ``provision-health`` (python3, which cloud-init needs anyway),
  and the cluster's steps ``steps/NN-<name>.sh``. Steps are static files from ``images/``: no value is ever
  substituted into a script.
* ``/etc/provision/bootstrap.env``: the cluster's values as ``KEY='value'`` lines. Every value is first checked
  against a strict pattern for its kind (:data:`PATTERNS`), then quoted by :func:`shell_assign`, the one quoting
  helper for shell. Steps read them as ``"$KEY"``.
* ``/etc/provision/steps.json`` (the ordered steps: once or at every boot, critical or not, timeout),
  ``/etc/provision/health.json`` (what the health check expects), the NCCL settings
  (``/etc/provision/nccl.env`` for ``docker --env-file`` and systemd ``EnvironmentFile``, ``/etc/profile.d``),
  memlock limits, and ``provision-bootstrap.service``, which runs the runner again at every boot.

cloud-init writes the files (``write_files``; YAML escaping by PyYAML) and starts the runner (``runcmd`` as an
argument list, no shell). The runner records each step in ``/var/lib/provision/bootstrap.json``.
Pure text rendering: adapters call :func:`render` inside an ``Output.apply`` when a value (a file system's
DNS name) is known only after creation.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import yaml

from provision.catalog import load_catalog, load_yaml
from provision.planning.images import image_text
from provision.planning.values import PATTERNS as PATTERNS
from provision.planning.values import UnsafeValueError as UnsafeValueError
from provision.planning.values import checked

if TYPE_CHECKING:
    from provision.planning.plan import ClusterPlan

_NAME = re.compile(r"[A-Z][A-Z0-9_]{0,63}")
LIB = "/usr/local/lib/provision"


def shell_assign(name: str, value: str) -> str:
    """``NAME='value'``: the one way a value reaches a node's shell (``shlex.quote``)."""
    if not _NAME.fullmatch(name):
        raise UnsafeValueError(f"{name!r} is not a shell variable name")
    return f"{name}={shlex.quote(value)}"


def env_file_line(name: str, value: str) -> str:
    """``NAME=value`` for files read without a shell: NCCL's ``/etc/nccl.conf`` (everything after ``=`` is the value),
    ``docker --env-file`` (no quote processing) and systemd ``EnvironmentFile``. Values are limited to a charset that
    means the same to all three (no quotes, spaces, ``$``, backslashes or ``#``)."""
    if not _NAME.fullmatch(name):
        raise UnsafeValueError(f"nccl_env: {name!r} is not an environment variable name")
    return f"{name}={checked('env', value, f'nccl_env.{name}')}"


@dataclass
class Values:
    """The cluster's values for ``/etc/provision/bootstrap.env``, each checked when added."""

    items: dict[str, str] = field(default_factory=dict)

    def add(self, name: str, value: str | int | bool, kind: str, where: str) -> Values:
        text = ("true" if value else "false") if isinstance(value, bool) else str(value)
        self.items[name] = checked(kind, text, where)
        return self

    def render(self) -> str:
        head = "# provision: this cluster's values (checked and shell-quoted by provision/planning/bootstrap.py)\n"
        return head + "".join(shell_assign(k, v) + "\n" for k, v in self.items.items())


@dataclass(frozen=True)
class Step:
    """One named bootstrap step: ``script`` under ``images/`` (static), or generated ``text``."""

    name: str
    script: str = ""
    every_boot: bool = False
    critical: bool = True
    timeout: int = 1800
    text: str | None = None

    def body(self) -> str:
        return self.text if self.text is not None else image_text(self.script)


@dataclass(frozen=True)
class File:
    """A file cloud-init writes."""

    path: str
    content: str
    permissions: str = "0644"


@dataclass(frozen=True)
class SharedMount:
    """The shared filesystem as nodes mount it (checked when rendered).

    ``source`` is ``host:/path`` when known at deploy time. Otherwise ``source_file`` names the file an earlier
    step writes on the node (one DNS name, checked again by the mount step) and ``source_path`` the export path;
    the mount source is then ``<host>:<source_path>`` (Alibaba CPFS, whose export domain only the node can look up);
    without ``source_path`` the file holds the whole source, ``<host>@tcp:/<name>`` (AWS FSx, looked up at boot).
    """

    source: str
    mount: str
    fstype: str
    options: str
    client: str = ""
    source_file: str = ""
    source_path: str = ""


_HEREDOC = re.compile(r"<<(-?)\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\2")


def shell_code(text: str) -> str:
    """A shell script as nodes get it: its full-line comments left out (the documented source is ``images/``).

    User data is small (EC2: 16 KB after gzip, shared with the users' SSH keys) and half of a step's bytes are its
    comments. Kept: the shebang, ``# shellcheck`` directives (the rendered copies are checked too), every line of
    a here-document (its text is data, not shell), and lines where ``#`` follows code.
    """
    out: list[str] = []
    end: tuple[str, bool] | None = None  # the open here-document's delimiter, and whether it allows leading tabs
    for n, line in enumerate(text.splitlines(keepends=True)):
        if end is not None:
            out.append(line)
            if (line.lstrip("\t") if end[1] else line).rstrip("\n") == end[0]:
                end = None
            continue
        code = line.lstrip()
        if code.startswith("#") and not (n == 0 and code.startswith("#!")) and not code.startswith("# shellcheck"):
            continue
        out.append(line)
        m = _HEREDOC.search(line)
        if m and not code.startswith("#"):
            end = (m.group(3), m.group(1) == "-")
    return "".join(out)


def static_file(path: str, source: str, permissions: str = "0644") -> File:
    """A file whose content is ``images/<source>`` as shipped."""
    return File(path, image_text(source), permissions)


def nccl_files(env: dict[str, str]) -> list[File]:
    """``/etc/provision/nccl.env`` (raw) and ``/etc/profile.d/provision-nccl.sh`` (shell-quoted)."""
    raw = "".join(env_file_line(k, v) + "\n" for k, v in sorted(env.items()))
    profile = "# provision: NCCL settings of this cluster (also in /etc/nccl.conf and /etc/environment)\n" + "".join(
        f"export {shell_assign(k, v)}\n" for k, v in sorted(env.items())
    )
    return [File("/etc/provision/nccl.env", raw), File("/etc/profile.d/provision-nccl.sh", profile)]


def expiry_units(expires_at: datetime) -> list[File]:
    """A systemd calendar timer that powers the node off at ``expires_at`` (UTC).

    With ``Persistent=true`` it survives reboots and fires at the next boot when the expiry passed while the
    node was down (a ``shutdown +N`` timer is lost on reboot). With shutdown behaviour 'terminate' (AWS) the
    power-off deletes the VM.
    """
    stamp = expires_at.strftime("%Y-%m-%d %H:%M:%S UTC")
    service = (
        "[Unit]\nDescription=provision: cluster lifetime reached\n\n"
        "[Service]\nType=oneshot\nExecStart=/bin/systemctl poweroff\n"
    )
    timer = (
        "[Unit]\nDescription=provision: power off at the cluster's expiry\n\n"
        f"[Timer]\nOnCalendar={stamp}\nPersistent=true\nAccuracySec=1s\n\n[Install]\nWantedBy=timers.target\n"
    )
    return [
        File("/etc/systemd/system/provision-expiry.service", service),
        File("/etc/systemd/system/provision-expiry.timer", timer),
    ]


def _nvswitch(gpu: str) -> bool:
    """Whether the catalog's GPU row ``gpu`` sits on an NVSwitch board; an unknown GPU is an error naming it."""
    row = load_catalog().gpu(gpu)
    if row is None:
        raise ValueError(f"GPU {gpu!r} has no row in catalog/data/gpus.yaml: its NVSwitch fact is unknown")
    return row.nvswitch


def gpu_model(plan: ClusterPlan) -> str:
    """The part of the catalog's GPU name that the driver tools print (``A100-80GB`` -> ``A100``)."""
    return plan.offer.gpu.split("-")[0]


def health_expectations(plan: ClusterPlan, **fabric: Any) -> dict[str, Any]:
    """What ``provision-health`` compares the node with (``/etc/provision/health.json``)."""
    versions = plan.image.versions
    nvidia = plan.offer.gpu_vendor == "nvidia"
    driver = (versions.get("driver") or versions.get("driver_branch")) if nvidia else None
    if driver and plan.image.ref.startswith("lookup:"):
        # An image resolved from a lookup may be a newer release than the one documented: hold it to the branch.
        driver = driver.split(".")[0]
    shared = None
    fstype = fabric.pop("shared_fstype", plan.storage.protocol if plan.storage else None)
    if plan.storage is not None and fstype:
        shared = {"mount": plan.storage.mount, "fstype": fstype}
    return {
        "cluster": plan.name,
        "gpu_vendor": plan.offer.gpu_vendor,
        "gpus": plan.gpus_per_node,
        "gpu_model": gpu_model(plan),
        # 8-GPU HGX (SXM) boards have NVSwitch: every NVLink must be up. The fact is the catalog GPU row's
        # (catalog/data/gpus.yaml `nvswitch`, required on every row); PCIe parts (L4, L40S) have no NVLink.
        "nvlink": nvidia and plan.gpus_per_node == 8 and _nvswitch(plan.offer.gpu),
        "driver": driver,
        "cuda": versions.get("cuda") if nvidia else None,
        "fabric": plan.fabric,
        "fabric_devices": plan.fabric_interfaces,
        "shared_fs": shared,
        "scratch": {"mount": plan.scratch.mount, "raid0": plan.scratch.raid0},
        "nccl_tests": nccl_tests_expectation(plan),
        **fabric,
    }


#: Where the bootstrap puts the cluster's ``all_reduce_perf`` and ``mpirun`` (links/wrappers to the image's, or to
#: the ones it built): one fixed path on every node, whatever the image, so ``provision nccl-test`` needs no search.
NCCL_TESTS_BIN = f"{LIB}/bin"
#: The nccl-tests tag built when neither the image nor the spec names one (AWS pins the same tag in
#: aws-samples/awsome-distributed-training micro-benchmarks/nccl-tests/nccl-tests.Dockerfile, NCCL_TESTS_VERSION).
NCCL_TESTS_DEFAULT = "2.17.9"
#: NVIDIA's source archive of an nccl-tests tag (the URL form Spack's nccl-tests package fetches and pins by SHA-256).
NCCL_TESTS_ARCHIVE = "https://github.com/NVIDIA/nccl-tests/archive/v{version}.tar.gz"


def nccl_tests_urls(versions: dict[str, str], version: str) -> list[str]:
    """Where the ``nccl-tests`` step fetches the source tarball, in order: ``image.versions.nccl_tests_url`` (an
    in-region copy) when set, then NVIDIA's archive of the tag."""
    first = versions.get("nccl_tests_url")
    return [*([first] if first else []), NCCL_TESTS_ARCHIVE.format(version=version)]


def nccl_tests_expectation(plan: ClusterPlan) -> dict[str, Any] | None:
    """Where ``all_reduce_perf`` and its ``mpirun`` are on every node of ``plan`` (``None``: no GPUs).

    From ``image.versions``: ``nccl_tests_path`` (and ``mpirun_path``, ``nccl_tests_lib``) when the image ships
    nccl-tests (DLAMI, Azure HPC images), else ``nccl_tests`` (a tag) that the ``nccl-tests`` step builds. Either
    way the step leaves ``all_reduce_perf`` and ``mpirun`` under :data:`NCCL_TESTS_BIN`.
    """
    if plan.gpus_per_node < 1:
        return None
    v = plan.image.versions
    out: dict[str, Any] = {
        "all_reduce_perf": f"{NCCL_TESTS_BIN}/all_reduce_perf",
        "mpirun": f"{NCCL_TESTS_BIN}/mpirun",
        "image_mpirun": v.get("mpirun_path") or "/usr/bin/mpirun",
    }
    if v.get("nccl_tests_path"):
        out.update(source="image", image_path=v["nccl_tests_path"], lib=v.get("nccl_tests_lib") or "")
    else:
        version = v.get("nccl_tests") or NCCL_TESTS_DEFAULT
        out.update(
            source="build",
            version=version,
            cuda_toolkit=v.get("cuda_toolkit_package") or "",
            urls=nccl_tests_urls(dict(v), version),
            sha256=v.get("nccl_tests_sha256") or "",
        )
    return out


def nccl_tests_values(values: Values, expect: dict[str, Any]) -> Values:
    """The ``nccl-tests`` step's values (checked like every other value)."""
    values.add("NCCL_TESTS_SOURCE", expect["source"], "name", "image.versions.nccl_tests_path")
    values.add("MPIRUN_IMAGE_PATH", expect["image_mpirun"], "glob-path", "image.versions.mpirun_path")
    if expect["source"] == "image":
        values.add("NCCL_TESTS_IMAGE_PATH", expect["image_path"], "glob-path", "image.versions.nccl_tests_path")
        if expect["lib"]:
            values.add("NCCL_TESTS_LIB", expect["lib"], "paths", "image.versions.nccl_tests_lib")
    else:
        values.add("NCCL_TESTS_VERSION", expect["version"], "version", "image.versions.nccl_tests")
        for i, url in enumerate(expect["urls"]):
            values.add(f"NCCL_TESTS_URL_{i}", url, "url", "image.versions.nccl_tests_url")
        if expect["sha256"]:
            values.add("NCCL_TESTS_SHA256", expect["sha256"], "digest", "image.versions.nccl_tests_sha256")
        if expect["cuda_toolkit"]:
            values.add("CUDA_TOOLKIT_PACKAGE", expect["cuda_toolkit"], "package", "image.versions.cuda_toolkit_package")
    return values


def base_values(plan: ClusterPlan) -> Values:
    """The values every cloud's steps read."""
    values = Values()
    values.add("CLUSTER", plan.name, "name", "name")
    values.add("CLOUD", plan.cloud, "name", "cloud")
    values.add("FABRIC", plan.fabric, "name", "fabric")
    values.add("GPU_VENDOR", plan.offer.gpu_vendor, "name", "gpu")
    values.add("SCRATCH_RAID0", plan.scratch.raid0, "flag", "storage.scratch.raid0")
    values.add("SCRATCH_MOUNT", plan.scratch.mount, "path", "storage.scratch.mount")
    values.add("SSH_USER", plan.access.ssh_user, "user", "access.ssh_user")
    return values


def _step(name: str, path: str, **kw: Any) -> Step:
    return Step(name, path, **kw)


#: Steps every node runs, in order around the cloud's own.
FIRST = (_step("apt-guard", "common/steps/apt-guard.sh"), _step("memlock", "common/steps/memlock.sh"))
SCRATCH = _step("scratch", "common/steps/scratch.sh", every_boot=True)
#: The host public keys on the serial console at every boot, read through the cloud's API before the first
#: connection (provision/clouds/consolekeys.py); not critical: without them the laptop says so and records.
HOST_KEYS = _step("host-keys", "common/steps/host-keys.sh", every_boot=True, critical=False, timeout=60)


class _Dumper(yaml.SafeDumper):
    pass


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)

BOOT_UNIT = """[Unit]
Description=provision: node bootstrap steps that must hold after every boot (scratch, mounts, fabric, NCCL, health)
Wants=network-online.target
After=network-online.target
# The first boot is cloud-init's (runcmd); this unit takes over from the second boot on.
ConditionPathExists=/var/lib/provision/bootstrap.json

[Service]
Type=oneshot
TimeoutStartSec=2h
ExecStart=/usr/bin/python3 /usr/local/lib/provision/provision-bootstrap

[Install]
WantedBy=multi-user.target
"""

MEMLOCK_LIMITS = (
    "# provision: RDMA registration needs unlimited locked memory\n* soft memlock unlimited\n* hard memlock unlimited\n"
)
MEMLOCK_SYSTEMD = (
    "# provision: RDMA registration needs unlimited locked memory\n[Manager]\nDefaultLimitMEMLOCK=infinity\n"
)


def render(
    plan: ClusterPlan,
    *,
    values: Values,
    steps: list[Step],
    files: list[File] | None = None,
    shared: SharedMount | None = None,
    login_keys: tuple[str, ...] = (),
    expires_at: datetime | None = None,
    health: dict[str, Any] | None = None,
) -> str:
    """The ``#cloud-config`` user data for every node of ``plan``.

    Args:
        values: checked values (start from :func:`base_values`).
        steps: the cloud's own steps; they run after apt-guard, memlock, scratch and the login user, and
            before the shared mount, the NCCL files, package holds, the lifetime timer and the health check.
        files: the cloud's extra files (units, data).
        shared: the shared filesystem to mount at every boot, if any.
        login_keys: public keys for ``access.ssh_user`` (``/etc/provision/authorized_keys``).
        expires_at: arm a guest power-off timer at this time.
        health: what the health check expects (default :func:`health_expectations`).

    Raises:
        UnsafeValueError: a value does not match its kind (it names the field).
    """
    files = list(files or [])
    order: list[Step] = [*FIRST, SCRATCH, HOST_KEYS]
    if login_keys:
        keys = [checked("ssh-key", k, f"access.ssh_public_keys[{i}]") for i, k in enumerate(login_keys)]
        files.append(File("/etc/provision/authorized_keys", "".join(k + "\n" for k in keys)))
        order.append(_step("login-user", "common/steps/login-user.sh"))
    order += steps
    if shared is not None:
        if bool(shared.source) == bool(shared.source_file):
            raise ValueError("shared mount: give either source or source_file (with source_path)")
        if shared.source:
            values.add("SHARED_SOURCE", shared.source, "mount-source", "shared_fs.source")
        else:
            values.add("SHARED_SOURCE_FILE", shared.source_file, "path", "shared_fs.source_file")
            if shared.source_path:  # without it, the file holds the whole source (AWS: ``host@tcp:/name``)
                values.add("SHARED_SOURCE_PATH", shared.source_path, "path", "shared_fs.source_path")
        values.add("SHARED_MOUNT", shared.mount, "path", "storage.shared.mount")
        values.add("SHARED_FSTYPE", shared.fstype, "fstype", "shared_fs.fstype")
        values.add("SHARED_OPTIONS", shared.options, "mount-options", "shared_fs.options")
        if shared.client:
            values.add("SHARED_CLIENT", shared.client, "package", "shared_fs.client")
        if not plan.extra.identity_login():  # GCP OS Login has no fixed login account: root keeps the share
            values.add("SHARED_OWNER", plan.access.ssh_user, "user", "access.ssh_user")
        order.append(_step("shared-mount", "common/steps/shared-mount.sh", every_boot=True))
    order.append(_step("nccl-conf", "common/steps/nccl-conf.sh", every_boot=True))
    tests = nccl_tests_expectation(plan)
    if tests is not None:
        nccl_tests_values(values, tests)
        # Not critical: a node without nccl-tests still trains; the health check names it (check nccl_tests).
        order.append(_step("nccl-tests", "common/steps/nccl-tests.sh", critical=False, timeout=3600))
    order.append(_step("hold-packages", "common/steps/hold-packages.sh"))
    if expires_at is not None:
        files += expiry_units(expires_at)
        order.append(_step("lifetime", "common/steps/lifetime.sh"))
    order.append(_step("health", "common/steps/health.sh", every_boot=True, critical=False, timeout=600))
    names = [s.name for s in order]
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate bootstrap steps: {names}")

    written: list[File] = [
        File(f"{LIB}/lib.sh", shell_code(image_text("common/lib.sh"))),
        static_file(f"{LIB}/provision-bootstrap", "common/provision-bootstrap", "0755"),
        static_file(f"{LIB}/provision-health", "common/provision-health", "0755"),
    ]
    scripts, manifest = step_files(order)
    written += scripts
    expect = health if health is not None else health_expectations(plan)
    written += [
        File("/etc/provision/bootstrap.env", values.render()),
        File("/etc/provision/steps.json", json.dumps({"steps": manifest}, indent=1) + "\n"),
        File("/etc/provision/health.json", json.dumps(expect, indent=1, sort_keys=True) + "\n"),
        *nccl_files(plan.nccl_env),
        File("/etc/security/limits.d/90-provision-memlock.conf", MEMLOCK_LIMITS),
        File("/etc/systemd/system.conf.d/90-provision-memlock.conf", MEMLOCK_SYSTEMD),
        File("/etc/systemd/system/provision-bootstrap.service", BOOT_UNIT),
        *files,
    ]
    return cloud_config(written)


def cloud_config(written: Sequence[File], **head: Any) -> str:
    """The ``#cloud-config`` document of a node or controller: the ``head`` keys first (e.g. ``hostname``), then
    ``written`` as ``write_files`` and the ``runcmd`` that enables and starts the step runner (its systemd unit
    is one of ``written``)."""
    doc = {
        **head,
        "write_files": [{"path": f.path, "permissions": f.permissions, "content": f.content} for f in written],
        "runcmd": [
            ["systemctl", "daemon-reload"],
            ["systemctl", "enable", "provision-bootstrap.service"],
            ["python3", f"{LIB}/provision-bootstrap"],
        ],
    }
    return "#cloud-config\n" + yaml.dump(doc, Dumper=_Dumper, sort_keys=False, width=4096, allow_unicode=False)


def step_files(order: list[Step]) -> tuple[list[File], list[dict[str, Any]]]:
    """The numbered step scripts of ``order`` and their ``/etc/provision/steps.json`` entries, in run order."""
    scripts, manifest = [], []
    for i, step in enumerate(order):
        script = f"{i:02d}-{step.name}.sh"
        scripts.append(File(f"{LIB}/steps/{script}", shell_code(step.body()), "0755"))
        manifest.append(
            {
                "name": step.name,
                "script": script,
                "every_boot": step.every_boot,
                "critical": step.critical,
                "timeout": step.timeout,
            }
        )
    return scripts, manifest


def gzip_base64(text: str) -> str:
    """``text`` gzip-compressed (deterministic: no timestamp) and base64-encoded. cloud-init decompresses gzip user
    data itself (cloud-init docs, "User-data formats": "Content found to be gzip compressed will be uncompressed")."""
    import base64
    import gzip

    return base64.b64encode(gzip.compress(text.encode(), compresslevel=9, mtime=0)).decode()


def parse(user_data: str) -> dict[str, Any]:
    """The cloud-config document of rendered user data (for tests, goldens and the mocked nodes).

    Read as the catalog is (:func:`provision.catalog.load_yaml`): every set of mocked nodes parses it.
    """
    if not user_data.startswith("#cloud-config\n"):
        raise ValueError("not a #cloud-config document")
    return load_yaml(user_data)  # type: ignore[return-value]


def materialize(user_data: str, root: Any) -> None:
    """Write the files of rendered user data under ``root`` (a sandbox), as cloud-init would on a node."""
    from pathlib import Path

    for f in parse(user_data)["write_files"]:
        path = Path(root) / f["path"].lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f["content"], encoding="utf-8")
        path.chmod(int(f["permissions"], 8))
