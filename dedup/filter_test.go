package dedup

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
)

func mustRules(t *testing.T, rules ...string) []FilterRule {
	t.Helper()
	var out []FilterRule
	for _, r := range rules {
		rs, err := ParseFilterRules(r, nil)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rs...)
	}
	return out
}

// debugFilter runs DebugFilter and returns its lines with the (absolute)
// input root removed, sorted.
func debugFilter(t *testing.T, o Options, mode string) []string {
	t.Helper()
	var buf bytes.Buffer
	if err := DebugFilter(o, mode, &buf); err != nil {
		t.Fatal(err)
	}
	root, err := filepath.EvalSymlinks(o.Input)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n") {
		if l == "" {
			continue
		}
		sign, p, ok := strings.Cut(l, " ")
		if !ok {
			sign, p = "", l
		} else {
			sign += " "
		}
		rel, ok := strings.CutPrefix(p, root+"/")
		if !ok {
			t.Fatalf("debug-filter line %q is not below %s", l, root)
		}
		out = append(out, sign+rel)
	}
	sort.Strings(out)
	return out
}

func sorted(s []string) []string {
	s = append([]string(nil), s...)
	sort.Strings(s)
	return s
}

// The example rule set of the reference mkdwarfs manual (FILTER RULES) on a
// Perl-like tree. The expected lists follow the reference's semantics: only
// patterns ending in '/' (or '**') can match directories, so "- *" drops
// every file no earlier rule kept and none of the directories.
func TestFilterManualExample(t *testing.T) {
	tree := map[string]string{
		"File/Spec/Mac.pm":                 "",
		"bin/perldoc.pl":                   "",
		"lib/perl5/File/Spec.pm":           "",
		"lib/perl5/File/Spec/Epoc.pm":      "",
		"lib/perl5/File/Spec/Mac.pm":       "",
		"lib/perl5/File/Spec/Unix.pm":      "",
		"lib/perl5/File/Spec/Functions.pm": "",
		"lib/perl5/File/Spec/Mac.pl":       "",
		"lib/perl5/Pod/File/Spec/Epoc.pm":  "",
		"lib/perl5/XFile/Spec/Mac.pm":      "",
		"lib/perl5/unicore/Name.pl":        "",
		"lib/perl5/unicore/Name.pm":        "",
		"lib/perl5/unicore/lib/Nv/53.pl":   "",
		"lib/perl5/unicore.pl":             "",
		"lib/perl5/utf8_heavy.pl":          "",
		"lib/perl5/README":                 "",
		"lib/perl5/dir.pl/x.pm":            "",
		"lib/perl5/empty/":                 "",
		"unicore/Top.pl":                   "",
	}
	root := writeTree(t, tree)
	o := testOpts(root)
	o.Filters = mustRules(t, "+ File/Spec/[EM]*.pm", "- unicore/**.pl", "+ *.pl", "- *")

	included := []string{
		"File/Spec/Mac.pm",
		"bin/perldoc.pl",
		"lib/perl5/File/Spec/Epoc.pm",
		"lib/perl5/File/Spec/Mac.pl",
		"lib/perl5/File/Spec/Mac.pm",
		"lib/perl5/Pod/File/Spec/Epoc.pm",
		"lib/perl5/unicore.pl",
		"lib/perl5/utf8_heavy.pl",
	}
	excluded := []string{
		"lib/perl5/File/Spec.pm",
		"lib/perl5/File/Spec/Functions.pm",
		"lib/perl5/File/Spec/Unix.pm",
		"lib/perl5/README",
		"lib/perl5/XFile/Spec/Mac.pm",
		"lib/perl5/dir.pl/x.pm",
		"lib/perl5/unicore/Name.pl",
		"lib/perl5/unicore/Name.pm",
		"lib/perl5/unicore/lib/Nv/53.pl",
		"unicore/Top.pl",
	}
	dirs := []string{
		"File/", "File/Spec/", "bin/", "lib/", "lib/perl5/", "lib/perl5/File/",
		"lib/perl5/File/Spec/", "lib/perl5/Pod/", "lib/perl5/Pod/File/",
		"lib/perl5/Pod/File/Spec/", "lib/perl5/XFile/", "lib/perl5/XFile/Spec/",
		"lib/perl5/dir.pl/", "lib/perl5/empty/", "lib/perl5/unicore/",
		"lib/perl5/unicore/lib/", "lib/perl5/unicore/lib/Nv/", "unicore/",
	}
	prefixed := func(p string, l []string) []string {
		var out []string
		for _, s := range l {
			out = append(out, p+s)
		}
		return out
	}
	for _, tc := range []struct {
		mode string
		want []string
	}{
		{"included-files", included},
		{"excluded-files", excluded},
		{"excluded", excluded},
		{"included", append(append([]string(nil), included...), dirs...)},
		{"files", append(prefixed("+ ", included), prefixed("- ", excluded)...)},
		{"all", append(append(prefixed("+ ", included), prefixed("- ", excluded)...), prefixed("+ ", dirs)...)},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			if got := debugFilter(t, o, tc.mode); !reflect.DeepEqual(got, sorted(tc.want)) {
				t.Errorf("--debug-filter=%s:\ngot  %q\nwant %q", tc.mode, got, sorted(tc.want))
			}
		})
	}

	// The image holds exactly the included files, and with
	// --remove-empty-dirs only the directories leading to them.
	o.RemoveEmpty = true
	want := append([]string(nil), included...)
	for _, d := range []string{"File", "File/Spec", "bin", "lib", "lib/perl5", "lib/perl5/File",
		"lib/perl5/File/Spec", "lib/perl5/Pod", "lib/perl5/Pod/File", "lib/perl5/Pod/File/Spec"} {
		want = append(want, d)
	}
	if got := sorted(paths(t, o)); !reflect.DeepEqual(got, sorted(want)) {
		t.Errorf("image with --remove-empty-dirs:\ngot  %q\nwant %q", got, sorted(want))
	}
}

// Rule sets in the style of the reference's own filter tests, on a small
// /usr-like tree, with --remove-empty-dirs.
func TestFilterRuleSets(t *testing.T) {
	root := writeTree(t, map[string]string{
		"lib/libpcprofile.so":                     "",
		"lib/ld.conf":                             "",
		"usr/lib/Mcrt1.o":                         "",
		"usr/lib/libc.a":                          "",
		"usr/lib/gcc/x86_64/11/crtbegin.o":        "",
		"usr/lib/gcc/x86_64/11/libitm.so":         "",
		"usr/lib/python3/lib-dynload/_asyncio.so": "",
		"usr/lib64/gcrt1.o":                       "",
		"usr/lib64/xtables/libxt_LED.so":          "",
		"usr/lib64/xtables/libxt_LED.txt":         "",
		"usr/share/doc/README":                    "",
	})
	for _, tc := range []struct {
		name  string
		rules []string
		want  string
	}{
		{"shared objects", []string{"+ *.so", "- *"},
			"lib lib/libpcprofile.so usr usr/lib usr/lib/gcc usr/lib/gcc/x86_64 usr/lib/gcc/x86_64/11 usr/lib/gcc/x86_64/11/libitm.so " +
				"usr/lib/python3 usr/lib/python3/lib-dynload usr/lib/python3/lib-dynload/_asyncio.so usr/lib64 usr/lib64/xtables usr/lib64/xtables/libxt_LED.so"},
		{"objects outside gcc", []string{"- gcc/**.o", "+ *.o", "- *"},
			"usr usr/lib usr/lib/Mcrt1.o usr/lib64 usr/lib64/gcrt1.o"},
		{"case matters", []string{"+ mc*", "+ *led*", "- *"}, ""},
		{"ignore case", []string{"+i mc*", "+i *led*", "- *"},
			"usr usr/lib usr/lib/Mcrt1.o usr/lib64 usr/lib64/xtables usr/lib64/xtables/libxt_LED.so usr/lib64/xtables/libxt_LED.txt"},
		{"directory rule", []string{"- gcc/", "- share/", "- /lib/"},
			"usr usr/lib usr/lib/Mcrt1.o usr/lib/libc.a usr/lib/python3 usr/lib/python3/lib-dynload usr/lib/python3/lib-dynload/_asyncio.so " +
				"usr/lib64 usr/lib64/gcrt1.o usr/lib64/xtables usr/lib64/xtables/libxt_LED.so usr/lib64/xtables/libxt_LED.txt"},
		{"anchored", []string{"+ /usr/lib/*.a", "+ /lib/*", "- *"},
			"lib lib/ld.conf lib/libpcprofile.so usr usr/lib usr/lib/libc.a"},
		{"braces and classes", []string{"+ *.{a,conf}", "+ [A-Z]*", "- *"},
			"lib lib/ld.conf usr usr/lib usr/lib/Mcrt1.o usr/lib/libc.a usr/share usr/share/doc usr/share/doc/README"},
		{"globstar subtree", []string{"- /usr/**"}, "lib lib/ld.conf lib/libpcprofile.so"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := testOpts(root)
			o.RemoveEmpty = true
			o.Filters = mustRules(t, tc.rules...)
			got := strings.Join(sorted(paths(t, o)), " ")
			if got != tc.want {
				t.Errorf("rules %q:\ngot  %s\nwant %s", tc.rules, got, tc.want)
			}
		})
	}
}

func TestFilterMatch(t *testing.T) {
	for _, tc := range []struct {
		rule  string
		path  string // below the root; a trailing '/' marks a directory
		match bool
	}{
		{"- *", "a", true},
		{"- *", "a/", false},
		{"- *", "d/a", true},
		{"- foo/", "x/foo/", true},
		{"- foo/", "x/foo", false},
		{"- /foo", "foo", true},
		{"- /foo", "x/foo", false},
		{"- a/b", "x/a/b", true},
		{"- a/b", "a/b", true},
		{"- a/b", "xa/b", false},
		{"- a/**", "a/", true},
		{"- a/**", "x/a/y/z", true},
		{"- a/**", "ab/y", false},
		{"- **/b", "x/y/b", true},
		{"- /**", "x/y/", true},
		{"- *.[ch]", "x.c", true},
		{"- *.[ch]", "x.o", false},
		{"- [!a]*", "b", true},
		{"- [!a]*", "a", false},
		{"- []]", "]", true},
		{"- [+-5]x", "-x", true},
		{"- [+-5]x", "3x", true},
		{"- [+-5]x", "ax", false},
		{"- ?", "a", true},
		{"- ?", "ab", false},
		{"- a?c", "a/c", false},
		{"- {foo,bar}.c", "d/bar.c", true},
		{"- {foo,bar}.c", "d/baz.c", false},
		{"- a,b", "a,b", true},
		{"-i *.JPG", "x.jpg", true},
		{"- *.JPG", "x.jpg", false},
		{`- \*`, "*", true},
		{`- \*`, "a", false},
		{"- *.o", "dir.o/", false},
		{"- a*", "ab/", false},
		{"- ä?", "x/äö", true},
		{"exclude *.o", "x.o", true},
		{"-  two spaces", "two spaces", true},
	} {
		r, err := ParseFilterRule(tc.rule)
		if err != nil {
			t.Errorf("%q: %v", tc.rule, err)
			continue
		}
		rel, dir := strings.CutSuffix(tc.path, "/")
		if got := !filterKeep([]FilterRule{r}, rel, dir); got != tc.match {
			t.Errorf("rule %q on %q: match %v, want %v", tc.rule, tc.path, got, tc.match)
		}
	}
}

func TestFilterRuleErrors(t *testing.T) {
	for _, tc := range []struct{ rule, err string }{
		{"x foo", "rules must start with '+', '-' or '.'"},
		{"+foo", "expected '+ PATTERN'"},
		{"+ ", "no pattern"},
		{"+q foo", "unknown option 'q'"},
		{"- [a", "unmatched '['"},
		{"- a]", "unmatched ']'"},
		{"- {a", "unmatched '{'"},
		{"- a}", "unmatched '}'"},
		{"- [a/b]", "invalid character '/' in character class"},
		{`- a\`, "trailing backslash"},
		{"- [z-a]", "invalid range 'z-a'"},
		{".", "expected '. FILE'"},
	} {
		_, err := ParseFilterRules(tc.rule, nil)
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%q: error %v, want %q", tc.rule, err, tc.err)
		}
	}
}

func TestFilterMergeFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	inner := write("inner.rules", "# only sources\n+ *.c\n\n   \n- *\n")
	outer := write("outer.rules", "- /build/\n. "+inner+"\n+ never\n")
	rules, err := ParseFilterRules(".\t"+outer, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rules {
		got = append(got, r.String())
	}
	if want := []string{"- /build/", "+ *.c", "- *", "+ never"}; !reflect.DeepEqual(got, want) {
		t.Errorf("merged rules %q, want %q", got, want)
	}

	self := filepath.Join(dir, "self.rules")
	write("self.rules", "+ *.c\n. "+self+"\n")
	if _, err := ParseFilterRules(". "+self, nil); err == nil || !strings.Contains(err.Error(), "self.rules includes itself") {
		t.Errorf("recursive merge: %v", err)
	}
	bad := write("bad.rules", "+ *.c\n\n* oops\n")
	if _, err := ParseFilterRules(". "+bad, nil); err == nil || !strings.Contains(err.Error(), "bad.rules:3: invalid filter rule \"* oops\"") {
		t.Errorf("bad line: %v", err)
	}
	missing := filepath.Join(dir, "missing.rules")
	if _, err := ParseFilterRules(". "+missing, nil); err == nil || !strings.Contains(err.Error(), "missing.rules") {
		t.Errorf("missing merge file: %v", err)
	}
	// The same file may be merged twice in sequence; only nesting is refused.
	twice := write("twice.rules", ". "+inner+"\n. "+inner+"\n")
	if rs, err := ParseFilterRules(". "+twice, nil); err != nil || len(rs) != 4 {
		t.Errorf("merging a file twice: %d rules, %v", len(rs), err)
	}
}
