#!/bin/bash
# provision step apt-guard (once): no package changes behind the cluster's back. Unattended upgrades and the
# apt-daily timers are turned off (Cluster Toolkit's a3 blueprints do the same: "so that software does not get
# updated daily and lead to potential instability"), and later steps wait for a dpkg lock they still hold.
# shellcheck source=../lib.sh
. "${PROVISION_ROOT:-}/usr/local/lib/provision/lib.sh"
systemctl disable --now apt-daily.timer apt-daily-upgrade.timer unattended-upgrades.service >/dev/null 2>&1 || true
mkdir -p "$R/etc/apt/apt.conf.d"
cat >"$R/etc/apt/apt.conf.d/20auto-upgrades" <<'APT'
APT::Periodic::Update-Package-Lists "0";
APT::Periodic::Unattended-Upgrade "0";
APT
pv_wait_dpkg
