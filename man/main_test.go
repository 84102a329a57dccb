package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestPagesCurrent fails when an option or manual text changed without
// "make man".
func TestPagesCurrent(t *testing.T) {
	m, err := pages()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range m {
		got, err := os.ReadFile(name)
		if err != nil {
			t.Errorf("%v (run make man)", err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is out of date: run make man", name)
		}
	}
}

// TestPagesRender formats each page with man(1) when it is installed and
// checks that it renders without warnings.
func TestPagesRender(t *testing.T) {
	manPath, err := exec.LookPath("man")
	if err != nil {
		t.Skip("skipped: man(1) is not installed")
	}
	m, err := pages()
	if err != nil {
		t.Fatal(err)
	}
	for name, page := range m {
		cmd := exec.Command(manPath, "--warnings", "-l", "-")
		cmd.Stdin = bytes.NewReader(page)
		cmd.Env = append(os.Environ(), "MANPAGER=cat", "PAGER=cat", "MANWIDTH=80")
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil || errb.Len() > 0 {
			t.Errorf("%s: man: %v\n%s", name, err, errb.String())
		}
		tool := strings.TrimSuffix(name, ".1")
		if !strings.Contains(out.String(), "--help") || !strings.Contains(out.String(), tool) {
			t.Errorf("%s: rendered page lacks the tool name or --help:\n%s", name, out.String())
		}
	}
}
