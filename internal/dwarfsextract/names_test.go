package dwarfsextract

import (
	"strconv"
	"strings"
	"testing"
)

// The rule for names Windows cannot hold, as the manual states it.
func TestWindowsNameProblem(t *testing.T) {
	for _, c := range []struct {
		name string
		bad  string // part of the reason; "" for a good name
	}{
		{"hello.txt", ""},
		{"unicode-ü-日本", ""},
		{".hidden", ""},
		{"CONSOLE", ""},
		{"COM10", ""},
		{"con.", "dot or space"},
		{"a:b", `':'`},
		{"what?", `'?'`},
		{"star*", `'*'`},
		{`quote"`, `'"'`},
		{"<tag>", `'<'`},
		{"pipe|", `'|'`},
		{`back\slash`, `'\\'`},
		{"tab\there", "control character"},
		{"trailing.", "dot or space"},
		{"trailing ", "dot or space"},
		{"CON", "reserved"},
		{"nul", "reserved"},
		{"NUL.txt", "reserved"},
		{"com1", "reserved"},
		{"LPT9.tar.gz", "reserved"},
		{"aux ", "dot or space"},
		{"AUX .txt", "reserved"},
	} {
		err := windowsNameProblem(c.name)
		switch {
		case c.bad == "" && err != nil:
			t.Errorf("%q: %v, want accepted", c.name, err)
		case c.bad != "" && err == nil:
			t.Errorf("%q accepted, want refused (%s)", c.name, c.bad)
		case c.bad != "" && !strings.Contains(err.Error(), c.bad):
			t.Errorf("%q: %v, want it to name %s", c.name, err, c.bad)
		case c.bad != "" && !strings.Contains(err.Error(), strconv.Quote(c.name)):
			t.Errorf("%q: %v does not name the entry", c.name, err)
		}
	}
}
