#!/usr/bin/env bash
# Makes the test servers reachable on 127.0.0.1: PostgreSQL, PgBouncer in
# front of it, Redis, then the servers with a script of their own
# (scripts/<name>.sh start|stop).
#
#   scripts/services.sh [start]   idempotent: leaves running servers alone,
#                                 starts installed-but-stopped ones, installs
#                                 missing ones with apt-get, creates the test
#                                 database
#   scripts/services.sh stop      stops what this script started, and only
#                                 that (pid and marker files in $STATE)
#
# TENANTWIRE_PG_URL (postgres://user@host:port/db?...) and
# TENANTWIRE_REDIS_ADDR (host:port), the variables the tests read, name
# servers of your own: when set, this script only checks that they answer
# (and creates the named database if it is missing); it installs, starts,
# reconfigures and stops nothing of theirs. TENANTWIRE_PGBOUNCER_URL
# does the same for the pooler.
#
# PgBouncer (Debian's package) listens on 127.0.0.1:6432 in transaction
# pooling mode, in front of the PostgreSQL above, with its configuration
# and log in $STATE/pgbouncer.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
STATE=${XDG_CACHE_HOME:-$HOME/.cache}/tenantwire/services
# Servers started and stopped by scripts/<name>.sh. They start at once,
# beside this script's own; stop goes in reverse order.
COMPANIONS=(postgres-second kafka neo4j redis-cluster prometheus)

PGHOST=127.0.0.1
PGPORT=5432
PGUSER=postgres
TEST_DB=tenantwire_test
REDIS_HOST=127.0.0.1
REDIS_PORT=6379
PGBOUNCER_PORT=6432
PGBOUNCER_DIR=$STATE/pgbouncer

log() { echo "services: $*"; }

# shellcheck source=install.sh
. "$HERE/install.sh"

if [ -n "${TENANTWIRE_PG_URL:-}" ]; then parse_pg_url "$TENANTWIRE_PG_URL"; fi
if [ -n "${TENANTWIRE_REDIS_ADDR:-}" ]; then
	REDIS_HOST=${TENANTWIRE_REDIS_ADDR%:*}
	REDIS_PORT=${TENANTWIRE_REDIS_ADDR##*:}
	REDIS_HOST=${REDIS_HOST#[}
	REDIS_HOST=${REDIS_HOST%]}
fi


wait_for() { # wait_for <what> <command...>
	local what=$1; shift
	for _ in $(seq 1 60); do
		if "$@" >/dev/null 2>&1; then return 0; fi
		sleep 0.5
	done
	log "$what did not come up"; return 1
}

pg_ready() { pg_isready -q -h "$PGHOST" -p "$PGPORT"; }
pg_psql() { psql -h "$PGHOST" -p "$PGPORT" -U "$PGUSER" "$@"; }

as_postgres() {
	if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else sudo -u postgres "$@"; fi
}

ensure_trust_auth() {
	# Tests connect as postgres over TCP without a password, as on the
	# machines this project targets. A stock install asks for one.
	if pg_psql -d postgres -Atc 'select 1' >/dev/null 2>&1; then return; fi
	if [ -n "${TENANTWIRE_PG_URL:-}" ]; then
		log "cannot connect to $PGHOST:$PGPORT as $PGUSER (TENANTWIRE_PG_URL); not changing a server of yours"
		return 1
	fi
	local hba
	hba=$(as_postgres psql -Atc 'show hba_file')
	log "about to edit $hba: inserting at its top the lines"
	log "  host all all 127.0.0.1/32 trust"
	log "  host all all ::1/128 trust"
	log "(trust auth for loopback connections), then reloading PostgreSQL's configuration"
	as_root sed -i '1i host all all 127.0.0.1/32 trust\nhost all all ::1/128 trust' "$hba"
	as_postgres psql -qc 'select pg_reload_conf()' >/dev/null
}

start_postgres() {
	if pg_ready 2>/dev/null; then log "PostgreSQL is running on $PGHOST:$PGPORT"; return; fi
	if [ -n "${TENANTWIRE_PG_URL:-}" ]; then
		log "PostgreSQL at $PGHOST:$PGPORT (TENANTWIRE_PG_URL) does not answer; start it, or unset TENANTWIRE_PG_URL to use a local one"
		return 1
	fi
	if ! command -v pg_ctlcluster >/dev/null 2>&1 || [ -z "$(ls /usr/lib/postgresql 2>/dev/null)" ]; then
		log "installing PostgreSQL"
		apt_install postgresql postgresql-client
	fi
	local version
	if [ -z "$(ls /etc/postgresql 2>/dev/null)" ]; then
		# Installed without a cluster (the package's own one was removed).
		version=$(ls /usr/lib/postgresql | sort -V | tail -n 1)
		log "creating PostgreSQL $version cluster main"
		as_root pg_createcluster "$version" main
	fi
	version=$(ls /etc/postgresql | sort -V | tail -n 1)
	log "starting PostgreSQL $version"
	start_pg_cluster "$version" main || true
	wait_for PostgreSQL pg_ready
	echo "$version" >"$STATE/postgres.started"
}

stop_postgres() {
	if [ ! -f "$STATE/postgres.started" ]; then
		log "PostgreSQL was not started by this script; leaving it alone"
		return
	fi
	local version
	version=$(cat "$STATE/postgres.started")
	log "stopping PostgreSQL $version"
	as_root pg_ctlcluster --skip-systemctl-redirect "$version" main stop || true
	rm -f "$STATE/postgres.started"
}

create_test_db() {
	ensure_trust_auth
	if [ "$(pg_psql -d postgres -Atc "select 1 from pg_database where datname = '$TEST_DB'")" != 1 ]; then
		log "creating database $TEST_DB"
		pg_psql -d postgres -qc "create database \"$TEST_DB\"" || true
	fi
}

pgbouncer_ready() { pg_isready -q -h 127.0.0.1 -p "$PGBOUNCER_PORT" -U "$PGUSER" -d "$TEST_DB"; }

# pgbouncer_ours: the pid of the PgBouncer this script started, if it
# still runs (a recycled pid running something else does not count).
pgbouncer_ours() {
	local pid
	pid=$(cat "$STATE/pgbouncer.pid" 2>/dev/null || true)
	[ -n "$pid" ] && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "pgbouncer $PGBOUNCER_DIR/pgbouncer.ini" || return 1
	echo "$pid"
}

# write_pgbouncer_config: every database of the PostgreSQL above, trust
# auth as that server has on loopback (users not in the auth file, such as
# tenant roles, are looked up through $PGUSER), transaction pooling.
# Protocol-level prepared statements stay off where the version has them
# (1.21+), as 1.18 (Debian 12) has them: the tests show the framework
# prepares nothing named behind a transaction pooler.
write_pgbouncer_config() {
	local extra=""
	if [ "$(printf '%s\n' 1.21 "$(pgbouncer --version | sed -n 's/^PgBouncer \([0-9.]*\).*/\1/p')" | sort -V | head -n 1)" = 1.21 ]; then
		extra="max_prepared_statements = 0"
	fi
	mkdir -p "$PGBOUNCER_DIR"
	cat >"$PGBOUNCER_DIR/pgbouncer.ini" <<-EOF
		[databases]
		* = host=$PGHOST port=$PGPORT

		[pgbouncer]
		listen_addr = 127.0.0.1
		listen_port = $PGBOUNCER_PORT
		unix_socket_dir =
		pool_mode = transaction
		auth_type = trust
		auth_file = $PGBOUNCER_DIR/userlist.txt
		auth_user = $PGUSER
		max_client_conn = 2000
		default_pool_size = 5
		max_user_connections = 20
		server_idle_timeout = 20
		logfile =
		syslog = 0
		log_connections = 0
		log_disconnections = 0
		log_stats = 0
		$extra
	EOF
	# PgBouncer will not run as root: it switches to postgres once it has
	# read these files and opened its port.
	if [ "$(id -u)" -eq 0 ]; then echo "user = postgres" >>"$PGBOUNCER_DIR/pgbouncer.ini"; fi
	printf '"%s" ""\n' "$PGUSER" >"$PGBOUNCER_DIR/userlist.txt"
}

start_pgbouncer() {
	if [ -n "${TENANTWIRE_PGBOUNCER_URL:-}" ]; then
		local rest=${TENANTWIRE_PGBOUNCER_URL#*://} hostport
		rest=${rest#*@}
		hostport=${rest%%[/?]*}
		if (exec 3<>"/dev/tcp/${hostport%:*}/${hostport##*:}") 2>/dev/null; then
			log "PgBouncer is running at $hostport (TENANTWIRE_PGBOUNCER_URL)"
			return
		fi
		log "PgBouncer at $hostport (TENANTWIRE_PGBOUNCER_URL) does not answer; start it, or unset TENANTWIRE_PGBOUNCER_URL to use a local one"
		return 1
	fi
	local pid
	if pid=$(pgbouncer_ours); then log "PgBouncer is running on 127.0.0.1:$PGBOUNCER_PORT (pid $pid)"; return; fi
	if (exec 3<>"/dev/tcp/127.0.0.1/$PGBOUNCER_PORT") 2>/dev/null; then
		log "port $PGBOUNCER_PORT is taken by something this script did not start; free it or set TENANTWIRE_PGBOUNCER_URL"
		return 1
	fi
	if ! command -v pgbouncer >/dev/null 2>&1; then
		log "installing PgBouncer"
		apt_install pgbouncer
	fi
	write_pgbouncer_config
	log "starting PgBouncer on 127.0.0.1:$PGBOUNCER_PORT (transaction pooling; log: $PGBOUNCER_DIR/pgbouncer.log)"
	nohup pgbouncer "$PGBOUNCER_DIR/pgbouncer.ini" >>"$PGBOUNCER_DIR/pgbouncer.log" 2>&1 </dev/null &
	echo $! >"$STATE/pgbouncer.pid"
	wait_for PgBouncer pgbouncer_ready
}

stop_pgbouncer() {
	local pid
	if ! pid=$(pgbouncer_ours); then
		log "PgBouncer was not started by this script; leaving it alone"
		rm -f "$STATE/pgbouncer.pid"
		return
	fi
	log "stopping PgBouncer (pid $pid)"
	kill -TERM "$pid"
	for _ in $(seq 1 50); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.2
	done
	rm -f "$STATE/pgbouncer.pid"
}

redis_ready() { redis-cli -h "$REDIS_HOST" -p "$REDIS_PORT" ping | grep -q PONG; }

start_redis() {
	if command -v redis-cli >/dev/null 2>&1 && redis_ready 2>/dev/null; then log "Redis is running on $REDIS_HOST:$REDIS_PORT"; return; fi
	if [ -n "${TENANTWIRE_REDIS_ADDR:-}" ]; then
		if ! command -v redis-cli >/dev/null 2>&1; then
			log "installing the Redis client"
			apt_install redis-tools
			if redis_ready 2>/dev/null; then log "Redis is running on $REDIS_HOST:$REDIS_PORT"; return; fi
		fi
		log "Redis at $REDIS_HOST:$REDIS_PORT (TENANTWIRE_REDIS_ADDR) does not answer; start it, or unset TENANTWIRE_REDIS_ADDR to use a local one"
		return 1
	fi
	if ! command -v redis-server >/dev/null 2>&1; then
		log "installing Redis"
		apt_install redis-server redis-tools
	fi
	log "starting Redis"
	as_root mkdir -p /var/lib/redis /var/log/redis
	as_root redis-server --daemonize yes --bind 127.0.0.1 -::1 --port "$REDIS_PORT" --save "" --appendonly no \
		--dir /var/lib/redis --logfile /var/log/redis/tenantwire.log --pidfile "$STATE/redis.pid"
	wait_for Redis redis_ready
}

stop_redis() {
	local pid
	pid=$(cat "$STATE/redis.pid" 2>/dev/null || true)
	# A recycled pid running something else is not ours to kill.
	if [ -z "$pid" ] || ! tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "redis-server.*:$REDIS_PORT"; then
		log "Redis was not started by this script; leaving it alone"
		rm -f "$STATE/redis.pid"
		return
	fi
	log "stopping Redis (pid $pid)"
	as_root kill -TERM "$pid"
	for _ in $(seq 1 50); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.2
	done
	rm -f "$STATE/redis.pid"
}

# install_missing installs, in one apt-get run, every package a start
# below would install: apt-get takes a lock, so the starts, which run at
# once, must find everything installed.
install_missing() {
	local pkgs=()
	command -v pg_isready >/dev/null 2>&1 || pkgs+=(postgresql-client)
	if { [ -z "${TENANTWIRE_PG_URL:-}" ] || [ -z "${TENANTWIRE_PG_URL_2:-}" ]; } &&
		{ ! command -v pg_ctlcluster >/dev/null 2>&1 || [ -z "$(ls /usr/lib/postgresql 2>/dev/null)" ]; }; then
		pkgs+=(postgresql postgresql-client)
	fi
	[ -n "${TENANTWIRE_PGBOUNCER_URL:-}" ] || command -v pgbouncer >/dev/null 2>&1 || pkgs+=(pgbouncer)
	command -v redis-cli >/dev/null 2>&1 || pkgs+=(redis-tools)
	if { [ -z "${TENANTWIRE_REDIS_ADDR:-}" ] || [ -z "${TENANTWIRE_REDIS_CLUSTER:-}" ]; } && ! command -v redis-server >/dev/null 2>&1; then
		pkgs+=(redis-server)
	fi
	if ! command -v java >/dev/null 2>&1 || ! command -v javac >/dev/null 2>&1 || ! command -v mvn >/dev/null 2>&1; then
		pkgs+=(openjdk-17-jdk-headless maven)
	fi
	command -v prometheus >/dev/null 2>&1 || pkgs+=(prometheus)
	if [ ${#pkgs[@]} -gt 0 ]; then
		log "installing with apt-get: $(printf '%s\n' "${pkgs[@]}" | sort -u | tr '\n' ' ')"
		apt_install $(printf '%s\n' "${pkgs[@]}" | sort -u)
	fi
}

start_pg_and_pooler() {
	start_postgres
	create_test_db
	start_pgbouncer
}

# spawn <name> <command...> runs a start in the background, its output in
# a log of its own; collect waits for every one and prints each log whole,
# so that the servers' lines do not interleave.
JOBS=()
spawn() {
	local name=$1
	shift
	"$@" >"$STATE/start-$name.log" 2>&1 </dev/null &
	JOBS+=("$name:$!")
}

collect() {
	local job name failed=()
	for job in "${JOBS[@]}"; do
		name=${job%%:*}
		if wait "${job#*:}"; then
			cat "$STATE/start-$name.log"
		else
			cat "$STATE/start-$name.log" >&2
			failed+=("$name")
		fi
	done
	if [ ${#failed[@]} -gt 0 ]; then
		log "failed to start: ${failed[*]} (their output is above; logs in $STATE/start-<name>.log)" >&2
		return 1
	fi
}

start() {
	install_missing
	# The starts run in the background, where sudo cannot ask for a
	# password: ask once here if a server that needs root is down.
	if [ "$(id -u)" -ne 0 ] && ! sudo -n true 2>/dev/null &&
		! { pg_ready && redis_ready && pg_isready -q -h 127.0.0.1 -p 5433; } 2>/dev/null; then
		sudo -v
	fi
	# Every server at once: a cold start costs the slowest one's time, not
	# the sum. PgBouncer waits for the PostgreSQL it fronts.
	spawn postgres start_pg_and_pooler
	spawn redis start_redis
	local c
	for c in "${COMPANIONS[@]}"; do spawn "$c" "$HERE/$c.sh" start; done
	collect
	log "ready: postgres://$PGUSER@$PGHOST:$PGPORT/$TEST_DB, PgBouncer ${TENANTWIRE_PGBOUNCER_URL:-127.0.0.1:$PGBOUNCER_PORT}, redis://$REDIS_HOST:$REDIS_PORT, ${COMPANIONS[*]}"
}

stop() {
	local i
	for ((i = ${#COMPANIONS[@]} - 1; i >= 0; i--)); do "$HERE/${COMPANIONS[i]}.sh" stop; done
	stop_redis
	stop_pgbouncer
	stop_postgres
}

mkdir -p "$STATE"
case ${1:-start} in
start) start ;;
stop) stop ;;
*) echo "usage: $0 [start|stop]" >&2; exit 2 ;;
esac
