// Package clustertest runs the Slurm recipe of deploy/slurm on a real
// one-node Slurm cluster (scripts/slurm-cluster.sh: Debian's slurm-wlm and
// munge, as root) with a real S3 server (SeaweedFS), FUSE-free: the shards
// read the tree from S3 and write their images there, and the merge writes
// the result there.
//
// Without root, Slurm or munge the tests skip with the reason, unless
// GODWARFS_REQUIRE_CLUSTER=1 makes that an error (CI sets it).
package clustertest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/godwarfs/godwarfs/internal/remotetest"
)

func skipOrFail(t *testing.T, reason string) {
	t.Helper()
	if os.Getenv("GODWARFS_REQUIRE_CLUSTER") == "1" {
		t.Fatalf("Slurm cluster test required but cannot run: %s", reason)
	}
	t.Skipf("skipped: %s (set GODWARFS_REQUIRE_CLUSTER=1 to make this an error)", reason)
}

// needSlurm skips (or fails) unless a one-node cluster can be started here.
func needSlurm(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		skipOrFail(t, "the Slurm cluster runs on Linux only")
	}
	if os.Geteuid() != 0 {
		skipOrFail(t, "the Slurm cluster's daemons run as root")
	}
	for _, b := range []string{"munged", "slurmctld", "slurmd", "sbatch", "scontrol", "sinfo", "squeue", "scancel"} {
		if _, err := exec.LookPath(b); err != nil {
			if _, err := os.Stat("/usr/sbin/" + b); err != nil {
				skipOrFail(t, b+" not installed (Debian's slurm-wlm and munge)")
			}
		}
	}
	for _, b := range []string{"python3", "runuser"} {
		if _, err := exec.LookPath(b); err != nil {
			skipOrFail(t, b+" not installed (scripts/slurm-cluster.sh needs it)")
		}
	}
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "deploy", "slurm", "submit.sh")); err != nil {
		t.Fatalf("not in the repository: %v", err)
	}
	return root
}

// buildTools builds mkdwarfs and dwarfsextract into a directory of their own.
func buildTools(t *testing.T, root string) string {
	t.Helper()
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(goTool); err != nil {
		t.Fatalf("no go tool to build mkdwarfs: %v", err)
	}
	bin := t.TempDir()
	cmd := exec.Command(goTool, "build", "-o", bin+string(filepath.Separator), "./cmd/mkdwarfs", "./cmd/dwarfsextract")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// cluster is a running one-node Slurm cluster.
type cluster struct {
	root, dir string
	env       []string // this process's environment with SLURM_CONF
}

// startSlurm starts a cluster with scripts/slurm-cluster.sh and stops it
// when the test ends, printing the daemons' logs first if the test failed.
func startSlurm(t *testing.T, root string) *cluster {
	t.Helper()
	dir := t.TempDir()
	script := filepath.Join(root, "scripts", "slurm-cluster.sh")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, script, "start", dir).CombinedOutput()
	c := &cluster{root: root, dir: dir}
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := exec.Command(script, "logs", dir).CombinedOutput()
			t.Logf("Slurm logs:\n%s", logs)
		}
		if out, err := exec.Command(script, "stop", dir).CombinedOutput(); err != nil {
			t.Errorf("stop the Slurm cluster: %v\n%s", err, out)
		}
	})
	if err != nil {
		t.Fatalf("start the Slurm cluster: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`(?m)^export SLURM_CONF=(.+)$`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("slurm-cluster.sh start printed no SLURM_CONF:\n%s", out)
	}
	c.env = append(os.Environ(), "SLURM_CONF="+string(m[1]), "PATH="+os.Getenv("PATH")+":/usr/sbin")
	return c
}

func (c *cluster) run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(slices.Clip(c.env), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %q: %v\n%s%s", name, args, err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// job is one line of scontrol show job: a job or one task of an array.
type job map[string]string

var terminal = map[string]bool{
	"COMPLETED": true, "FAILED": true, "CANCELLED": true, "TIMEOUT": true, "NODE_FAIL": true,
	"PREEMPTED": true, "OUT_OF_MEMORY": true, "BOOT_FAIL": true, "DEADLINE": true,
}

// wait polls slurmctld until the job has ended (for an array job, each
// of its tasks records), and returns the records. The limit only guards
// against a hung cluster.
func (c *cluster) wait(t *testing.T, id string, tasks int) []job {
	t.Helper()
	field := regexp.MustCompile(`(\w+)=(\S*)`)
	deadline := time.Now().Add(5 * time.Minute)
	for {
		out := c.run(t, "", nil, "scontrol", "-o", "show", "job", id)
		var jobs []job
		done := true
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			j := job{}
			for _, m := range field.FindAllStringSubmatch(line, -1) {
				if _, ok := j[m[1]]; !ok {
					j[m[1]] = m[2]
				}
			}
			jobs = append(jobs, j)
			done = done && terminal[j["JobState"]]
		}
		if done && len(jobs) == tasks {
			return jobs
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s has not ended after 5 minutes:\n%s", id, out)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// makeTree writes a tree of regular files under three top-level
// directories of unequal size, some files repeated across them, as an S3
// prefix can hold it (no empty directories, no links).
func makeTree(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	rng := rand.New(rand.NewPCG(49, 3))
	words := strings.Fields("shard merge slurm array dependency afterok object prefix bucket listing image block")
	text := func(n int) []byte {
		var b bytes.Buffer
		for b.Len() < n {
			b.WriteString(words[rng.IntN(len(words))])
			b.WriteByte(" \n"[rng.IntN(2)])
		}
		return b.Bytes()[:n]
	}
	shared := text(40 << 10)
	write := func(rel string, data []byte) {
		p := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i, top := range []string{"alpha", "beta", "gamma"} {
		for j := range 6 + 6*i {
			rel := fmt.Sprintf("%s/v%d/file%02d.txt", top, j%3, j)
			switch {
			case j == 0:
				write(rel, nil)
			case j%5 == 0:
				write(rel, shared)
			case j%4 == 0:
				b := make([]byte, 20<<10+rng.IntN(100<<10))
				for k := range b {
					b[k] = byte(rng.Uint32())
				}
				write(rel, b)
			default:
				write(rel, text(rng.IntN(60<<10)))
			}
		}
	}
	write("README", text(1000))
	return root
}

// readTree maps each path under root to its contents ("/" for a directory).
func readTree(t *testing.T, root string) map[string]string {
	t.Helper()
	tree := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case d.IsDir():
			tree[filepath.ToSlash(rel)] = "/"
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			tree[filepath.ToSlash(rel)] = string(b)
		default:
			return fmt.Errorf("%s: not a file or directory (%v)", p, d.Type())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return tree
}

// keys lists the keys under prefix.
func keys(t *testing.T, w *remotetest.S3, bucket, prefix string) []string {
	t.Helper()
	var ks []string
	p := s3.NewListObjectsV2Paginator(w.Client, &s3.ListObjectsV2Input{Bucket: &bucket, Prefix: &prefix})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatalf("list s3://%s/%s: %v", bucket, prefix, err)
		}
		for _, o := range page.Contents {
			ks = append(ks, *o.Key)
		}
	}
	slices.Sort(ks)
	return ks
}

// TestSlurmShardedBuildFromS3 runs deploy/slurm/submit.sh with 3 shards on
// a one-node cluster, reading the tree from S3 and writing the shards and
// the merged image to S3, and checks that the merged image extracts to the
// tree. Beside it, a run in which one shard task fails must never start its
// merge, and must leave nothing at its output key.
func TestSlurmShardedBuildFromS3(t *testing.T) {
	needSlurm(t)
	root := repoRoot(t)
	w := remotetest.SeaweedFS(t)
	bin := buildTools(t, root)
	mkdwarfs := filepath.Join(bin, "mkdwarfs")

	const bucket, n = "cluster", 3
	tree := makeTree(t)
	w.Bucket(t, bucket)
	want := readTree(t, tree)
	for rel, data := range want {
		if data != "/" {
			w.Upload(t, bucket, "tree/"+rel, filepath.Join(tree, filepath.FromSlash(rel)))
		}
	}
	w.Env(t)

	c := startSlurm(t, root)
	logs := t.TempDir()
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		outs, _ := filepath.Glob(filepath.Join(logs, "*.out"))
		for _, o := range outs {
			b, _ := os.ReadFile(o)
			t.Logf("==== %s\n%s", filepath.Base(o), b)
		}
	})
	// A stand-in for mkdwarfs that fails in task 1 and runs mkdwarfs in the
	// others, as a shard whose node or input broke would.
	failing := filepath.Join(t.TempDir(), "mkdwarfs-fails-task-1")
	script := "#!/bin/sh\nif [ \"$SLURM_ARRAY_TASK_ID\" = 1 ]; then echo 'shard 1: injected failure' >&2; exit 1; fi\nexec " + mkdwarfs + " \"$@\"\n"
	if err := os.WriteFile(failing, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}

	submit := filepath.Join(root, "deploy", "slurm", "submit.sh")
	ids := regexp.MustCompile(`^array=(\d+) merge=(\d+)$`)
	sub := func(mk, shards, output string) (array, merge string) {
		out := strings.TrimSpace(c.run(t, logs, []string{"MKDWARFS=" + mk, "LOG_DIR=" + logs},
			submit, "-n", fmt.Sprint(n), "s3://"+bucket+"/tree/", shards, output, "--", "-l", "3", "--log-level", "warn"))
		m := ids.FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("submit.sh printed %q, want array=ID merge=ID", out)
		}
		return m[1], m[2]
	}
	// Both runs at once: the cluster has a CPU or more for each.
	failArray, failMerge := sub(failing, "s3://"+bucket+"/failed-shards/", "s3://"+bucket+"/failed/tree.dwarfs")
	array, merge := sub(mkdwarfs, "s3://"+bucket+"/shards/", "s3://"+bucket+"/out/tree.dwarfs")

	t.Run("failed shard stops the merge", func(t *testing.T) {
		for _, j := range c.wait(t, failArray, n) {
			want := "COMPLETED"
			if j["ArrayTaskId"] == "1" {
				want = "FAILED"
			}
			if j["JobState"] != want {
				t.Errorf("shard task %s: %s, want %s", j["ArrayTaskId"], j["JobState"], want)
			}
		}
		mj := c.wait(t, failMerge, 1)[0]
		if mj["JobState"] != "CANCELLED" || mj["Reason"] != "DependencyNeverSatisfied" {
			t.Errorf("merge job %s: %s (%s), want CANCELLED (DependencyNeverSatisfied)", failMerge, mj["JobState"], mj["Reason"])
		}
		if _, err := os.Stat(filepath.Join(logs, "dwarfs-merge-"+failMerge+".out")); err == nil {
			t.Errorf("the merge job %s ran after a shard failed", failMerge)
		}
		if ks := keys(t, w, bucket, "failed/"); len(ks) != 0 {
			t.Errorf("objects under the failed run's output: %q", ks)
		}
		if got, want := keys(t, w, bucket, "failed-shards/"), []string{"failed-shards/shard-0.dwarfs", "failed-shards/shard-2.dwarfs"}; !slices.Equal(got, want) {
			t.Errorf("failed run's shards: %q, want %q", got, want)
		}
	})

	t.Run("sharded build from S3 to S3", func(t *testing.T) {
		for _, j := range c.wait(t, array, n) {
			if j["JobState"] != "COMPLETED" {
				t.Errorf("shard task %s: %s (exit %s)", j["ArrayTaskId"], j["JobState"], j["ExitCode"])
			}
		}
		if mj := c.wait(t, merge, 1)[0]; mj["JobState"] != "COMPLETED" {
			t.Fatalf("merge job %s: %s (%s, exit %s)", merge, mj["JobState"], mj["Reason"], mj["ExitCode"])
		}
		var wantShards []string
		for k := range n {
			wantShards = append(wantShards, fmt.Sprintf("shards/shard-%d.dwarfs", k))
		}
		if got := keys(t, w, bucket, "shards/"); !slices.Equal(got, wantShards) {
			t.Errorf("shard objects %q, want %q", got, wantShards)
		}
		// The merged image as a client would fetch it, then extracted.
		img := filepath.Join(t.TempDir(), "tree.dwarfs")
		b, k := bucket, "out/tree.dwarfs"
		obj, err := w.Client.GetObject(context.Background(), &s3.GetObjectInput{Bucket: &b, Key: &k})
		if err != nil {
			t.Fatalf("get s3://%s/%s: %v", b, k, err)
		}
		f, err := os.Create(img)
		if err != nil {
			t.Fatal(err)
		}
		_, err = io.Copy(f, obj.Body)
		obj.Body.Close()
		if err == nil {
			err = f.Close()
		}
		if err != nil {
			t.Fatalf("download s3://%s/%s: %v", b, k, err)
		}
		x := filepath.Join(t.TempDir(), "x")
		c.run(t, "", nil, filepath.Join(bin, "dwarfsextract"), "-i", img, "-o", x)
		got := readTree(t, x)
		for p, d := range want {
			switch g, ok := got[p]; {
			case !ok:
				t.Errorf("%s: missing from the merged image", p)
			case g != d:
				t.Errorf("%s: %d bytes extracted differ from the tree's %d", p, len(g), len(d))
			}
		}
		for p := range got {
			if _, ok := want[p]; !ok {
				t.Errorf("%s: in the merged image, not in the tree", p)
			}
		}
	})
}
