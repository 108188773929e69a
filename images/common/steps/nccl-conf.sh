#!/bin/bash
# provision step nccl-conf (every boot): the cluster's NCCL settings for every process, not only login shells.
#  - /etc/nccl.conf: NCCL reads it in every process (NCCL docs, "Environment Variables": "set statically in
#    /etc/nccl.conf"). A variable already in the environment wins, and within the file the first line for a key
#    wins (NCCL's setEnvFile calls setenv(key, value, 0)), so the provision block goes first; image services
#    that rewrite the file at boot (azhpc-images' sku-customizations) run before this step.
#  - /etc/environment (pam_env): non-interactive ssh sessions (mpirun, pdsh, torchrun launchers) read it.
#  - /etc/provision/nccl.env (docker --env-file, systemd EnvironmentFile) and /etc/profile.d/provision-nccl.sh
#    are written by cloud-init itself.
# shellcheck source=../lib.sh
. "${PROVISION_ROOT:-}/usr/local/lib/provision/lib.sh"
env_file="$R/etc/provision/nccl.env"
[ -s "$env_file" ] || exit 0
mkdir -p "$R/etc"
pv_block "$R/etc/nccl.conf" "# provision: begin" "# provision: end" <"$env_file"
pv_block "$R/etc/environment" "# provision: begin" "# provision: end" <"$env_file"
