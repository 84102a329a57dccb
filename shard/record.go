package shard

import (
	"fmt"
	"strconv"
	"strings"
)

// Record is what a shard image records of its shard: its index, the
// number of shards and the plan's digest. It is kept in the command line
// of the image's history entry (the reference tools show it as such and
// ignore it otherwise), as the options --shard=K/N and
// --shard-digest=DIGEST.
type Record struct {
	Index, Count int
	Digest       string
}

// The options a Record is written as.
const (
	SpecOption   = "--shard"
	DigestOption = "--shard-digest"
)

// String is "K/N plan DIGEST".
func (r Record) String() string {
	return fmt.Sprintf("%d/%d plan %s", r.Index, r.Count, r.Digest)
}

// Spec is "K/N".
func (r Record) Spec() string { return fmt.Sprintf("%d/%d", r.Index, r.Count) }

// ParseSpec parses "K/N": shard K (counted from 0) of N.
func ParseSpec(s string) (index, count int, err error) {
	ks, ns, ok := strings.Cut(s, "/")
	k, err1 := strconv.Atoi(ks)
	n, err2 := strconv.Atoi(ns)
	if !ok || err1 != nil || err2 != nil || strings.HasPrefix(ks, "+") || strings.HasPrefix(ns, "+") {
		return 0, 0, fmt.Errorf("shard %q: want K/N, shard K (from 0) of N", s)
	}
	if n < 1 || k < 0 || k >= n {
		return 0, 0, fmt.Errorf("shard %q: K must be at least 0 and below N, and N at least 1", s)
	}
	return k, n, nil
}

// CheckDigest checks the form of a plan digest.
func CheckDigest(d string) error {
	h, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
		return fmt.Errorf("plan digest %q: want sha256: and 64 lower-case hex digits", d)
	}
	return nil
}

// AddTo returns the command line args with the record's options added
// where they are not there as written by Args already: the recorded
// command line of a shard build. nil args (a command line not to be
// recorded) get the program name mkdwarfs and the record only.
func (r Record) AddTo(args []string) []string {
	if args == nil {
		args = []string{"mkdwarfs"}
	}
	out := append([]string{}, args...)
	for _, a := range r.Args() {
		found := false
		for _, b := range args[1:] {
			found = found || a == b
		}
		if !found {
			out = append(out, a)
		}
	}
	return out
}

// Args are the record's options: --shard=K/N --shard-digest=DIGEST.
func (r Record) Args() []string {
	return []string{SpecOption + "=" + r.Spec(), DigestOption + "=" + r.Digest}
}

// FromArgs finds the record in a recorded command line (args[0] is the
// program): the last --shard and --shard-digest, each as --opt=V or
// --opt V, before any "--". Both must be there and well formed.
func FromArgs(args []string) (Record, bool) {
	var spec, dig string
	for i := 1; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		for _, o := range []struct {
			name string
			v    *string
		}{{SpecOption, &spec}, {DigestOption, &dig}} {
			if v, ok := strings.CutPrefix(a, o.name+"="); ok {
				*o.v = v
			} else if a == o.name && i+1 < len(args) {
				i++
				*o.v = args[i]
			}
		}
	}
	if spec == "" || dig == "" || CheckDigest(dig) != nil {
		return Record{}, false
	}
	k, n, err := ParseSpec(spec)
	if err != nil {
		return Record{}, false
	}
	return Record{Index: k, Count: n, Digest: dig}, true
}

// FromHistory returns the shard record of an image from the command lines
// of its history entries, oldest first: the newest entry's record, if no
// other entry has one. An image merged from shards (whose history holds
// theirs), or made from a shard by a later build step (recompressed,
// appended to), is not a shard.
func FromHistory(cmdlines [][]string) (Record, bool) {
	if len(cmdlines) == 0 {
		return Record{}, false
	}
	r, ok := FromArgs(cmdlines[len(cmdlines)-1])
	if !ok {
		return Record{}, false
	}
	for _, c := range cmdlines[:len(cmdlines)-1] {
		if _, other := FromArgs(c); other {
			return Record{}, false
		}
	}
	return r, true
}
