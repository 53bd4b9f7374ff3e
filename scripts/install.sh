# Sourced by the service scripts: installing what the test servers need
# with apt-get, and reading a PostgreSQL URL. The caller defines log().

as_root() {
	if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

apt_updated=0
apt_install() {
	if [ "$apt_updated" -eq 0 ]; then
		as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
		apt_updated=1
	fi
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

# Kafka and Neo4j run on the JVM from Maven Central artifacts; the Neo4j
# launcher is compiled, so a JDK, not only a runtime.
ensure_jvm() {
	if command -v java >/dev/null 2>&1 && command -v javac >/dev/null 2>&1 && command -v mvn >/dev/null 2>&1; then return; fi
	log "installing a JDK and Maven"
	apt_install openjdk-17-jdk-headless maven
}

# mvn_locked runs Maven holding a lock on the local repository (~/.m2),
# which Maven itself does not lock: scripts/services.sh starts Kafka and
# Neo4j at once, and on a first start both fetch from Maven Central.
mvn_locked() {
	mkdir -p "$HOME/.m2"
	flock "$HOME/.m2/.tenantwire.lock" mvn "$@"
}

# start_pg_cluster <version> <cluster> starts a local test cluster. A server
# killed rather than stopped (its process killed, the machine shut down)
# recovers on its next start, and by default first fsyncs its data
# directory file by file: minutes for the scale benchmark's thousand
# databases, past pg_ctl's one-minute wait.
# One syncfs call does the same in seconds, and the wait allows for the rest.
start_pg_cluster() {
	local version=$1 cluster=$2
	if [ "${version%%.*}" -ge 14 ] &&
		[ "$(as_root pg_conftool -s "$version" "$cluster" show recovery_init_sync_method 2>/dev/null)" != syncfs ]; then
		log "setting recovery_init_sync_method = syncfs in /etc/postgresql/$version/$cluster/postgresql.conf"
		as_root pg_conftool "$version" "$cluster" set recovery_init_sync_method syncfs
	fi
	as_root pg_ctlcluster --skip-systemctl-redirect "$version" "$cluster" start -- -t 600
}

# parse_pg_url sets PGHOST, PGPORT, PGUSER and TEST_DB from a
# postgres://[user[:password]@]host[:port][/db][?params] URL.
parse_pg_url() {
	local rest=${1#*://} hostport
	rest=${rest%%\?*}
	if [[ $rest == *@* ]]; then
		PGUSER=${rest%%@*}
		PGUSER=${PGUSER%%:*}
		rest=${rest#*@}
	fi
	hostport=${rest%%/*}
	[[ $rest == */* && -n ${rest#*/} ]] && TEST_DB=${rest#*/}
	if [[ $hostport == \[* ]]; then # [ipv6]:port
		PGHOST=${hostport%%]*}
		PGHOST=${PGHOST#[}
		[[ $hostport == *]:* ]] && PGPORT=${hostport##*]:}
	else
		PGHOST=${hostport%%:*}
		[[ $hostport == *:* ]] && PGPORT=${hostport##*:}
	fi
	[ -n "$PGHOST" ] || PGHOST=127.0.0.1
}
