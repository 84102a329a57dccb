package mkdwarfs

import (
	"bytes"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/godwarfs/godwarfs/block/encode"
	"github.com/godwarfs/godwarfs/internal/cli"
)

// runtimeName is the runtime --runtime without a file takes from the
// directory of the mkdwarfs executable.
const runtimeName = "dwarfs-run"

// defaultEntry is what the runtime runs unless --entry names another.
const defaultEntry = "AppRun"

// runtimeOptions takes --runtime and --entry: the output becomes a
// self-mounting executable, the runtime followed by the image, written
// like any image under a temporary name and made executable before it
// takes its own. The runtime finds the entry in the image's history,
// which records the command line, --entry included.
func runtimeOptions(p *cli.Result, cfg *Config, recomp bool) error {
	rt, ok := p.Lookup("runtime")
	ent, hasEntry := p.Lookup("entry")
	if hasEntry && !ok {
		return usagef("--entry needs --runtime")
	}
	if !ok {
		return nil
	}
	switch {
	case p.Has("header"):
		return cli.Conflict("runtime", "header")
	case recomp:
		return usagef("--runtime builds an image from a tree; to put a runtime before an existing image, unpack it or use --append")
	case cfg.Output == "-":
		return usagef("--runtime needs an output file, not standard output")
	case hasEntry && cfg.NoHistory:
		return cli.Conflict("entry", "no-history")
	case hasEntry && cfg.NoHistArgs:
		return cli.Conflict("entry", "no-history-command-line")
	}
	if hasEntry {
		c := path.Clean("/" + ent)[1:]
		if c == "" || c != strings.TrimPrefix(ent, "/") {
			return cli.BadValue("entry", ent, "a path of a file in the image, like bin/app")
		}
	}
	if err := checkEntry(cfg, ent, hasEntry); err != nil {
		return err
	}
	if rt == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("--runtime: finding %s beside mkdwarfs: %w", runtimeName, err)
		}
		rt = filepath.Join(filepath.Dir(exe), runtimeName)
	}
	b, err := os.ReadFile(rt)
	if err != nil {
		return fmt.Errorf("reading the runtime: %w", err)
	}
	if !bytes.HasPrefix(b, []byte("\x7fELF")) {
		return fmt.Errorf("runtime %s is not an ELF executable", rt)
	}
	cfg.Header = b
	cfg.Executable = true
	return nil
}

// checkEntry checks, for a directory input, that the entry is there, so
// that a packed application that could not start is caught here.
func checkEntry(cfg *Config, ent string, given bool) error {
	in := cfg.Build.Input
	if cfg.TarInput != "" || cfg.OCIInput != "" || in == "" {
		return nil
	}
	if fi, err := os.Stat(in); err != nil || !fi.IsDir() {
		return nil
	}
	if !given {
		ent = defaultEntry
	}
	fi, err := os.Stat(filepath.Join(in, filepath.FromSlash(ent)))
	switch {
	case err != nil && given:
		return fmt.Errorf("--entry %s: %w", ent, err)
	case err != nil:
		return fmt.Errorf("--runtime: %s has no %s to run (name the program with --entry): %w", in, defaultEntry, err)
	case !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0:
		return fmt.Errorf("--runtime: %s in %s is not an executable file", ent, in)
	}
	return nil
}

// runtimeCodecs refuses, with --runtime, a compression the runtime does
// not decode: it is built with only the core ones (block.Compression.Core),
// to stay small, as every packed application carries a copy.
func runtimeCodecs(cfg *Config) error {
	if !cfg.Executable {
		return nil
	}
	specs := []struct{ opt, spec string }{
		{"compression", cfg.Compression}, {"schema-compression", cfg.SchemaComp},
		{"metadata-compression", cfg.MetaComp}, {"history-compression", cfg.HistoryComp},
	}
	cats := make([]string, 0, len(cfg.CategoryComp))
	for cat := range cfg.CategoryComp {
		cats = append(cats, cat)
	}
	slices.Sort(cats)
	for _, cat := range cats {
		specs = append(specs, struct{ opt, spec string }{"compression", cat + "::" + cfg.CategoryComp[cat]})
	}
	var bad []string
	for _, s := range specs {
		_, spec, ok := strings.Cut(s.spec, "::")
		if !ok {
			spec = s.spec
		}
		comp, err := encode.NewCompressor(spec)
		if err != nil {
			return cli.BadValue(s.opt, s.spec, err.Error())
		}
		if c := comp.Compression(); !c.Core() {
			bad = append(bad, fmt.Sprintf("--%s %s (%s)", s.opt, s.spec, strings.ToLower(c.String())))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("--runtime: the runtime reads only zstd, lz4, lz4hc and uncompressed sections; choose one of those instead of %s",
			strings.Join(bad, ", "))
	}
	return nil
}
