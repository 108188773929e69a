#!/bin/bash
# provision step scratch (every boot): the node's local NVMe disks as one volume at $SCRATCH_MOUNT.
# Instance-store disks come back blank after a stop/start or a host redeploy (ND H100 v5 has no live migration,
# ndh100v5-series.md) and an md array is not mounted again by itself, so this runs at every boot: use the array
# when it exists (assembling it when needed), build it over the free NVMe disks when it does not, mount it.
# The AWS Deep Learning AMI's own dlami-nvme service already stripes every instance-store disk into LVM at
# /opt/dlami/nvme (DLAMI release notes: "nvme_location: /opt/dlami/nvme") before user data runs: provision
# cooperates with it and bind-mounts that volume at $SCRATCH_MOUNT instead of fighting it for the disks.
# A node whose scratch would land on the root disk fails this step (and its health check) instead.
# shellcheck source=../lib.sh
. "${PROVISION_ROOT:-}/usr/local/lib/provision/lib.sh"
[ "${SCRATCH_RAID0:-false}" = "true" ] || exit 0
mnt="$R$SCRATCH_MOUNT"
mkdir -p "$mnt"
mountpoint -q "$mnt" && exit 0
if systemctl list-unit-files dlami-nvme.service >/dev/null 2>&1; then
  for _ in $(seq 1 60); do  # a oneshot: wait until it has finished with the disks
    [ "$(systemctl show -p ActiveState --value dlami-nvme.service 2>/dev/null)" = "activating" ] || break
    sleep 5
  done
fi
if mountpoint -q "$R/opt/dlami/nvme"; then
  mount --bind "$R/opt/dlami/nvme" "$mnt" || exit 1
  chmod 1777 "$mnt"
  pv_log "scratch: bind-mounted the DLAMI's /opt/dlami/nvme volume"
  exit 0
fi
if [ ! -e "$R/dev/md/scratch" ]; then
  mdadm --assemble --scan --run >/dev/null 2>&1 || true
fi
if [ ! -e "$R/dev/md/scratch" ]; then
  mapfile -t disks < <(lsblk -dpno NAME,TYPE,MOUNTPOINT 2>/dev/null | awk '$2=="disk" && $3=="" && $1 ~ /nvme/ {print $1}' \
    | while read -r d; do [ -z "$(lsblk -no MOUNTPOINT "$d" | tr -d '[:space:]')" ] && ! lsblk -no PKNAME "$d" | grep -q . && echo "$d"; done)
  if [ "${#disks[@]}" -eq 0 ]; then
    pv_log "no free local NVMe disk: $SCRATCH_MOUNT would be on the root disk"
    exit 1
  fi
  mdadm --create /dev/md/scratch --run --level=0 --force --raid-devices="${#disks[@]}" "${disks[@]}" || exit 1
  mkfs.xfs -f /dev/md/scratch || exit 1
fi
mount /dev/md/scratch "$mnt" || exit 1
chmod 1777 "$mnt"
