#!/usr/bin/env bash
# A real Apache Kafka broker (KRaft, broker+controller in one JVM) for the
# tests, run from Maven Central artifacts: no Docker, no tarball.
#
#   scripts/kafka.sh start|stop|status                  two single nodes,
#                                                        127.0.0.1:9092 and 9492
#   scripts/kafka.sh start-cluster|stop-cluster|status-cluster
#                                                        three nodes, RF 3
#   scripts/kafka.sh kill-node N|stop-node N             the soak's faults: cluster
#                                                        node N SIGKILLed, or stopped
#                                                        (SIGTERM); start-cluster
#                                                        starts it again
#
# The first start copies kafka_2.13 and its runtime dependencies (the pom in
# scripts/kafka/) into a cache directory with `mvn dependency:copy-dependencies`
# and formats the storage; later starts reuse both. Idempotent: a running
# broker is left alone. `stop` stops only what this script started, found
# by its pid file.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
POM=$HERE/kafka/pom.xml
VERSION=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$POM")
CACHE=${TENANTWIRE_KAFKA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tenantwire}/kafka-$VERSION
LIBS=$CACHE/libs
HEAP=${TENANTWIRE_KAFKA_HEAP:-512m}
SECOND_HEAP=${TENANTWIRE_KAFKA_SECOND_HEAP:-384m}
CLUSTER_HEAP=${TENANTWIRE_KAFKA_CLUSTER_HEAP:-384m}
START_TIMEOUT=${TENANTWIRE_KAFKA_START_TIMEOUT:-90} # seconds

# The single node: plaintext for the tests, SASL/PLAIN for the credentials
# tests (users below), the controller on a port of its own. The gated
# listener advertises a port nothing listens on until a test puts a TCP
# forwarder there: clients bootstrapped through that forwarder reach the
# broker only through it, and lose it when the test closes it.
PORT=9092
CONTROLLER_PORT=9093
SASL_PORT=9094
GATED_PORT=9095
GATED_ADVERTISED_PORT=9096
SASL_USERS='user_tenant-a="secret-a" user_tenant-b="secret-b"'
# The second single node, a cluster of its own for the dedicated tier's
# tests (one tenant per cluster): plaintext only. 9492 is clear of the
# three-node cluster's 9N92 ports.
SECOND_PORT=9492
SECOND_CONTROLLER_PORT=9493
# The three-node cluster, on other ports (broker N on 9N92, its controller
# on 9N93).
CLUSTER_NODES=(1 2 3)
cluster_port() { echo "9${1}92"; }
cluster_controller_port() { echo "9${1}93"; }

# Cluster ids are fixed: the storage is private to this cache directory.
SINGLE_ID=dGVuYW50d2lyZS1rYWZrYQ
SECOND_ID=dGVuYW50d2lyZS1zZWNuZA
CLUSTER_ID=dGVuYW50d2lyZS1jbHN0cg

log() { echo "kafka: $*"; }
die() { echo "kafka: $*" >&2; exit 1; }

# shellcheck source=install.sh
. "$HERE/install.sh"

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# fetch_libs copies the broker's classpath into $LIBS once. The copy goes to
# a temporary directory first, so an interrupted download is never taken
# for a complete one; the pom's checksum says when it must be redone.
fetch_libs() {
	local sum
	sum=$(sha256sum "$POM" | cut -d' ' -f1)
	if [ -f "$LIBS/.complete" ] && [ "$(cat "$LIBS/.complete")" = "$sum" ]; then return; fi
	command -v mvn >/dev/null 2>&1 || die "mvn not found; run scripts/services.sh, which installs it"
	log "fetching Kafka $VERSION and its dependencies from Maven Central"
	mkdir -p "$CACHE"
	local tmp
	tmp=$(mktemp -d "$CACHE/libs.XXXXXX")
	if ! mvn_locked -q -B -f "$POM" dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp" >"$CACHE/mvn.log" 2>&1; then
		rm -rf "$tmp"
		tail -n 20 "$CACHE/mvn.log" >&2
		die "mvn could not fetch Kafka $VERSION (full output: $CACHE/mvn.log)"
	fi
	echo "$sum" >"$tmp/.complete"
	rm -rf "$LIBS"
	mv "$tmp" "$LIBS"
}

# write_props <dir> <node id> <broker port> <controller port> <voters> <replication> [test listeners]
write_props() {
	local dir=$1 id=$2 port=$3 cport=$4 voters=$5 rf=$6 extra=${7:-}
	local listeners="PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport"
	local advertised="PLAINTEXT://127.0.0.1:$port"
	local protocols="PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
	if [ -n "$extra" ]; then
		listeners+=",SASL_PLAINTEXT://127.0.0.1:$SASL_PORT,GATED://127.0.0.1:$GATED_PORT"
		advertised+=",SASL_PLAINTEXT://127.0.0.1:$SASL_PORT,GATED://127.0.0.1:$GATED_ADVERTISED_PORT"
		protocols+=",SASL_PLAINTEXT:SASL_PLAINTEXT,GATED:PLAINTEXT"
	fi
	local min_isr=1
	[ "$rf" -gt 1 ] && min_isr=2
	cat <<EOF
# Written by scripts/kafka.sh on every start; edits are lost.
process.roles=broker,controller
node.id=$id
controller.quorum.voters=$voters
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listeners=$listeners
advertised.listeners=$advertised
listener.security.protocol.map=$protocols
log.dirs=$dir/data
# Tests provision their topics, but kafka-go's metadata requests may name a
# topic first: let the broker create it as a provisioned one would be.
auto.create.topics.enable=true
num.partitions=1
default.replication.factor=$rf
min.insync.replicas=$min_isr
offsets.topic.replication.factor=$rf
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=$rf
transaction.state.log.min.isr=$min_isr
transaction.state.log.num.partitions=4
# Tests join fresh groups all the time: no waiting for more members, and
# short sessions are allowed.
group.initial.rebalance.delay.ms=0
group.min.session.timeout.ms=1000
delete.topic.enable=true
# Deleted topics (every test deletes its own) leave the disk at once.
file.delete.delay.ms=1000
# A test broker: few threads, small segments, nothing kept long.
num.network.threads=2
num.io.threads=2
background.threads=2
log.segment.bytes=16777216
log.retention.hours=24
log.cleaner.dedupe.buffer.size=4194304
EOF
	if [ -n "$extra" ]; then
		cat <<EOF
sasl.enabled.mechanisms=PLAIN
listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required $SASL_USERS;
EOF
	fi
}

# A test broker on a shared machine: the C1 compiler alone and the serial
# collector start it in about half the CPU time (6.6 s against 10 to 12 s
# here); peak throughput does not matter.
java_opts() { # <dir> [max heap]
	echo "-Xms128m -Xmx${2:-$HEAP} -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Xshare:auto -Djava.awt.headless=true" \
		"-Dlog4j.configuration=file:$HERE/kafka/log4j.properties -Dkafka.logs.dir=$1"
}

# ours <dir>: the pid of the broker this script started in <dir>, if it
# still runs (a recycled pid running something else does not count).
ours() {
	local dir=$1 pid
	[ -f "$dir/broker.pid" ] || return 1
	pid=$(cat "$dir/broker.pid")
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF "kafka.Kafka $dir/server.properties" || return 1
	echo "$pid"
}

format_storage() { # <dir> <cluster id>
	local dir=$1
	if [ -f "$dir/data/meta.properties" ]; then return; fi
	log "formatting the storage in $dir/data"
	# shellcheck disable=SC2046
	if ! java $(java_opts "$dir") -cp "$LIBS/*" kafka.tools.StorageTool format \
		-t "$2" -c "$dir/server.properties" >"$dir/format.log" 2>&1 9>&-; then
		tail -n 20 "$dir/format.log" >&2
		die "formatting $dir/data failed"
	fi
}

# launch <dir> <name> <max heap> <port>...: starts the node in the
# background, detached from this shell, and records its pid. Its ports
# must be free.
launch() {
	local dir=$1 name=$2 heap=$3 port
	shift 3
	if ours "$dir" >/dev/null; then return; fi
	for port in "$@"; do
		if port_open "$port"; then
			echo "kafka: 127.0.0.1:$port is taken by something that is not $name started by this script" \
				"($(ss -ltnpH "sport = :$port" 2>/dev/null | awk '{print $NF}' | head -n 1)); stop it or free the port" >&2
			return 1
		fi
	done
	[ -f "$dir/broker.log" ] && mv "$dir/broker.log" "$dir/broker.log.1"
	log "starting $name on 127.0.0.1:$1"
	# shellcheck disable=SC2046
	setsid java $(java_opts "$dir" "$heap") -cp "$LIBS/*" kafka.Kafka "$dir/server.properties" \
		</dev/null >"$dir/broker.log" 2>&1 9>&- &
	echo $! >"$dir/broker.pid"
}

# wait_ready <dir> <port> <name>: until the node accepts connections and
# has logged that it started (0), or it died or the timeout passed (1,
# saying why, with the log's first error and last lines).
wait_ready() {
	local dir=$1 port=$2 name=$3 deadline=$((SECONDS + START_TIMEOUT)) why pid
	pid=$(cat "$dir/broker.pid")
	while [ $SECONDS -lt $deadline ]; do
		# The pid, not ours(): right after the fork it is still a copy of
		# this shell, not yet java.
		if ! kill -0 "$pid" 2>/dev/null; then
			why="exited while starting"
			break
		fi
		if port_open "$port" && grep -q 'Kafka Server started' "$dir/broker.log" && ours "$dir" >/dev/null; then return 0; fi
		sleep 0.3
	done
	why=${why:-"did not answer on 127.0.0.1:$port within ${START_TIMEOUT}s"}
	{
		echo "kafka: $name $why; last lines of $dir/broker.log:"
		tail -n 15 "$dir/broker.log"
		local first
		first=$(grep -m 1 -E 'ERROR|Exception' "$dir/broker.log" | cut -c1-300 || true)
		echo "kafka: $name $why${first:+; first error: $first}"
	} >&2
	return 1
}

# stop_nodes <grace> <name> <dir>...: SIGTERM to every node at once, then
# SIGKILL to any still running after <grace> seconds. A cluster's last
# nodes wait for a controller quorum that is gone, so its grace is short.
stop_nodes() {
	local grace=$1 name=$2 dir pid pids=()
	shift 2
	for dir in "$@"; do
		if pid=$(ours "$dir"); then
			log "stopping $name in $dir (pid $pid)"
			kill -TERM "$pid"
			pids+=("$pid")
		else
			log "$name in $dir is not running"
		fi
		rm -f "$dir/broker.pid"
	done
	local deadline=$((SECONDS + grace))
	for pid in ${pids[@]+"${pids[@]}"}; do
		while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.3; done
		if kill -0 "$pid" 2>/dev/null; then
			log "pid $pid still running ${grace}s after SIGTERM; killing it"
			kill -KILL "$pid" 2>/dev/null || true
		fi
	done
}

# One start/stop at a time per cache directory: two concurrent `make test`
# runs must not format or launch twice.
lock() {
	mkdir -p "$CACHE"
	exec 9>"$CACHE/.lock"
	flock 9
}

single_dir() { echo "$CACHE/single"; }
second_dir() { echo "$CACHE/second"; }
node_dir() { echo "$CACHE/cluster/node$1"; }

# up_node <dir> <name> <cluster id> <max heap> <port> <controller port>
# [test listeners]: launches a single node unless it already runs with
# these settings, and adds its dir to LAUNCHED; the caller waits for it.
LAUNCHED=()
up_node() {
	local dir=$1 name=$2 id=$3 heap=$4 port=$5 cport=$6 extra=${7:-}
	local want ports=("$port" "$cport")
	want=$(write_props "$dir" 1 "$port" "$cport" "1@127.0.0.1:$cport" 1 "$extra")
	[ -n "$extra" ] && ports+=("$SASL_PORT" "$GATED_PORT")
	if ours "$dir" >/dev/null && port_open "$port"; then
		if [ "$want" = "$(cat "$dir/server.properties")" ]; then
			log "$name is running on 127.0.0.1:$port"
			return
		fi
		# Started by an older version of this script: tests may need a
		# listener or setting it lacks.
		log "the running $name's settings differ from this script's; restarting it"
		stop_nodes 30 "$name" "$dir"
	fi
	command -v java >/dev/null 2>&1 || die "java not found; run scripts/services.sh, which installs it"
	fetch_libs
	mkdir -p "$dir/data"
	printf '%s\n' "$want" >"$dir/server.properties"
	format_storage "$dir" "$id"
	launch "$dir" "$name" "$heap" "${ports[@]}" || return 1
	LAUNCHED+=("$dir|$port|$name")
}

# start_singles: both single nodes, launched before either is waited for,
# so a cold start costs one JVM start of wall time, not two. A node that
# fails is stopped; the other is left running.
start_singles() {
	local rc=0 entry dir port name
	up_node "$(single_dir)" "the Kafka broker" "$SINGLE_ID" "$HEAP" "$PORT" "$CONTROLLER_PORT" test-listeners || rc=1
	up_node "$(second_dir)" "the second Kafka broker" "$SECOND_ID" "$SECOND_HEAP" "$SECOND_PORT" "$SECOND_CONTROLLER_PORT" || rc=1
	for entry in ${LAUNCHED[@]+"${LAUNCHED[@]}"}; do
		IFS='|' read -r dir port name <<<"$entry"
		if ! wait_ready "$dir" "$port" "$name"; then
			stop_nodes 5 "$name" "$dir" >/dev/null
			rc=1
			continue
		fi
		log "$name is ready on 127.0.0.1:$port, log $dir/broker.log"
	done
	[ $rc -eq 0 ] || exit 1
	log "ready: 127.0.0.1:$PORT (SASL/PLAIN on $SASL_PORT, gated $GATED_PORT advertised as $GATED_ADVERTISED_PORT)," \
		"second cluster 127.0.0.1:$SECOND_PORT"
}

start_cluster() {
	command -v java >/dev/null 2>&1 || die "java not found; run scripts/services.sh, which installs it"
	fetch_libs
	local voters="" n
	for n in "${CLUSTER_NODES[@]}"; do
		voters+="${voters:+,}$n@127.0.0.1:$(cluster_controller_port "$n")"
	done
	for n in "${CLUSTER_NODES[@]}"; do
		local dir
		dir=$(node_dir "$n")
		if ours "$dir" >/dev/null; then continue; fi
		mkdir -p "$dir/data"
		write_props "$dir" "$n" "$(cluster_port "$n")" "$(cluster_controller_port "$n")" "$voters" 3 >"$dir/server.properties"
		format_storage "$dir" "$CLUSTER_ID"
	done
	# All three at once: none is ready before a quorum of controllers is.
	# One failing stops the others: no half cluster is left behind.
	local dirs=("$(node_dir 1)" "$(node_dir 2)" "$(node_dir 3)")
	for n in "${CLUSTER_NODES[@]}"; do
		if ! launch "$(node_dir "$n")" "cluster node $n" "$CLUSTER_HEAP" "$(cluster_port "$n")" "$(cluster_controller_port "$n")"; then
			stop_nodes 8 "cluster node" "${dirs[@]}" >/dev/null
			exit 1
		fi
	done
	for n in "${CLUSTER_NODES[@]}"; do
		if ! wait_ready "$(node_dir "$n")" "$(cluster_port "$n")" "cluster node $n"; then
			stop_nodes 8 "cluster node" "${dirs[@]}" >/dev/null
			exit 1
		fi
	done
	local addrs=""
	for n in "${CLUSTER_NODES[@]}"; do addrs+="${addrs:+,}127.0.0.1:$(cluster_port "$n")"; done
	log "cluster ready: $addrs (replication factor 3, min.insync.replicas 2)"
}

status_node() { # <dir> <port> <name>
	local pid
	if pid=$(ours "$1") && port_open "$2"; then
		log "$3 is running on 127.0.0.1:$2 (pid $pid)"
		return 0
	fi
	if port_open "$2"; then
		log "127.0.0.1:$2 is taken by something this script did not start"
	else
		log "$3 is not running"
	fi
	return 1
}

case ${1:-} in
start) lock; start_singles ;;
stop)
	lock
	stop_nodes 30 "Kafka broker" "$(single_dir)" "$(second_dir)"
	# The cluster the soak started goes too (scripts/services.sh stop
	# stops everything its tests started); only its running nodes.
	running=()
	for n in "${CLUSTER_NODES[@]}"; do
		if ours "$(node_dir "$n")" >/dev/null; then running+=("$(node_dir "$n")"); fi
	done
	if [ ${#running[@]} -gt 0 ]; then stop_nodes 8 "cluster node" "${running[@]}"; fi
	;;
status)
	rc=0
	status_node "$(single_dir)" "$PORT" "the Kafka broker" || rc=1
	status_node "$(second_dir)" "$SECOND_PORT" "the second Kafka broker" || rc=1
	exit $rc
	;;
start-cluster) lock; start_cluster ;;
stop-cluster)
	lock
	stop_nodes 8 "cluster node" "$(node_dir 1)" "$(node_dir 2)" "$(node_dir 3)"
	;;
kill-node | stop-node)
	n=${2:-}
	[[ $n =~ ^[123]$ ]] || die "usage: $0 $1 1|2|3"
	lock
	dir=$(node_dir "$n")
	pid=$(ours "$dir") || die "cluster node $n is not running (or not started by this script)"
	if [ "$1" = kill-node ]; then
		log "killing cluster node $n (pid $pid, SIGKILL)"
		kill -KILL "$pid"
		while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done
		rm -f "$dir/broker.pid"
	else
		# The other two keep the controller quorum: a controlled shutdown
		# finishes well inside the grace.
		stop_nodes 30 "cluster node $n" "$dir"
	fi
	;;
status-cluster)
	rc=0
	for n in "${CLUSTER_NODES[@]}"; do status_node "$(node_dir "$n")" "$(cluster_port "$n")" "cluster node $n" || rc=1; done
	exit $rc
	;;
*) die "usage: $0 start|stop|status|start-cluster|stop-cluster|status-cluster|kill-node N|stop-node N" ;;
esac
