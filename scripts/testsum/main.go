// Command testsum reads `go test -json` on standard input and prints what
// a person wants from a long run: each package's result line, the whole
// output of every failed test, each skipped test with its reason, and a
// closing count. With -no-skip a skipped test fails the run, for CI,
// where every optional input is present and nothing may skip.
//
// It exits 1 when a test or package failed (a build failure included), a
// test skipped under -no-skip, or the input held no package result.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json's TestEvent).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

type key struct{ pkg, test string }

// summary accumulates the events of one run.
type summary struct {
	out      map[key][]string // output so far of each running test
	pkgOut   map[string][]string
	failed   []key
	skipped  []key
	reasons  map[key]string
	passed   int
	packages int
	pkgFail  int
}

func newSummary() *summary {
	return &summary{out: map[key][]string{}, pkgOut: map[string][]string{}, reasons: map[key]string{}}
}

// add takes one event; w gets what is printed as the run goes.
func (s *summary) add(e event, w io.Writer) {
	k := key{e.Package, e.Test}
	if e.Action == "build-output" { // compiler errors, before the package's "fail"
		io.WriteString(w, e.Output)
		return
	}
	if e.Test == "" {
		switch e.Action {
		case "output":
			s.pkgOut[e.Package] = append(s.pkgOut[e.Package], e.Output)
		case "pass", "skip":
			s.packages++
			printResult(w, s.pkgOut[e.Package])
			delete(s.pkgOut, e.Package)
		case "fail":
			s.packages++
			s.pkgFail++
			// A package that failed outside any test (a build error, a
			// panic in init, a timeout) has only its own output to show.
			for _, l := range s.pkgOut[e.Package] {
				io.WriteString(w, l)
			}
			delete(s.pkgOut, e.Package)
		}
		return
	}
	switch e.Action {
	case "output":
		s.out[k] = append(s.out[k], e.Output)
	case "pass":
		s.passed++
		delete(s.out, k)
	case "fail":
		s.failed = append(s.failed, k)
		for _, l := range s.out[k] {
			io.WriteString(w, l)
		}
		delete(s.out, k)
	case "skip":
		s.skipped = append(s.skipped, k)
		s.reasons[k] = skipReason(s.out[k])
		delete(s.out, k)
	}
}

// printResult prints a package's closing line ("ok  pkg 1.2s", "?  pkg
// [no test files]") from its output.
func printResult(w io.Writer, lines []string) {
	for _, l := range lines {
		if strings.HasPrefix(l, "ok ") || strings.HasPrefix(l, "ok\t") || strings.HasPrefix(l, "?") {
			io.WriteString(w, l)
		}
	}
}

// skipReason is the text a skipped test printed, less go test's framing.
func skipReason(lines []string) string {
	var parts []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		parts = append(parts, t)
	}
	if len(parts) == 0 {
		return "(no reason given)"
	}
	return strings.Join(parts, " / ")
}

func run(r io.Reader, w io.Writer, noSkip bool) int {
	s := newSummary()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Action == "" {
			// go test prints build errors before any event.
			fmt.Fprintln(w, sc.Text())
			continue
		}
		s.add(e, w)
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(w, "testsum: reading the test output: %v\n", err)
		return 1
	}
	sort.Slice(s.skipped, func(i, j int) bool {
		a, b := s.skipped[i], s.skipped[j]
		return a.pkg < b.pkg || a.pkg == b.pkg && a.test < b.test
	})
	if len(s.skipped) > 0 {
		fmt.Fprintf(w, "\nskipped tests (%d):\n", len(s.skipped))
		for _, k := range s.skipped {
			fmt.Fprintf(w, "  %s %s: %s\n", k.pkg, k.test, s.reasons[k])
		}
	}
	for _, k := range s.failed {
		fmt.Fprintf(w, "FAILED: %s %s\n", k.pkg, k.test)
	}
	fmt.Fprintf(w, "\n%d passed, %d failed, %d skipped\n", s.passed, len(s.failed), len(s.skipped))
	switch {
	case s.packages == 0:
		fmt.Fprintln(w, "testsum: no package result in the input")
		return 1
	case len(s.failed) > 0 || s.pkgFail > 0:
		return 1
	case noSkip && len(s.skipped) > 0:
		fmt.Fprintln(w, "testsum: tests skipped where none may (-no-skip)")
		return 1
	}
	return 0
}

func main() {
	noSkip := flag.Bool("no-skip", false, "fail the run when a test skipped")
	flag.Parse()
	os.Exit(run(os.Stdin, os.Stdout, *noSkip))
}
