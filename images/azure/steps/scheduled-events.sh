#!/bin/bash
# provision step scheduled-events (once, spot nodes with Azure Managed Lustre): start the watcher that unmounts the
# shared filesystem when Azure announces this node's eviction. Azure Managed Lustre troubleshooting guide: "Always
# unmount the file system ... before stopping, deallocating" a client, or other clients can pause for up to
# 15 minutes; Spot evictions are announced through Scheduled Events (event type Preempt, at least 30 s ahead).
# shellcheck source=../../common/lib.sh
. "${PROVISION_ROOT:-}/usr/local/lib/provision/lib.sh"
systemctl daemon-reload && systemctl enable --now provision-scheduled-events.service
