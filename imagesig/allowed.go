package imagesig

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
)

// AllowedSigner is one line of an allowed signers file.
type AllowedSigner struct {
	Line        int
	Principals  string    // comma-separated patterns, as written
	Namespaces  string    // comma-separated patterns; "" allows every namespace
	ValidAfter  time.Time // zero: no bound
	ValidBefore time.Time // zero: no bound
	Key         ssh.PublicKey
}

// AllowedSigners is a parsed allowed signers file.
type AllowedSigners []AllowedSigner

// maxAllowedLine bounds one line of an allowed signers file.
const maxAllowedLine = 1 << 20

// ParseAllowedSigners parses an allowed signers file (ssh-keygen(1),
// ALLOWED SIGNERS). Timestamps without a Z are in loc (time.Local when nil).
func ParseAllowedSigners(r io.Reader, loc *time.Location) (AllowedSigners, error) {
	if loc == nil {
		loc = time.Local
	}
	var out AllowedSigners
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), maxAllowedLine)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		a, err := parseAllowedLine(line, loc)
		if err != nil {
			return nil, fmt.Errorf("allowed signers line %d: %w", n, err)
		}
		a.Line = n
		out = append(out, a)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("allowed signers: %v: %w", err, ErrFormat)
	}
	return out, nil
}

func parseAllowedLine(line string, loc *time.Location) (AllowedSigner, error) {
	var a AllowedSigner
	// The principals: one field, which may be quoted.
	var rest string
	if line[0] == '"' {
		end := strings.IndexByte(line[1:], '"')
		if end < 0 {
			return a, fmt.Errorf("unterminated quoted principals: %w", ErrFormat)
		}
		a.Principals, rest = line[1:1+end], line[2+end:]
		if rest != "" && rest[0] != ' ' && rest[0] != '\t' {
			return a, fmt.Errorf("no space after the quoted principals: %w", ErrFormat)
		}
	} else {
		i := strings.IndexAny(line, " \t")
		if i < 0 {
			return a, fmt.Errorf("no key after the principals: %w", ErrFormat)
		}
		a.Principals, rest = line[:i], line[i:]
	}
	if a.Principals == "" {
		return a, fmt.Errorf("empty principals: %w", ErrFormat)
	}
	rest = strings.TrimLeft(rest, " \t")
	key, _, opts, _, err := ssh.ParseAuthorizedKey([]byte(rest))
	if err != nil {
		return a, fmt.Errorf("key: %v: %w", err, ErrFormat)
	}
	if _, ok := key.(*ssh.Certificate); ok {
		return a, fmt.Errorf("a certificate in place of a key: %w", ErrFormat)
	}
	a.Key = key
	for _, o := range opts {
		name, val, hasVal := strings.Cut(o, "=")
		name = strings.ToLower(name)
		if hasVal {
			if len(val) < 2 || val[0] != '"' || val[len(val)-1] != '"' {
				return a, fmt.Errorf("option %s: value must be quoted: %w", name, ErrFormat)
			}
			val = val[1 : len(val)-1]
		}
		switch {
		case name == "cert-authority" && !hasVal:
			return a, fmt.Errorf("cert-authority: certificates are not supported: %w", ErrFormat)
		case name == "namespaces" && hasVal:
			if a.Namespaces != "" {
				return a, fmt.Errorf("namespaces given twice: %w", ErrFormat)
			}
			if val == "" {
				return a, fmt.Errorf("empty namespaces: %w", ErrFormat)
			}
			a.Namespaces = val
		case (name == "valid-after" || name == "valid-before") && hasVal:
			t, err := parseSignerTime(val, loc)
			if err != nil {
				return a, fmt.Errorf("option %s: %w", name, err)
			}
			p := &a.ValidAfter
			if name == "valid-before" {
				p = &a.ValidBefore
			}
			if !p.IsZero() {
				return a, fmt.Errorf("%s given twice: %w", name, ErrFormat)
			}
			*p = t
		default:
			return a, fmt.Errorf("unknown option %q: %w", o, ErrFormat)
		}
	}
	if !a.ValidAfter.IsZero() && !a.ValidBefore.IsZero() && !a.ValidBefore.After(a.ValidAfter) {
		return a, fmt.Errorf("valid-before is not after valid-after: %w", ErrFormat)
	}
	return a, nil
}

// parseSignerTime parses YYYYMMDD[HHMM[SS]][Z]: UTC with the Z, else in loc.
func parseSignerTime(s string, loc *time.Location) (time.Time, error) {
	if strings.HasSuffix(s, "Z") || strings.HasSuffix(s, "z") {
		s, loc = s[:len(s)-1], time.UTC
	}
	var layout string
	switch len(s) {
	case 8:
		layout = "20060102"
	case 12:
		layout = "200601021504"
	case 14:
		layout = "20060102150405"
	default:
		return time.Time{}, fmt.Errorf("time %q: want YYYYMMDD[HHMM[SS]][Z]: %w", s, ErrFormat)
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return time.Time{}, fmt.Errorf("time %q: want YYYYMMDD[HHMM[SS]][Z]: %w", s, ErrFormat)
		}
	}
	t, err := time.ParseInLocation(layout, s, loc)
	if err != nil {
		return time.Time{}, fmt.Errorf("time %q: %v: %w", s, err, ErrFormat)
	}
	return t, nil
}

// matchPattern matches s against an ssh pattern: * any run, ? any one
// character, everything else itself.
func matchPattern(s, p string) bool {
	for len(p) > 0 {
		switch p[0] {
		case '*':
			for len(p) > 0 && p[0] == '*' {
				p = p[1:]
			}
			if p == "" {
				return true
			}
			for i := 0; i <= len(s); i++ {
				if matchPattern(s[i:], p) {
					return true
				}
			}
			return false
		case '?':
			if s == "" {
				return false
			}
			s, p = s[1:], p[1:]
		default:
			if s == "" || s[0] != p[0] {
				return false
			}
			s, p = s[1:], p[1:]
		}
	}
	return s == ""
}

// matchList matches s against a comma-separated pattern list as OpenSSH
// does: a matching negated (!) pattern rejects, else any match accepts.
func matchList(s, list string) bool {
	found := false
	for _, p := range strings.Split(list, ",") {
		p = strings.TrimSpace(p)
		if neg, ok := strings.CutPrefix(p, "!"); ok {
			if matchPattern(s, neg) {
				return false
			}
		} else if matchPattern(s, p) {
			found = true
		}
	}
	return found
}

// Verify checks sig over msg under namespace and that its key is allowed
// to sign at now: it returns the first line that allows it.
func (as AllowedSigners) Verify(sig *Signature, namespace string, msg []byte, now time.Time) (*AllowedSigner, error) {
	if err := sig.Verify(namespace, msg); err != nil {
		return nil, err
	}
	fp := ssh.FingerprintSHA256(sig.PublicKey)
	want := sig.PublicKey.Marshal()
	var why error
	for i := range as {
		a := &as[i]
		if !bytes.Equal(a.Key.Marshal(), want) {
			continue
		}
		switch {
		case a.Namespaces != "" && !matchList(namespace, a.Namespaces):
			why = fmt.Errorf("key %s (line %d) may not sign namespace %q: %w", fp, a.Line, namespace, ErrSignature)
		case !a.ValidAfter.IsZero() && now.Before(a.ValidAfter):
			why = fmt.Errorf("key %s (line %d) is valid only after %s: %w", fp, a.Line, a.ValidAfter.Format(time.RFC3339), ErrSignature)
		case !a.ValidBefore.IsZero() && !now.Before(a.ValidBefore):
			why = fmt.Errorf("key %s (line %d) was valid only before %s: %w", fp, a.Line, a.ValidBefore.Format(time.RFC3339), ErrSignature)
		default:
			return a, nil
		}
	}
	if why == nil {
		why = fmt.Errorf("%s key %s is not an allowed signer: %w", sig.PublicKey.Type(), fp, ErrSignature)
	}
	return nil, why
}

// hasKey reports whether key is on a line of as.
func (as AllowedSigners) hasKey(key ssh.PublicKey) bool {
	want := key.Marshal()
	for i := range as {
		if bytes.Equal(as[i].Key.Marshal(), want) {
			return true
		}
	}
	return false
}

// ReadAllowedSigners parses the allowed signers file at path (timestamps
// in local time).
func ReadAllowedSigners(path string) (AllowedSigners, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("allowed signers: %w", err)
	}
	defer f.Close()
	as, err := ParseAllowedSigners(f, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return as, nil
}
