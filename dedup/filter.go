package dedup

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// FilterRule is one rsync-style rule ("- *.o", "+ dir/**"). Rules are tried
// in order and the first matching one decides; unmatched entries are kept.
type FilterRule struct {
	Include bool
	DirOnly bool
	re      *regexp.Regexp
	text    string
}

// ParseFilterRule parses "+ PATTERN" or "- PATTERN" (also "include PATTERN"
// and "exclude PATTERN"). A pattern with a leading '/' is anchored at the
// input root; a pattern containing '/' elsewhere is matched against trailing
// path components; otherwise it is matched against the entry name. A
// trailing '/' restricts the rule to directories. '*' and '?' do not match
// '/', '**' does.
func ParseFilterRule(s string) (FilterRule, error) {
	var r FilterRule
	r.text = s
	var pat string
	switch {
	case strings.HasPrefix(s, "+ "):
		r.Include, pat = true, s[2:]
	case strings.HasPrefix(s, "- "):
		pat = s[2:]
	case strings.HasPrefix(s, "include "):
		r.Include, pat = true, s[8:]
	case strings.HasPrefix(s, "exclude "):
		pat = s[8:]
	default:
		return r, fmt.Errorf("invalid filter rule %q: must start with '+ ' or '- '", s)
	}
	if pat == "" {
		return r, fmt.Errorf("invalid filter rule %q: empty pattern", s)
	}
	if strings.HasSuffix(pat, "/") {
		r.DirOnly = true
		pat = strings.TrimSuffix(pat, "/")
	}
	var b strings.Builder
	switch {
	case strings.HasPrefix(pat, "/"):
		b.WriteString("^")
		pat = pat[1:]
	default:
		// rsync: unanchored patterns match at any directory boundary.
		b.WriteString("(^|/)")
	}
	for i := 0; i < len(pat); i++ {
		c := pat[i]
		switch c {
		case '*':
			if i+1 < len(pat) && pat[i+1] == '*' {
				b.WriteString(".*")
				i++
			} else {
				b.WriteString("[^/]*")
			}
		case '?':
			b.WriteString("[^/]")
		case '[':
			j := strings.IndexByte(pat[i:], ']')
			if j < 0 {
				b.WriteString(`\[`)
				continue
			}
			cls := pat[i+1 : i+j]
			if strings.HasPrefix(cls, "!") {
				cls = "^" + cls[1:]
			}
			b.WriteString("[" + cls + "]")
			i += j
		case '\\':
			if i+1 < len(pat) {
				i++
				b.WriteString(regexp.QuoteMeta(pat[i : i+1]))
			}
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	if err != nil {
		return r, fmt.Errorf("invalid filter rule %q: %w", s, err)
	}
	r.re = re
	return r, nil
}

// String returns the rule as given.
func (r FilterRule) String() string { return r.text }

// filterKeep applies rules to rel (slash separated, relative to the root).
func filterKeep(rules []FilterRule, rel string, isDir bool) bool {
	for _, r := range rules {
		if r.DirOnly && !isDir {
			continue
		}
		if r.re.MatchString(rel) {
			return r.Include
		}
	}
	return true
}

// DebugFilter prints the effect of the filter rules on the tree below
// opt.Input without building anything (--debug-filter). mode is one of all,
// excluded, excluded-files, files, included, included-files. Excluded
// directories are listed but not descended into, as in a real build.
func DebugFilter(opt Options, mode string, w io.Writer) error {
	showInc := mode == "all" || mode == "included" || mode == "included-files" || mode == "files"
	showExc := mode == "all" || mode == "excluded" || mode == "excluded-files"
	filesOnly := strings.HasSuffix(mode, "files")
	if !showInc && !showExc {
		return fmt.Errorf("invalid --debug-filter mode %q", mode)
	}
	prefix := mode == "all"
	var walk func(osDir, rel string) error
	walk = func(osDir, rel string) error {
		ents, err := os.ReadDir(osDir)
		if err != nil {
			return fmt.Errorf("reading directory %s: %w", osDir, err)
		}
		for _, e := range ents {
			r := e.Name()
			if rel != "" {
				r = rel + "/" + e.Name()
			}
			isDir := e.IsDir()
			keep := filterKeep(opt.Filters, r, isDir)
			if (keep && showInc || !keep && showExc) && !(filesOnly && isDir) {
				switch {
				case !prefix:
					fmt.Fprintf(w, "/%s\n", r)
				case keep:
					fmt.Fprintf(w, "+ /%s\n", r)
				default:
					fmt.Fprintf(w, "- /%s\n", r)
				}
			}
			if keep && isDir {
				if err := walk(filepath.Join(osDir, e.Name()), r); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return walk(opt.Input, "")
}
