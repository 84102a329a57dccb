package dedup

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode/utf8"
)

// FilterRule is one include or exclude rule of mkdwarfs's --filter. Rules
// are tried in order and the first matching one decides; entries no rule
// matches are kept.
//
// The semantics are the reference's (rsync-like, not rsync): a rule is
// matched against the entry's path below the input root with a leading '/'
// and, for directories, a trailing '/'. A pattern starting with '/' is
// anchored at the input root; any other pattern floats, matching where the
// path ends in '/' followed by the pattern. So a pattern ending in '/' only
// matches directories, '*' and '?' never match a directory's trailing '/'
// (the rule "- *" excludes files, not directories), and "**" matches across
// directories.
type FilterRule struct {
	Include bool
	re      *regexp.Regexp
	text    string
}

// String returns the rule as given.
func (r FilterRule) String() string { return r.text }

// ParseFilterRule parses one "+ PATTERN" or "- PATTERN" rule. Letters after
// the sign are options: "i" makes the match case-insensitive ("+i *.jpg").
// For "include PATTERN" and "exclude PATTERN" (rsync's long forms) see
// ParseFilterRules, which also reads ". FILE" merge rules.
func ParseFilterRule(s string) (FilterRule, error) {
	r := FilterRule{text: s}
	sp := strings.IndexByte(s, ' ')
	if sp < 0 {
		return r, fmt.Errorf("invalid filter rule %q: expected '+ PATTERN', '- PATTERN' or '. FILE'", s)
	}
	prefix, pat := s[:sp], strings.TrimLeft(s[sp:], " ")
	if pat == "" {
		return r, fmt.Errorf("invalid filter rule %q: no pattern", s)
	}
	if prefix == "" {
		return r, fmt.Errorf("invalid filter rule %q: rules must start with '+', '-' or '.'", s)
	}
	switch prefix {
	case "include":
		prefix = "+"
	case "exclude":
		prefix = "-"
	}
	switch prefix[0] {
	case '+':
		r.Include = true
	case '-':
	default:
		return r, fmt.Errorf("invalid filter rule %q: rules must start with '+', '-' or '.'", s)
	}
	var flags string
	for _, o := range prefix[1:] {
		if o != 'i' {
			return r, fmt.Errorf("invalid filter rule %q: unknown option '%c'", s, o)
		}
		flags = "(?i)"
	}
	glob, err := globRegexp(pat)
	if err != nil {
		return r, fmt.Errorf("invalid filter rule %q: %w", s, err)
	}
	expr := flags + "^" + glob + "$"
	if pat[0] != '/' {
		expr = flags + "^.*/" + glob + "$"
	}
	if r.re, err = regexp.Compile(expr); err != nil {
		return r, fmt.Errorf("invalid filter rule %q: %w", s, err)
	}
	return r, nil
}

// ParseFilterRules parses one --filter argument: an include or exclude rule,
// or a merge rule ". FILE" whose file holds further rules, one a line
// (merged recursively; blank lines and lines starting with '#' are skipped).
// open opens merge files; nil means os.Open.
func ParseFilterRules(rule string, open func(string) (io.ReadCloser, error)) ([]FilterRule, error) {
	if open == nil {
		open = func(name string) (io.ReadCloser, error) { return os.Open(name) }
	}
	var out []FilterRule
	seen := map[string]bool{}
	var add func(rule string) error
	add = func(rule string) error {
		if !strings.HasPrefix(rule, ".") {
			r, err := ParseFilterRule(rule)
			if err != nil {
				return err
			}
			out = append(out, r)
			return nil
		}
		name := strings.TrimLeft(rule[1:], " \t")
		if name == "" {
			return fmt.Errorf("invalid filter rule %q: expected '. FILE'", rule)
		}
		if seen[name] {
			return fmt.Errorf("filter merge file %s includes itself", name)
		}
		seen[name] = true
		defer delete(seen, name)
		f, err := open(name)
		if err != nil {
			return fmt.Errorf("filter merge file: %w", err)
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for line := 1; sc.Scan(); line++ {
			l := strings.TrimSuffix(sc.Text(), "\r")
			if strings.HasPrefix(l, "#") || strings.TrimLeft(l, " \t") == "" {
				continue
			}
			if err := add(l); err != nil {
				return fmt.Errorf("%s:%d: %w", name, line, err)
			}
		}
		if err := sc.Err(); err != nil {
			return fmt.Errorf("reading filter merge file %s: %w", name, err)
		}
		return nil
	}
	if err := add(rule); err != nil {
		return nil, err
	}
	return out, nil
}

// globRegexp translates a filter pattern to a regular expression: '?' and
// '*' stay within one path component ('*' spanning a whole component needs
// at least one character), "**" crosses components ("**/" at a component
// start also consumes the slash), "[...]" is a character class ('!' negates,
// '/' never matches), "{a,b}" alternatives, '\' quotes the next character.
func globRegexp(pat string) (string, error) {
	var b strings.Builder
	depth := 0
	for i := 0; i < len(pat); {
		c := pat[i]
		switch c {
		case '\\':
			if i+1 >= len(pat) {
				return "", fmt.Errorf("trailing backslash in pattern")
			}
			r, n := decodeRune(pat[i+1:])
			b.WriteString(regexp.QuoteMeta(r))
			i += 1 + n
		case '*':
			startComp := i == 0 || pat[i-1] == '/'
			if i+1 < len(pat) && pat[i+1] == '*' {
				i += 2
				if startComp && i < len(pat) && pat[i] == '/' {
					i++
				}
				b.WriteString(".*")
				continue
			}
			i++
			if startComp && (i == len(pat) || pat[i] == '/') {
				b.WriteString("[^/]+")
			} else {
				b.WriteString("[^/]*")
			}
		case '?':
			b.WriteString("[^/]")
			i++
		case '[':
			cls, n, err := globClass(pat[i:])
			if err != nil {
				return "", err
			}
			b.WriteString(cls)
			i += n
		case ']':
			return "", fmt.Errorf("unmatched ']' in pattern")
		case '{':
			depth++
			b.WriteString("(?:")
			i++
		case ',':
			if depth > 0 {
				b.WriteByte('|')
			} else {
				b.WriteByte(',')
			}
			i++
		case '}':
			if depth == 0 {
				return "", fmt.Errorf("unmatched '}' in pattern")
			}
			depth--
			b.WriteByte(')')
			i++
		default:
			r, n := decodeRune(pat[i:])
			b.WriteString(regexp.QuoteMeta(r))
			i += n
		}
	}
	if depth > 0 {
		return "", fmt.Errorf("unmatched '{' in pattern")
	}
	return b.String(), nil
}

// globClass translates the character class at the start of s and returns
// it with the number of bytes consumed. A ']' first in the class is
// literal, as is '\'; a range spanning '/' leaves '/' out.
func globClass(s string) (string, int, error) {
	var b strings.Builder
	b.WriteByte('[')
	i := 1
	if strings.HasPrefix(s[i:], "!") {
		b.WriteByte('^')
		i++
	}
	first := true
	for i < len(s) {
		r, n := decodeRuneR(s[i:])
		if r == ']' && !first {
			b.WriteByte(']')
			return b.String(), i + 1, nil
		}
		first = false
		i += n
		if r == '/' {
			return "", 0, fmt.Errorf("invalid character '/' in character class")
		}
		lo, hi := r, r
		if i+1 < len(s) && s[i] == '-' && s[i+1] != ']' {
			hi, n = decodeRuneR(s[i+1:])
			i += 1 + n
			if hi < lo {
				return "", 0, fmt.Errorf("invalid range '%c-%c' in character class", lo, hi)
			}
		}
		switch {
		case lo <= '/' && '/' <= hi:
			if lo < '/' {
				fmt.Fprintf(&b, `\x{%x}-\x{%x}`, lo, '/'-1)
			}
			if hi > '/' {
				fmt.Fprintf(&b, `\x{%x}-\x{%x}`, '/'+1, hi)
			}
		case lo == hi:
			fmt.Fprintf(&b, `\x{%x}`, lo)
		default:
			fmt.Fprintf(&b, `\x{%x}-\x{%x}`, lo, hi)
		}
	}
	return "", 0, fmt.Errorf("unmatched '[' in pattern")
}

func decodeRune(s string) (string, int) {
	_, n := utf8.DecodeRuneInString(s)
	return s[:n], n
}

func decodeRuneR(s string) (rune, int) { return utf8.DecodeRuneInString(s) }

// filterPath is the path rules are matched against: rel (slash separated,
// relative to the input root) with a leading '/' and, for a directory, a
// trailing '/'.
func filterPath(rel string, isDir bool) string {
	if isDir {
		return "/" + rel + "/"
	}
	return "/" + rel
}

// filterKeep applies rules to the entry rel below the input root.
func filterKeep(rules []FilterRule, rel string, isDir bool) bool {
	if len(rules) == 0 {
		return true
	}
	p := filterPath(rel, isDir)
	for _, r := range rules {
		if r.re.MatchString(p) {
			return r.Include
		}
	}
	return true
}

// DebugFilter prints the effect of the filter rules on the tree below
// opt.Input without building anything (--debug-filter). mode is one of all,
// excluded, excluded-files, files, included, included-files. Paths are
// printed as the reference does: absolute, directories with a trailing '/'.
// Excluded directories are listed but not descended into, as in a real
// build.
func DebugFilter(opt Options, mode string, w io.Writer) error {
	showInc := mode == "all" || mode == "included" || mode == "included-files" || mode == "files"
	showExc := mode == "all" || mode == "excluded" || mode == "excluded-files" || mode == "files"
	filesOnly := strings.HasSuffix(mode, "files")
	if !showInc && !showExc {
		return fmt.Errorf("invalid --debug-filter mode %q", mode)
	}
	prefix := mode == "all" || mode == "files"
	root, err := filepath.Abs(opt.Input)
	if err == nil {
		root, err = filepath.EvalSymlinks(root)
	}
	if err != nil {
		return fmt.Errorf("input %s: %w", opt.Input, err)
	}
	root = filepath.ToSlash(root)
	if !strings.HasSuffix(root, "/") {
		root += "/"
	}
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
				p := root + filterPath(r, isDir)[1:]
				switch {
				case !prefix:
					fmt.Fprintf(w, "%s\n", p)
				case keep:
					fmt.Fprintf(w, "+ %s\n", p)
				default:
					fmt.Fprintf(w, "- %s\n", p)
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
