package testsvc

import (
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// PgBouncerURL is the superuser URL of the test database through the test
// PgBouncer (scripts/services.sh: 127.0.0.1:6432, transaction pooling, in
// front of PostgresURL's server).
func PgBouncerURL(t testing.TB) string {
	t.Helper()
	return locate(t, "PgBouncer", "TENANTWIRE_PGBOUNCER_URL", "postgres://postgres@127.0.0.1:6432/tenantwire_test?sslmode=disable", "")
}

// StartPgBouncer starts a PgBouncer of the test's own on a free loopback
// port, in transaction pooling mode in front of PostgresURL's server, with
// extra lines added to its [pgbouncer] section, and returns the URL of
// the test database through it; databases names its [databases] lines
// (default: every database, on that server). It is killed when the test
// ends. For tests that need a pooler set up otherwise than the shared one
// (round-robin server choice, a forced user). Without pgbouncer it skips,
// or fails under CI.
func StartPgBouncer(t testing.TB, databases string, extra ...string) string {
	t.Helper()
	bin, err := exec.LookPath("pgbouncer")
	if err != nil {
		Missing(t, "pgbouncer is not installed; scripts/services.sh installs it")
	}
	pg, err := url.Parse(PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	if databases == "" {
		databases = "* = host=" + pg.Hostname() + " port=" + pg.Port()
	}
	dir := pgbouncerDir(t)
	port := FreePort(t)
	ini := writePgBouncerConfig(t, dir, databases, port, pg.User.Username(), extra)
	addr := "127.0.0.1:" + port
	logPath := filepath.Join(dir, "pgbouncer.log")
	startPgBouncer(t, bin, ini, logPath)
	if err := awaitListening(addr, 10*time.Second); err != nil {
		out, _ := os.ReadFile(logPath)
		t.Fatalf("private pgbouncer did not start: %v\n%s", err, out)
	}
	u := *pg
	u.Host = addr
	return u.String()
}

// pgbouncerDir is a directory for the pooler's files, removed when the
// test ends, readable by the user PgBouncer runs as (not root: it refuses).
func pgbouncerDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pgbouncer")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// writePgBouncerConfig writes pgbouncer.ini (listening on port, the
// [databases] lines, extra appended to [pgbouncer]) and the user list of
// auth_user into dir, and returns the ini's path.
func writePgBouncerConfig(t testing.TB, dir, databases, port, user string, extra []string) string {
	t.Helper()
	lines := []string{
		"[databases]", databases, "",
		"[pgbouncer]",
		"listen_addr = 127.0.0.1", "listen_port = " + port, "unix_socket_dir =",
		"pool_mode = transaction",
		// Trust, as the test server has it; unknown users are looked up
		// through the server, so the tenant roles a test makes log in.
		"auth_type = trust", "auth_file = " + filepath.Join(dir, "userlist.txt"), "auth_user = " + user,
		"logfile =", "syslog = 0",
	}
	lines = append(lines, extra...)
	ini := filepath.Join(dir, "pgbouncer.ini")
	if err := os.WriteFile(ini, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "userlist.txt"), []byte(fmt.Sprintf("%q \"\"\n", user)), 0o644); err != nil {
		t.Fatal(err)
	}
	return ini
}

// startPgBouncer starts bin on ini, logging to logPath, as the postgres
// user when the test runs as root (PgBouncer will not run as root), and
// kills it when the test ends.
func startPgBouncer(t testing.TB, bin, ini, logPath string) {
	t.Helper()
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close() // the process keeps its own descriptor
	cmd := exec.Command(bin, ini)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	dieWithTest(cmd)
	if os.Geteuid() == 0 {
		if err := runAs(cmd, "postgres"); err != nil {
			t.Fatal(err)
		}
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { kill(cmd) })
}
