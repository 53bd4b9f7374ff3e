// Command tenantwire prints the capability matrix of every backend the
// project ships and explains error codes.
//
//	tenantwire matrix [--format text|markdown|json] [--width N]
//	tenantwire explain CODE
//	tenantwire errors            (docs/errors.md)
//	tenantwire version
//
// Every command takes -h or --help.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strconv"

	"github.com/tenantwire/tenantwire/floors"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

const usage = `usage: tenantwire COMMAND [options]

commands:
  matrix     how each shipped backend reaches each tier (--format, --width)
  explain    what an error code means and how to fix it: explain CODE
  errors     every error code, as Markdown (docs/errors.md)
  version    the module version this binary was built from

Run "tenantwire COMMAND --help" for a command's options.
`

// command is one subcommand: its one-line synopsis, its flags, and what
// it does with the arguments left after them.
type command struct {
	synopsis string
	about    string
	flags    func(fs *flag.FlagSet)
	run      func(args []string, stdout, stderr io.Writer) int
}

func commands(env func(string) string) map[string]*command {
	var (
		format string
		width  int
	)
	return map[string]*command{
		"matrix": {
			synopsis: "tenantwire matrix [--format text|markdown|json] [--width N]",
			about: "Prints how each route kind of each shipped backend reaches each tier. The text format\n" +
				"fits the terminal: it wraps into one block per route kind when the columns would be\n" +
				"wider than --width (default: $COLUMNS, else 80; 0 for no limit).",
			flags: func(fs *flag.FlagSet) {
				fs.StringVar(&format, "format", "text", "text, markdown or json")
				fs.IntVar(&width, "width", defaultWidth(env), "wrap the text format to this many columns; 0 for no limit")
			},
			run: func(args []string, stdout, stderr io.Writer) int {
				if len(args) != 0 {
					fmt.Fprintf(stderr, "tenantwire matrix: unexpected argument %q\n", args[0])
					return 2
				}
				out, err := renderMatrix(format, width)
				if err != nil {
					fmt.Fprintln(stderr, "tenantwire:", err)
					return 2
				}
				_, _ = stdout.Write(out)
				return 0
			},
		},
		"explain": {
			synopsis: "tenantwire explain CODE",
			about:    "Prints when CODE is raised, what it means and how to fix it: the text of docs/errors.md.",
			run: func(args []string, stdout, stderr io.Writer) int {
				if len(args) != 1 {
					fmt.Fprintln(stderr, "usage: tenantwire explain CODE")
					return 2
				}
				d, ok := floors.Explain(args[0], Backends...)
				if !ok {
					fmt.Fprintf(stderr, "tenantwire: unknown code %q\n", args[0])
					if near := closestCodes(args[0], knownCodes(), 3); len(near) > 0 {
						fmt.Fprintln(stderr, "did you mean:")
						for _, c := range near {
							fmt.Fprintln(stderr, "  "+c)
						}
					}
					fmt.Fprintln(stderr, "`tenantwire errors` lists every code")
					return 1
				}
				fmt.Fprintf(stdout, "%s\n\nRaised: %s\n\n%s\n\nFix: %s\n", d.Code, d.When, d.Meaning, d.Fix)
				return 0
			},
		},
		"errors": {
			synopsis: "tenantwire errors",
			about:    "Prints every error code, when it is raised, what it means and its fix, as Markdown.",
			run: func(args []string, stdout, stderr io.Writer) int {
				if len(args) != 0 {
					fmt.Fprintf(stderr, "tenantwire errors: unexpected argument %q\n", args[0])
					return 2
				}
				_ = floors.WriteCodesMarkdown(stdout, Backends...)
				return 0
			},
		},
		"version": {
			synopsis: "tenantwire version",
			about:    "Prints the tenantwire module version this binary was built from, or (devel) for a build\nfrom a source tree.",
			run: func(args []string, stdout, stderr io.Writer) int {
				if len(args) != 0 {
					fmt.Fprintf(stderr, "tenantwire version: unexpected argument %q\n", args[0])
					return 2
				}
				fmt.Fprintln(stdout, "tenantwire", version())
				return 0
			},
		},
	}
}

func run(args []string, stdout, stderr io.Writer) int {
	return runEnv(args, stdout, stderr, os.Getenv)
}

func runEnv(args []string, stdout, stderr io.Writer, env func(string) string) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	cmd, ok := commands(env)[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "tenantwire: unknown command %q\n%s", args[0], usage)
		return 2
	}
	// The flag package prints its complaint and the usage; they go to
	// stdout when help was asked for, to stderr on a mistake.
	var parseOut bytes.Buffer
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	fs.SetOutput(&parseOut)
	if cmd.flags != nil {
		cmd.flags(fs)
	}
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: %s\n\n%s\n", cmd.synopsis, cmd.about)
		if cmd.flags != nil {
			fmt.Fprintln(fs.Output(), "\noptions:")
			fs.PrintDefaults()
		}
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			_, _ = stdout.Write(parseOut.Bytes())
			return 0
		}
		_, _ = stderr.Write(parseOut.Bytes())
		return 2
	}
	return cmd.run(fs.Args(), stdout, stderr)
}

// defaultWidth is $COLUMNS when it is a positive number, else 80.
func defaultWidth(env func(string) string) int {
	if n, err := strconv.Atoi(env("COLUMNS")); err == nil && n > 0 {
		return n
	}
	return 80
}

// version is the main module's version from the build info: a tag for
// `go install ...@v1.2.3`, "(devel)" for a build from a source tree.
func version() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "(devel)"
}

func renderMatrix(format string, width int) ([]byte, error) {
	caps := floors.Describe(Backends...)
	var b bytes.Buffer
	var err error
	switch format {
	case "text":
		err = caps.WriteTextWidth(&b, width)
	case "markdown":
		b.WriteString("# Tenancy capability matrix\n\n<!-- Generated by `make matrix` from each backend's Rules; do not edit. -->\n\n")
		b.WriteString("How each route kind of each shipped backend reaches each tier. A route must also clear its\n")
		b.WriteString("statement origin's floor (structured: none, compiled: namespace, raw: dedicated). Every tier a\n")
		b.WriteString("kind reaches is probed on a live backend by its conformance test (`tenancytest.Conformance`,\n")
		b.WriteString("see [concepts.md](concepts.md#adding-a-backend)); a tier the test server cannot host is skipped\n")
		b.WriteString("with the reason printed (Neo4j namespace needs Enterprise Edition).\n\n")
		err = caps.WriteMarkdown(&b)
	case "json":
		err = caps.WriteJSON(&b)
	default:
		return nil, fmt.Errorf("unknown format %q (want text, markdown or json)", format)
	}
	return b.Bytes(), err
}
