#!/bin/bash
# provision step shared-mount (every boot): the cluster's shared filesystem at $SHARED_MOUNT, in fstab
# (_netdev: boot waits for the network) and mounted now, with bounded retries (a new file system's DNS name
# or export can take minutes to answer). Every value was checked against a strict pattern when rendered.
# shellcheck source=../lib.sh
. "${PROVISION_ROOT:-}/usr/local/lib/provision/lib.sh"
# A source known only on the node (Alibaba CPFS: the export's domain, looked up by an earlier step) comes from
# $SHARED_SOURCE_FILE, which holds one DNS name; it is checked here as strictly as a rendered value.
if [ -n "${SHARED_SOURCE_FILE:-}" ]; then
  host=$(head -n 1 "$R$SHARED_SOURCE_FILE" 2>/dev/null || true)
  if [ -z "${SHARED_SOURCE_PATH:-}" ] && [[ $host =~ ^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?@tcp:/[A-Za-z0-9]{1,64}$ ]]; then
    SHARED_SOURCE=$host # the whole Lustre source (AWS FSx: dns-name@tcp:/mount-name)
  elif [ -n "${SHARED_SOURCE_PATH:-}" ] && [[ $host =~ ^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$ ]]; then
    SHARED_SOURCE="$host:$SHARED_SOURCE_PATH"
  else
    pv_log "$SHARED_SOURCE_FILE is missing or does not hold a DNS name or mount source (written by an earlier step)"
    exit 1
  fi
fi
[ -n "${SHARED_SOURCE:-}" ] || exit 0
mnt="$R$SHARED_MOUNT"
mkdir -p "$mnt"
if ! grep -qs " $SHARED_MOUNT $SHARED_FSTYPE " "$R/etc/fstab"; then
  printf '%s %s %s %s 0 0\n' "$SHARED_SOURCE" "$SHARED_MOUNT" "$SHARED_FSTYPE" "$SHARED_OPTIONS" >>"$R/etc/fstab"
fi
if [ -n "${SHARED_CLIENT:-}" ] && ! dpkg-query -W "$SHARED_CLIENT" >/dev/null 2>&1; then
  pv_apt install "$SHARED_CLIENT" || exit 1
fi
mountpoint -q "$mnt" || pv_retry 10 15 mount -t "$SHARED_FSTYPE" -o "$SHARED_OPTIONS" "$SHARED_SOURCE" "$mnt" || exit 1
# The login user owns the share's root, mode 0755: never world-writable (root owns it under GCP OS Login,
# where no fixed login account exists). A root-squashed export refuses the chown, which is fine.
if [ -n "${SHARED_OWNER:-}" ]; then chown "$SHARED_OWNER": "$mnt" 2>/dev/null || true; fi
chmod 0755 "$mnt" 2>/dev/null || true
