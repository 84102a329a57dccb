// Package kubernetes holds the Kubernetes recipe for a sharded build; its
// test decodes every manifest with the API's own types.
package kubernetes

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// decode reads the YAML documents of one file into the API types, strictly:
// an unknown or duplicate field, a wrong type or an unknown kind is an
// error, as the API server's strict field validation would make it.
func decode(name string, data []byte) ([]any, error) {
	var objs []any
	for i, doc := range regexp.MustCompile(`(?m)^---\s*$`).Split(string(data), -1) {
		if strings.TrimSpace(regexp.MustCompile(`(?m)^\s*#.*$`).ReplaceAllString(doc, "")) == "" {
			continue
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", name, i, err)
		}
		var obj any
		switch tm.APIVersion + " " + tm.Kind {
		case "v1 ConfigMap":
			obj = &corev1.ConfigMap{}
		case "v1 Secret":
			obj = &corev1.Secret{}
		case "batch/v1 Job":
			obj = &batchv1.Job{}
		default:
			return nil, fmt.Errorf("%s: document %d: unexpected kind %q of %q", name, i, tm.Kind, tm.APIVersion)
		}
		if err := yaml.UnmarshalStrict([]byte(doc), obj); err != nil {
			return nil, fmt.Errorf("%s: document %d (%s): %w", name, i, tm.Kind, err)
		}
		objs = append(objs, obj)
	}
	return objs, nil
}

// TestDecodeIsStrict shows that decode refuses what the API server would:
// a manifest with a misspelt or mistyped field must not pass TestManifests.
func TestDecodeIsStrict(t *testing.T) {
	const job = "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\nspec:\n"
	for _, tc := range []struct {
		name, doc string
		ok        bool
	}{
		{"valid", job + "  completions: 2\n", true},
		{"unknown field", job + "  completion: 2\n", false},
		{"wrong type", job + "  completions: two\n", false},
		{"duplicate field", job + "  completions: 2\n  completions: 3\n", false},
		{"unknown kind", "apiVersion: batch/v1\nkind: Jobb\n", false},
		{"nested unknown field", job + "  template:\n    spec:\n      containers:\n        - name: c\n          imagee: x\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decode(tc.name, []byte(tc.doc))
			if tc.ok && err != nil {
				t.Fatalf("decode: %v", err)
			}
			if !tc.ok && err == nil {
				t.Fatalf("decode accepted:\n%s", tc.doc)
			}
		})
	}
}

type manifests struct {
	configMaps map[string]*corev1.ConfigMap
	secrets    map[string]*corev1.Secret
	jobs       map[string]*batchv1.Job
}

func load(t *testing.T) manifests {
	t.Helper()
	files, err := filepath.Glob("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no manifests (*.yaml) in deploy/kubernetes")
	}
	m := manifests{map[string]*corev1.ConfigMap{}, map[string]*corev1.Secret{}, map[string]*batchv1.Job{}}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := decode(f, data)
		if err != nil {
			t.Fatal(err)
		}
		if len(objs) == 0 {
			t.Errorf("%s holds no manifest", f)
		}
		for _, o := range objs {
			switch o := o.(type) {
			case *corev1.ConfigMap:
				m.configMaps[o.Name] = o
			case *corev1.Secret:
				m.secrets[o.Name] = o
			case *batchv1.Job:
				m.jobs[o.Name] = o
			}
		}
	}
	return m
}

var varRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// container checks what both jobs share and returns the job's container
// and the variables it sees (which $(VAR) in its arguments expands).
func (m manifests) container(t *testing.T, j *batchv1.Job) (corev1.Container, map[string]string) {
	t.Helper()
	spec := j.Spec.Template.Spec
	if len(spec.Containers) != 1 {
		t.Fatalf("job %s: %d containers, want 1", j.Name, len(spec.Containers))
	}
	if p := spec.RestartPolicy; p != corev1.RestartPolicyNever && p != corev1.RestartPolicyOnFailure {
		t.Errorf("job %s: restartPolicy %q; a Job's pods need Never or OnFailure", j.Name, p)
	}
	c := spec.Containers[0]
	if len(c.Command) != 0 {
		t.Errorf("job %s: command %q: the image's entry point is mkdwarfs, give arguments only", j.Name, c.Command)
	}
	vars := map[string]string{}
	secretRef := false
	for _, ef := range c.EnvFrom {
		switch {
		case ef.ConfigMapRef != nil:
			cm := m.configMaps[ef.ConfigMapRef.Name]
			if cm == nil {
				t.Fatalf("job %s: envFrom ConfigMap %q is not among the manifests", j.Name, ef.ConfigMapRef.Name)
			}
			for k, v := range cm.Data {
				vars[k] = v
			}
		case ef.SecretRef != nil:
			s := m.secrets[ef.SecretRef.Name]
			if s == nil {
				t.Fatalf("job %s: envFrom Secret %q has no example among the manifests", j.Name, ef.SecretRef.Name)
			}
			for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} {
				if _, ok := s.StringData[k]; !ok {
					t.Errorf("secret %s: no %s", s.Name, k)
				}
				if _, ok := vars[k]; ok {
					t.Errorf("job %s: %s comes from a ConfigMap as well as the Secret", j.Name, k)
				}
			}
			for k := range s.StringData {
				vars[k] = "(secret)"
			}
			secretRef = true
		}
	}
	if !secretRef {
		t.Errorf("job %s: the S3 credentials do not come from a Secret (envFrom secretRef)", j.Name)
	}
	for _, e := range c.Env {
		vars[e.Name] = e.Value
		if f := e.ValueFrom; f != nil {
			vars[e.Name] = "(set at run time)"
			if f.FieldRef != nil {
				vars[e.Name] = "(field " + f.FieldRef.FieldPath + ")"
			}
		}
	}
	for _, a := range c.Args {
		for _, r := range varRef.FindAllStringSubmatch(a, -1) {
			if _, ok := vars[r[1]]; !ok {
				t.Errorf("job %s: argument %q refers to $(%s), which the container's environment does not set (Kubernetes would pass it unexpanded)", j.Name, a, r[1])
			}
		}
	}
	// A read-only root needs a writable TMPDIR for the spill files.
	if sc := c.SecurityContext; sc != nil && sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem {
		tmp := vars["TMPDIR"]
		if tmp == "" || !slices.ContainsFunc(c.VolumeMounts, func(v corev1.VolumeMount) bool { return v.MountPath == tmp && !v.ReadOnly }) {
			t.Errorf("job %s: read-only root file system, but TMPDIR %q is not a writable mount", j.Name, tmp)
		}
	}
	return c, vars
}

// expand replaces $(VAR) as the kubelet would.
func expand(s string, vars map[string]string) string {
	return varRef.ReplaceAllStringFunc(s, func(r string) string {
		if v, ok := vars[r[2:len(r)-1]]; ok {
			return v
		}
		return r
	})
}

func show(p *int32) string {
	if p == nil {
		return "unset"
	}
	return strconv.Itoa(int(*p))
}

// argAfter returns the argument after flag.
func argAfter(args []string, flag string) string {
	i := slices.Index(args, flag)
	if i < 0 || i+1 >= len(args) {
		return ""
	}
	return args[i+1]
}

func TestManifests(t *testing.T) {
	m := load(t)
	shards, merge := m.jobs["dwarfs-shards"], m.jobs["dwarfs-merge"]
	if shards == nil || merge == nil {
		t.Fatalf("want jobs dwarfs-shards and dwarfs-merge, have %v", slices.Sorted(func(yield func(string) bool) {
			for k := range m.jobs {
				if !yield(k) {
					return
				}
			}
		}))
	}

	// The shards: an Indexed Job of SHARDS completions, each building
	// shard JOB_COMPLETION_INDEX of SHARDS.
	if shards.Spec.CompletionMode == nil || *shards.Spec.CompletionMode != batchv1.IndexedCompletion {
		t.Errorf("job %s: completionMode is not Indexed", shards.Name)
	}
	sc, svars := m.container(t, shards)
	n, err := strconv.Atoi(svars["SHARDS"])
	if err != nil || n < 1 {
		t.Fatalf("job %s: SHARDS %q is not a positive number", shards.Name, svars["SHARDS"])
	}
	if c := shards.Spec.Completions; c == nil || int(*c) != n {
		t.Errorf("job %s: completions %s, want SHARDS = %d", shards.Name, show(c), n)
	}
	if p := shards.Spec.Parallelism; p == nil || *p < 1 || int(*p) > n {
		t.Errorf("job %s: parallelism %s, want 1 to %d", shards.Name, show(p), n)
	}
	idx := svars["JOB_COMPLETION_INDEX"]
	if !strings.Contains(idx, "batch.kubernetes.io/job-completion-index") {
		t.Errorf("job %s: JOB_COMPLETION_INDEX is %q, not the completion index annotation", shards.Name, idx)
	}
	if !slices.Contains(sc.Args, "--shard=$(JOB_COMPLETION_INDEX)/$(SHARDS)") {
		t.Errorf("job %s: arguments %q lack --shard=$(JOB_COMPLETION_INDEX)/$(SHARDS)", shards.Name, sc.Args)
	}
	out := argAfter(sc.Args, "-o")
	if !strings.Contains(out, "$(JOB_COMPLETION_INDEX)") {
		t.Fatalf("job %s: output %q does not depend on the index: the shards would overwrite each other", shards.Name, out)
	}
	if in := expand(argAfter(sc.Args, "-i"), svars); !strings.HasPrefix(in, "s3://") {
		t.Errorf("job %s: input %q is not an s3:// prefix", shards.Name, in)
	}

	// The merge: one pod, reading every shard the shard pods write.
	if merge.Spec.CompletionMode != nil && *merge.Spec.CompletionMode == batchv1.IndexedCompletion {
		t.Errorf("job %s: the merge is one pod, not an Indexed Job", merge.Name)
	}
	if c := merge.Spec.Completions; c != nil && *c != 1 {
		t.Errorf("job %s: completions %d, want 1", merge.Name, *c)
	}
	if p := merge.Spec.Parallelism; p != nil && *p != 1 {
		t.Errorf("job %s: parallelism %d, want 1", merge.Name, *p)
	}
	mc, mvars := m.container(t, merge)
	if mc.Image != sc.Image || sc.Image == "" {
		t.Errorf("the jobs run different images: %q and %q", sc.Image, mc.Image)
	}
	pattern := argAfter(mc.Args, "--merge")
	wantPattern := strings.ReplaceAll(out, "$(JOB_COMPLETION_INDEX)", "*")
	if expand(pattern, mvars) != expand(wantPattern, svars) {
		t.Errorf("job %s merges %q, but the shards are written to %q", merge.Name, expand(pattern, mvars), expand(wantPattern, svars))
	}
	for k := range n {
		name := expand(strings.ReplaceAll(out, "$(JOB_COMPLETION_INDEX)", strconv.Itoa(k)), svars)
		if ok, _ := filepath.Match(expand(pattern, mvars), name); !ok {
			t.Errorf("shard %d (%s) does not match the merge's %q", k, name, expand(pattern, mvars))
		}
	}
	if !slices.Contains(mc.Args, "--merge-into-root") {
		t.Errorf("job %s: arguments %q lack --merge-into-root: each shard's tree would go to a directory of its own", merge.Name, mc.Args)
	}
	if o := expand(argAfter(mc.Args, "-o"), mvars); !strings.HasPrefix(o, "s3://") {
		t.Errorf("job %s: output %q is not an s3:// key", merge.Name, o)
	}
}

// TestDockerfile checks that the image the manifests name runs mkdwarfs
// when given arguments only, and is the static build.
func TestDockerfile(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CGO_ENABLED=0 go build", "./cmd/mkdwarfs", `ENTRYPOINT ["/usr/local/bin/mkdwarfs"]`} {
		if !bytes.Contains(data, []byte(want)) {
			t.Errorf("deploy/Dockerfile lacks %q", want)
		}
	}
}
