package postgres_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenantwire/tenantwire/adapters/postgres"
	"github.com/tenantwire/tenantwire/internal/testsvc"
	"github.com/tenantwire/tenantwire/modules"
	"github.com/tenantwire/tenantwire/naming"
	"github.com/tenantwire/tenantwire/routing"
	"github.com/tenantwire/tenantwire/tenancy"
	"github.com/tenantwire/tenantwire/tenancytest"
)

// dedicatedPools is a routed module rated dedicated over resolve, for
// tests that take and hold a tenant's client with Client.Pool.
func dedicatedPools(t *testing.T, resolve routing.Resolver) *postgres.Client {
	t.Helper()
	return start(t, postgres.Module("pg", postgres.Routed(resolve, postgres.RoutedConfig{Limits: routing.Limits{MaxClients: 4, MaxConnsPerClient: 1}}),
		modules.RequiredIsolation(tenancy.Dedicated),
		postgres.Document[item]("docs", postgres.DocumentConfig{Read: naming.Shared("docs")})))
}

// TestMovedTenantKeepsItsOldDatabaseWhileItsClientIsOpen: a tenant that
// moved to another database while it still holds a client open on its old
// one keeps that database claimed: another tenant resolving to it, under
// a spelling the names tell apart or one only the server's identity
// joins, is refused until the old client is released and closed, and is
// served then.
func TestMovedTenantKeepsItsOldDatabaseWhileItsClientIsOpen(t *testing.T) {
	names, _ := databases(t, 2, "")
	old, next := names[0], names[1]
	loginNamedAfter(t, superuser(t), old) // "default database" reaches old
	oldSpell, nextSpell := spellings(t, old), spellings(t, next)
	b, c := tenancytest.TenantB, tenancytest.FreshTenant(t)
	var moved atomic.Bool
	resolve := func(_ context.Context, tn tenancy.ID) (routing.Credentials, error) {
		switch {
		case tn == tenancytest.TenantA && moved.Load():
			return nextSpell["url"], nil
		case tn == tenancytest.TenantA:
			return oldSpell["url"], nil
		case tn == b:
			return oldSpell["localhost"], nil
		case tn == c:
			return oldSpell["default database"], nil
		}
		return routing.Credentials{}, fmt.Errorf("unknown tenant %s", tn)
	}
	cl := dedicatedPools(t, resolve)
	ctx := context.Background()
	ctxA := tenancy.WithTenant(ctx, tenancytest.TenantA)
	poolA, releaseOld, err := cl.Pool(ctxA)
	if err != nil {
		t.Fatal(err)
	}
	var released sync.Once
	releaseA := func() { released.Do(releaseOld) }
	defer releaseA()
	if err := poolA.Ping(ctx); err != nil {
		t.Fatal(err)
	}
	moved.Store(true)
	cl.Evict(tenancytest.TenantA)
	poolNext, releaseNext, err := cl.Pool(ctxA)
	if err != nil {
		t.Fatalf("A moving to its new database: %v", err)
	}
	var db string
	err = poolNext.QueryRow(ctx, "SELECT current_database()").Scan(&db)
	releaseNext()
	if err != nil || db != next {
		t.Fatalf("A after its move runs on %q (%v), want %q", db, err, next)
	}
	for _, tn := range []tenancy.ID{b, c} {
		_, rel, err := cl.Pool(tenancy.WithTenant(ctx, tn))
		if rel != nil {
			rel()
		}
		requireSharedTarget(t, fmt.Sprintf("tenant %s on A's old database while A's old client is open", tn), err)
	}
	releaseA()
	// The old client closes off the lock once released; its claims go then.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, rel, err := cl.Pool(tenancy.WithTenant(ctx, b))
		if err == nil {
			rel()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("A's old database still claimed after its old client closed: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// forwarder is a TCP proxy whose destination the test moves: credentials
// naming it stay the same while the server behind them changes, as a DNS
// name or a virtual IP moved to another server does.
type forwarder struct {
	ln net.Listener
	to atomic.Pointer[string]
}

func forward(t *testing.T, to string) *forwarder {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &forwarder{ln: ln}
	f.to.Store(&to)
	var conns sync.WaitGroup
	t.Cleanup(func() { _ = ln.Close(); conns.Wait() })
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Go(func() {
				defer in.Close()
				out, err := net.Dial("tcp", *f.to.Load())
				if err != nil {
					return
				}
				defer out.Close()
				go func() { _, _ = io.Copy(out, in); _ = out.Close() }()
				_, _ = io.Copy(in, out)
			})
		}
	}()
	return f
}

// TestSameNamesOtherServerIsCheckedAgain: a tenant whose credentials keep
// their names while the server behind them changes (here a proxy moved
// from the first test server to the second) has the new client's claim
// checked again: when the database the server now reports is another
// tenant's, it is refused before any statement, however unchanged the
// names are.
func TestSameNamesOtherServerIsCheckedAgain(t *testing.T) {
	ctx := context.Background()
	db := "tw_move_" + unique()
	var hosts []string
	for _, base := range []string{testsvc.PostgresURL(t), testsvc.PostgresSecondURL(t)} {
		su, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Fatal(err)
		}
		exec(t, su, "CREATE DATABASE "+db)
		t.Cleanup(func() {
			exec(t, su, "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)")
			su.Close(ctx)
		})
		u, _ := url.Parse(base)
		hosts = append(hosts, u.Host)
	}
	proxy := forward(t, hosts[0])
	at := func(host string) routing.Credentials {
		return routing.Credentials{Endpoint: fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable", host, db)}
	}
	cl := dedicatedPools(t, resolverOf(map[tenancy.ID]routing.Credentials{
		tenancytest.TenantA: at(proxy.ln.Addr().String()),
		tenancytest.TenantB: at(hosts[1]),
	}))
	ctxA, ctxB := tenancy.WithTenant(ctx, tenancytest.TenantA), tenancy.WithTenant(ctx, tenancytest.TenantB)
	for _, c := range []context.Context{ctxA, ctxB} {
		p, rel, err := cl.Pool(c)
		if err != nil {
			t.Fatal(err)
		}
		err = p.Ping(ctx)
		rel()
		if err != nil {
			t.Fatal(err)
		}
	}
	proxy.to.Store(&hosts[1])
	cl.Evict(tenancytest.TenantA) // A's next call opens a new client, through the moved proxy
	p, rel, err := cl.Pool(ctxA)
	if err == nil {
		var sys int64
		qerr := p.QueryRow(ctx, "SELECT system_identifier FROM pg_control_system()").Scan(&sys)
		rel()
		t.Fatalf("A, its names unchanged, was served B's database on the second server (system %d, %v)", sys, qerr)
	}
	requireSharedTarget(t, "A's new client reaching B's database", err)
}
