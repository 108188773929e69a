#!/bin/bash
# provision step tcpx-firewall (every boot): TCPX data flows arrive on arbitrary TCP ports of the GPU NICs; the
# guest's INPUT chain must accept them (Google's GPUDirect-TCPX guide). iptables rules do not survive a reboot.
# shellcheck source=../../common/lib.sh
. "${PROVISION_ROOT:-}/usr/local/lib/provision/lib.sh"
iptables -C INPUT -p tcp -m tcp -j ACCEPT 2>/dev/null || iptables -I INPUT -p tcp -m tcp -j ACCEPT
