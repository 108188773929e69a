#!/bin/bash
# provision step fs-address (once; rerun at the next boot if it failed): the shared filesystem's address, looked up
# at boot. The scale sets are requested in parallel with the filesystem (Managed Lustre takes many minutes), so the
# custom data cannot hold its address: this step reads the filesystem's Azure Resource Manager resource
# ($FS_RESOURCE_PATH below the node's subscription) with a token of the cluster's identity, which holds the Reader
# role on that one resource (provision/clouds/azure/fslookup.py), and writes the mount source (Lustre:
# <mgsAddress>@tcp:/<name>) or the NFS host (the volume's mount target) to $SHARED_SOURCE_FILE for the shared-mount
# step. It retries every 20 s for up to $FS_WAIT_SECONDS: until the filesystem exists, the role assignment has
# reached Azure Resource Manager and the address is set. curl only; the token goes through a root-only header file,
# never a command line. IMDS: https://learn.microsoft.com/azure/virtual-machines/instance-metadata-service and
# https://learn.microsoft.com/entra/identity/managed-identities-azure-resources/how-to-use-vm-token (msi_res_id).
# PROVISION_FS_WAIT_SECONDS (tests) overrides the wait.
# shellcheck source=../../common/lib.sh
. "${PROVISION_ROOT:-}/usr/local/lib/provision/lib.sh"
imds=http://169.254.169.254/metadata
arm=https://management.azure.com
# Only root may reach IMDS from here on (jobs and containers cannot take the identity's token).
systemctl daemon-reload && systemctl enable --now provision-imds-root.service || exit 1
ipv4='^((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])$'
guid='^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$'
hdr=$(umask 077 && mktemp)
trap 'rm -f "$hdr"' EXIT
wait_s=${PROVISION_FS_WAIT_SECONDS:-$FS_WAIT_SECONDS}
tries=$((wait_s / 20))
while :; do
  addr=
  sub=$(curl -fsS --max-time 10 -H Metadata:true \
    "$imds/instance/compute/subscriptionId?api-version=$IMDS_COMPUTE_API&format=text" 2>/dev/null || true)
  if [[ $sub =~ $guid ]]; then
    ident="/subscriptions/$sub/resourceGroups/$NODE_RESOURCE_GROUP/providers/Microsoft.ManagedIdentity/userAssignedIdentities/$NODE_IDENTITY"
    token=$(curl -fsS --max-time 30 -H Metadata:true \
      "$imds/identity/oauth2/token?api-version=$IMDS_TOKEN_API&resource=https://management.azure.com/&msi_res_id=$ident" \
      2>/dev/null | sed -n 's/.*"access_token" *: *"\([^"]*\)".*/\1/p')
    if [ -n "$token" ]; then
      printf 'Authorization: Bearer %s\n' "$token" >"$hdr"
      addr=$(curl -fsS --max-time 30 -H @"$hdr" "$arm/subscriptions/$sub$FS_RESOURCE_PATH?api-version=$FS_API_VERSION" \
        2>/dev/null | grep -o "\"$FS_ADDRESS_KEY\" *: *\"[^\"]*\"" | head -n 1 | sed 's/.*"\([^"]*\)"$/\1/')
      : >"$hdr"
    fi
  fi
  if [[ $addr =~ $ipv4 ]]; then
    mkdir -p "$(dirname "$R$SHARED_SOURCE_FILE")"
    if [ "$SHARED_FSTYPE" = lustre ]; then
      printf '%s@tcp:/%s\n' "$addr" "$FS_LUSTRE_NAME" >"$R$SHARED_SOURCE_FILE"
    else
      printf '%s\n' "$addr" >"$R$SHARED_SOURCE_FILE"
    fi
    exit 0
  fi
  tries=$((tries - 1))
  if [ "$tries" -le 0 ]; then
    pv_log "no address for $FS_RESOURCE_PATH after ${wait_s}s (does the filesystem exist, and may the identity $NODE_IDENTITY read it?)"
    exit 1
  fi
  sleep 20
done
