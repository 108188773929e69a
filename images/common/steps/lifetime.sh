#!/bin/bash
# provision step lifetime (once): arm the cluster's expiry timer (the units are written by cloud-init). A calendar
# timer with Persistent=true survives reboots and fires at the next boot if the expiry passed while the node was down.
# shellcheck source=../lib.sh
. "${PROVISION_ROOT:-}/usr/local/lib/provision/lib.sh"
[ -f "$R/etc/systemd/system/provision-expiry.timer" ] || exit 0
systemctl daemon-reload && systemctl enable --now provision-expiry.timer
