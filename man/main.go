// Command man writes the tools' manual pages in roff format and their
// bash, zsh and fish completions; "make man" runs it. Both are generated
// from the same option tables and texts that --help and --man print.
//
//	go run ./man [-o DIR] [-c DIR]
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/godwarfs/godwarfs/internal/cli"
	"github.com/godwarfs/godwarfs/internal/dwarfs"
	"github.com/godwarfs/godwarfs/internal/dwarfsck"
	"github.com/godwarfs/godwarfs/internal/dwarfsextract"
	"github.com/godwarfs/godwarfs/internal/mkdwarfs"
)

// programs are the tools with a manual page.
func programs() []*cli.Program {
	return []*cli.Program{mkdwarfs.Program(), dwarfsck.Program(), dwarfsextract.Program(), dwarfs.Program()}
}

// pages returns each manual page's file name and roff text.
func pages() (map[string][]byte, error) {
	m := map[string][]byte{}
	for _, p := range programs() {
		var b bytes.Buffer
		if err := p.WriteManRoff(&b); err != nil {
			return nil, err
		}
		m[p.Name+".1"] = b.Bytes()
	}
	return m, nil
}

// completions returns each completion script's path below the
// completions directory (SHELL/FILE) and its text.
func completions() (map[string][]byte, error) {
	m := map[string][]byte{}
	for _, p := range programs() {
		for _, sh := range cli.Shells {
			var b bytes.Buffer
			if err := p.WriteCompletion(&b, sh); err != nil {
				return nil, err
			}
			m[filepath.Join(sh, cli.CompletionFile(sh, p.Name))] = b.Bytes()
		}
	}
	return m, nil
}

// write writes files below dir.
func write(dir string, files map[string][]byte) error {
	for name, b := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func main() {
	dir := flag.String("o", "man", "directory to write the pages to")
	cdir := flag.String("c", "completions", "directory to write the shell completions to")
	flag.Parse()
	m, err := pages()
	if err == nil {
		err = write(*dir, m)
	}
	if err == nil {
		if m, err = completions(); err == nil {
			err = write(*cdir, m)
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "man: %v\n", err)
		os.Exit(1)
	}
}
