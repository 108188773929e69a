#!/bin/bash
# provision step health (every boot, last): compare the node with the plan; /var/lib/provision/health.json.
# shellcheck source=../lib.sh
. "${PROVISION_ROOT:-}/usr/local/lib/provision/lib.sh"
python3 "$R/usr/local/lib/provision/provision-health"
