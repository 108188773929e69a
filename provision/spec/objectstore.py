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
#: The filesystem kinds whose link provision builds, per cloud (AWS: FSx data repository association,
#: clouds/aws/datalink.py; Alibaba: CPFS data flow, clouds/alibaba/datalink.py). GCP and Azure: not yet.
LINKABLE: dict[str, tuple[str, ...]] = {"aws": ("auto", "fsx-lustre"), "alibaba": ("cpfs",), "gcp": (), "azure": ()}


class ObjectStore(BaseModel):
    """The bucket linked to the shared filesystem."""

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)

    uri: str = Field(pattern=_URI, max_length=1024, description="Bucket and prefix, e.g. s3://my-data/llm/.")
    import_path: str = Field(default="/", pattern=_PATH, max_length=4096, description="Filesystem folder of it.")
    export_path: str | None = Field(
        default=None, pattern=_PATH, max_length=4096, description="Folder exported back to the bucket."
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
        out.append(
            Problem(
                "storage.shared.kind",
                kind,
                f"cannot be linked to an object store by provision on {cloud} "
                f"(linked kinds: {', '.join(k for k in linkable if k != 'auto') or 'none yet'})",
                f"set storage.shared.kind: {linkable[-1]}" if linkable else "drop storage.shared.object_store",
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
