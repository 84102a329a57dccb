// Package glob matches slash-separated paths against shell-style patterns
// with "**": "*" and "?" stay within one path element, "**" crosses
// elements, "[...]" is a character class ("!" or "^" negates) and "\"
// escapes the next character. "**/" also matches zero directories. As with
// the reference tools, a pattern starting with "i:" ignores case, and a
// leading ":" is dropped (so "::x" matches ":x").
package glob

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

type kind uint8

const (
	lit   kind = iota // one literal rune
	any1              // ?
	star              // *
	dstar             // ** (may be followed by "/", see slash)
	class             // [...]
)

type token struct {
	kind   kind
	r      rune
	neg    bool
	ranges [][2]rune
	slash  bool // dstar only: "**/" which may match the empty string
}

// Pattern is a compiled glob.
type Pattern struct {
	src  string
	toks []token
	fold bool // "i:": ignore case
}

// String returns the source pattern.
func (p *Pattern) String() string { return p.src }

// Compile parses pattern. A leading "/" is ignored: patterns are relative
// to the image root.
func Compile(pattern string) (*Pattern, error) {
	s := pattern
	fold := false
	if rest, ok := strings.CutPrefix(s, "i:"); ok {
		s, fold = rest, true
	} else if rest, ok := strings.CutPrefix(s, ":"); ok {
		s = rest
	}
	s = strings.TrimLeft(s, "/")
	var toks []token
	for i := 0; i < len(s); {
		r, w := utf8.DecodeRuneInString(s[i:])
		switch r {
		case '\\':
			if i+w >= len(s) {
				return nil, fmt.Errorf("glob %q: trailing backslash", pattern)
			}
			r2, w2 := utf8.DecodeRuneInString(s[i+w:])
			toks = append(toks, token{kind: lit, r: r2})
			i += w + w2
		case '?':
			toks = append(toks, token{kind: any1})
			i += w
		case '*':
			if i+1 < len(s) && s[i+1] == '*' {
				j := i + 2
				for j < len(s) && s[j] == '*' {
					j++
				}
				t := token{kind: dstar}
				if j < len(s) && s[j] == '/' {
					t.slash = true
					j++
				}
				toks = append(toks, t)
				i = j
			} else {
				toks = append(toks, token{kind: star})
				i += w
			}
		case '[':
			t, n, err := parseClass(s[i:])
			if err != nil {
				return nil, fmt.Errorf("glob %q: %w", pattern, err)
			}
			toks = append(toks, t)
			i += n
		default:
			toks = append(toks, token{kind: lit, r: r})
			i += w
		}
	}
	return &Pattern{src: pattern, toks: toks, fold: fold}, nil
}

// parseClass parses "[...]" at the start of s and returns its length.
func parseClass(s string) (token, int, error) {
	t := token{kind: class}
	i := 1
	if i < len(s) && (s[i] == '!' || s[i] == '^') {
		t.neg = true
		i++
	}
	first := true
	for {
		if i >= len(s) {
			return t, 0, fmt.Errorf("unterminated character class")
		}
		if s[i] == ']' && !first {
			return t, i + 1, nil
		}
		first = false
		lo, w := utf8.DecodeRuneInString(s[i:])
		if lo == '\\' && i+w < len(s) {
			i += w
			lo, w = utf8.DecodeRuneInString(s[i:])
		}
		i += w
		hi := lo
		if i+1 < len(s) && s[i] == '-' && s[i+1] != ']' {
			i++
			hi, w = utf8.DecodeRuneInString(s[i:])
			if hi == '\\' && i+w < len(s) {
				i += w
				hi, w = utf8.DecodeRuneInString(s[i:])
			}
			i += w
			if hi < lo {
				return t, 0, fmt.Errorf("bad range %c-%c", lo, hi)
			}
		}
		t.ranges = append(t.ranges, [2]rune{lo, hi})
	}
}

func (t *token) classMatch(r rune, fold bool) bool {
	in := false
	for _, rg := range t.ranges {
		if r >= rg[0] && r <= rg[1] {
			in = true
			break
		}
		if fold {
			// Any case variant of r in the range counts.
			for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
				if f >= rg[0] && f <= rg[1] {
					in = true
					break
				}
			}
		}
	}
	return in != t.neg
}

// sameRune compares runes, ignoring case when fold is set.
func sameRune(a, b rune, fold bool) bool {
	if a == b {
		return true
	}
	if !fold {
		return false
	}
	for f := unicode.SimpleFold(a); f != a; f = unicode.SimpleFold(f) {
		if f == b {
			return true
		}
	}
	return false
}

// Match reports whether the whole path matches.
func (p *Pattern) Match(path string) bool {
	name := []rune(strings.TrimLeft(path, "/"))
	// memo[ti][ni]: 0 unknown, 1 false, 2 true. Bounds the work to
	// tokens × runes even with many stars.
	memo := make([]uint8, (len(p.toks)+1)*(len(name)+1))
	var m func(ti, ni int) bool
	m = func(ti, ni int) bool {
		k := ti*(len(name)+1) + ni
		if memo[k] != 0 {
			return memo[k] == 2
		}
		res := false
		switch {
		case ti == len(p.toks):
			res = ni == len(name)
		default:
			t := &p.toks[ti]
			switch t.kind {
			case lit:
				res = ni < len(name) && sameRune(name[ni], t.r, p.fold) && m(ti+1, ni+1)
			case any1:
				res = ni < len(name) && name[ni] != '/' && m(ti+1, ni+1)
			case class:
				res = ni < len(name) && name[ni] != '/' && t.classMatch(name[ni], p.fold) && m(ti+1, ni+1)
			case star:
				for j := ni; ; j++ {
					if m(ti+1, j) {
						res = true
						break
					}
					if j >= len(name) || name[j] == '/' {
						break
					}
				}
			case dstar:
				if t.slash {
					// Zero directories, or anything ending just after a '/'.
					if m(ti+1, ni) {
						res = true
						break
					}
					for j := ni; j < len(name); j++ {
						if name[j] == '/' && m(ti+1, j+1) {
							res = true
							break
						}
					}
				} else {
					for j := ni; j <= len(name); j++ {
						if m(ti+1, j) {
							res = true
							break
						}
					}
				}
			}
		}
		if res {
			memo[k] = 2
		} else {
			memo[k] = 1
		}
		return res
	}
	return m(0, 0)
}

// Set is a list of patterns; an empty set matches everything.
type Set []*Pattern

// CompileAll compiles every pattern.
func CompileAll(patterns []string) (Set, error) {
	var s Set
	for _, p := range patterns {
		c, err := Compile(p)
		if err != nil {
			return nil, err
		}
		s = append(s, c)
	}
	return s, nil
}

// Match reports whether path matches any pattern (or the set is empty).
func (s Set) Match(path string) bool {
	if len(s) == 0 {
		return true
	}
	for _, p := range s {
		if p.Match(path) {
			return true
		}
	}
	return false
}
