#!/usr/bin/env bash
# Installs the Prometheus server (Debian's package) that tenantotel's
# scrape test runs. The test starts its own instance, with a configuration
# naming the test's operator listener and a data directory of its own, so
# no server is left running here: start installs, stop does nothing.
# Debian's package may also start a system service on port 9090: the
# test's instance listens on a port of its own and does not mind it.
#
#   scripts/prometheus.sh [start|stop]
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
log() { echo "prometheus: $*"; }
# shellcheck source=install.sh
. "$HERE/install.sh"

case "${1:-start}" in
start)
	if command -v prometheus >/dev/null 2>&1; then exit 0; fi
	log "installing Debian's prometheus package"
	apt_install prometheus
	;;
stop) ;;
*)
	echo "usage: $0 [start|stop]" >&2
	exit 2
	;;
esac
