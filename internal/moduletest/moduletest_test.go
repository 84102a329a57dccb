// Package moduletest uses this module as a Go user outside it would: a
// module that imports it, `go install MODULE/cmd/...@VERSION`, and a small
// reader program whose size and dependencies are checked.
//
// The module is served from a local file GOPROXY, so no replace directive
// and no network are involved. Its zip is made with golang.org/x/mod/zip
// from the files git tracks, read from disk: uncommitted edits to tracked
// files are tested, untracked files (scratch directories, a new file not yet
// added with git add) are not. Outside a git checkout the whole module
// directory is zipped. The dependencies come from the module cache's
// download directory, served as a second file proxy. The go commands run
// with a temporary GOMODCACHE and GOPATH, so the result does not depend on
// what the developer's module cache has extracted, and the real GOCACHE, so
// a warm run mostly hits the build cache.
//
// The package holds only tests.
package moduletest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

const (
	modulePath = "github.com/godwarfs/godwarfs"
	// version is the version the proxy serves. A fixed version, rather than
	// a pseudo-version naming HEAD, because the zip holds the tracked files
	// as they are on disk, which need not be HEAD; and because trimmed build
	// paths then stay the same from commit to commit, so unchanged packages
	// hit the build cache.
	version = "v0.0.0-test"

	// maxWalkSize is issue #48's bound on the local walk program, built
	// static (CGO_ENABLED=0) with the default flags.
	maxWalkSize = 6 << 20
)

// forbiddenModules are the network clients a local reader must not link
// (module path prefixes).
var forbiddenModules = []string{
	"github.com/aws/",
	"github.com/google/go-containerregistry",
	"github.com/docker/",
	"github.com/sirupsen/logrus",
}

// env is what the go commands run with: the proxy, the temporary module
// cache and the shared scratch directories. It is built once for all tests.
type env struct {
	goBin    string   // the go command
	root     string   // this module's directory
	work     string   // scratch directory holding everything below
	proxy    string   // file GOPROXY serving this module
	importer string   // the outside module
	vars     []string // the clean environment
	tools    []string // the commands under cmd/, by name
	zipFrom  string   // what the module zip was made from
	goLine   string   // go.mod's go version, which the importer needs too
}

var (
	setupOnce sync.Once
	shared    *env
	setupErr  error
	skipWhy   string
	scratch   string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if scratch != "" {
		// The module cache is made writable (-modcacherw), so this removes it.
		os.RemoveAll(scratch)
	}
	os.Exit(code)
}

// setup builds the proxy and the outside module once; every test calls it.
func setup(t *testing.T) *env {
	t.Helper()
	setupOnce.Do(func() {
		goBin, err := exec.LookPath("go")
		if err != nil {
			skipWhy = "the go command is not in PATH: " + err.Error()
			return
		}
		shared, setupErr = newEnv(goBin)
	})
	if skipWhy != "" {
		t.Skip(skipWhy)
	}
	if setupErr != nil {
		t.Fatal(setupErr)
	}
	return shared
}

func newEnv(goBin string) (*env, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e := &env{goBin: goBin}
	gomod, err := output(ctx, "", nil, goBin, "env", "GOMOD")
	if err != nil {
		return nil, err
	}
	gomod = strings.TrimSpace(gomod)
	if gomod == "" || gomod == os.DevNull {
		return nil, errors.New("the test does not run inside this module: go env GOMOD is empty")
	}
	e.root = filepath.Dir(gomod)
	goenv, err := output(ctx, e.root, nil, goBin, "env", "-json", "GOCACHE", "GOMODCACHE")
	if err != nil {
		return nil, err
	}
	var ge struct{ GOCACHE, GOMODCACHE string }
	if err := json.Unmarshal([]byte(goenv), &ge); err != nil {
		return nil, fmt.Errorf("go env -json: %w", err)
	}
	if ge.GOCACHE == "" || ge.GOCACHE == "off" || ge.GOMODCACHE == "" {
		return nil, fmt.Errorf("go env: GOCACHE %q, GOMODCACHE %q: both are needed", ge.GOCACHE, ge.GOMODCACHE)
	}

	scratch, err = os.MkdirTemp("", "godwarfs-moduletest-")
	if err != nil {
		return nil, err
	}
	e.work = scratch
	e.proxy = filepath.Join(e.work, "proxy")
	e.importer = filepath.Join(e.work, "importer")
	// A clean environment: PATH and HOME inherited, GOCACHE the real one,
	// everything else set here. GOENV=off keeps the developer's go env file
	// (GOPROXY, GOFLAGS, ...) out; GOTOOLCHAIN=local keeps a toolchain
	// download out. -modcacherw lets the scratch directory be removed.
	// -trimpath because without it the build cache keys a package on its
	// directory, which is in the temporary module cache, so every run would
	// compile every dependency again; with it the key is module@version.
	e.vars = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + os.Getenv("HOME"),
		"GOCACHE=" + ge.GOCACHE,
		"GOENV=off",
		"GOTOOLCHAIN=local",
		"GOMODCACHE=" + filepath.Join(e.work, "modcache"),
		"GOPATH=" + filepath.Join(e.work, "gopath"),
		"GOPROXY=" + fileURL(e.proxy) + "," + fileURL(filepath.Join(ge.GOMODCACHE, "cache", "download")),
		"GOSUMDB=off",
		"GONOSUMDB=*",
		"GOFLAGS=-mod=mod -modcacherw -trimpath",
		"TMPDIR=" + e.work,
	}

	if err := e.writeProxy(ctx); err != nil {
		return nil, err
	}
	if err := e.writeImporter(ctx); err != nil {
		return nil, err
	}
	tools, err := output(ctx, e.root, nil, goBin, "list", "-f", `{{if eq .Name "main"}}{{.ImportPath}}{{end}}`, "./cmd/...")
	if err != nil {
		return nil, err
	}
	for _, p := range strings.Fields(tools) {
		e.tools = append(e.tools, filepath.Base(p))
	}
	if len(e.tools) == 0 {
		return nil, errors.New("go list ./cmd/... found no commands")
	}
	return e, nil
}

func fileURL(dir string) string {
	return "file://" + filepath.ToSlash(dir)
}

// writeProxy lays out this module in the file proxy: list, .info, .mod, .zip.
func (e *env) writeProxy(ctx context.Context) error {
	dir := filepath.Join(e.proxy, modulePath, "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	gomod, err := os.ReadFile(filepath.Join(e.root, "go.mod"))
	if err != nil {
		return err
	}
	mf, err := modfile.ParseLax("go.mod", gomod, nil)
	if err != nil {
		return fmt.Errorf("parse go.mod: %w", err)
	}
	if mf.Module == nil || mf.Module.Mod.Path != modulePath || mf.Go == nil {
		return fmt.Errorf("go.mod in %s does not declare module %s and a go version", e.root, modulePath)
	}
	e.goLine = mf.Go.Version
	info, err := json.Marshal(struct{ Version, Time string }{version, "2020-01-01T00:00:00Z"})
	if err != nil {
		return err
	}
	files := map[string][]byte{
		"list":            []byte(version + "\n"),
		version + ".info": info,
		version + ".mod":  gomod,
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}

	zf, err := os.Create(filepath.Join(dir, version+".zip"))
	if err != nil {
		return err
	}
	defer zf.Close()
	m := module.Version{Path: modulePath, Version: version}
	tracked, err := e.trackedFiles(ctx)
	switch {
	case err != nil:
		return err
	case tracked == nil:
		e.zipFrom = "every file under " + e.root + " (not a git checkout)"
		err = modzip.CreateFromDir(zf, m, e.root)
	default:
		e.zipFrom = fmt.Sprintf("the %d files git tracks under %s, as they are on disk", len(tracked), e.root)
		err = modzip.Create(zf, m, tracked)
	}
	if err != nil {
		return fmt.Errorf("module zip of %s: %w", e.root, err)
	}
	return zf.Close()
}

// trackedFiles lists the files git tracks under the module root, read from
// disk; nil when the module is not a git checkout. A tracked file deleted
// from the working tree is left out, as the build on disk would leave it.
func (e *env) trackedFiles(ctx context.Context) ([]modzip.File, error) {
	git, err := exec.LookPath("git")
	if err != nil {
		return nil, nil
	}
	cmd := exec.CommandContext(ctx, git, "ls-files", "-z", "--cached", "--", ".")
	cmd.Dir = e.root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if strings.Contains(stderr.String(), "not a git repository") {
			return nil, nil
		}
		return nil, fmt.Errorf("git ls-files in %s: %w: %s", e.root, err, stderr.String())
	}
	var files []modzip.File
	for _, name := range strings.Split(string(out), "\x00") {
		if name == "" {
			continue
		}
		p := filepath.Join(e.root, filepath.FromSlash(name))
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		files = append(files, diskFile{name: name, path: p, info: fi})
	}
	return files, nil
}

// diskFile is a file of the module zip, read from the working tree.
type diskFile struct {
	name, path string
	info       fs.FileInfo
}

func (f diskFile) Path() string                 { return f.name }
func (f diskFile) Lstat() (fs.FileInfo, error)  { return f.info, nil }
func (f diskFile) Open() (io.ReadCloser, error) { return os.Open(f.path) }

// writeImporter writes the outside module: main.go imports every package an
// importer can import, walk/ is the local walk program.
func (e *env) writeImporter(ctx context.Context) error {
	// Every package Go lets another module import: not internal, not a
	// command (cmd/, bench/, scripts/, man/ hold commands), and with
	// non-test Go files. A library package added anywhere, bench/ included,
	// is covered without editing this list.
	out, err := output(ctx, e.root, nil, e.goBin, "list", "-f",
		`{{if and (ne .Name "main") (or .GoFiles .CgoFiles)}}{{.ImportPath}}{{end}}`, "./...")
	if err != nil {
		return err
	}
	var pkgs []string
	for _, p := range strings.Fields(out) {
		if strings.Contains(p+"/", "/internal/") {
			continue
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 || pkgs[0] != modulePath {
		return fmt.Errorf("go list ./... in %s: the public packages %q do not start with the root package", e.root, pkgs)
	}

	var main bytes.Buffer
	main.WriteString("// Command importer imports every public package of " + modulePath + ".\npackage main\n\nimport (\n")
	for _, p := range pkgs {
		fmt.Fprintf(&main, "\t_ %q\n", p)
	}
	main.WriteString(")\n\nfunc main() {}\n")

	files := map[string]string{
		"go.mod":       fmt.Sprintf("module example.com/importer\n\ngo %s\n\nrequire %s %s\n", e.goLine, modulePath, version),
		"main.go":      main.String(),
		"walk/main.go": walkProgram,
	}
	for name, data := range files {
		p := filepath.Join(e.importer, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// walkProgram is the local walk program of issue #48: open a local image,
// walk it, read each regular file.
const walkProgram = `package main

import (
	"fmt"
	"io/fs"
	"log"
	"os"

	"github.com/godwarfs/godwarfs"
)

func main() {
	im, err := godwarfs.Open(os.Args[1], nil)
	if err != nil {
		log.Fatal(err)
	}
	defer im.Close()
	err = fs.WalkDir(im, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			fmt.Println(p)
			return nil
		}
		b, err := fs.ReadFile(im, p)
		if err != nil {
			return err
		}
		fmt.Println(p, len(b))
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
}
`

// run runs a command with the clean environment plus extra, and fails the
// test with its output when it fails.
func (e *env) run(t *testing.T, dir string, extra []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := testContext(t)
	defer cancel()
	out, err := output(ctx, dir, append(append([]string{}, e.vars...), extra...), name, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// testContext ends shortly before the test's deadline, so that a command
// still running then fails the test with its output, not a panic.
func testContext(t *testing.T) (context.Context, context.CancelFunc) {
	if d, ok := t.Deadline(); ok {
		return context.WithDeadline(context.Background(), d.Add(-30*time.Second))
	}
	return context.WithCancel(context.Background())
}

// output runs a command (with env, or the test's environment when env is
// nil) and returns its standard output; the error holds the command line
// and everything it printed.
func output(ctx context.Context, dir string, env []string, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s (in %s): %w\n%s%s", name, strings.Join(args, " "), dir, err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

// TestImportEveryPackage builds and links the outside module that imports
// every public package, with cgo on as a user's default build has it. (The
// CGO_ENABLED=0 build of every package is make nocgo's; the local walk
// program below is built without cgo.)
func TestImportEveryPackage(t *testing.T) {
	e := setup(t)
	needCC(t)
	t.Logf("%s@%s is served from %s; its zip holds %s", modulePath, version, e.proxy, e.zipFrom)
	main, err := os.ReadFile(filepath.Join(e.importer, "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the importer imports:\n%s", main)
	e.run(t, e.importer, []string{"CGO_ENABLED=1"}, e.goBin, "build", "-o", os.DevNull, ".")
}

// needCC skips when there is no C compiler, which a cgo build needs.
func needCC(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("no gcc in PATH, which a build with CGO_ENABLED=1 needs: " + err.Error())
	}
}

var (
	installOnce sync.Once
	installBin  string
	installErr  error
)

// install runs go install MODULE/cmd/...@VERSION once, with cgo as the go
// command defaults it (on where a C compiler is found), and returns the
// GOBIN it installed into.
func (e *env) install(t *testing.T) string {
	t.Helper()
	installOnce.Do(func() {
		installBin = filepath.Join(e.work, "bin")
		ctx, cancel := testContext(t)
		defer cancel()
		_, installErr = output(ctx, e.work, append(append([]string{}, e.vars...), "GOBIN="+installBin),
			e.goBin, "install", modulePath+"/cmd/...@"+version)
	})
	if installErr != nil {
		t.Fatal(installErr)
	}
	return installBin
}

// TestGoInstall installs the commands with go install MODULE/cmd/...@VERSION
// and runs them: mkdwarfs builds an image, dwarfsck checks it, and
// dwarfsextract gives back the tree byte for byte.
func TestGoInstall(t *testing.T) {
	e := setup(t)
	bin := e.install(t)
	checkTools(t, e, bin)

	tree := t.TempDir()
	writeTree(t, tree)
	img := filepath.Join(t.TempDir(), "tree.dwarfs")
	tool := func(name string) string { return filepath.Join(bin, name) }
	e.run(t, e.work, nil, tool("mkdwarfs"), "-i", tree, "-o", img)
	e.run(t, e.work, nil, tool("dwarfsck"), img)
	out := t.TempDir()
	e.run(t, e.work, nil, tool("dwarfsextract"), "-i", img, "-o", out)
	compareTrees(t, tree, out)

	if has(e.tools, "godwarfs") {
		e.run(t, e.work, nil, tool("godwarfs"), "--tool=dwarfsck", img)
		out2 := t.TempDir()
		e.run(t, e.work, nil, tool("godwarfs"), "--tool=dwarfsextract", "-i", img, "-o", out2)
		compareTrees(t, tree, out2)
	}
}

// checkTools checks that every command under cmd/ is installed in bin and
// answers --help (the runtime: --appimage-help) with its usage.
func checkTools(t *testing.T, e *env, bin string) {
	t.Helper()
	for _, name := range e.tools {
		p := filepath.Join(bin, name)
		if _, err := os.Stat(p); err != nil {
			t.Errorf("go install did not install %s: %v", name, err)
			continue
		}
		if name == "godwarfs" {
			// The multi-call binary answers for the tool it runs as.
			name = "mkdwarfs"
			help := e.run(t, e.work, nil, p, "--tool=mkdwarfs", "--help")
			checkUsage(t, "godwarfs --tool=mkdwarfs --help", help, name)
			continue
		}
		flag := "--help"
		if name == "dwarfs-run" {
			// The runtime passes --help on to the packed application;
			// its own options carry a prefix.
			flag = "--appimage-help"
		}
		help := e.run(t, e.work, nil, p, flag)
		checkUsage(t, name+" "+flag, help, name)
	}
}

func checkUsage(t *testing.T, cmd, help, name string) {
	t.Helper()
	if !strings.Contains(help, "Usage: "+name+" ") {
		t.Errorf("%s printed no usage line %q:\n%s", cmd, "Usage: "+name, help)
	}
}

func has(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// writeTree writes a small tree: files, one large enough to span blocks of
// a small image, an empty file, an empty directory and a symlink.
func writeTree(t *testing.T, dir string) {
	t.Helper()
	big := make([]byte, 300<<10)
	x := uint32(1)
	for i := range big {
		x = x*1664525 + 1013904223
		big[i] = byte(x >> 24)
	}
	files := map[string][]byte{
		"hello.txt":        []byte("Hello, DwarFS!\n"),
		"sub/big.bin":      big,
		"sub/deeper/empty": nil,
		"sub/deeper/copy":  []byte("Hello, DwarFS!\n"),
	}
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "emptydir"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("hello.txt", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
}

// compareTrees checks that got holds what want holds: the same paths, types,
// file bytes and link targets.
func compareTrees(t *testing.T, want, got string) {
	t.Helper()
	w, g := describeTree(t, want), describeTree(t, got)
	if strings.Join(w, "\n") != strings.Join(g, "\n") {
		t.Errorf("the extracted tree %s differs from %s:\nwant:\n%s\ngot:\n%s", got, want, strings.Join(w, "\n"), strings.Join(g, "\n"))
	}
}

func describeTree(t *testing.T, root string) []string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			lines = append(lines, rel+" -> "+target)
		case d.IsDir():
			lines = append(lines, rel+"/")
		default:
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			lines = append(lines, fmt.Sprintf("%s %d %x", rel, len(data), fnv(data)))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

func fnv(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}

// TestLocalWalk builds the local walk program static and checks its size,
// the modules it links, and that it walks an image.
func TestLocalWalk(t *testing.T) {
	e := setup(t)
	bin := filepath.Join(t.TempDir(), "walk")
	// "Built static" is CGO_ENABLED=0, which gives a static binary; the
	// flags are the defaults, not stripped (-ldflags=-s -w). The -trimpath
	// of GOFLAGS only shortens the file names the binary records.
	e.run(t, e.importer, []string{"CGO_ENABLED=0"}, e.goBin, "build", "-o", bin, "./walk")

	fi, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	bi := e.run(t, e.work, nil, e.goBin, "version", "-m", bin)
	var mods, bad []string
	sc := bufio.NewScanner(strings.NewReader(bi))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || f[0] != "dep" {
			continue
		}
		mods = append(mods, f[1]+" "+f[2])
		for _, p := range forbiddenModules {
			if strings.HasPrefix(f[1], p) {
				bad = append(bad, f[1])
			}
		}
	}
	t.Logf("the local walk program is %d bytes (%.1f MiB) and links %d modules:\n%s",
		fi.Size(), float64(fi.Size())/(1<<20), len(mods), strings.Join(mods, "\n"))
	if len(bad) > 0 {
		t.Errorf("the local walk program links %d network client modules a local reader must not need (issue #48: remote sources belong in leaf packages the root package does not import): %s",
			len(bad), strings.Join(bad, ", "))
	}
	if fi.Size() > maxWalkSize {
		t.Errorf("the local walk program is %d bytes (%.1f MiB), over issue #48's bound of %d bytes (6 MiB) for CGO_ENABLED=0 with the default flags",
			fi.Size(), float64(fi.Size())/(1<<20), maxWalkSize)
	}

	// The image comes from the installed mkdwarfs, whose command line is
	// stabler than the writer's Go API.
	tree := t.TempDir()
	writeTree(t, tree)
	img := filepath.Join(t.TempDir(), "tree.dwarfs")
	e.run(t, e.work, nil, filepath.Join(e.install(t), "mkdwarfs"), "-i", tree, "-o", img)
	got := e.run(t, e.work, nil, bin, img)
	if want := walkListing(t, tree); got != want {
		t.Errorf("walk %s printed:\n%s\nwant:\n%s", img, got, want)
	}
}

// walkListing is what the walk program prints for the tree at root.
func walkListing(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if !d.Type().IsRegular() {
			fmt.Fprintln(&b, rel)
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintln(&b, rel, fi.Size())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestReaderCompilesNoC checks that the reader, the root package and
// fusefs, built with cgo on, compiles no C: the cgo encoders belong to what
// writes.
func TestReaderCompilesNoC(t *testing.T) {
	e := setup(t)
	readers := []string{modulePath, modulePath + "/fusefs"}
	// list returns the packages with cgo files among the readers'
	// dependencies, outside the standard library and in it.
	list := func(tags string) (own, std []string) {
		out := e.run(t, e.importer, []string{"CGO_ENABLED=1"}, e.goBin, "list", "-tags="+tags, "-deps",
			"-f", `{{if .CgoFiles}}{{.ImportPath}} {{.Standard}}{{end}}`, readers[0], readers[1])
		f := strings.Fields(out)
		for i := 0; i+1 < len(f); i += 2 {
			if f[i+1] == "true" {
				std = append(std, f[i])
			} else {
				own = append(own, f[i])
			}
		}
		return own, std
	}
	own, std := list("")
	if len(std) > 0 {
		t.Logf("standard library packages with cgo files in the reader's dependencies (libc's resolver and user lookup; -tags netgo,osusergo drops them): %s", strings.Join(std, ", "))
	}
	// Outside the standard library nothing may hold cgo files.
	if len(own) > 0 {
		t.Errorf("the reader (%s) built with cgo compiles C in %s: the cgo encoders belong to what writes (issue #48 item 4)",
			strings.Join(readers, ", "), strings.Join(own, ", "))
	}
	// With the standard library's pure-Go resolver and user lookup, go list
	// -deps finds no package with cgo files at all.
	if own, std := list("netgo,osusergo"); len(own)+len(std) > 0 {
		t.Errorf("the reader built with cgo and -tags netgo,osusergo still has cgo files in: %s", strings.Join(append(own, std...), ", "))
	}
}

// TestGoInstallWithoutCHeaders runs go install, and builds the outside
// module, with cgo on and gcc present but liblzma's and libFLAC's headers
// hidden, as on a machine without liblzma-dev and libflac-dev. It needs
// root on Linux for a private mount namespace.
func TestGoInstallWithoutCHeaders(t *testing.T) {
	e := setup(t)
	needCC(t)
	if runtime.GOOS != "linux" || os.Geteuid() != 0 {
		t.Skipf("hiding the C headers needs a mount namespace: root on Linux (this is %s, uid %d)", runtime.GOOS, os.Geteuid())
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("unshare (util-linux), which hides the headers in a private mount namespace, is not in PATH: " + err.Error())
	}
	ctx, cancel := testContext(t)
	defer cancel()
	if _, err := output(ctx, "", nil, unshare, "-m", "true"); err != nil {
		t.Skipf("no private mount namespace to hide the headers in (a container without CAP_SYS_ADMIN?): %v", err)
	}
	empty := filepath.Join(t.TempDir(), "empty.h")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	// A header is not part of the build cache's key, so a cgo package
	// compiled earlier with the headers would be reused. A CGO_CFLAGS
	// define only this test sets gives the cgo packages keys of their own,
	// so they are compiled here, with the headers hidden.
	script := `set -e
for d in /usr/include/lzma /usr/include/FLAC; do
	if [ -d "$d" ]; then mount -t tmpfs tmpfs "$d"; fi
done
if [ -e /usr/include/lzma.h ]; then mount --bind "$EMPTY" /usr/include/lzma.h; fi
if printf '#include <FLAC/stream_encoder.h>\n' | gcc -E - >/dev/null 2>&1; then
	echo "libFLAC's headers are still visible" >&2; exit 90
fi
if printf '#include <lzma.h>\n' | gcc -E - 2>/dev/null | grep -q lzma_easy_encoder; then
	echo "liblzma's headers are still visible" >&2; exit 90
fi
"$GO" install "$MODULE/cmd/...@$VERSION"
cd "$IMPORTER"
"$GO" build -o /dev/null .
`
	extra := []string{
		"CGO_ENABLED=1",
		"CGO_CFLAGS=-O2 -g -DGODWARFS_MODULETEST_NO_HEADERS=1",
		"GOBIN=" + bin,
		"EMPTY=" + empty,
		"GO=" + e.goBin,
		"MODULE=" + modulePath,
		"VERSION=" + version,
		"IMPORTER=" + e.importer,
	}
	if _, err := output(ctx, e.work, append(append([]string{}, e.vars...), extra...), unshare, "-m", "sh", "-c", script); err != nil {
		t.Fatalf("with cgo on but liblzma's and libFLAC's headers hidden, as on a machine without liblzma-dev and libflac-dev, the build fails; the system-library encoders must sit behind build tags (issue #48 item 2): %v", err)
	}
	checkTools(t, e, bin)
}
