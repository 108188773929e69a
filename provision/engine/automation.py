"""Pulumi Automation API plumbing: home folder, state backend, secrets, the CLI, stacks, config.

* **Home**: ``$PROVISION_HOME`` or ``~/.provision`` (0700). Tests point it at a temporary folder.
* **State**: a local file backend, ``file://<home>/state/<project>`` (0700), one folder per
  Pulumi project; ``PULUMI_BACKEND_URL`` overrides it. No Pulumi account is needed.
* **Secrets**: the passphrase provider. The passphrase comes from ``PULUMI_CONFIG_PASSPHRASE``
  / ``PULUMI_CONFIG_PASSPHRASE_FILE`` when set, else from ``<home>/passphrase``, generated
  once with owner-only permissions (0600). The CLI is pointed at the file, so the
  passphrase never sits in this process's environment or in a workspace ``repr``.
* **Workspace**: the hybrid shape (pulumi/automation-api-examples ``inline_local_hybrid``):
  a ``LocalWorkspace`` whose ``work_dir`` is the repository (its ``Pulumi.yaml`` and
  ``stacks/`` files are used) and whose program runs in this process.
* **Config** is written with ``stack.set_all_config`` (the CLI honours ``stackConfigDir``;
  the workspace's stack-settings helpers do not, pulumi/pulumi#10305).
* **The CLI**: :class:`PulumiCli` runs ``pulumi`` in its own session and turns Ctrl-C into
  one SIGINT for it (Pulumi's graceful cancel), waits for it to release the stack lock, and
  then re-raises ``KeyboardInterrupt``; the SDK's default would leave it running or kill it
  mid-operation (pulumi/pulumi#9103).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pulumi import automation as auto
from pulumi.automation.errors import create_command_error

from provision.clouds.base import TAG_CLUSTER, TAG_EXPIRES, TAG_OWNER
from provision.clouds.failover import QUOTA_CODES, STOCK_CODES, capacity_error
from provision.engine.program import CREATED_AT_KEY, created_at_from
from provision.spec import CONFIG_KEY, PROJECT, ClusterSpec, load_spec
from provision.spec.errors import CloudError, ProvisionError
from provision.spec.units import format_time

if TYPE_CHECKING:
    from provision.engine.progress import Progress

HOME_ENV = "PROVISION_HOME"
INSTALL_URL = "https://www.pulumi.com/docs/install/"
#: Stack tags the reaper reads (names <= 40 characters: the DIY backend does not check, #24428).
STACK_TAGS = (TAG_CLUSTER, TAG_EXPIRES, TAG_OWNER)
#: Cloud error codes that mean "no capacity or quota" (research: reliability-security.md §2.1);
#: ``clouds/failover.py`` tells stock (failover may help) from quota (it cannot).
CAPACITY_CODES = STOCK_CODES + QUOTA_CODES
#: ``CloudError.code`` when the state holds operations an interrupted run left pending.
PENDING_OPERATIONS = "PendingOperations"
_PASSPHRASE_ENV = ("PULUMI_CONFIG_PASSPHRASE", "PULUMI_CONFIG_PASSPHRASE_FILE")


# ---------------------------------------------------------------------- home, backend, secrets


class UnsafeHomeError(ProvisionError):
    """The provision home (or a folder in it) is open to other users and is not ours to tighten (exit 2)."""

    exit_code = 2
    title = "the provision home is not private"


def _home_path() -> Path:
    raw = os.environ.get(HOME_ENV)
    return Path(raw).expanduser() if raw else Path.home() / ".provision"


def provision_home() -> Path:
    """``$PROVISION_HOME`` or ``~/.provision``; created 0700 when missing, tightened to 0700 when open."""
    return private_dir(_home_path())


def _tighten(folder: Path) -> None:
    """Make an existing ``folder`` owner-only: state, keys and the passphrase live below it.

    A folder of ours that others may enter (e.g. a ``~/.provision`` left 0777) is chmodded to 0700; one
    owned by another user that others may write is refused: we cannot make it private.
    """
    st = folder.stat()
    if not st.st_mode & 0o077:
        return
    if st.st_uid == os.geteuid():
        os.chmod(folder, 0o700)
        return
    if st.st_mode & 0o022:
        raise UnsafeHomeError(
            f"{folder} belongs to uid {st.st_uid} and others may write to it (mode {st.st_mode & 0o7777:04o}): "
            f"state, keys and the passphrase kept there would be exposed. To fix: set {HOME_ENV} to a folder "
            f"of your own (it is created 0700), e.g. {HOME_ENV}=~/.provision"
        )


def stack_ssh_dir(stack: str) -> Path:
    """``$PROVISION_HOME/ssh/<stack>`` (0700): a cluster's SSH files and its mocked nodes' folders."""
    return private_dir(provision_home() / "ssh" / re.sub(r"[^A-Za-z0-9._-]", "_", stack))


def stack_bench_path(stack: str) -> Path:
    """``$PROVISION_HOME/bench/<stack>.json``: the cluster's last bench report (removed at ``down``)."""
    return private_dir(provision_home() / "bench") / (stack.replace("/", "_") + ".json")


def private_dir(path: Path) -> Path:
    """``path`` as an owner-only (0700) folder, whatever the umask.

    Folders this creates are 0700; ``path`` and the existing folders between the provision home and it
    are tightened to 0700 (or refused, see :func:`_tighten`).
    """
    missing = []
    p = path
    while not p.exists():
        missing.append(p)
        p = p.parent
    path.mkdir(parents=True, exist_ok=True)
    for p in missing:
        os.chmod(p, 0o700)
    home = _home_path()
    chain = [path, *(a for a in path.parents if a == home or home in a.parents)]
    for folder in chain:
        if folder not in missing:
            _tighten(folder)
    return path


def state_dir(project: str = PROJECT) -> Path:
    """The file backend's folder for ``project``: ``<home>/state/<project>``."""
    return private_dir(provision_home() / "state" / project)


def backend_url(project: str = PROJECT) -> str:
    """``PULUMI_BACKEND_URL`` when set, else ``file://<home>/state/<project>``."""
    return os.environ.get("PULUMI_BACKEND_URL") or f"file://{state_dir(project)}"


def passphrase_file() -> Path:
    """``<home>/passphrase``, generated once (0600, atomically: two processes agree on one)."""
    path = provision_home() / "passphrase"
    if path.is_symlink():
        raise UnsafeHomeError(
            f"{path} is a symbolic link: the passphrase must be a file of its own. To fix: remove the link "
            f"(a new passphrase is generated; stacks encrypted with the old one need it as PULUMI_CONFIG_PASSPHRASE)"
        )
    if path.exists():
        if path.stat().st_mode & 0o077:
            os.chmod(path, 0o600)
        return path
    tmp = path.with_name(f".passphrase.{os.getpid()}.{threading.get_ident()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(secrets.token_urlsafe(32))  # no newline: `$(cat file)` and the file give one passphrase
        with contextlib.suppress(FileExistsError):  # another process won the race: use its passphrase
            os.link(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


def workspace_env(project: str = PROJECT) -> dict[str, str]:
    """Environment for every CLI call: the backend, the passphrase (file), no update check."""
    env = {"PULUMI_BACKEND_URL": backend_url(project), "PULUMI_SKIP_UPDATE_CHECK": "true"}
    if not any(os.environ.get(k) for k in _PASSPHRASE_ENV):
        env["PULUMI_CONFIG_PASSPHRASE_FILE"] = str(passphrase_file())
    return env


def secrets_provider(url: str) -> str | None:
    """``passphrase`` for self-managed backends; Pulumi Cloud brings its own."""
    return None if url.startswith(("https://", "http://")) else "passphrase"


# ---------------------------------------------------------------------- the CLI


def cli_missing_error(detail: str = "") -> CloudError:
    return CloudError(
        "the Pulumi CLI (`pulumi`) is needed to create real cloud resources"
        + (f" ({detail})" if detail else " and was not found on PATH or in ~/.pulumi/versions")
        + ". To fix: run `provision install-pulumi` (downloads it; needs network), or install it yourself "
        f"({INSTALL_URL}), or run against the mocked cloud with --mock (Cluster(..., mock=True)), which needs "
        "neither the CLI nor cloud credentials."
    )


def installed_cli_root(version: str | None = None) -> Path | None:
    """The newest ``~/.pulumi/versions/<v>`` holding ``bin/pulumi`` (where ``install-pulumi`` puts it), or ``None``."""
    base = Path.home() / ".pulumi" / "versions"
    roots = [base / version] if version else sorted(base.glob("*"), key=lambda p: _version_key(p.name), reverse=True)
    return next((r for r in roots if (r / "bin" / "pulumi").is_file()), None)


def _version_key(text: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isascii() and p.isdigit() else -1 for p in text.split("."))


def pulumi_command() -> auto.PulumiCommand:
    """The installed Pulumi CLI (PATH first, then ``~/.pulumi/versions``), checked.

    Raises:
        CloudError: no ``pulumi`` found or it does not run (says how to install it).
    """
    root = None
    if shutil.which("pulumi") is None:
        found = installed_cli_root()
        if found is None:
            raise cli_missing_error()
        root = str(found)
    try:
        return PulumiCli(root=root)
    except (OSError, subprocess.CalledProcessError, auto.InvalidVersionError) as e:
        raise cli_missing_error(f"`pulumi version` failed: {e}") from None


def install_pulumi(version: str | None = None) -> dict[str, str]:
    """Download the Pulumi CLI with the SDK's installer into ``~/.pulumi/versions/<version>``.

    Returns:
        ``{"version", "command"}``.

    Raises:
        SpecError: ``version`` is not a version number. CloudError: the download or install failed.
    """
    from semver import VersionInfo

    from provision.spec.errors import Problem, SpecError

    try:
        wanted = VersionInfo.parse(version) if version else None
    except ValueError:
        raise SpecError(problems=[Problem("--version", version, "is not a version", "use e.g. 3.200.0")]) from None
    try:
        command = auto.PulumiCommand.install(version=wanted)
    except (OSError, subprocess.CalledProcessError, auto.InvalidVersionError) as e:
        raise CloudError(
            f"installing the Pulumi CLI failed ({e}). To fix: check the network, or install it from {INSTALL_URL}"
        ) from None
    return {"version": str(command.version or wanted or ""), "command": command.command}


class PulumiCli(auto.PulumiCommand):
    """The installed ``pulumi``, run so that Ctrl-C cancels the operation gracefully.

    The CLI runs in a session of its own, so a terminal's Ctrl-C reaches only this
    process; the first ``KeyboardInterrupt`` becomes one SIGINT for the CLI (Pulumi's
    graceful cancel), the second another (Pulumi abandons the steps in flight), the third
    kills it. The call returns only after the CLI exited, having released the stack lock,
    and then re-raises ``KeyboardInterrupt``.
    """

    def run(
        self,
        args: list[str],
        cwd: str,
        additional_env: Mapping[str, str],
        on_output: Callable[[str], Any] | None = None,
        on_error: Callable[[str], Any] | None = None,
    ) -> auto.CommandResult:
        sep = args.index("--") if "--" in args else len(args)
        if "--non-interactive" not in args[:sep]:
            args.insert(0, "--non-interactive")
        env = {**os.environ, **additional_env, "PULUMI_AUTOMATION_API": "true"}
        out: list[str] = []
        err: list[str] = []
        with subprocess.Popen(
            [self.command, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
            encoding="utf-8",
            start_new_session=True,
        ) as proc:
            readers = [
                threading.Thread(target=_pump, args=(proc.stdout, on_output, out), daemon=True),
                threading.Thread(target=_pump, args=(proc.stderr, on_error, err), daemon=True),
            ]
            for t in readers:
                t.start()
            code, interrupts = _wait_forwarding_interrupts(proc)
            for t in readers:
                t.join()
        result = auto.CommandResult(stdout="\n".join(out), stderr="\n".join(err), code=code)
        if interrupts:
            raise KeyboardInterrupt
        if code != 0:
            raise create_command_error(result)
        return result


def _pump(stream: Any, callback: Callable[[str], Any] | None, chunks: list[str]) -> None:
    for line in iter(stream.readline, ""):
        line = line.rstrip()
        if callback:
            callback(line)
        chunks.append(line)
    stream.close()


def _wait_forwarding_interrupts(proc: subprocess.Popen[str]) -> tuple[int, int]:
    """Wait for ``proc``, turning each Ctrl-C into a signal for it. Returns (exit code, interrupts)."""
    interrupts = 0
    while True:
        try:
            return proc.wait(), interrupts
        except KeyboardInterrupt:
            interrupts += 1
            if interrupts == 1:
                print(
                    "interrupted: Pulumi stops after the operations in flight (Ctrl-C again to abandon them)",
                    file=sys.stderr,
                    flush=True,
                )
            if interrupts <= 2:
                proc.send_signal(signal.SIGINT)
            else:
                proc.kill()


# ---------------------------------------------------------------------- workspace and stacks


def project_root(start: Path | None = None) -> Path | None:
    """The folder with the project's ``Pulumi.yaml``: ``start``, else the working directory; ``None`` without one.

    Where the package's code lives plays no part: an installed provision (or a checkout used from
    another folder) without a ``Pulumi.yaml`` at hand works in ``<home>/project`` (:func:`workspace_settings`).
    """
    folder = start or Path.cwd()
    return folder if (folder / "Pulumi.yaml").exists() else None


def open_stack(
    name: str,
    program: Callable[[], None],
    *,
    root: Path | None,
    command: auto.PulumiCommand | None = None,
    create: bool = True,
) -> auto.Stack | None:
    """Select (and with ``create``, make) stack ``name`` in the hybrid workspace.

    ``root`` is the folder with ``Pulumi.yaml``; without one (an installed package used
    outside the repository) a project folder under the home is used, where the SDK writes
    a default ``Pulumi.yaml``.

    Returns:
        The stack, or ``None`` when it does not exist and ``create`` is false.

    Raises:
        CloudError: the CLI is missing, or the backend refused.
    """
    settings = workspace_settings(root, command)
    init = auto.create_or_select_stack if create else auto.select_stack
    try:
        return init(name, project_name=PROJECT, program=program, opts=auto.LocalWorkspaceOptions(**settings))
    except auto.StackNotFoundError:
        return None
    except auto.CommandError as e:
        backend = settings["env_vars"]["PULUMI_BACKEND_URL"]
        raise CloudError(f"cannot open stack {name!r} on {backend}: {_tail(e)}") from None


def workspace_settings(root: Path | None, command: auto.PulumiCommand | None = None) -> dict[str, Any]:
    """Keyword arguments of ``LocalWorkspace`` / ``LocalWorkspaceOptions``: folder, env, secrets, CLI.

    ``root`` is the folder with ``Pulumi.yaml``; ``None`` uses ``<home>/project``.

    Raises:
        CloudError: the CLI is missing (and no ``command`` was given).
    """
    command = command or pulumi_command()  # first: without a CLI nothing (passphrase, state folder) is written
    env = workspace_env()
    return {
        "work_dir": str(root or private_dir(provision_home() / "project")),
        "env_vars": env,
        "secrets_provider": secrets_provider(env["PULUMI_BACKEND_URL"]),
        "pulumi_command": command,
    }


def stack_config(stack: auto.Stack) -> dict[str, str]:
    """The stack's config as ``{"ns:key": value}`` (structured values as JSON text)."""
    return {k: v.value for k, v in stack.get_all_config().items()}


def _same_spec(raw: str | None, spec: ClusterSpec) -> bool:
    if raw is None:
        return False
    try:
        return load_spec(json.loads(raw)) == spec
    except (ValueError, ProvisionError):
        return False


def write_config(stack: auto.Stack, spec: ClusterSpec, now: datetime, *, created: bool = True) -> datetime | None:
    """Write ``provision:cluster`` and (with ``created``) ``provision:createdAt`` in one ``config set-all``.

    The spec is written only when the stack's config does not already hold it, so a stack
    file in ``stacks/`` keeps its readable YAML. ``createdAt`` is written once, at the
    first ``up``, and kept afterwards (the expiry and its tags stay put).

    Returns:
        The creation time: the stored one, ``now`` when it was just written, or ``None``
        (not created and ``created`` is false).
    """
    current = stack_config(stack)
    created_raw = current.get(CREATED_AT_KEY)
    created_at = created_at_from(created_raw) or (now.replace(microsecond=0) if created else None)
    updates: dict[str, auto.ConfigValue] = {}
    if not _same_spec(current.get(CONFIG_KEY), spec):
        updates[CONFIG_KEY] = auto.ConfigValue(json.dumps(spec.model_dump(mode="json", exclude_none=True)))
    if created and not created_raw and created_at is not None:
        updates[CREATED_AT_KEY] = auto.ConfigValue(format_time(created_at))
    if updates:
        stack.set_all_config(updates)
    return created_at


def failover_config(index: int, cloud: str, region: str) -> dict[str, auto.ConfigValue]:
    """Config that makes a bare ``pulumi up`` build failover try ``index``: the try and its provider region."""
    from provision.catalog import cloud_facts
    from provision.clouds.failover import CONFIG_KEY as FAILOVER_KEY

    key = cloud_facts(cloud).provider_region_key
    return {FAILOVER_KEY: auto.ConfigValue(str(index)), key: auto.ConfigValue(region)}


def set_stack_tags(stack: auto.Stack, tags: Mapping[str, str]) -> None:
    """Stack tags for the reaper (``stack tag set``; DIY backends keep them since CLI 3.211)."""
    for key in STACK_TAGS:
        if key in tags:
            stack.set_tag(key, tags[key])


def forget_created_at(stack: auto.Stack, failover: bool = False) -> None:
    """Drop ``createdAt`` (and, with ``failover``, the recorded try) after a destroy, so the next ``up`` starts anew."""
    from provision.clouds.failover import CONFIG_KEY as FAILOVER_KEY

    for key in (CREATED_AT_KEY, FAILOVER_KEY) if failover else (CREATED_AT_KEY,):
        with contextlib.suppress(auto.CommandError):  # not set: nothing to forget
            stack.remove_config(key)


def stack_resources(stack: auto.Stack) -> list[dict[str, Any]]:
    """The resources in the stack's state, without the stack itself and provider resources."""
    deployment = stack.export_stack().deployment or {}
    found = []
    for r in deployment.get("resources") or []:
        if str(r.get("type", "")).startswith("pulumi:"):
            continue
        found.append({"type": r.get("type", ""), "name": str(r.get("urn", "")).rsplit("::", 1)[-1], "id": r.get("id")})
    return found


def node_urns(stack: auto.Stack) -> list[str]:
    """The URNs of the stack's GPU node groups (:func:`provision.clouds.replacement.is_node_type`)."""
    from provision.clouds.replacement import is_node_type

    deployment = stack.export_stack().deployment or {}
    return [
        str(r["urn"])
        for r in deployment.get("resources") or []
        if r.get("urn") and is_node_type(str(r.get("type", "")))
    ]


# ---------------------------------------------------------------------- running operations


def _tail(e: Exception, lines: int = 12) -> str:
    stderr = getattr(e, "stderr", "") or ""
    stdout = getattr(e, "stdout", "") or ""
    text = "\n".join(x for x in (stderr.strip(), stdout.strip()) if x) or str(e)
    return "\n".join(text.splitlines()[-lines:])


def run_operation(operation: str, stack_name: str, fn: Callable[[], Any], progress: Progress | None = None) -> Any:
    """Run one Automation API call and turn its failures into :class:`ProvisionError` s.

    Raises:
        CapacityError: the cloud reported no capacity or quota.
        CloudError: anything else the CLI or the cloud reported (with the cloud's messages).
        KeyboardInterrupt: passed through, after the CLI exited.
    """
    try:
        return fn()
    except auto.ConcurrentUpdateError:
        raise CloudError(
            f"stack {stack_name!r} is locked by another update. To fix: wait for it to finish; if that "
            f"process was killed, release the lock with `pulumi cancel --stack {stack_name}` "
            "(with the same PULUMI_BACKEND_URL)"
        ) from None
    except auto.InvalidVersionError as e:
        raise CloudError(f"the installed Pulumi CLI is too old for {operation}: {e}. To fix: upgrade it") from None
    except auto.CommandError as e:
        raise command_failure(operation, stack_name, e, progress) from None


def command_failure(operation: str, stack_name: str, e: Exception, progress: Progress | None) -> ProvisionError:
    """The error to raise for a failed CLI call: the cloud's own messages first."""
    messages = list(progress.errors if progress else [])
    detail = "\n".join(messages[-8:]) if messages else _tail(e)
    text = detail + "\n" + _tail(e)
    if "pending operations" in text or "pending_operations" in text:
        return CloudError(
            code=PENDING_OPERATIONS,
            message=f"{operation} of {stack_name!r} stopped: an interrupted run left operations pending.\n"
            f"{detail}\nTo fix: run Cluster.refresh(clear_pending_creates=True) (or `pulumi refresh "
            f"--clear-pending-creates --stack {stack_name}`), then look for leftovers with `provision reap`",
        )
    capacity = capacity_error(text, f"{operation} of {stack_name!r} failed")
    if capacity is not None:
        capacity.message = f"{capacity.message}.\n{detail}"
        capacity.args = (capacity.render(),)
        return capacity
    return CloudError(f"{operation} of {stack_name!r} failed:\n{detail}")
