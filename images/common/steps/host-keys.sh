#!/bin/bash
# provision step host-keys (every boot): print the node's ssh host PUBLIC keys on the serial console, in
# cloud-init's block (-----BEGIN SSH HOST KEY KEYS----- ... -----END SSH HOST KEY KEYS-----, as its
# keys_to_console module writes it: https://cloudinit.readthedocs.io/en/latest/reference/modules.html#keys-to-console).
# The laptop reads the console through the cloud's API (EC2 GetConsoleOutput, Azure boot diagnostics, ECS
# GetInstanceConsoleOutput) and pins these keys before the first connection (provision/ops/hostkeys.py).
# cloud-init prints its block once per instance; this step prints it at every boot, so the console of the
# latest boot (all ECS keeps, what EC2's Latest=true returns) always holds it. Only the .pub files are read.
# shellcheck source=../lib.sh
. "${PROVISION_ROOT:-}/usr/local/lib/provision/lib.sh"
console="$R/dev/console"
block() {
  local pub
  echo "-----BEGIN SSH HOST KEY KEYS-----"
  for pub in "$R"/etc/ssh/ssh_host_ed25519_key.pub "$R"/etc/ssh/ssh_host_ecdsa_key.pub; do
    if [ -r "$pub" ]; then
      cut -d ' ' -f 1,2 "$pub"
    fi
  done
  echo "-----END SSH HOST KEY KEYS-----"
}
if ! ls "$R"/etc/ssh/ssh_host_*_key.pub >/dev/null 2>&1; then
  pv_log "no ssh host keys in $R/etc/ssh yet"
  exit 1
fi
block >"$console"
