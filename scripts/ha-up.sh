#!/usr/bin/env bash
# A highly available PostgreSQL on this machine for trying ctrl against it: etcd, Patroni with a
# primary and streaming standbys (synchronous replication unless --async), HAProxy on Patroni's
# REST API and PgBouncer in transaction mode, all from Debian's packages (apt-get install
# postgresql patroni etcd-server haproxy pgbouncer). Run as root it runs them as `postgres`.
# Prints the URLs and a ctrl command line; Ctrl-C stops everything. See docs/ha.md.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
missing=()
for bin in patroni etcd haproxy pgbouncer; do
  command -v "$bin" >/dev/null 2>&1 || [ -x "/usr/sbin/$bin" ] || missing+=("$bin")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "missing: ${missing[*]}; install with: sudo apt-get install -y postgresql patroni etcd-server haproxy pgbouncer" >&2
  exit 2
fi
cd "$here/.."
exec node --import tsx scripts/ha/up.ts "$@"
