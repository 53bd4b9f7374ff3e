package postgres

import (
	"slices"
	"testing"
)

func TestSplitStatements(t *testing.T) {
	body := `CREATE TABLE a (x text DEFAULT 'a;b'); -- c;d
/* e;f */ CREATE FUNCTION g() RETURNS int AS $fn$ BEGIN RETURN 1; END $fn$ LANGUAGE plpgsql;
UPDATE "we;ird" SET x = $1;;
SELECT 1`
	want := []string{
		`CREATE TABLE a (x text DEFAULT 'a;b')`,
		"-- c;d\n/* e;f */ CREATE FUNCTION g() RETURNS int AS $fn$ BEGIN RETURN 1; END $fn$ LANGUAGE plpgsql",
		`UPDATE "we;ird" SET x = $1`,
		`SELECT 1`,
	}
	if got := splitStatements(body); !slices.Equal(got, want) {
		t.Fatalf("got %q", got)
	}
}
