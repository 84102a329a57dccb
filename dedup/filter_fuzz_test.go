package dedup

import (
	"io"
	"strings"
	"testing"
)

// FuzzFilterRule: rule text comes from the command line and merge files;
// parsing never panics, and a parsed rule matches paths without panicking.
func FuzzFilterRule(f *testing.F) {
	for _, s := range []string{"+ *.jpg", "- /a/b/", "+i *.JPG", "include **/x", "exclude [a-z]?.c", ". rules", " x", "- [", "-  \\", "+ a/**/b"} {
		f.Add(s, "a/b/c.jpg")
	}
	f.Fuzz(func(t *testing.T, rule, path string) {
		open := func(string) (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(rule)), nil }
		rules, err := ParseFilterRules(rule, open)
		if err != nil {
			return
		}
		filterKeep(rules, path, false)
		filterKeep(rules, path, true)
	})
}
