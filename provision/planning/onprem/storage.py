"""Shared storage: how many Lustre, BeeGFS or Ceph building blocks hold the data and write a checkpoint in time.

Capacity = (tokenized dataset + retained checkpoints, from the sizing report) x (1 + headroom). Write throughput =
checkpoint bytes / --checkpoint-minutes (also from the sizing report). Each filesystem family is sized from its
catalog building block: blocks = max(capacity / usable per block, write / write per block). The chosen option is
the one needing the fewest blocks among those whose capacity and write figures are both known.
"""

from __future__ import annotations

import math

from provision.catalog.onprem import OnpremCatalog, StorageBlock
from provision.planning.onprem.models import StorageOption, StoragePlan

#: Free space kept on the shared filesystem (planning assumption, no vendor figure: parallel filesystems slow down
#: and fragment as they fill, so a quarter is left free).
CAPACITY_HEADROOM = 0.25


def _option(block: StorageBlock, capacity_tb: float, write_gb_s: float) -> StorageOption:
    write = block.write_gb_s
    write_note = ""
    if write is None and block.throughput_gb_s is not None:
        write = block.throughput_gb_s
        write_note = "; write taken as the published throughput (no direction given)"
    by_capacity = math.ceil(capacity_tb / block.usable_tb) if block.usable_tb else None
    by_write = math.ceil(write_gb_s / write) if write else None
    known = [n for n in (by_capacity, by_write) if n is not None]
    if by_capacity is None or by_write is None:
        missing = " and ".join(w for w, n in (("capacity", by_capacity), ("write throughput", by_write)) if n is None)
        return StorageOption(
            block=block.id,
            filesystem=block.filesystem,
            blocks=max(known) if known else None,
            by="incomplete",
            capacity_tb=block.usable_tb,
            write_gb_s=write,
            note=f"{block.name}: per-block {missing} not published, so the count covers only what is known"
            + write_note,
        )
    usable = block.usable_tb or 0.0  # known here: by_capacity is not None
    write = write or 0.0
    blocks = max(1, by_capacity, by_write)
    by = "capacity" if by_capacity >= by_write else "write throughput"
    return StorageOption(
        block=block.id,
        filesystem=block.filesystem,
        blocks=blocks,
        by=by,
        capacity_tb=usable * blocks,
        write_gb_s=write * blocks,
        note=f"{blocks} x {block.name}: {usable * blocks:,.0f} TB, {write * blocks:,.1f} GB/s write "
        f"(sized by {by})" + write_note,
    )


def plan_storage(
    cat: OnpremCatalog, shared_capacity_bytes: float, write_gb_s: float, local_nvme_tb: float | None = None
) -> StoragePlan:
    """Building blocks per filesystem family for the capacity and checkpoint write rate of the run.

    ``local_nvme_tb`` is given for a single server: when its own NVMe holds the data, no shared filesystem is bought.
    """
    capacity_tb = shared_capacity_bytes * (1 + CAPACITY_HEADROOM) / 1e12
    options = tuple(_option(b, capacity_tb, write_gb_s) for b in cat.storage)
    if local_nvme_tb is not None and capacity_tb <= local_nvme_tb:
        local = StorageOption(
            block="local-nvme",
            filesystem="local",
            blocks=0,
            by="capacity",
            capacity_tb=local_nvme_tb,
            write_gb_s=None,
            note=f"one server: its {local_nvme_tb:g} TB of local NVMe holds the {capacity_tb:,.1f} TB needed; "
            "no shared filesystem to buy (copy checkpoints off the server for safety)",
        )
        return StoragePlan(capacity_needed_tb=capacity_tb, write_needed_gb_s=write_gb_s, chosen=local, options=options)
    complete = [o for o in options if o.by != "incomplete" and o.blocks is not None]
    # Ties go to a block whose write figure is published as a write figure.
    chosen = min(complete, key=lambda o: (o.blocks, "write taken as" in o.note, o.block)) if complete else None
    return StoragePlan(capacity_needed_tb=capacity_tb, write_needed_gb_s=write_gb_s, chosen=chosen, options=options)
