// Package mongo_test runs the MongoDB adapter against a real MongoDB wire
// protocol: two FerretDB instances embedded in the test process (SQLite
// backend), or a real MongoDB when MONGODB_URI is set.
package mongo_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"testing"
	"time"

	"github.com/FerretDB/FerretDB/ferretdb"
	driver "go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.uber.org/fx"
)

// uriA and uriB are two separate servers for the dedicated tier; with
// MONGODB_URI they are the same server and tenants get distinct databases.
var (
	uriA, uriB string
	realMongo  bool
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if u := os.Getenv("MONGODB_URI"); u != "" {
		uriA, uriB, realMongo = u, u, true
		return m.Run()
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stops []func()
	defer func() {
		cancel()
		for _, s := range stops {
			s()
		}
	}()
	for _, uri := range []*string{&uriA, &uriB} {
		u, stop, err := startFerretDB(ctx)
		if err != nil {
			fmt.Fprintln(os.Stderr, "starting FerretDB:", err)
			return 1
		}
		*uri = u
		stops = append(stops, stop)
	}
	return m.Run()
}

// startFerretDB runs one FerretDB on 127.0.0.1 with a random free port and
// a temporary SQLite directory.
func startFerretDB(ctx context.Context) (string, func(), error) {
	dir, err := os.MkdirTemp("", "tenantwire-ferretdb-")
	if err != nil {
		return "", nil, err
	}
	port, err := freePort()
	if err != nil {
		return "", nil, err
	}
	f, err := ferretdb.New(&ferretdb.Config{
		Listener:  ferretdb.ListenerConfig{TCP: fmt.Sprintf("127.0.0.1:%d", port)},
		Handler:   "sqlite",
		SQLiteURL: "file:" + dir + "/",
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		return "", nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = f.Run(ctx)
	}()
	stop := func() {
		cancel()
		<-done
		_ = os.RemoveAll(dir)
	}
	return f.MongoDBURI(), stop, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// freshName is a database name (or per-tenant prefix) no other test or
// earlier run used, so tests never see each other's documents on a shared
// server.
func freshName() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "tw" + hex.EncodeToString(b[:])
}

func client(t testing.TB, uri string) *driver.Client {
	t.Helper()
	c, err := driver.Connect(options.Client().ApplyURI(uri).SetTimeout(30 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	return c
}

// start builds and starts an app, stopping it when the test ends.
func start(t testing.TB, opts ...fx.Option) {
	t.Helper()
	app := fx.New(append([]fx.Option{fx.NopLogger}, opts...)...)
	if err := app.Err(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := app.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Stop(context.Background()) })
}

// named populates dst with the value provided under name:"<name>".
func named[T any](name string, dst *T) fx.Option {
	return fx.Invoke(fx.Annotate(func(v T) { *dst = v }, fx.ParamTags(`name:"`+name+`"`)))
}
