#!/usr/bin/env bash
# A second local PostgreSQL server for the dedicated tier's tests (tenants
# spread over two servers): the cluster "second" of the installed major
# version on 127.0.0.1:5433, trust auth for loopback connections like the
# first one, with the test database created.
#
#   scripts/postgres-second.sh start   idempotent: leaves a running server
#                                      alone, creates the cluster once
#   scripts/postgres-second.sh stop    stops it if this script started it
#
# TENANTWIRE_PG_URL_2 (postgres://user@host:port/db?...), the variable the
# tests read, names a server of your own: start only checks that it answers
# and creates the named database; stop leaves it alone.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
STATE=${XDG_CACHE_HOME:-$HOME/.cache}/tenantwire/services
NAME=second
PGHOST=127.0.0.1
PGPORT=5433
PGUSER=postgres
TEST_DB=tenantwire_test

log() { echo "postgres-second: $*"; }
die() { echo "postgres-second: $*" >&2; exit 1; }

# shellcheck source=install.sh
. "$HERE/install.sh"

if [ -n "${TENANTWIRE_PG_URL_2:-}" ]; then parse_pg_url "$TENANTWIRE_PG_URL_2"; fi

ready() { pg_isready -q -h "$PGHOST" -p "$PGPORT"; }

as_postgres() {
	if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else sudo -u postgres "$@"; fi
}

create_test_db() {
	if [ "$(psql -h "$PGHOST" -p "$PGPORT" -U "$PGUSER" -d postgres -Atc "select 1 from pg_database where datname = '$TEST_DB'")" != 1 ]; then
		log "creating database $TEST_DB"
		psql -h "$PGHOST" -p "$PGPORT" -U "$PGUSER" -d postgres -qc "create database \"$TEST_DB\"" || true
	fi
}

# The scale benchmark keeps 1,000 databases on this server; autovacuum's
# default one-minute visit of each would cost the machine about 7% of a core
# all the time. A test server's tables need no such care: every ten minutes.
slow_autovacuum() {
	if [ "$(psql -h "$PGHOST" -p "$PGPORT" -U "$PGUSER" -d postgres -Atc "show autovacuum_naptime")" != 10min ]; then
		log "setting autovacuum_naptime to 10min on this test server (ALTER SYSTEM)"
		psql -h "$PGHOST" -p "$PGPORT" -U "$PGUSER" -d postgres -qc "alter system set autovacuum_naptime = '10min'" -c "select pg_reload_conf()" >/dev/null
	fi
}

start() {
	if ready 2>/dev/null; then
		log "PostgreSQL is running on $PGHOST:$PGPORT"
		create_test_db
		[ -n "${TENANTWIRE_PG_URL_2:-}" ] || slow_autovacuum
		return
	fi
	if [ -n "${TENANTWIRE_PG_URL_2:-}" ]; then
		die "PostgreSQL at $PGHOST:$PGPORT (TENANTWIRE_PG_URL_2) does not answer; start it, or unset TENANTWIRE_PG_URL_2 to use a local one"
	fi
	command -v pg_createcluster >/dev/null 2>&1 || apt_install postgresql postgresql-client
	local version
	version=$(ls /usr/lib/postgresql | sort -V | tail -n 1)
	if [ ! -d "/etc/postgresql/$version/$NAME" ]; then
		# Trust auth for local and loopback connections, as on the first
		# server; a small shared_buffers, since it is a test server beside
		# another one.
		log "creating PostgreSQL $version cluster $NAME on port $PGPORT"
		as_root pg_createcluster "$version" "$NAME" -p "$PGPORT" -o shared_buffers=32MB \
			-- --auth=trust >/dev/null
	fi
	log "starting PostgreSQL $version cluster $NAME"
	start_pg_cluster "$version" "$NAME"
	for _ in $(seq 1 60); do
		ready && break
		sleep 0.5
	done
	ready || die "PostgreSQL $version/$NAME did not come up (log: /var/log/postgresql/postgresql-$version-$NAME.log)"
	mkdir -p "$STATE"
	echo "$version" >"$STATE/postgres-second.started"
	create_test_db
	slow_autovacuum
}

stop() {
	if [ ! -f "$STATE/postgres-second.started" ]; then
		log "the second PostgreSQL was not started by this script; leaving it alone"
		return
	fi
	local version
	version=$(cat "$STATE/postgres-second.started")
	log "stopping PostgreSQL $version cluster $NAME"
	as_root pg_ctlcluster --skip-systemctl-redirect "$version" "$NAME" stop || true
	rm -f "$STATE/postgres-second.started"
}

case ${1:-start} in
start) start ;;
stop) stop ;;
*) die "usage: $0 start|stop" ;;
esac
