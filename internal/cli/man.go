package cli

import (
	"fmt"
	"io"
	"strings"
)

// Manual is the part of a tool's manual page that is not generated from
// its Program (name, synopsis, options and exit statuses are).
type Manual struct {
	// Description paragraphs. A paragraph whose lines all start with
	// two spaces is an example, printed as is.
	Description []string
	Sections    []Section // after OPTIONS
	SeeAlso     []string  // "dwarfsck(1)"
}

// Section is a titled part of a manual page: paragraphs, then a list of
// terms with their explanation.
type Section struct {
	Title      string
	Paragraphs []string
	Items      []Item
}

// Item is a term and its explanation.
type Item struct{ Term, Text string }

// sections returns the whole page in order.
func (p *Program) sections() []Section {
	secs := []Section{{Title: "NAME", Paragraphs: []string{p.Name + " - " + p.Summary}}}
	var syn []string
	for _, s := range p.Synopsis {
		syn = append(syn, "  "+p.Name+" "+s)
	}
	secs = append(secs, Section{Title: "SYNOPSIS", Paragraphs: []string{strings.Join(syn, "\n")}})
	if len(p.Manual.Description) > 0 {
		secs = append(secs, Section{Title: "DESCRIPTION", Paragraphs: p.Manual.Description})
	}
	opts := Section{Title: "OPTIONS"}
	for _, o := range p.AllOptions() {
		if o.Hidden || o.Unsupported {
			continue
		}
		opts.Items = append(opts.Items, Item{optionName(o), optionHelp(o) + "."})
	}
	secs = append(secs, opts)
	secs = append(secs, p.Manual.Sections...)
	if len(p.Exit) > 0 {
		ex := Section{Title: "EXIT STATUS"}
		for _, e := range p.Exit {
			ex.Items = append(ex.Items, Item{fmt.Sprint(e.Code), e.Meaning + "."})
		}
		secs = append(secs, ex)
	}
	if len(p.Manual.SeeAlso) > 0 {
		secs = append(secs, Section{Title: "SEE ALSO", Paragraphs: []string{strings.Join(p.Manual.SeeAlso, ", ")}})
	}
	return secs
}

func isExample(par string) bool {
	for _, l := range strings.Split(par, "\n") {
		if !strings.HasPrefix(l, "  ") {
			return false
		}
	}
	return true
}

// WriteManText writes the manual page as plain text, as --man shows it.
func (p *Program) WriteManText(w io.Writer) error {
	var b strings.Builder
	title := fmt.Sprintf("%s(1)", strings.ToUpper(p.Name))
	fmt.Fprintf(&b, "%s%*s\n\n", title, 78-len(title), "godwarfs")
	for _, s := range p.sections() {
		b.WriteString(s.Title + "\n")
		for _, par := range s.Paragraphs {
			if isExample(par) {
				for _, l := range strings.Split(par, "\n") {
					b.WriteString("     " + l + "\n")
				}
			} else {
				wrap(&b, par, 7, 78)
			}
			b.WriteByte('\n')
		}
		for _, it := range s.Items {
			b.WriteString("       " + it.Term + "\n")
			wrap(&b, it.Text, 14, 78)
			b.WriteByte('\n')
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// wrap fills text into lines of at most width columns, indented by indent.
func wrap(b *strings.Builder, text string, indent, width int) {
	col := 0
	for _, word := range strings.Fields(text) {
		if col > indent && col+1+len(word) > width {
			b.WriteByte('\n')
			col = 0
		}
		if col == 0 {
			b.WriteString(strings.Repeat(" ", indent))
			col = indent
		} else {
			b.WriteByte(' ')
			col++
		}
		b.WriteString(word)
		col += len(word)
	}
	if col > 0 {
		b.WriteByte('\n')
	}
}

// WriteManRoff writes the manual page in roff (man(7)) format.
func (p *Program) WriteManRoff(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, ".TH %s 1 \"\" \"godwarfs\" \"User Commands\"\n", roffEscape(strings.ToUpper(p.Name)))
	for _, s := range p.sections() {
		fmt.Fprintf(&b, ".SH %s\n", s.Title)
		for i, par := range s.Paragraphs {
			if i > 0 {
				b.WriteString(".PP\n")
			}
			if isExample(par) {
				b.WriteString(".nf\n.RS 4\n")
				for _, l := range strings.Split(par, "\n") {
					b.WriteString(roffLine(strings.TrimPrefix(l, "  ")) + "\n")
				}
				b.WriteString(".RE\n.fi\n")
			} else {
				b.WriteString(roffLine(strings.Join(strings.Fields(par), " ")) + "\n")
			}
		}
		for _, it := range s.Items {
			fmt.Fprintf(&b, ".TP\n.B %s\n%s\n", roffEscape(it.Term), roffLine(it.Text))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// roffEscape protects backslashes and hyphens (so "--opt" is not typeset
// as dashes).
func roffEscape(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	return strings.ReplaceAll(s, "-", `\-`)
}

// roffLine escapes a text line and keeps a leading '.' or '\” from being
// read as a request.
func roffLine(s string) string {
	s = roffEscape(s)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}
