package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs/internal/cli"
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

// TestCompletionsCurrent fails when an option changed without "make man".
func TestCompletionsCurrent(t *testing.T) {
	m, err := completions()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range m {
		got, err := os.ReadFile(filepath.Join("..", "completions", name))
		if err != nil {
			t.Errorf("%v (run make man)", err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("completions/%s is out of date: run make man", name)
		}
	}
}

// Every option --help lists appears in every shell's completion, by its
// long and its short name.
func TestCompletionsListEveryOption(t *testing.T) {
	m, err := completions()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range programs() {
		for _, sh := range cli.Shells {
			text := string(m[filepath.Join(sh, cli.CompletionFile(sh, p.Name))])
			for _, o := range p.AllOptions() {
				if o.Hidden || o.Unsupported {
					continue
				}
				long, short := "--"+o.Long, "-"+o.Short
				if sh == "fish" {
					long, short = "-l "+o.Long, "-s "+o.Short
				}
				if !strings.Contains(text, long) {
					t.Errorf("%s %s completion lacks %s", sh, p.Name, long)
				}
				if o.Short != "" && !strings.Contains(text, short) {
					t.Errorf("%s %s completion lacks %s", sh, p.Name, short)
				}
			}
		}
	}
}

// TestBashCompletion runs the bash completions as bash would: option
// names, an option's listed values, --opt=value and dwarfs -o lists.
func TestBashCompletion(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skipf("skipped: bash is not installed: %v", err)
	}
	for _, tc := range []struct {
		tool  string
		words []string // the command line, the word being completed last
		want  string
	}{
		{"dwarfsextract", []string{"--case-c"}, "--case-collision"},
		{"dwarfsextract", []string{"--case-collision", "re"}, "rename"},
		{"dwarfsextract", []string{"--case-collision", "=", ""}, "skip rename error"},
		{"dwarfs", []string{"img", "mnt", "-o", "cachesize=1g,worke"}, "cachesize=1g,workers="},
		{"dwarfsck", []string{"--check-int"}, "--check-integrity"},
	} {
		words := append([]string{tc.tool}, tc.words...)
		script := ". ../completions/bash/" + tc.tool + "\nCOMP_WORDS=(" + shellWords(words) + ")\nCOMP_CWORD=" +
			strconv.Itoa(len(words)-1) + "\n_godwarfs_" + tc.tool + "\necho \"${COMPREPLY[*]}\"\n"
		out, err := exec.Command(bash, "--norc", "-c", script).CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", words, err, out)
		}
		if got := strings.TrimSpace(string(out)); got != tc.want {
			t.Errorf("%v: completes to %q, want %q", words, got, tc.want)
		}
	}
}

func shellWords(ws []string) string {
	q := make([]string, len(ws))
	for i, w := range ws {
		q[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// The zsh and fish scripts parse, where those shells are installed
// (the bash test above runs everywhere).
func TestCompletionSyntax(t *testing.T) {
	for _, sh := range []string{"zsh", "fish"} {
		bin, err := exec.LookPath(sh)
		if err != nil {
			t.Logf("%s not installed: its completions are not parsed here", sh)
			continue
		}
		files, _ := filepath.Glob(filepath.Join("..", "completions", sh, "*"))
		for _, f := range files {
			if out, err := exec.Command(bin, "-n", f).CombinedOutput(); err != nil {
				t.Errorf("%s -n %s: %v\n%s", sh, f, err, out)
			}
		}
	}
}
