"""Managed Lustre and Parallelstore linked to Cloud Storage: the bucket grant (Pulumi) and the transfers (API calls).

Neither service holds its link as a resource: data moves with ``instances.importData`` and ``instances.exportData``
operations (Managed Lustre: https://cloud.google.com/managed-lustre/docs/transfer-data; Parallelstore:
https://cloud.google.com/parallelstore/docs/transfer-data), and pulumi-gcp 10.2 has no resource for them
(``gcp.lustre`` and ``gcp.parallelstore`` hold only ``Instance``). So:

* **The stack** holds the access grant, scoped to the bucket only: the service's agent
  (``gcp.projects.ServiceIdentity``, which creates it when the project has none: "gcloud beta services identity
  create --service=lustre.googleapis.com", transfer-data page) gets one role on that one bucket
  (``gcp.storage.BucketIAMMember``), never on the project:

  - Managed Lustre (``service-PROJECT_NUMBER@gcp-sa-lustre.iam.gserviceaccount.com``): ``roles/storage.objectViewer``
    to import, ``roles/storage.objectUser`` when ``export_path`` is set (it also reads); transfer-data page,
    "Permissions for the Managed Lustre service agent";
  - Parallelstore (``service-PROJECT_NUMBER@gcp-sa-parallelstore.iam.gserviceaccount.com``): ``roles/storage.admin``
    on the bucket, the one role its transfer-data page names ("the Parallelstore service account requires
    roles/storage.admin on the Cloud Storage bucket").

* **The import** runs after ``up`` (``provision.ops.datalink``): ``importData`` from the bucket URI into
  ``import_path``, polled to completion with progress. Managed Lustre imports into an existing folder only ("any
  path other than the default must already exist on the file system", gcloud lustre instances import-data
  --lustre-path), so the ops layer makes it first. ``run --save-checkpoint`` exports the copied checkpoint with
  ``exportData``.

The API clients come from google-api-python-client (the ``gcp`` extra), imported when a transfer runs; under
``--mock`` a :class:`MockTransfers` answers instead (no network).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pulumi

    from provision.clouds.gcp.plan import GcpPlan
    from provision.planning.plan import ClusterPlan

#: Per filesystem kind: the API (service name and version), its agent's domain and the bucket roles it needs.
SERVICES: dict[str, dict[str, Any]] = {
    "managed-lustre": {
        "service": "lustre.googleapis.com",
        "api": ("lustre", "v1"),
        "agent": "gcp-sa-lustre",
        "import_role": "roles/storage.objectViewer",
        "export_role": "roles/storage.objectUser",
        "source": "https://cloud.google.com/managed-lustre/docs/transfer-data (Permissions for the Managed Lustre "
        "service agent)",
    },
    "parallelstore": {
        "service": "parallelstore.googleapis.com",
        "api": ("parallelstore", "v1"),
        "agent": "gcp-sa-parallelstore",
        "import_role": "roles/storage.admin",
        "export_role": "roles/storage.admin",
        "source": "https://cloud.google.com/parallelstore/docs/transfer-data (Required permissions)",
    },
}
#: How often a transfer's operation is polled, and how long it may run (an import of a large bucket takes hours).
POLL_SECONDS = 10.0
TRANSFER_TIMEOUT_S = 24 * 3600.0
#: A bucket grant made by this `up` may not be in force yet: IAM access changes "typically" take 2 minutes and
#: "can take 7 minutes or longer" (https://cloud.google.com/iam/docs/access-change-propagation), so a refused start
#: (HTTP 403) is retried this long before it is reported.
GRANT_PROPAGATION_S = 420.0
_DENIED = ("403", "PERMISSION_DENIED")


def bucket_of(uri: str) -> str:
    """``gs://BUCKET/prefix`` -> ``BUCKET``."""
    return uri.removeprefix("gs://").split("/", 1)[0]


def gcs_uri(uri: str) -> str:
    """The transfer APIs' form: ``gs://BUCKET/`` or ``gs://BUCKET/path/`` (a path inside ends with '/')."""
    return uri.rstrip("/") + "/"


def grant_role(kind: str, export: bool) -> str:
    """The one bucket role the service agent needs for an import-only or an import-and-export link."""
    svc = SERVICES[kind]
    return str(svc["export_role"] if export else svc["import_role"])


def build_gcs_grant(plan: ClusterPlan[GcpPlan], parent: pulumi.Resource) -> dict[str, Any] | None:
    """The service agent and its role on the spec's bucket, or ``None`` without ``object_store``.

    Returns:
        ``{"identity": ServiceIdentity, "member": BucketIAMMember}``.
    """
    import pulumi
    from pulumi_gcp import projects, storage

    shared = plan.spec.storage.shared
    link = shared.object_store if shared is not None else None
    st = plan.extra.storage
    if link is None or st is None or st.kind not in SERVICES:
        return None
    svc = SERVICES[st.kind]
    opts = pulumi.ResourceOptions(parent=parent)
    identity = projects.ServiceIdentity(
        f"{plan.name}-{st.kind}-agent", service=svc["service"], project=plan.extra.project, opts=opts
    )
    member = storage.BucketIAMMember(
        f"{plan.name}-gcs-grant",
        bucket=bucket_of(link.uri),
        role=grant_role(st.kind, link.export_path is not None),
        member=identity.member,
        opts=opts,
    )
    return {"identity": identity, "member": member}


def link_output(plan: ClusterPlan[GcpPlan], fs: Any, grant: dict[str, Any]) -> Any:
    """The ``object_store`` stack output: what the ops layer's transfers need and the grant, as recorded."""
    import pulumi

    st = plan.extra.storage
    shared = plan.spec.storage.shared
    assert st is not None and shared is not None and shared.object_store is not None  # noqa: S101
    link = shared.object_store
    return pulumi.Output.all(fs.name, grant["member"].member, grant["member"].role).apply(
        lambda a: {
            "kind": st.kind,
            "instance": a[0],
            "uri": link.uri,
            "import_path": link.import_path,
            "export_path": link.export_path,
            "grant": {"principal": a[1], "role": a[2], "scope": f"bucket {bucket_of(link.uri)}"},
        }
    )


# ------------------------------------------------------------------ transfers (API calls after `up`)


class TransferError(Exception):
    """A transfer the service refused or that ended in an error (code and message from the operation)."""

    def __init__(self, code: str, message: str) -> None:
        self.code, self.message = code, message
        super().__init__(f"{code}: {message}")


def import_body(kind: str, uri: str, path: str) -> dict[str, Any]:
    """The importData request body (Managed Lustre ``gcsPath``/``lustrePath``; Parallelstore ``sourceGcsBucket``/
    ``destinationParallelstore``; both: the REST references of ``projects.locations.instances.importData``)."""
    rid = str(uuid.uuid4())
    if kind == "managed-lustre":
        return {"gcsPath": {"uri": gcs_uri(uri)}, "lustrePath": {"path": path}, "requestId": rid}
    return {"sourceGcsBucket": {"uri": gcs_uri(uri)}, "destinationParallelstore": {"path": path}, "requestId": rid}


def export_body(kind: str, path: str, uri: str) -> dict[str, Any]:
    """The exportData request body (the same references, ``exportData``)."""
    rid = str(uuid.uuid4())
    if kind == "managed-lustre":
        return {"lustrePath": {"path": path}, "gcsPath": {"uri": gcs_uri(uri)}, "requestId": rid}
    return {"sourceParallelstore": {"path": path}, "destinationGcsBucket": {"uri": gcs_uri(uri)}, "requestId": rid}


def api_client(kind: str) -> Any:
    """The service's discovery client (google-api-python-client, Application Default Credentials).

    google-api-python-client 2.202 bundles Parallelstore's discovery document but not Managed Lustre's, whose
    client reads it from the service (``static_discovery=False``).
    """
    from googleapiclient import discovery

    name, version = SERVICES[kind]["api"]
    return discovery.build(name, version, cache_discovery=False, static_discovery=kind == "parallelstore")


def transfer(
    client: Any,
    kind: str,
    instance: str,
    method: str,
    body: dict[str, Any],
    progress: Callable[[str], None] = lambda _: None,
    sleep: Callable[[float], None] = time.sleep,
    timeout_s: float = TRANSFER_TIMEOUT_S,
) -> dict[str, Any]:
    """Start ``method`` (``importData`` or ``exportData``) on ``instance`` and wait for its operation.

    Returns:
        The finished operation's ``response`` (or ``{}``).

    Raises:
        TransferError: the call was refused, the operation ended in an error, or it outlived ``timeout_s``.
    """
    instances = client.projects().locations().instances()
    denied_for = 0.0
    while True:
        try:
            op = getattr(instances, method)(name=instance, body=body).execute()
            break
        except Exception as e:  # noqa: BLE001 - googleapiclient.errors.HttpError and transport errors alike
            if _code(e) not in _DENIED or denied_for >= GRANT_PROPAGATION_S:
                raise TransferError(_code(e), _message(e)) from e
            progress(f"refused ({_code(e)}): waiting for the bucket grant to take effect")
            sleep(POLL_SECONDS)
            denied_for += POLL_SECONDS
    operations = client.projects().locations().operations()
    waited = 0.0
    while not op.get("done"):
        progress(_counters(op.get("metadata") or {}))
        if waited >= timeout_s:
            raise TransferError("DEADLINE_EXCEEDED", f"{method} on {instance} still running after {timeout_s:.0f} s")
        sleep(POLL_SECONDS)
        waited += POLL_SECONDS
        try:
            op = operations.get(name=op["name"]).execute()
        except Exception as e:  # noqa: BLE001
            raise TransferError(_code(e), _message(e)) from e
    if op.get("error"):
        err = op["error"]
        raise TransferError(str(err.get("code", "UNKNOWN")), str(err.get("message", "the operation failed")))
    progress(_counters(op.get("metadata") or {}) or "done")
    return dict(op.get("response") or {})


def _counters(meta: dict[str, Any]) -> str:
    """The operation's transfer counters, as a progress line (both services: ``progressPercent`` and counters)."""
    progress = meta.get("progress") or {}
    counters = meta.get("transferCounters") or progress.get("counters") or {}
    pct = meta.get("progressPercent")
    pct = progress.get("percentCopied") if pct is None else pct
    parts = [f"{pct}%"] if pct is not None else []
    for key in ("objectsCopied", "bytesCopied", "objectsFound"):
        if key in counters:
            parts.append(f"{key} {counters[key]}")
    if meta.get("statusMessage"):  # Parallelstore's OperationMetadata (parallelstore v1 discovery document)
        parts.append(str(meta["statusMessage"]))
    return ", ".join(parts)


def _code(e: Exception) -> str:
    status = getattr(getattr(e, "resp", None), "status", None)
    return str(status) if status is not None else type(e).__name__


def _message(e: Exception) -> str:
    reason = getattr(e, "reason", None) or getattr(e, "_get_reason", lambda: None)()
    return str(reason or e)


# ------------------------------------------------------------------ the mocked API (--mock)


@dataclass
class MockTransfers:
    """A stand-in for the Managed Lustre and Parallelstore API clients under ``--mock``: the same call shape
    (``projects().locations().instances().importData(name=, body=).execute()`` and ``operations().get``), an
    operation that finishes on its second poll, and a record of every call. ``fail``: method -> (code, message)
    makes that method's operation end in that error."""

    fail: dict[str, tuple[str, str]] = field(default_factory=dict)
    calls: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    _ops: dict[str, dict[str, Any]] = field(default_factory=dict)

    def projects(self) -> MockTransfers:
        return self

    def locations(self) -> MockTransfers:
        return self

    def instances(self) -> MockTransfers:
        return self

    def operations(self) -> MockTransfers:
        return self

    def importData(self, name: str, body: dict[str, Any]) -> _Call:  # noqa: N802 - the API's method name
        return self._start("importData", name, body)

    def exportData(self, name: str, body: dict[str, Any]) -> _Call:  # noqa: N802
        return self._start("exportData", name, body)

    def get(self, name: str) -> _Call:
        op = self._ops[name]
        op["polls"] += 1
        done = op["polls"] >= 2
        result: dict[str, Any] = {"name": name, "done": done, "metadata": {"progressPercent": 100 if done else 50}}
        if done and op["error"] is not None:
            result["error"] = {"code": op["error"][0], "message": op["error"][1]}
        elif done:
            result["response"] = {"@type": op["method"]}
        return _Call(result)

    def _start(self, method: str, name: str, body: dict[str, Any]) -> _Call:
        self.calls.append((method, name, body))
        op_name = f"{name.rsplit('/instances/', 1)[0]}/operations/operation-{len(self.calls)}"
        self._ops[op_name] = {"method": method, "polls": 0, "error": self.fail.get(method)}
        return _Call({"name": op_name, "done": False, "metadata": {"progressPercent": 0}})


@dataclass
class _Call:
    result: dict[str, Any]

    def execute(self) -> dict[str, Any]:
        return self.result
