#!/bin/bash
# provision step fs-domain (once; rerun at the next boot if it failed): the NFS domain of the cluster's NAS mount target
# or CPFS export, looked up with the node's RAM role (/usr/local/lib/provision/provision-fs-domain) and written to
# $SHARED_SOURCE_FILE, from which the shared-mount step builds its mount source at every boot. The nodes are created
# without waiting for the file system (CPFS takes 20-40 minutes), so the lookup finds it by its description and waits
# (up to FS_LOOKUP_ATTEMPTS tries, at most 60 s apart) until it has a domain. PROVISION_FS_LOOKUP_ATTEMPTS (tests)
# overrides the number of tries.
# shellcheck source=../../common/lib.sh
. "${PROVISION_ROOT:-}/usr/local/lib/provision/lib.sh"
python3 "$R/usr/local/lib/provision/provision-fs-domain" \
  --kind "$FS_KIND" --description "$FS_DESCRIPTION" --export-description "${FS_EXPORT_DESCRIPTION:-}" \
  --role "$FS_RAM_ROLE" --endpoint "$NAS_ENDPOINT" --out "$R$SHARED_SOURCE_FILE" \
  --attempts "${PROVISION_FS_LOOKUP_ATTEMPTS:-${FS_LOOKUP_ATTEMPTS:-100}}" --delay 15 --max-delay 60
