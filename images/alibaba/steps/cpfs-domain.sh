#!/bin/bash
# provision step cpfs-domain (once; rerun at the next boot if it failed): the NFS domain of the cluster's CPFS export,
# looked up with the node's RAM role (/usr/local/lib/provision/provision-cpfs-domain) and written to
# $SHARED_SOURCE_FILE, from which the shared-mount step builds its mount source at every boot. pulumi-alicloud 4.0
# returns no domain for nas.ProtocolMountTarget, so it cannot be rendered into the user data.
# shellcheck source=../../common/lib.sh
. "${PROVISION_ROOT:-}/usr/local/lib/provision/lib.sh"
python3 "$R/usr/local/lib/provision/provision-cpfs-domain" \
  --file-system "$CPFS_FILE_SYSTEM_ID" --export "$CPFS_EXPORT_ID" --role "$CPFS_RAM_ROLE" \
  --endpoint "$NAS_ENDPOINT" --out "$R$SHARED_SOURCE_FILE"
