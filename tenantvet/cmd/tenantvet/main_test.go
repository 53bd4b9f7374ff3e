package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestService runs the built binary, standalone and as go vet's
// -vettool, over testdata/service, a module that imports the real
// tenantwire packages (not stubs): every MISTAKE marker must be found by
// the check it names, and nothing else may be reported.
func TestService(t *testing.T) {
	if testing.Short() {
		t.Skip("builds tenantvet and type-checks the library: skipped under -short")
	}
	bin := filepath.Join(t.TempDir(), "tenantvet")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	want := markers(t, "testdata/service/orders.go")
	for _, args := range [][]string{{bin, "./..."}, {"go", "vet", "-vettool=" + bin, "./..."}} {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir = "testdata/service"
		out, err := cmd.CombinedOutput()
		if err == nil {
			t.Fatalf("%v exited 0 over planted mistakes:\n%s", args, out)
		}
		got := findings(string(out))
		if !slices.Equal(got, want) {
			t.Errorf("%v found\n%v\nwant\n%v\noutput:\n%s", args[:2], got, want, out)
		}
	}
}

var finding = regexp.MustCompile(`orders\.go:(\d+):\d+: (\w+): `)

func findings(out string) []string {
	var got []string
	for _, m := range finding.FindAllStringSubmatch(out, -1) {
		got = append(got, m[1]+" "+m[2])
	}
	slices.SortFunc(got, byLine)
	return got
}

func markers(t *testing.T, path string) []string {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var want []string
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		if _, check, ok := strings.Cut(sc.Text(), "// MISTAKE "); ok {
			want = append(want, strconv.Itoa(line)+" "+check)
		}
	}
	slices.SortFunc(want, byLine)
	return want
}

func byLine(a, b string) int {
	la, _ := strconv.Atoi(strings.Fields(a)[0])
	lb, _ := strconv.Atoi(strings.Fields(b)[0])
	return la - lb
}
