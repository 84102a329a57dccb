// Command godwarfs is all four tools in one binary: it runs as mkdwarfs,
// dwarfsck, dwarfsextract or dwarfs (also mount.dwarfs and
// mount.fuse.dwarfs) when called by one of those names, through a link or a
// copy, or as "godwarfs --tool=NAME ARGS...". One file deployed and linked
// under the tools' names replaces the four.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"unicode"

	"github.com/godwarfs/godwarfs/internal/cli"
	"github.com/godwarfs/godwarfs/internal/dwarfs"
	"github.com/godwarfs/godwarfs/internal/dwarfsck"
	"github.com/godwarfs/godwarfs/internal/dwarfsextract"
	"github.com/godwarfs/godwarfs/internal/mkdwarfs"
	"github.com/godwarfs/godwarfs/internal/version"
)

// stdio is where a tool reads and writes.
type stdio struct {
	in       io.Reader
	out, err io.Writer
}

// tool runs one tool with its full argv (argv[0] is the name it runs as).
type tool func(ctx context.Context, argv []string, s stdio) int

// tools maps each tool name to its entry point.
var tools = map[string]tool{
	"mkdwarfs": func(ctx context.Context, argv []string, s stdio) int {
		return mkdwarfs.Main(ctx, argv[1:], s.in, s.out, s.err)
	},
	"dwarfsck": func(_ context.Context, argv []string, s stdio) int {
		return dwarfsck.Main(argv[1:], s.out, s.err)
	},
	"dwarfsextract": func(ctx context.Context, argv []string, s stdio) int {
		return dwarfsextract.MainContext(ctx, argv[1:], s.out, s.err)
	},
	"dwarfs": func(_ context.Context, argv []string, s stdio) int {
		c := &dwarfs.CLI{Stdout: s.out, Stderr: s.err}
		return c.Run(argv)
	},
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

// run is main without the process: it returns the exit status.
func run(ctx context.Context, argv []string, s stdio) int {
	if name, targs, ok := dispatch(argv); ok {
		return tools[name](ctx, targs, s)
	}
	names := strings.Join(toolNames(), ", ")
	if len(argv) > 1 {
		switch a := argv[1]; {
		case a == "--version":
			io.WriteString(s.out, version.Get().Text("godwarfs"))
			return cli.ExitOK
		case a == "--help" || a == "-h":
		case strings.HasPrefix(a, "--tool="):
			fmt.Fprintf(s.err, "godwarfs: error: unknown tool '%s' (expected one of %s)\n", strings.TrimPrefix(a, "--tool="), names)
			return cli.ExitError
		default:
			fmt.Fprintf(s.err, "godwarfs: error: no tool chosen: run as one of %s, or with --tool=NAME first\n", names)
			fmt.Fprintln(s.err, "Try 'godwarfs --help' for more information.")
			return cli.ExitError
		}
	}
	fmt.Fprintf(s.out, "godwarfs %s - the DwarFS tools in one binary\n\n"+
		"Usage: godwarfs --tool=NAME [ARGS...]\n"+
		"       NAME [ARGS...]   (godwarfs linked or copied as NAME)\n\n"+
		"Tools: %s\n(dwarfs also runs as mount.dwarfs and mount.fuse.dwarfs)\n\n"+
		"  --tool=NAME   run tool NAME; 'godwarfs --tool=NAME --help' shows its options\n"+
		"  --version     print the version and exit\n"+
		"  --help        print this help and exit\n", version.Get(), names)
	return cli.ExitOK
}

func main() {
	// Cancellation on SIGINT/SIGTERM lets mkdwarfs and dwarfsextract
	// remove what they have not finished; the FUSE driver handles its
	// signals itself.
	ctx, stop := context.Background(), context.CancelFunc(func() {})
	if name, _, _ := dispatch(os.Args); name == "mkdwarfs" || name == "dwarfsextract" {
		ctx, stop = signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	}
	code := run(ctx, os.Args, stdio{os.Stdin, os.Stdout, os.Stderr})
	stop()
	os.Exit(code)
}
