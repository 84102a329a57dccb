package glob

import "testing"

func TestMatch(t *testing.T) {
	tests := []struct {
		pat, path string
		want      bool
	}{
		{"*.txt", "a.txt", true},
		{"*.txt", "d/a.txt", false},
		{"*/*.txt", "d/a.txt", true},
		{"**/*.txt", "a.txt", true},
		{"**/*.txt", "d/e/a.txt", true},
		{"**.txt", "d/e/a.txt", true},
		{"d/**", "d/e/a.txt", true},
		{"d/**", "d", false},
		{"d/**/x", "d/x", true},
		{"d/**/x", "d/a/b/x", true},
		{"d/**/x", "dx", false},
		{"a?c", "abc", true},
		{"a?c", "a/c", false},
		{"[abc]x", "bx", true},
		{"[!abc]x", "bx", false},
		{"[^abc]x", "dx", true},
		{"[a-c]*", "cat", true},
		{"[a-c]*", "dog", false},
		{"[]]", "]", true},
		{`\*`, "*", true},
		{`\*`, "a", false},
		{"/docs/*", "docs/doc-v1.txt", true},
		{"unicode-ü-日本/*", "unicode-ü-日本/файл.txt", true},
		{"???", "日本x", true},
		{"*", "", true},
		{"", "", true},
		{"a", "", false},
		{"**/**/**/**/**/**/z", "a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/b", false},
		{"*a*a*a*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false},
		// "i:" ignores case, in literals and classes; ":" is dropped.
		{"i:*.TXT", "d/../A.txt", false},
		{"i:**.TXT", "d/A.txt", true},
		{"i:Straße/*", "STRASSE/x", false},
		{"i:straße/*", "STRAßE/x", true},
		{"i:[a-c]x", "BX", true},
		{"i:[!a-c]x", "BX", false},
		{"*.TXT", "a.txt", false},
		{"i:*.txt", "A.TXT", true},
		{"i:d/*.txt", "i:d/a.txt", false},
		{":i:*", "i:a", true},
		{"::x", ":x", true},
		{":x", "x", true},
	}
	for _, tt := range tests {
		p, err := Compile(tt.pat)
		if err != nil {
			t.Fatalf("Compile(%q): %v", tt.pat, err)
		}
		if got := p.Match(tt.path); got != tt.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tt.pat, tt.path, got, tt.want)
		}
	}
}

func TestCompileErrors(t *testing.T) {
	for _, pat := range []string{"[abc", `abc\`, "[z-a]"} {
		if _, err := Compile(pat); err == nil {
			t.Errorf("Compile(%q): no error", pat)
		}
	}
}

func TestSet(t *testing.T) {
	var empty Set
	if !empty.Match("anything") {
		t.Error("empty set must match")
	}
	s, err := CompileAll([]string{"*.c", "**/*.h"})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Match("x.c") || !s.Match("a/b/x.h") || s.Match("a/x.c") {
		t.Error("set matching wrong")
	}
}
