"""``storage.shared.object_store``: the bucket a shared filesystem is linked to.

``uri`` is the bucket (and prefix): ``s3://`` (AWS), ``gs://`` (GCP), ``https://ACCOUNT.blob.core.windows.net/
CONTAINER`` (Azure) or ``oss://`` (Alibaba). ``import_path`` is the filesystem folder where the bucket's objects
appear (imported on first access); ``export_path``, when given, is the folder under it whose new and changed
files are exported back to the bucket.
"""

from __future__ import annotations

import posixpath
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from provision.spec.errors import Problem

#: Bucket URI schemes per cloud.
SCHEMES = {"aws": "s3://", "gcp": "gs://", "azure": "https://", "alibaba": "oss://"}
_URI = (
    r"^(s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]|gs://[a-z0-9][a-z0-9._-]{1,61}[a-z0-9]|"
    r"oss://[a-z0-9][a-z0-9-]{1,61}[a-z0-9]|https://[a-z0-9]{3,24}\.blob\.core\.windows\.net/[a-z0-9][a-z0-9-]{1,61}[a-z0-9])"
    r"(/[A-Za-z0-9._/-]*)?$"
)
_PATH = r"^/[A-Za-z0-9._/-]*$"
_ACCOUNT_ID = (
    r"^/subscriptions/[0-9a-fA-F-]{36}/resourceGroups/[-\w.()]{1,90}/providers/Microsoft\.Storage/"
    r"storageAccounts/[a-z0-9]{3,24}$"
)
#: The filesystem kinds whose link provision builds, per cloud (AWS: FSx data repository association,
#: clouds/aws/datalink.py; Alibaba: CPFS data flow, clouds/alibaba/datalink.py; Azure: Managed Lustre's HSM settings
#: with Blob containers, clouds/azure/storage.py; GCP: Managed Lustre and Parallelstore, whose stack holds the
#: bucket grant of the service agent while the import and export are API calls run after ``up``,
#: clouds/gcp/datalink.py). GCP's ``auto`` may pick Filestore, which has no object-store link.
LINKABLE: dict[str, tuple[str, ...]] = {
    "aws": ("auto", "fsx-lustre"),
    "alibaba": ("cpfs",),
    "gcp": ("managed-lustre", "parallelstore"),
    "azure": ("auto", "amlfs"),
}
#: Why a cloud links no filesystem of a kind (shown as the problem's rule).
NOT_LINKABLE = {
    "gcp": "Filestore has no import or export with Cloud Storage (only Managed Lustre and Parallelstore have one: "
    "https://cloud.google.com/managed-lustre/docs/transfer-data, https://cloud.google.com/parallelstore/docs/"
    "transfer-data), and kind auto may pick it",
}
_GUID = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"


class ObjectStore(BaseModel):
    """The bucket linked to the shared filesystem."""

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)

    uri: str = Field(pattern=_URI, max_length=1024, description="Bucket and prefix, e.g. s3://my-data/llm/.")
    import_path: str = Field(default="/", pattern=_PATH, max_length=4096, description="Filesystem folder of it.")
    export_path: str | None = Field(
        default=None, pattern=_PATH, max_length=4096, description="Folder exported back to the bucket."
    )
    account_id: str | None = Field(
        default=None,
        pattern=_ACCOUNT_ID,
        max_length=1024,
        description="Azure: the storage account's resource id (/subscriptions/S/resourceGroups/G/providers/"
        "Microsoft.Storage/storageAccounts/NAME), whose containers Azure Managed Lustre's HSM settings name.",
    )
    logging_container: str | None = Field(
        default=None,
        pattern=r"^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$",
        description="Azure: an existing second container of the same account for the HSM's event and error logs.",
    )
    hpc_cache_principal_id: str | None = Field(
        default=None,
        pattern=_GUID,
        description="Azure: the object id of the 'HPC Cache Resource Provider' service principal in your tenant "
        "(az ad sp list --display-name 'HPC Cache Resource Provider' --query '[0].id' -o tsv), given the storage "
        "account's two roles Managed Lustre needs.",
    )

    @model_validator(mode="after")
    def _export_inside_import(self) -> ObjectStore:
        if self.export_path is not None:
            imp, exp = posixpath.normpath(self.import_path), posixpath.normpath(self.export_path)
            if not (exp == imp or imp == "/" or exp.startswith(imp.rstrip("/") + "/")):
                raise ValueError(
                    f"storage.shared.object_store.export_path {self.export_path} is not inside import_path "
                    f"{self.import_path}: only linked folders can be exported; use a folder under {self.import_path}"
                )
        return self

    @property
    def scheme(self) -> str:
        return self.uri.split("://", 1)[0] + "://"


def object_store_problems(data: dict[str, Any]) -> list[Problem]:
    """The bucket's scheme must be the cluster's cloud's object store (checked on the raw spec mapping)."""
    storage: dict[str, Any] = data["storage"] if isinstance(data.get("storage"), dict) else {}
    shared: dict[str, Any] = storage["shared"] if isinstance(storage.get("shared"), dict) else {}
    link: dict[str, Any] = shared["object_store"] if isinstance(shared.get("object_store"), dict) else {}
    uri, cloud = link.get("uri"), data.get("cloud")
    want = SCHEMES.get(cloud) if isinstance(cloud, str) else None
    out = []
    if isinstance(uri, str) and want and not uri.startswith(want):
        out.append(
            Problem(
                "storage.shared.object_store.uri",
                uri,
                f"is not a {cloud} bucket: a {cloud} filesystem links to its own cloud's object store",
                f"give a {want} URI",
            )
        )
    kind = shared.get("kind", "auto")
    linkable = LINKABLE.get(cloud) if isinstance(cloud, str) else None
    if link and linkable is not None and kind not in linkable:
        reason = NOT_LINKABLE.get(cloud) if isinstance(cloud, str) else None
        out.append(
            Problem(
                "storage.shared.kind",
                kind,
                f"cannot be linked to an object store by provision on {cloud} "
                f"(linked kinds: {', '.join(k for k in linkable if k != 'auto') or 'none'})"
                + (f": {reason}" if reason else ""),
                f"set storage.shared.kind: {' or '.join(k for k in linkable if k != 'auto')}"
                if linkable
                else "drop storage.shared.object_store",
            )
        )
    if link and cloud == "azure" and linkable is not None and kind in linkable:
        out += _azure_problems(link)
    imp = link.get("import_path", "/")
    if link and cloud == "gcp" and isinstance(imp, str) and posixpath.normpath(imp) != "/":
        out.append(
            Problem(
                "storage.shared.object_store.import_path",
                imp,
                "must be / on gcp: the import runs right after `up`, and Managed Lustre imports into an existing "
                'folder only (gcloud lustre instances import-data --lustre-path: "any path other than the default '
                'must already exist on the file system"), which no node has made yet',
                "set import_path: / (the bucket's objects appear under the mount point)",
            )
        )
    linked = link and linkable is not None and kind in linkable
    if linked and cloud == "alibaba" and isinstance(imp, str) and posixpath.normpath(imp) in ("/", "//"):
        out.append(
            Problem(
                "storage.shared.object_store.import_path",
                imp,
                "must be a folder below / on alibaba: CPFS links a fileset, a folder of the file system, and the "
                "fileset's path cannot be the root (NAS CreateFileset FileSystemPath, "
                "https://help.aliyun.com/document_detail/2588524.html)",
                "set import_path to a folder, e.g. /data (the bucket's objects appear under it)",
            )
        )
    if link and cloud == "alibaba" and link.get("export_path") is not None:
        out.append(
            Problem(
                "storage.shared.object_store.export_path",
                link.get("export_path"),
                "is not exported on alibaba yet: CPFS exports through data flow tasks, which provision does not run",
                "drop export_path and export with a data flow task (NAS API CreateDataFlowTask)",
            )
        )
    if link and shared.get("volume"):
        out.append(
            Problem(
                "storage.shared.object_store",
                link.get("uri"),
                "cannot be set on an attached volume (the link belongs to the volume's filesystem)",
                "drop object_store here",
            )
        )
    return out


def _azure_problems(link: dict[str, Any]) -> list[Problem]:
    """Azure Managed Lustre's HSM settings name containers by resource id, in one account, with a log container.

    pulumi-azure-native storagecache ``AmlFilesystemHsmSettingsArgs``: ``container`` is the "Resource ID of storage
    container used for hydrating the namespace and archiving"; ``logging_container`` "Must be a separate container in
    the same storage account"; ``import_prefix``: "Only blobs in the non-logging container that start with this
    path/prefix get imported", at the same path in the namespace.
    """
    field = "storage.shared.object_store"
    out = []
    raw = link.get("uri")
    uri = raw if isinstance(raw, str) else ""
    account, _, rest = uri.removeprefix("https://").partition(".blob.core.windows.net/")
    container, _, prefix = rest.partition("/")
    account_id = link.get("account_id")
    if not account_id:
        out.append(
            Problem(
                f"{field}.account_id",
                None,
                "is required on azure: Managed Lustre names the containers by resource id",
                "set it to /subscriptions/SUB/resourceGroups/GROUP/providers/Microsoft.Storage/storageAccounts/"
                + account,
            )
        )
    elif isinstance(account_id, str) and account and not account_id.endswith(f"/storageAccounts/{account}"):
        out.append(
            Problem(f"{field}.account_id", account_id, f"is not the account of the uri ({account})", "use one account")
        )
    if not link.get("hpc_cache_principal_id"):
        out.append(
            Problem(
                f"{field}.hpc_cache_principal_id",
                None,
                "is required on azure: Managed Lustre reads the account as the 'HPC Cache Resource Provider' service "
                "principal, which the cluster grants Storage Account Contributor and Storage Blob Data Contributor on "
                "the account (https://learn.microsoft.com/azure/azure-managed-lustre/amlfs-prerequisites#access-roles-"
                "for-blob-integration); its object id differs per tenant",
                "set it to the output of: az ad sp list --display-name 'HPC Cache Resource Provider' --query "
                "'[0].id' -o tsv",
            )
        )
    logs = link.get("logging_container")
    if not logs:
        out.append(
            Problem(
                f"{field}.logging_container",
                None,
                "is required on azure: Managed Lustre writes its HSM logs to a second container of the same account",
                f"create one (e.g. {container}-logs) and name it here",
            )
        )
    elif logs == container:
        out.append(
            Problem(f"{field}.logging_container", logs, "is the data container itself", "use a separate container")
        )
    want = "/" + prefix.strip("/") if prefix.strip("/") else "/"
    imp = link.get("import_path", "/")
    if isinstance(imp, str) and posixpath.normpath(imp) != want:
        out.append(
            Problem(
                f"{field}.import_path",
                imp,
                f"must be {want} on azure: Managed Lustre imports blobs under the prefix at their own path",
                f"set import_path: {want}",
            )
        )
    if link.get("export_path") is not None:
        out.append(
            Problem(
                f"{field}.export_path",
                link.get("export_path"),
                "is not exported on azure yet: Managed Lustre exports through archive or auto-export jobs, "
                "which provision does not create",
                "drop export_path and archive with `az amlfs archive`",
            )
        )
    return out
