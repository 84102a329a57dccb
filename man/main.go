// Command man writes the tools' manual pages in roff format; "make man"
// runs it. The pages are generated from the same option tables and texts
// that --help and --man print.
//
//	go run ./man [-o DIR]
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

func main() {
	dir := flag.String("o", "man", "directory to write the pages to")
	flag.Parse()
	m, err := pages()
	if err == nil {
		for name, b := range m {
			if err = os.WriteFile(filepath.Join(*dir, name), b, 0o644); err != nil {
				break
			}
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "man: %v\n", err)
		os.Exit(1)
	}
}
