package postgres

import "strings"

// splitStatements splits a migration file at the semicolons that end its
// statements, skipping those inside quotes, dollar quotes and comments. It
// only names the statement a failure points at: the file itself is sent
// whole.
func splitStatements(body string) []string {
	var (
		out   []string
		start int
	)
	for i := 0; i < len(body); i++ {
		switch c := body[i]; {
		case c == '\'' || c == '"':
			j := strings.IndexByte(body[i+1:], c)
			if j < 0 {
				i = len(body)
			} else {
				i += j + 1 // a doubled quote is two quoted runs: same result
			}
		case c == '-' && strings.HasPrefix(body[i:], "--"):
			j := strings.IndexByte(body[i:], '\n')
			if j < 0 {
				j = len(body) - i
			}
			i += j
		case c == '/' && strings.HasPrefix(body[i:], "/*"):
			j := strings.Index(body[i+2:], "*/")
			if j < 0 {
				i = len(body)
			} else {
				i += j + 3
			}
		case c == '$':
			if tag, ok := dollarTag(body[i:]); ok {
				j := strings.Index(body[i+len(tag):], tag)
				if j < 0 {
					i = len(body)
				} else {
					i += len(tag) + j + len(tag) - 1
				}
			}
		case c == ';':
			if s := strings.TrimSpace(body[start:i]); s != "" {
				out = append(out, s)
			}
			start = i + 1
		}
	}
	if start < len(body) {
		if s := strings.TrimSpace(body[start:]); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// dollarTag is the opening "$tag$" at the start of s, if any ($1 is a
// parameter, not a tag).
func dollarTag(s string) (string, bool) {
	for i := 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '$':
			return s[:i+1], true
		case c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 1 && '0' <= c && c <= '9':
		default:
			return "", false
		}
	}
	return "", false
}
