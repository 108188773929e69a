#!/bin/bash
# provision node bootstrap (cloud-init user data). Rendered per cluster by provision/bootstrap.py.
# Holds no secrets: SSH private keys never appear here; public keys may (GCP OS Login ignores metadata ssh-keys).
set -euo pipefail
exec > >(tee -a /var/log/provision-bootstrap.log) 2>&1
echo "provision: bootstrapping node of cluster ${CLUSTER} (${CLOUD})"

# --- self-destruct: the cloud-side lifetime backstop (empty when the cloud enforces it itself)
${SELF_DESTRUCT}

# --- local NVMe scratch: one RAID 0 volume over every NVMe data disk
if [ "${SCRATCH_RAID0}" = "true" ]; then
  mapfile -t disks < <(lsblk -dpno NAME,TYPE,MOUNTPOINT | awk '$2=="disk" && $3=="" && $1 ~ /nvme/ {print $1}' \
    | while read -r d; do [ -z "$(lsblk -no MOUNTPOINT "$d" | tr -d '[:space:]')" ] && ! lsblk -no PKNAME "$d" | grep -q . && echo "$d"; done)
  if [ "${#disks[@]}" -gt 0 ] && [ ! -e /dev/md/scratch ]; then
    mdadm --create /dev/md/scratch --level=0 --force --raid-devices="${#disks[@]}" "${disks[@]}"
    mkfs.xfs -f /dev/md/scratch
  fi
  mkdir -p ${SCRATCH_MOUNT}
  if [ -e /dev/md/scratch ]; then mount /dev/md/scratch ${SCRATCH_MOUNT} || true; fi
  chmod 1777 ${SCRATCH_MOUNT}
fi

# --- cloud-specific fabric and driver setup
${CLOUD_SETUP}

# --- shared filesystem
${SHARED_MOUNT}

# --- NCCL environment for every login shell
cat > /etc/profile.d/provision-nccl.sh <<'NCCL'
${NCCL_ENV}
NCCL
chmod 0644 /etc/profile.d/provision-nccl.sh

# --- health check: every GPU visible
expected_gpus=${GPUS_PER_NODE}
if command -v nvidia-smi >/dev/null; then
  found=$(nvidia-smi -L 2>/dev/null | wc -l || true)
elif command -v rocm-smi >/dev/null; then
  found=$(rocm-smi --showid 2>/dev/null | grep -c GPU || true)
else
  found=0
fi
if [ "$found" -ne "$expected_gpus" ]; then
  echo "provision: health check FAILED: $found of $expected_gpus GPUs visible" >&2
  touch /var/run/provision-unhealthy
fi
echo "provision: bootstrap done"
