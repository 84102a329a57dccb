package cli

import (
	"reflect"
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
