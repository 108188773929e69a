#!/bin/bash
# provision step slurm (once, critical; scheduler.kind: slurm): install Slurm and munge from the distribution's
# packages at the versions images/compat.yaml pins (SLURM_VERSION, MUNGE_VERSION), and set the node up for its
# role (SLURM_ROLE): "controller" runs slurmctld (and slurmdbd when SLURM_ACCOUNTING=1), "node" runs slurmd.
# What differs per node or is secret is NOT here (user data is the same for every node): the munge key,
# /etc/slurm/*.conf, the node's Slurm name (/etc/provision/slurm-node) and /etc/default/slurmd (`slurmd -N NAME`,
# which Debian's and Ubuntu's slurmd.service read as EnvironmentFile) arrive later over SSH
# (provision/ops/slurm.py, the node-to-node key's path), which then (re)starts munge and the daemons.
# shellcheck source=../lib.sh
. "${PROVISION_ROOT:-}/usr/local/lib/provision/lib.sh"

case "${SLURM_ROLE:-}" in
  controller) pkgs=(munge slurmctld slurm-client) ;;
  node) pkgs=(munge slurmd slurm-client libslurm-dev) ;;
  *) pv_log "SLURM_ROLE must be controller or node, not '${SLURM_ROLE:-}'"; exit 1 ;;
esac
if [ "${SLURM_ROLE}" = controller ] && [ "${SLURM_ACCOUNTING:-0}" = 1 ]; then
  pkgs+=(slurmdbd mariadb-server)
fi
pv_apt update || exit 1
pv_apt install --no-install-recommends "${pkgs[@]}" || exit 1

# The pin: the installed upstream version must start with it (Debian revisions such as -4+deb12u3 may differ).
installed() { dpkg-query -W -f '${Version}' "$1" 2>/dev/null | sed 's/^[0-9]*://; s/-[^-]*$//'; }
for check in "slurm-client ${SLURM_VERSION:-}" "munge ${MUNGE_VERSION:-}"; do
  pkg=${check% *}
  want=${check#* }
  got=$(installed "$pkg")
  case "$got" in
    "$want"*) ;;
    *) pv_log "$pkg is $got here, the plan pins $want (images/compat.yaml slurm.by_os)"; exit 1 ;;
  esac
done

install -d -m 0755 "$R/etc/slurm" "$R/etc/slurm/plugstack.conf.d" "$R/var/log/slurm" "$R/usr/local/sbin"
if [ "${SLURM_ROLE}" = node ]; then
  # HealthCheckProgram (slurm.conf): the node health check; a failure drains the node with the check's reason.
  cat > "$R/usr/local/sbin/provision-slurm-health" <<'HEALTH'
#!/bin/bash
# Slurm's HealthCheckProgram: run the provision node health check; drain this node with the failed checks.
node=$(cat /etc/provision/slurm-node)
if out=$(python3 /usr/local/lib/provision/provision-health 2>&1); then
  exit 0
fi
reason=$(printf '%s\n' "$out" | awk '$2 == "FAIL" {print $1}' | paste -sd, -)
scontrol update NodeName="$node" State=DRAIN Reason="provision-health failed: ${reason:-see /var/lib/provision/health.json}"
exit 1
HEALTH
  chmod 0755 "$R/usr/local/sbin/provision-slurm-health"
  systemctl enable slurmd munge
else
  systemctl enable slurmctld munge
  if [ "${SLURM_ACCOUNTING:-0}" = 1 ]; then systemctl enable slurmdbd mariadb; fi
fi
