"""The nodes' host keys as ECS reports them: the console output cloud-init wrote at boot.

``GetInstanceConsoleOutput`` (RegionId, InstanceId) returns ``ConsoleOutput``, the instance's cached
system console output of its last start, base64-encoded
(https://www.alibabacloud.com/help/en/ecs/developer-reference/api-ecs-2014-05-26-getinstanceconsoleoutput).
cloud-init prints the host public keys there (:mod:`provision.clouds.consolekeys`). The call is
made with the user's credentials; the node needs no permission.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from provision.clouds.consolekeys import console_host_keys, decode_console, preferred

Fetch = Callable[[str, str], dict[str, Any]]


def sdk_fetch(region: str, instance_id: str) -> dict[str, Any]:
    """One ``GetInstanceConsoleOutput`` call through the Alibaba Cloud ECS SDK (lazily imported)."""
    try:
        from alibabacloud_ecs20140526 import models
        from alibabacloud_ecs20140526.client import Client
        from alibabacloud_tea_openapi.models import Config
    except ImportError as e:
        raise RuntimeError("reading Alibaba host keys needs the ECS SDK: pip install 'provision[alibaba]'") from e
    from alibabacloud_credentials.client import Client as Credentials

    client = Client(Config(credential=Credentials(), region_id=region, endpoint=f"ecs.{region}.aliyuncs.com"))
    answer = client.get_instance_console_output(
        models.GetInstanceConsoleOutputRequest(region_id=region, instance_id=instance_id, remove_symbols=True)
    )
    return dict(answer.body.to_map())


def read_host_keys(instance_ids: Sequence[str], region: str, fetch: Fetch | None = None) -> dict[int, str]:
    """``rank -> "type base64"`` for each instance whose console output shows its host keys."""
    get = fetch or sdk_fetch
    out = {}
    for rank, instance_id in enumerate(instance_ids):
        if not instance_id:
            continue
        key = preferred(console_host_keys(decode_console(get(region, instance_id).get("ConsoleOutput"))))
        if key:
            out[rank] = key
    return out
