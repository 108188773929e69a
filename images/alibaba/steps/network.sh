#!/bin/bash
# provision step network (every boot): the planned MTU on every ENI and the secondary ENI (second ERI) addressed
# from the instance metadata (/usr/local/lib/provision/provision-net); settings made with `ip` do not survive a reboot.
# shellcheck source=../../common/lib.sh
. "${PROVISION_ROOT:-}/usr/local/lib/provision/lib.sh"
bash "$R/usr/local/lib/provision/provision-net"
