package floors

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"unicode/utf8"
)

// table is the one renderer behind both matrices.
type table struct {
	header []string
	rows   [][]string
}

func (t table) writeText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.ToUpper(strings.Join(t.header, "\t")))
	for _, r := range t.rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// writeTextWidth renders aligned columns when they fit in width, and
// otherwise one block per row, each cell on its own line after its column
// name, wrapped at word boundaries: a terminal of width columns shows every
// cell without horizontal scrolling. width <= 0 means no limit.
func (t table) writeTextWidth(w io.Writer, width int) error {
	var cols bytes.Buffer
	if err := t.writeText(&cols); err != nil {
		return err
	}
	if width <= 0 || widest(cols.String()) <= width {
		_, err := w.Write(cols.Bytes())
		return err
	}
	label := 0
	for _, h := range t.header[2:] {
		label = max(label, len(h)+1)
	}
	var b strings.Builder
	for i, r := range t.rows {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(strings.Join(r[:2], " ") + "\n")
		for j, cell := range r[2:] {
			if cell == "" {
				continue
			}
			prefix := fmt.Sprintf("  %-*s ", label, t.header[j+2]+":")
			for k, line := range wrap(cell, width-len(prefix)) {
				if k > 0 {
					prefix = strings.Repeat(" ", len(prefix))
				}
				b.WriteString(prefix + line + "\n")
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func widest(s string) int {
	n := 0
	for line := range strings.Lines(s) {
		n = max(n, utf8.RuneCountInString(strings.TrimRight(line, " \n")))
	}
	return n
}

// wrap splits s at spaces into lines of at most width runes; a word longer
// than width gets a line of its own.
func wrap(s string, width int) []string {
	width = max(width, 20)
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		switch {
		case line == "":
			line = word
		case utf8.RuneCountInString(line)+1+utf8.RuneCountInString(word) <= width:
			line += " " + word
		default:
			lines = append(lines, line)
			line = word
		}
	}
	return append(lines, line)
}

func (t table) writeMarkdown(w io.Writer) error {
	var b strings.Builder
	b.WriteString("| " + strings.Join(t.header, " | ") + " |\n")
	b.WriteString(strings.Repeat("|---", len(t.header)) + "|\n")
	for _, r := range t.rows {
		cells := make([]string, len(r))
		for i, c := range r {
			cells[i] = strings.ReplaceAll(c, "|", `\|`)
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
