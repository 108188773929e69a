#!/bin/bash
# provision step fsx-efa-client (once, EFA-enabled FSx only): configure the Lustre client to reach the file
# system over EFA instead of TCP on the one ENA interface. FSx for Lustre User Guide, "Configuring EFA clients":
# download configure-efa-fsx-lustre-client.zip and run its setup.sh, which configures LNet over the EFA
# interfaces and installs a service that re-applies it at every boot. setup.sh writes module options that the
# kernel reads only when the Lustre modules load, so they are unloaded first (otherwise only some EFA
# interfaces attach, silently). AWS publishes no checksum for the package: it comes over HTTPS from AWS's docs.
# shellcheck source=../../common/lib.sh
. "${PROVISION_ROOT:-}/usr/local/lib/provision/lib.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pv_fetch "$FSX_EFA_CLIENT_URL" "$work/client.zip" || exit 1
command -v unzip >/dev/null || pv_apt install unzip || exit 1
unzip -q -o "$work/client.zip" -d "$work" || exit 1
setup=$(find "$work" -name setup.sh -type f | head -n 1)
if [ -z "$setup" ]; then
  pv_log "the FSx EFA client package has no setup.sh"
  exit 1
fi
if grep -q '^lustre ' "$R/proc/modules" 2>/dev/null; then
  umount -a -t lustre || true
  lustre_rmmod || true
fi
(cd "$(dirname "$setup")" && bash ./setup.sh) || exit 1
if ! lnetctl net show 2>/dev/null | grep -q '@efa'; then
  pv_log "LNet has no @efa interface after setup.sh: FSx traffic would go over TCP"
  exit 1
fi
