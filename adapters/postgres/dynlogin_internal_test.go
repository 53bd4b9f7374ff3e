package postgres

import (
	"context"
	"encoding/base64"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tenantwire/tenantwire/internal/testsvc"
)

// TestScramVerifierMatchesServer: the server hashes a password itself; our
// verifier for the same password, salt and iterations must be identical.
func TestScramVerifierMatchesServer(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, testsvc.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }() // the role never outlives the test
	const pw = "c2VjcmV0LXBhc3N3b3Jk_-x"
	for _, s := range []string{"SET LOCAL password_encryption = 'scram-sha-256'", "CREATE ROLE tw_scram_probe PASSWORD '" + pw + "'"} {
		if _, err := tx.Exec(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	var server string
	if err := tx.QueryRow(ctx, "SELECT rolpassword FROM pg_authid WHERE rolname = 'tw_scram_probe'").Scan(&server); err != nil {
		t.Fatal(err)
	}
	// SCRAM-SHA-256$<iter>:<salt>$<stored>:<server>
	head, _, _ := strings.Cut(strings.TrimPrefix(server, "SCRAM-SHA-256$"), "$")
	iterText, saltText, _ := strings.Cut(head, ":")
	iter, err := strconv.Atoi(iterText)
	if err != nil {
		t.Fatal(err)
	}
	salt, err := base64.StdEncoding.DecodeString(saltText)
	if err != nil {
		t.Fatal(err)
	}
	ours, err := scramVerifier(pw, salt, iter)
	if err != nil || ours != server {
		t.Errorf("verifier mismatch:\n ours   %s\n server %s (%v)", ours, server, err)
	}
}
