package dwarfsextract

import "testing"

func TestFoldKey(t *testing.T) {
	for _, c := range []struct {
		a, b string
		same bool
	}{
		{"Case", "case", true},
		{"CASE.TXT", "case.txt", true},
		{"Ä.txt", "ä.txt", true},
		{"Kelvin\u212a", "kelvink", true}, // the Kelvin sign folds with k
		{"ſ", "S", true},                  // long s folds with s
		{"case", "case~2", false},
		{"a", "b", false},
		{"ß", "ss", false}, // full folding only; file systems fold simply
	} {
		if got := foldKey(c.a) == foldKey(c.b); got != c.same {
			t.Errorf("foldKey(%q) == foldKey(%q): %v, want %v", c.a, c.b, got, c.same)
		}
	}
}
