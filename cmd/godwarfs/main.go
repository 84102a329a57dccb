// Command godwarfs is all four tools in one binary: it runs as mkdwarfs,
// dwarfsck, dwarfsextract or dwarfs (also mount.dwarfs and
// mount.fuse.dwarfs) when called by one of those names, through a link or a
// copy, or as "godwarfs --tool=NAME ARGS...". One file deployed and linked
// under the tools' names replaces the four.
package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode"

	"github.com/godwarfs/godwarfs/internal/cli"
	"github.com/godwarfs/godwarfs/internal/dwarfs"
	"github.com/godwarfs/godwarfs/internal/dwarfsck"
	"github.com/godwarfs/godwarfs/internal/dwarfsextract"
	"github.com/godwarfs/godwarfs/internal/mkdwarfs"
	"github.com/godwarfs/godwarfs/internal/version"
)

// tools maps each tool name to its entry point.
var tools = map[string]cli.Tool{}

func init() {
	for _, t := range []cli.Tool{mkdwarfs.Tool, dwarfsck.Tool, dwarfsextract.Tool, dwarfs.Tool} {
		tools[t.Name] = t
	}
}

// aliases are further names a tool answers to.
var aliases = map[string]string{
	"mount.dwarfs":       "dwarfs",
	"mount.fuse.dwarfs":  "dwarfs",
	"mount.fuse3.dwarfs": "dwarfs",
}

func lookup(name string) (string, bool) {
	if _, ok := tools[name]; ok {
		return name, true
	}
	t, ok := aliases[name]
	return t, ok
}

// dispatch finds the tool for argv and the argv to run it with: by the
// name the binary was called as (a version suffix such as
// "mkdwarfs-0.15" is ignored), else by a first argument --tool=NAME,
// which is removed (the tool then runs as NAME). ok is false when neither
// names a tool.
func dispatch(argv []string) (name string, targs []string, ok bool) {
	if len(argv) == 0 {
		return "", nil, false
	}
	base := filepath.Base(argv[0])
	if t, ok := lookup(base); ok {
		return t, argv, true
	}
	if stem, suffix, found := strings.Cut(base, "-"); found && suffix != "" && unicode.IsDigit(rune(suffix[0])) {
		if t, ok := lookup(stem); ok {
			return t, append([]string{stem}, argv[1:]...), true
		}
	}
	if len(argv) > 1 && strings.HasPrefix(argv[1], "--tool=") {
		n := strings.TrimPrefix(argv[1], "--tool=")
		if t, ok := lookup(n); ok {
			return t, append([]string{n}, argv[2:]...), true
		}
	}
	return "", nil, false
}

func toolNames() []string {
	var names []string
	for n := range tools {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// run is main without the process exit: it returns the exit status. The
// tool chosen takes signals as its own command does.
func run(argv []string, s cli.Stdio) int {
	if name, targs, ok := dispatch(argv); ok {
		return tools[name].Run(targs, s)
	}
	names := strings.Join(toolNames(), ", ")
	if len(argv) > 1 {
		switch a := argv[1]; {
		case a == "--version":
			io.WriteString(s.Out, version.Get().Text("godwarfs"))
			return cli.ExitOK
		case a == "--help" || a == "-h":
		case strings.HasPrefix(a, "--tool="):
			fmt.Fprintf(s.Err, "godwarfs: error: unknown tool '%s' (expected one of %s)\n", strings.TrimPrefix(a, "--tool="), names)
			return cli.ExitError
		default:
			fmt.Fprintf(s.Err, "godwarfs: error: no tool chosen: run as one of %s, or with --tool=NAME first\n", names)
			fmt.Fprintln(s.Err, "Try 'godwarfs --help' for more information.")
			return cli.ExitError
		}
	}
	fmt.Fprintf(s.Out, "godwarfs %s - the DwarFS tools in one binary\n\n"+
		"Usage: godwarfs --tool=NAME [ARGS...]\n"+
		"       NAME [ARGS...]   (godwarfs linked or copied as NAME)\n\n"+
		"Tools: %s\n(dwarfs also runs as mount.dwarfs and mount.fuse.dwarfs)\n\n"+
		"  --tool=NAME   run tool NAME; 'godwarfs --tool=NAME --help' shows its options\n"+
		"  --version     print the version and exit\n"+
		"  --help        print this help and exit\n", version.Get(), names)
	return cli.ExitOK
}

func main() {
	os.Exit(run(os.Args, cli.Stdio{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}))
}
