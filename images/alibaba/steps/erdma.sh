#!/bin/bash
# provision step erdma (once, eRDMA types): the eRDMA driver and user-space from Alibaba's VPC-internal mirror,
# installed from the installer tarball whose SHA-256 Alibaba publishes ("Enable eRDMA", erdma-usage), checked
# before anything in it runs. The tarball's own install.sh is used, never a separately fetched setup script.
# shellcheck source=../../common/lib.sh
. "${PROVISION_ROOT:-}/usr/local/lib/provision/lib.sh"
command -v eadm >/dev/null && exit 0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
pv_fetch "$ERDMA_INSTALLER_URL" "$work/erdma_installer.tar.gz" "$ERDMA_INSTALLER_SHA256" || exit 1
tar -xzf "$work/erdma_installer.tar.gz" -C "$work" || exit 1
installer=$(find "$work" -name install.sh -type f | head -n 1)
[ -n "$installer" ] || { pv_log "the eRDMA installer has no install.sh"; exit 1; }
(cd "$(dirname "$installer")" && bash ./install.sh --batch) || exit 1
