package checks

import (
	"go/ast"
	"go/token"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// ignorePrefix starts the escape comment: //tenantvet:ignore <check> <reason>.
// It silences <check> on its own line and on the line below it. The reason
// is required: an escape nobody can read the why of is reported itself.
const ignorePrefix = "//tenantvet:ignore"

type directive struct {
	pos    token.Pos
	line   int
	check  string
	reason string
}

// directives returns the escape comments of file.
func directives(fset *token.FileSet, file *ast.File) []directive {
	var out []directive
	for _, cg := range file.Comments {
		for _, c := range cg.List {
			if !strings.HasPrefix(c.Text, ignorePrefix) {
				continue
			}
			rest := strings.TrimPrefix(c.Text, ignorePrefix)
			if rest != "" && rest[0] != ' ' && rest[0] != '\t' {
				continue // another directive that shares the prefix
			}
			if i := strings.Index(rest, "//"); i >= 0 {
				rest = rest[:i] // a trailing comment is no reason
			}
			f := strings.Fields(rest)
			d := directive{pos: c.Pos(), line: fset.Position(c.Pos()).Line}
			if len(f) > 0 {
				d.check = f[0]
			}
			if len(f) > 1 {
				d.reason = strings.Join(f[1:], " ")
			}
			out = append(out, d)
		}
	}
	return out
}

// reporter reports one check's findings, minus those an escape with a
// reason silences, and reports that check's escapes that give no reason.
type reporter struct {
	pass  *analysis.Pass
	check string
	// silenced holds file name -> lines an escape of this check covers.
	silenced map[string]map[int]bool
}

func newReporter(pass *analysis.Pass, check string) *reporter {
	r := &reporter{pass: pass, check: check, silenced: map[string]map[int]bool{}}
	for _, f := range pass.Files {
		name := pass.Fset.Position(f.Pos()).Filename
		for _, d := range directives(pass.Fset, f) {
			if d.check != check {
				continue
			}
			if d.reason == "" {
				pass.Reportf(d.pos, "%s: //tenantvet:ignore %s needs a reason after the check name (//tenantvet:ignore %s <why this call is safe>)", check, check, check)
				continue
			}
			if r.silenced[name] == nil {
				r.silenced[name] = map[int]bool{}
			}
			r.silenced[name][d.line] = true
			r.silenced[name][d.line+1] = true
		}
	}
	return r
}

func (r *reporter) report(pos token.Pos, format string, args ...any) {
	p := r.pass.Fset.Position(pos)
	if r.silenced[p.Filename][p.Line] {
		return
	}
	r.pass.Reportf(pos, r.check+": "+format, args...)
}

// Check names, as diagnostics and escapes spell them.
const (
	nameLostCtx      = "lostctx"
	nameGoNoTenant   = "gonotenant"
	nameRebind       = "rebind"
	nameTenantSQL    = "tenantsql"
	nameBypass       = "bypass"
	nameInTxOuterCtx = "intxctx"
)

var allNames = []string{nameLostCtx, nameGoNoTenant, nameRebind, nameTenantSQL, nameBypass, nameInTxOuterCtx}

func known(name string) bool {
	for _, n := range allNames {
		if n == name {
			return true
		}
	}
	return false
}

// reportUnknownIgnores reports escapes naming no check (a typo silences
// nothing, so it must not pass review as if it did).
func reportUnknownIgnores(pass *analysis.Pass) {
	for _, f := range pass.Files {
		for _, d := range directives(pass.Fset, f) {
			if !known(d.check) {
				pass.Reportf(d.pos, "tenantvet: //tenantvet:ignore names no check %q (checks: %s)", d.check, checkList())
			}
		}
	}
}

func checkList() string { return strings.Join(allNames, ", ") }
