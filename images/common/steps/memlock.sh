#!/bin/bash
# provision step memlock (once): RDMA memory registration (ibv_reg_mr, NCCL's IB/eRDMA/EFA transports) needs an
# unlimited locked-memory limit; Ubuntu's default (8 MiB) makes ibv_create_qp fail with ENOMEM for non-root jobs.
# /etc/security/limits.d covers logins, /etc/systemd/system.conf.d covers services (both written by cloud-init).
# shellcheck source=../lib.sh
. "${PROVISION_ROOT:-}/usr/local/lib/provision/lib.sh"
systemctl daemon-reexec >/dev/null 2>&1 || true
