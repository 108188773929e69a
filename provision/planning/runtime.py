"""The job runtime of a plan (pure): which container image jobs run in, its launcher tools, its version check.

The default image per GPU vendor, the tools it carries and each fabric's container settings are data
(``images/runtime.yaml``, each with its source). Before anything is created, the image's CUDA is checked
against the node image's driver with the same rule the node images follow (``images/compat.yaml``,
``cuda_min_driver``: a CUDA release runs on any driver at or above its major family's minimum). On the
nodes a job's line runs as :func:`container_line`: ``docker run`` with the GPUs, host network and IPC,
the fabric's devices, mounts and library path, ``/etc/provision`` (the env file) and the job's folders.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from functools import cache
from typing import Any

import yaml

from provision.planning.runtime_plan import LAUNCHER_TOOLS, RuntimePlan
from provision.spec.errors import Problem

__all__ = ["LAUNCHER_TOOLS", "RuntimePlan", "container_line", "plan_runtime", "runtime_setup_script"]


@cache
def runtime_rules() -> dict[str, Any]:
    """``images/runtime.yaml``."""
    from provision.planning.images import images_dir

    return yaml.safe_load((images_dir() / "runtime.yaml").read_text(encoding="utf-8")) or {}


def _major_min_driver(cuda: str) -> tuple[str, str] | None:
    from provision.planning.images import compat_rules

    rule = compat_rules().get("cuda_min_driver") or {}
    need = (rule.get("by_cuda_major") or {}).get(cuda.split(".")[0])
    return (str(need), str(rule.get("source", ""))) if need else None


def plan_runtime(
    spec: Any, gpu_vendor: str, fabric: str, node_versions: dict[str, str]
) -> tuple[RuntimePlan, list[Problem]]:
    """The runtime of ``spec`` on nodes of ``gpu_vendor`` with ``fabric`` and the node image's ``node_versions``.

    Returns the plan and the problems (a runtime the node's driver cannot run). Without a digest-pinned default
    for the GPU vendor the jobs run in the node image's Python (an unpinned image is never chosen).
    """
    from provision.planning.images import version_tuple
    from provision.spec.runtime import RuntimeSpec

    rt = spec.runtime or RuntimeSpec()
    problems: list[Problem] = []
    if rt.kind == "node":
        tools = {t: "node image (install with runtime.setup)" for t in LAUNCHER_TOOLS}
        return RuntimePlan(kind="node", source="spec", tools=tools, setup=tuple(rt.setup)), problems
    rules = runtime_rules()
    fab = (rules.get("fabric_container") or {}).get(fabric) or {}
    entry = next(
        (e for e in rules.get("defaults") or [] if gpu_vendor in ((e.get("match") or {}).get("gpu_vendor") or [])), None
    )
    if rt.image:
        image, source = rt.image, "spec"
        versions = {"cuda": str(rt.cuda)}
        tools = {t: "the image (unchecked)" for t in LAUNCHER_TOOLS}
        setup = tuple(rt.setup)
    elif entry is not None:
        image, source = str(entry["image"]), f"images/runtime.yaml#{entry['name']}"
        versions = {k: str(v) for k, v in (entry.get("versions") or {}).items()}
        tools = {k: str(v) for k, v in (entry.get("tools") or {}).items()}
        setup = (*entry.get("setup", ()), *rt.setup)
    else:
        # No digest-pinned default for this GPU vendor: never an unpinned image; the node's own Python, said so.
        return (
            RuntimePlan(
                kind="node",
                source=f"no digest-pinned default image for {gpu_vendor} GPUs: the node image's own Python "
                "(set runtime.image, pinned by digest, to run jobs in a container)",
                tools={t: "node image (install with runtime.setup)" for t in LAUNCHER_TOOLS},
                setup=tuple(rt.setup),
            ),
            problems,
        )
    driver = node_versions.get("driver")
    cuda = versions.get("cuda")
    if driver and cuda:
        need = _major_min_driver(cuda)
        if need and version_tuple(driver) < version_tuple(need[0]):
            problems.append(
                Problem(
                    "runtime.image" if rt.image else "runtime",
                    image,
                    f"needs CUDA {cuda}, which needs an NVIDIA driver {need[0]} or newer, but the node image's driver "
                    f"is {driver} (rule: {need[1]})",
                    "use a runtime image built for an older CUDA, "
                    "or pin a node image with a newer driver (image.versions)",
                )
            )
    return (
        RuntimePlan(
            kind="container",
            image=image,
            source=source,
            versions=versions,
            tools=tools,
            setup=setup,
            fabric_args=tuple(str(a) for a in fab.get("args") or ()),
            fabric_env={k: str(v) for k, v in (fab.get("env") or {}).items()},
        ),
        problems,
    )


def _path_word(path: str) -> str:
    """A shell word for a node path; ``~/x`` stays relative to the running user's home (``"$HOME"/x``)."""
    return f'"$HOME"/{shlex.quote(path[2:])}' if path.startswith("~/") else shlex.quote(path)


def container_line(
    runtime: RuntimePlan,
    line: str,
    mounts: Sequence[str] = (),
    workdir: str | None = None,
    pass_env: Sequence[str] = (),
) -> str:
    """``line`` as it runs in the job container on a node (``kind: node``: unchanged).

    ``mounts`` are node folders mounted at the same path (the shared filesystem, the job's folder, the work folder,
    the checkpoint folder; ``~/x`` is the user's); ``pass_env`` names variables passed through from the node.
    """
    if runtime.kind == "node":
        return line
    words = ["docker", "run", "--rm", "--gpus", "all", "--network", "host", "--ipc", "host", "--shm-size", "16g"]
    words += [*runtime.fabric_args, "-v", "/etc/provision:/etc/provision:ro"]
    out = [shlex.quote(w) for w in words]
    for path in dict.fromkeys(mounts):
        out += ["-v", f"{_path_word(path)}:{_path_word(path)}"]
    for key, value in sorted(runtime.fabric_env.items()):
        out += ["-e", shlex.quote(f"{key}={value}")]
    for key in pass_env:
        out += ["-e", shlex.quote(key)]
    if workdir:
        out += ["-w", _path_word(workdir)]
    out += [shlex.quote(runtime.local_image), "bash", "-c", shlex.quote(line)]
    return " ".join(out)


def runtime_setup_script(runtime: RuntimePlan) -> str:
    """The node-side script that prepares the runtime once per node (idempotent): pulls the pinned image and
    commits the setup commands' result as :attr:`RuntimePlan.local_image`; ``kind: node`` runs the setup on the node."""
    if runtime.kind == "node":
        return " && ".join(runtime.setup) if runtime.setup else "true"
    if not runtime.setup:
        image = shlex.quote(str(runtime.image))
        return f"docker image inspect {image} >/dev/null 2>&1 || docker pull -q {image}"
    local = shlex.quote(runtime.local_image)
    steps = " && ".join(runtime.setup)
    return (
        f"docker image inspect {local} >/dev/null 2>&1 || {{ docker pull -q {shlex.quote(str(runtime.image))} && "
        f"docker rm -f provision-runtime-setup >/dev/null 2>&1; "
        f"docker run --name provision-runtime-setup {shlex.quote(str(runtime.image))} bash -c {shlex.quote(steps)} && "
        f"docker commit provision-runtime-setup {local} >/dev/null && docker rm provision-runtime-setup >/dev/null; }}"
    )
