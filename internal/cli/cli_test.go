package cli

import (
	"reflect"
	"strings"
	"testing"
)

var testOpts = []Option{
	{Long: "input", Short: "i", HasValue: true},
	{Long: "detail", Short: "d", HasValue: true},
	{Long: "json", Short: "j"},
	{Long: "list", Short: "l"},
	{Long: "pattern", HasValue: true},
}

func TestParse(t *testing.T) {
	r, err := Parse(testOpts, []string{"-i", "img", "--detail=3", "-jl", "--pattern", "a", "--pattern=b", "pos", "-d4", "--", "-x"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Get("input", "") != "img" || r.Get("detail", "") != "4" || !r.Has("json") || !r.Has("list") {
		t.Errorf("bad values %v", r.Values)
	}
	if !reflect.DeepEqual(r.All("pattern"), []string{"a", "b"}) {
		t.Errorf("pattern = %v", r.All("pattern"))
	}
	if !reflect.DeepEqual(r.Args, []string{"pos", "-x"}) {
		t.Errorf("args = %v", r.Args)
	}
	for _, bad := range [][]string{{"--nope"}, {"-x"}, {"--input"}, {"-i"}, {"--json=1"}} {
		if _, err := Parse(testOpts, bad); err == nil {
			t.Errorf("Parse(%v): no error", bad)
		}
	}
}

func TestParseErrors(t *testing.T) {
	opts := []Option{
		{Long: "input", Short: "i", HasValue: true},
		{Long: "json", Short: "j"},
		{Long: "debug-filter", HasValue: true, Optional: true, Implicit: "all"},
		{Long: "hollow", Unsupported: true},
	}
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"--nope"}, "unrecognised option '--nope'"},
		{[]string{"-jx"}, "unrecognised option '-x'"},
		{[]string{"--input"}, "option '--input' requires a value"},
		{[]string{"-j", "-i"}, "option '-i' requires a value"},
		{[]string{"--json=1"}, "option '--json' does not take a value"},
		{[]string{"--hollow"}, "option '--hollow' is not supported by godwarfs"},
	} {
		_, err := Parse(opts, tc.args)
		if !IsUsage(err) || err.Error() != tc.msg {
			t.Errorf("Parse(%q) = %v, want usage error %q", tc.args, err, tc.msg)
		}
	}
	r, err := Parse(opts, []string{"--debug-filter", "x", "--debug-filter=files", "-"})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r.All("debug-filter"), []string{"all", "files"}) || !reflect.DeepEqual(r.Args, []string{"x", "-"}) {
		t.Errorf("optional value: %v %v", r.Values, r.Args)
	}
}

func TestValues(t *testing.T) {
	opts := []Option{{Long: "n", HasValue: true}, {Long: "size", HasValue: true}, LogLevelOption(), {Long: "image-offset", HasValue: true}}
	for _, tc := range []struct {
		args []string
		get  func(r *Result) (any, error)
		want any
		err  string
	}{
		{[]string{"--n=7"}, func(r *Result) (any, error) { n, _, err := r.Int("n", 1, 8); return n, err }, 7, ""},
		{[]string{"--n=9"}, func(r *Result) (any, error) { n, _, err := r.Int("n", 1, 8); return n, err }, 0, "invalid value '9' for option '--n': expected a number from 1 to 8"},
		{[]string{"--size=2g"}, func(r *Result) (any, error) { n, _, err := r.Size("size", false); return n, err }, int64(2 << 30), ""},
		{[]string{"--size=0"}, func(r *Result) (any, error) { n, _, err := r.Size("size", false); return n, err }, int64(0), "invalid value '0' for option '--size': expected a size such as 512m or 2g"},
		{nil, func(r *Result) (any, error) { return r.LogLevel() }, LogInfo, ""},
		{[]string{"--log-level=trace"}, func(r *Result) (any, error) { return r.LogLevel() }, LogTrace, ""},
		{[]string{"--log-level=loud"}, func(r *Result) (any, error) { return r.LogLevel() }, 0, "invalid value 'loud' for option '--log-level': expected one of error, warn, info, verbose, debug, trace"},
		{nil, func(r *Result) (any, error) { return r.ImageOffset() }, int64(-1), ""},
		{[]string{"--image-offset=auto"}, func(r *Result) (any, error) { return r.ImageOffset() }, int64(-1), ""},
		{[]string{"--image-offset=41"}, func(r *Result) (any, error) { return r.ImageOffset() }, int64(41), ""},
		{[]string{"--image-offset=x"}, func(r *Result) (any, error) { return r.ImageOffset() }, int64(0), "invalid value 'x' for option '--image-offset': expected auto or a byte offset"},
	} {
		r, err := Parse(opts, tc.args)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tc.get(r)
		if tc.err != "" {
			if !IsUsage(err) || err.Error() != tc.err {
				t.Errorf("%q: error %v, want %q", tc.args, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: %v (%T) %v, want %v (%T)", tc.args, got, got, err, tc.want, tc.want)
		}
	}
}

func TestManRoff(t *testing.T) {
	p := &Program{Name: "tool", Summary: "do things", Synopsis: []string{"-i IN"},
		Options: []Option{{Long: "input", Short: "i", HasValue: true, Arg: "IN", Help: "read IN"}, {Long: "secret", Hidden: true}},
		Exit:    []ExitStatus{{Code: 0, Meaning: "fine"}},
		Manual:  Manual{Description: []string{".dot first, back\\slash", "  tool -i x\n  tool -h"}}}
	var b strings.Builder
	if err := p.WriteManRoff(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{".TH TOOL 1 \"\" \"godwarfs\" \"User Commands\"\n", ".SH NAME\ntool \\- do things\n",
		".TP\n.B \\-i, \\-\\-input IN\nread IN.\n", "\\&.dot first, back\\eslash\n", ".nf\n.RS 4\ntool \\-i x\ntool \\-h\n.RE\n.fi\n", ".SH EXIT STATUS\n.TP\n.B 0\nfine.\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("roff lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "secret") {
		t.Error("hidden option in the manual")
	}
}
