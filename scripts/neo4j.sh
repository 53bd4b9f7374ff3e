#!/usr/bin/env bash
# Runs the Neo4j test servers for the adapter's real-server tests: four
# embedded Neo4j Community instances (scripts/neo4j/, built with Maven from
# Maven Central), Bolt on 127.0.0.1:7687 to 127.0.0.1:7690, auth disabled.
# The second one serves the dedicated tier (two tenants on two servers);
# the third and fourth are the dedicated archive tests' own, since a
# dedicated tenant owns its server's one database whole.
#
#   scripts/neo4j.sh start    build once (cached), start what is not running, wait for Bolt
#   scripts/neo4j.sh stop     stop the instances this script started (pid files)
#   scripts/neo4j.sh status   say what runs where
#
# Idempotent. The build is cached under $TENANTWIRE_CACHE (default
# ~/.cache/tenantwire) keyed on the launcher's pom and source, so a later
# start neither downloads nor compiles. Each fresh start begins with an
# empty store. A port held by anything else is reported, never taken over.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$HERE/neo4j
PORTS=(${TENANTWIRE_NEO4J_PORTS:-7687 7688 7689 7690})
CACHE_ROOT=${TENANTWIRE_CACHE:-$HOME/.cache/tenantwire}
RUN_ROOT=$CACHE_ROOT/neo4j-run
HEAP=${TENANTWIRE_NEO4J_HEAP:-512m}
START_TIMEOUT=${TENANTWIRE_NEO4J_START_TIMEOUT:-180} # seconds
MAIN=tenantwire.neo4j.Launcher

log() { echo "neo4j: $*"; }
die() { echo "neo4j: $*" >&2; exit 1; }

# shellcheck source=install.sh
. "$HERE/install.sh"

version() { sed -n 's:.*<neo4j.version>\(.*\)</neo4j.version>.*:\1:p' "$SRC/pom.xml"; }

# The cache directory for this pom and launcher source: a changed pom or
# source builds anew, an unchanged one never touches Maven again.
build_dir() {
	local key
	key=$(cat "$SRC/pom.xml" "$SRC/src/main/java/tenantwire/neo4j/Launcher.java" | sha256sum | cut -c1-12)
	echo "$CACHE_ROOT/neo4j-$(version)-$key"
}

build() {
	local dir=$1
	if [ -f "$dir/.built" ]; then return; fi
	ensure_jvm
	log "building the launcher (Neo4j $(version)) into $dir"
	local tmp=$dir.tmp.$$
	rm -rf "$tmp"
	mkdir -p "$tmp/classes"
	mvn_locked -B -q -Dstyle.color=never -f "$SRC/pom.xml" dependency:copy-dependencies \
		-DincludeScope=runtime -DoutputDirectory="$tmp/lib" ||
		{ rm -rf "$tmp"; die "maven could not fetch the Neo4j artifacts (see above)"; }
	javac --release 17 -nowarn -cp "$tmp/lib/*" -d "$tmp/classes" \
		"$SRC/src/main/java/tenantwire/neo4j/Launcher.java" ||
		{ rm -rf "$tmp"; die "the launcher did not compile (see above)"; }
	touch "$tmp/.built"
	rm -rf "$dir"
	mv "$tmp" "$dir"
}

pid_file() { echo "$RUN_ROOT/$1/neo4j.pid"; }
log_file() { echo "$RUN_ROOT/$1/neo4j.log"; }

# The pid of our launcher on this port, or nothing. A stale pid file (the
# process died, or the pid now belongs to something else) does not count.
our_pid() {
	local f pid
	f=$(pid_file "$1")
	[ -f "$f" ] || return 0
	pid=$(cat "$f")
	if [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] &&
		tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "$MAIN $1 "; then
		echo "$pid"
	fi
}

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# A Bolt handshake: the magic preamble and a proposal of 5.0-5.4; a Bolt
# server answers with the four bytes of the version it picked.
bolt_answers() {
	timeout 3 bash -c '
		exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
		printf "\x60\x60\xb0\x17\x00\x04\x04\x05\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" >&3
		v=$(head -c 4 <&3 | od -An -tx1 | tr -d " \n")
		[ -n "$v" ] && [ "$v" != 00000000 ]' _ "$1" 2>/dev/null
}

holder() { # what listens on a port, for the error message
	ss -Hltnp "sport = :$1" 2>/dev/null | sed 's/.*users:/users:/' | head -n 1
}

# Launches the instance on a port unless ours already runs there; adds
# "port:pid" to WAIT for the ready check. Both launch before either is
# waited for, so their start-ups overlap.
WAIT=()
start_one() {
	local port=$1 dir=$2 pid
	pid=$(our_pid "$port")
	if [ -n "$pid" ]; then
		if bolt_answers "$port"; then log "running on 127.0.0.1:$port (pid $pid)"; return 0; fi
		# Ours but still starting (another start is waiting on it): wait too.
		WAIT+=("$port:$pid")
		return
	fi
	if port_open "$port"; then
		die "127.0.0.1:$port is taken by something that is not this script's Neo4j ($(holder "$port")); stop it or set TENANTWIRE_NEO4J_PORTS"
	fi
	local run=$RUN_ROOT/$port
	# A test server starts empty: nothing left by earlier runs, no store
	# to recover or migrate after a kill or a version change.
	rm -rf "$run/data"
	mkdir -p "$run/data"
	log "starting on 127.0.0.1:$port (data $run/data, log $(log_file "$port"))"
	# setsid: the server outlives this script and the shell that ran it;
	# 9>&-: it must not hold the script's lock.
	setsid nohup java -Xms128m -Xmx"$HEAP" -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
		-cp "$dir/classes:$dir/lib/*" "$MAIN" "$port" "$run/data" \
		>"$(log_file "$port")" 2>&1 </dev/null 9>&- &
	echo $! >"$(pid_file "$port")"
	WAIT+=("$port:$!")
}

wait_ready() {
	local port=$1 pid=$2 deadline=$((SECONDS + START_TIMEOUT))
	while [ "$SECONDS" -lt "$deadline" ]; do
		if ! kill -0 "$pid" 2>/dev/null; then
			echo "neo4j: the server on 127.0.0.1:$port exited during start-up; last lines of $(log_file "$port"):" >&2
			tail -n 30 "$(log_file "$port")" >&2 || true
			rm -f "$(pid_file "$port")"
			exit 1
		fi
		if bolt_answers "$port"; then
			log "ready on bolt://127.0.0.1:$port (pid $pid)"
			return 0
		fi
		sleep 1
	done
	echo "neo4j: the server on 127.0.0.1:$port did not answer Bolt within ${START_TIMEOUT}s; stopping it. Last lines of $(log_file "$port"):" >&2
	tail -n 30 "$(log_file "$port")" >&2 || true
	stop_one "$port"
	exit 1
}

stop_one() {
	local port=$1 pid
	pid=$(our_pid "$port")
	if [ -z "$pid" ]; then
		rm -f "$(pid_file "$port")"
		log "not running on 127.0.0.1:$port (nothing of ours to stop)"
		return 0
	fi
	log "stopping 127.0.0.1:$port (pid $pid)"
	kill -TERM "$pid" 2>/dev/null || true
	for _ in $(seq 1 60); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.5
	done
	if kill -0 "$pid" 2>/dev/null; then
		log "pid $pid ignored SIGTERM for 30s; killing it"
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -f "$(pid_file "$port")"
}

status_one() {
	local port=$1 pid
	pid=$(our_pid "$port")
	if [ -n "$pid" ]; then
		if bolt_answers "$port"; then
			log "running on bolt://127.0.0.1:$port (pid $pid)"
		else
			log "starting on 127.0.0.1:$port (pid $pid, Bolt not answering yet)"
		fi
		return 0
	fi
	if port_open "$port"; then
		log "127.0.0.1:$port is taken by something that is not this script's Neo4j ($(holder "$port"))"
		return 1
	fi
	log "stopped on 127.0.0.1:$port"
	return 3
}

# One start or stop at a time: two concurrent starts would both launch and
# the loser would overwrite the winner's pid file.
lock() {
	mkdir -p "$RUN_ROOT"
	exec 9>"$RUN_ROOT/.lock"
	flock -w "$START_TIMEOUT" 9 || die "another scripts/neo4j.sh holds $RUN_ROOT/.lock"
}

cmd=${1:-}
case "$cmd" in
start)
	lock
	dir=$(build_dir)
	build "$dir"
	for p in "${PORTS[@]}"; do start_one "$p" "$dir"; done
	for w in "${WAIT[@]}"; do wait_ready "${w%%:*}" "${w#*:}"; done
	;;
stop)
	lock
	for p in "${PORTS[@]}"; do stop_one "$p"; done
	;;
status)
	rc=0
	for p in "${PORTS[@]}"; do status_one "$p" || rc=$?; done
	exit "$rc"
	;;
*)
	echo "usage: $0 start|stop|status" >&2
	exit 2
	;;
esac
