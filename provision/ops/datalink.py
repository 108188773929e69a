"""The object-store transfers that are API calls, not resources: GCP's Managed Lustre and Parallelstore.

AWS (FSx data repository association), Azure (Managed Lustre HSM) and Alibaba (CPFS data flow) import through the
link the stack holds. GCP's services import and export with ``instances.importData``/``exportData`` operations
(:mod:`provision.clouds.gcp.datalink`), so:

* :func:`after_up` runs the import once ``up`` has succeeded (each ``up`` repeats it: imports copy only what is
  new or changed, https://cloud.google.com/managed-lustre/docs/transfer-data), showing the operation's progress;
* :func:`export_saved` exports the checkpoint ``run --save-checkpoint`` copied into the exported folder.

Under ``--mock`` the calls go to :class:`provision.clouds.gcp.datalink.MockTransfers`; a ``Fault`` whose
``type_token`` is the API method (``lustre.projects.locations.instances.importData``) makes its operation fail.
"""

from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING, Any

from provision.spec.errors import CloudError

if TYPE_CHECKING:
    from provision.engine.progress import OperationResult

#: A cluster handle (provision.ops.cluster.Cluster; not imported: cluster imports this module).
Cluster = Any


def method_token(kind: str, method: str) -> str:
    """The API method's full name, as a fault's ``type_token`` names it (``lustre.projects.locations.instances.
    importData``)."""
    from provision.clouds.gcp.datalink import SERVICES

    return f"{SERVICES[kind]['api'][0]}.projects.locations.instances.{method}"


def transfer_client(cluster: Cluster, kind: str) -> Any:
    """The API client: google-api-python-client's, or under ``--mock`` the mocked one (faults applied)."""
    from provision.clouds.gcp import datalink

    if not cluster.mock:
        return datalink.api_client(kind)
    fail = {}
    for fault in getattr(cluster, "_faults", ()):
        for method in ("importData", "exportData"):
            if fault.type_token == method_token(kind, method):
                fail[method] = (fault.code, fault.message)
    return datalink.MockTransfers(fail=fail)


#: How to try again, per method.
_RETRY = {
    "importData": "then run `provision up {name}` again (a repeated import copies only what is new or changed)",
    "exportData": "the copy stays in the exported folder on the filesystem until `down`; export it again with "
    "`provision run --save-checkpoint` or the service's export-data command",
}


def _run(cluster: Cluster, link: dict[str, Any], method: str, body: dict[str, Any], what: str) -> None:
    from provision.clouds.gcp import datalink

    client = transfer_client(cluster, link["kind"])
    cluster._print(f"{what} ({link['kind']} {method} on {link['instance']})")
    try:
        datalink.transfer(
            client,
            link["kind"],
            link["instance"],
            method,
            body,
            progress=lambda line: cluster._print(f"  {method}: {line}") if line else None,
            sleep=(lambda _: None) if cluster.mock else datalink.time.sleep,
        )
    except datalink.TransferError as e:
        raise CloudError(
            f"{what} failed: {e.code}: {e.message}. The stack is up and the bucket grant is in place; check that "
            f"{link['uri']} exists and the grant reached it (IAM changes can take minutes), "
            + _RETRY[method].format(name=cluster.spec.name),
            code=e.code,
        ) from e


def after_up(cluster: Cluster, result: OperationResult) -> None:
    """Import the bucket into the filesystem once ``up`` succeeded (GCP only; other clouds' links import alone)."""
    link = (result.outputs or {}).get("object_store")
    if cluster.spec.cloud != "gcp" or not isinstance(link, dict) or not link.get("instance"):
        return
    from provision.clouds.gcp.datalink import import_body

    body = import_body(link["kind"], link["uri"], link["import_path"])
    _run(cluster, link, "importData", body, f"import of {link['uri']} into {link['import_path']} after up")
    result.outputs = {**result.outputs, "object_store": {**link, "imported": True}}


def export_saved(cluster: Cluster, saved: str, uri: str) -> None:
    """Export the checkpoint folder ``saved`` (a path on the nodes, under the mount) to ``uri`` (GCP only)."""
    link = (cluster.outputs or {}).get("object_store")
    if cluster.spec.cloud != "gcp" or not isinstance(link, dict) or not link.get("instance"):
        return
    from provision.clouds.gcp.datalink import export_body
    from provision.ops.checkpoints import shared_root

    root = shared_root(cluster) or "/"
    inside = "/" + posixpath.relpath(saved, root).lstrip("/")
    _run(cluster, link, "exportData", export_body(link["kind"], inside, uri), f"export of {inside} to {uri}")
