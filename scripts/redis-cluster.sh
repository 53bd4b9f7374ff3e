#!/usr/bin/env bash
# A local Redis Cluster for the tests: three masters and three replicas on
# 127.0.0.1:7100-7105, run by the machine's own redis-server in cluster
# mode. No persistence: a restarted node keeps its place in the cluster
# (nodes.conf) but not its data.
#
#   scripts/redis-cluster.sh start    idempotent: starts the nodes that are
#                                     not running, creates the cluster once,
#                                     waits until every node says ok
#   scripts/redis-cluster.sh stop     stops the nodes this script started
#                                     (pid files), and only those
#   scripts/redis-cluster.sh status   says what runs where
#
# TENANTWIRE_REDIS_CLUSTER (comma-separated host:port list), the variable
# the tests read, names a cluster of your own: start only checks that it
# answers, stop leaves it alone. A port held by anything else is reported,
# never taken over.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PORTS=(7100 7101 7102 7103 7104 7105)
ROOT=${XDG_CACHE_HOME:-$HOME/.cache}/tenantwire/redis-cluster
# Long enough that a busy shared machine (a node stalled for seconds) does
# not trigger failovers on its own; the failover test starts a private
# cluster with a short one.
NODE_TIMEOUT=${TENANTWIRE_REDIS_CLUSTER_NODE_TIMEOUT:-15000} # milliseconds

log() { echo "redis-cluster: $*"; }
die() { echo "redis-cluster: $*" >&2; exit 1; }

# shellcheck source=install.sh
. "$HERE/install.sh"

cli() { redis-cli -h 127.0.0.1 -p "$1" "${@:2}"; }
dir_of() { echo "$ROOT/$1"; }

# ours <port>: the pid of the node this script started on <port>, if it
# still runs (a recycled pid running something else does not count).
ours() {
	local f pid
	f=$(dir_of "$1")/redis.pid
	[ -f "$f" ] || return 1
	pid=$(cat "$f")
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "redis-server.*:$1 \[cluster\]" || return 1
	echo "$pid"
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

cluster_ok() { cli "$1" cluster info 2>/dev/null | grep -q '^cluster_state:ok'; }

all_ok() {
	local p
	for p in "$@"; do cluster_ok "$p" || return 1; done
}

# replicas_known: the first node sees a replica for each master (gossip
# spreads the roles a moment after the slots).
replicas_known() { [ "$(cli "${PORTS[0]}" cluster nodes | grep -c ' slave ')" -ge 3 ]; }

wait_until() { # wait_until <seconds> <command...>
	local deadline=$((SECONDS + $1))
	shift
	until "$@"; do
		[ $SECONDS -lt $deadline ] || return 1
		sleep 0.5
	done
}

start_node() {
	local port=$1 dir
	dir=$(dir_of "$port")
	if ours "$port" >/dev/null; then return; fi
	if port_open "$port"; then die "port $port is taken by something this script did not start; free it or set TENANTWIRE_REDIS_CLUSTER"; fi
	mkdir -p "$dir"
	redis-server --port "$port" --bind 127.0.0.1 --protected-mode no --daemonize yes \
		--cluster-enabled yes --cluster-config-file "$dir/nodes.conf" --cluster-node-timeout "$NODE_TIMEOUT" \
		--save "" --appendonly no --dir "$dir" --pidfile "$dir/redis.pid" --logfile "$dir/redis.log"
	wait_until 10 port_open "$port" || die "node $port did not come up (log: $dir/redis.log)"
}

# fresh reports whether no node knows any other yet: the cluster was never
# created here (or its state was wiped).
fresh() {
	local p
	for p in "${PORTS[@]}"; do
		[ "$(cli "$p" cluster info | sed -n 's/^cluster_known_nodes:\([0-9]*\).*/\1/p')" = 1 ] || return 1
	done
}

create() {
	local addrs=() p
	for p in "${PORTS[@]}"; do addrs+=("127.0.0.1:$p"); done
	log "creating the cluster (3 masters, 3 replicas)"
	redis-cli --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes >"$ROOT/create.log" 2>&1 ||
		{ tail -n 20 "$ROOT/create.log" >&2; die "redis-cli --cluster create failed (full output: $ROOT/create.log)"; }
}

# stop_nodes stops every node at once: one by one, each master would wait
# for its replica to catch up (shutdown-timeout) before it exits.
stop_nodes() {
	local p pid pids=()
	for p in "${PORTS[@]}"; do
		if pid=$(ours "$p"); then
			log "stopping node $p (pid $pid)"
			kill -TERM "$pid"
			pids+=("$pid")
		fi
		rm -f "$(dir_of "$p")/redis.pid"
	done
	for pid in "${pids[@]}"; do
		for _ in $(seq 1 75); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.2
		done
	done
}

start() {
	if [ -n "${TENANTWIRE_REDIS_CLUSTER:-}" ]; then
		local first=${TENANTWIRE_REDIS_CLUSTER%%,*}
		command -v redis-cli >/dev/null 2>&1 || apt_install redis-tools
		if redis-cli -h "${first%:*}" -p "${first##*:}" cluster info 2>/dev/null | grep -q '^cluster_state:ok'; then
			log "Redis Cluster is running at $TENANTWIRE_REDIS_CLUSTER (TENANTWIRE_REDIS_CLUSTER)"
			return
		fi
		die "the Redis Cluster at $first (TENANTWIRE_REDIS_CLUSTER) is not ok; start it, or unset TENANTWIRE_REDIS_CLUSTER to use a local one"
	fi
	if ! command -v redis-server >/dev/null 2>&1; then
		log "installing Redis"
		apt_install redis-server redis-tools
	fi
	if all_ok "${PORTS[@]}"; then
		log "Redis Cluster is running on 127.0.0.1:${PORTS[0]}-${PORTS[-1]}"
		return
	fi
	mkdir -p "$ROOT"
	local p
	for p in "${PORTS[@]}"; do start_node "$p"; done
	if fresh; then create; fi
	if ! wait_until 30 all_ok "${PORTS[@]}"; then
		# Saved cluster state that no longer adds up (nodes wiped or
		# replaced one by one): a test cluster holds nothing worth keeping.
		log "the cluster did not reach state ok; recreating it from empty nodes"
		stop_nodes
		for p in "${PORTS[@]}"; do rm -f "$(dir_of "$p")/nodes.conf"; done
		for p in "${PORTS[@]}"; do start_node "$p"; done
		create
		wait_until 30 all_ok "${PORTS[@]}" || die "the cluster did not reach state ok (logs: $ROOT/<port>/redis.log)"
	fi
	wait_until 15 replicas_known || log "warning: not every master has a replica yet (cluster nodes: redis-cli -p ${PORTS[0]} cluster nodes)"
	log "Redis Cluster is running on 127.0.0.1:${PORTS[0]}-${PORTS[-1]}"
}

status() {
	local p rc=0 pid
	for p in "${PORTS[@]}"; do
		if pid=$(ours "$p"); then
			log "node $p: running (pid $pid), $(cli "$p" cluster info | grep -o 'cluster_state:[a-z]*')"
		elif port_open "$p"; then
			log "node $p: something this script did not start listens there"
		else
			log "node $p: not running"
			rc=1
		fi
	done
	return $rc
}

case ${1:-start} in
start) start ;;
stop)
	if [ -n "${TENANTWIRE_REDIS_CLUSTER:-}" ]; then
		log "the cluster at $TENANTWIRE_REDIS_CLUSTER (TENANTWIRE_REDIS_CLUSTER) is not this script's; leaving it alone"
	else
		stop_nodes
	fi
	;;
status) status ;;
*) die "usage: $0 start|stop|status" ;;
esac
