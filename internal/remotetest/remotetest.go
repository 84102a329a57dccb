// Package remotetest starts real servers on loopback for tests of remote
// images: nginx for HTTP, SeaweedFS for S3, and a fault-injecting proxy
// that sits between a client and either of them.
//
// A test that needs a server binary that is not installed is skipped with
// the reason, unless GODWARFS_REQUIRE_REMOTE=1 demands that it runs.
package remotetest

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"golang.org/x/crypto/bcrypt"
)

func skipOrFail(t testing.TB, reason string) {
	t.Helper()
	if os.Getenv("GODWARFS_REQUIRE_REMOTE") == "1" {
		t.Fatalf("remote test server required but unavailable: %s", reason)
	}
	t.Skipf("skipped: %s (set GODWARFS_REQUIRE_REMOTE=1 to make this an error)", reason)
}

// FreePort returns a loopback TCP port that was free a moment ago. With
// grpc set, port+10000 is free as well (SeaweedFS uses that offset).
func FreePort(t testing.TB, grpc bool) int {
	t.Helper()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !grpc {
			return p
		}
		if p+10000 > 65535 {
			continue
		}
		l2, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p+10000))
		if err != nil {
			continue
		}
		l2.Close()
		return p
	}
	t.Fatal("no free port pair found")
	return 0
}

func waitPort(ctx context.Context, addr string) error {
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not listening: %w", addr, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Server is a running server process.
type Server struct {
	URL  string // base URL, no trailing slash
	cmd  *exec.Cmd
	log  *bytes.Buffer
	done chan struct{}
}

// Stop ends the server: SIGTERM, then SIGKILL after a bounded wait.
func (s *Server) Stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	select {
	case <-s.done:
		return
	default:
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
}

// Log returns what the server printed.
func (s *Server) Log() string { return s.log.String() }

func start(t testing.TB, name string, args ...string) *Server {
	t.Helper()
	return startEnv(t, nil, name, args...)
}

// startEnv starts a server with the environment env (nil: this one's).
func startEnv(t testing.TB, env []string, name string, args ...string) *Server {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = env
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	cmd.SysProcAttr = dieWithParent()
	// The kernel's parent-death signal follows the thread that forked,
	// not the process, and code under test may end threads (the writer's
	// niced encoder threads do). Fork from a thread held for the server's
	// life so that the signal fires only when the test binary dies.
	s := &Server{cmd: cmd, log: &log, done: make(chan struct{})}
	started := make(chan error)
	go func() {
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		cmd.Wait()
		close(s.done)
	}()
	if err := <-started; err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	t.Cleanup(s.Stop)
	return s
}

// Nginx serves root over HTTP on a loopback port, with range requests and
// ETags (nginx's defaults for static files).
func Nginx(t testing.TB, root string) *Server {
	t.Helper()
	bin, err := exec.LookPath("nginx")
	if err != nil {
		if _, e := os.Stat("/usr/sbin/nginx"); e == nil {
			bin = "/usr/sbin/nginx"
		} else {
			skipOrFail(t, "nginx not installed")
		}
	}
	dir := t.TempDir()
	port := FreePort(t, false)
	conf := fmt.Sprintf(`daemon off;
master_process off;
worker_processes 1;
error_log %[1]s/error.log warn;
pid %[1]s/nginx.pid;
events { worker_connections 512; }
http {
  access_log off;
  client_body_temp_path %[1]s/body;
  proxy_temp_path %[1]s/proxy;
  fastcgi_temp_path %[1]s/fastcgi;
  uwsgi_temp_path %[1]s/uwsgi;
  scgi_temp_path %[1]s/scgi;
  sendfile on;
  keepalive_requests 100000;
  default_type application/octet-stream;
  server {
    listen 127.0.0.1:%[2]d;
    root %[3]s;
    location / { }
  }
}
`, dir, port, root)
	cf := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(cf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	s := start(t, bin, "-c", cf, "-p", dir, "-e", filepath.Join(dir, "error.log"))
	s.URL = fmt.Sprintf("http://127.0.0.1:%d", port)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := waitPort(ctx, fmt.Sprintf("127.0.0.1:%d", port)); err != nil {
		b, _ := os.ReadFile(filepath.Join(dir, "error.log"))
		t.Fatalf("nginx: %v\n%s%s", err, s.Log(), b)
	}
	return s
}

// WeedBinary finds the SeaweedFS server binary: $WEED_BIN, weed on PATH,
// or the copy the install script caches.
func WeedBinary() (string, error) {
	if b := os.Getenv("WEED_BIN"); b != "" {
		return b, nil
	}
	if b, err := exec.LookPath("weed"); err == nil {
		return b, nil
	}
	home, _ := os.UserHomeDir()
	m, _ := filepath.Glob(filepath.Join(home, ".cache", "godwarfs", "weed-*", "weed"))
	if len(m) > 0 {
		return m[len(m)-1], nil
	}
	return "", errors.New("SeaweedFS (weed) not found: run scripts/install-weed.sh")
}

// S3 is a running SeaweedFS server with its S3 gateway.
type S3 struct {
	*Server
	Client *s3.Client
}

// SeaweedFS starts master, volume, filer and S3 gateway in one process on
// loopback ports, with anonymous access, and waits until S3 answers.
func SeaweedFS(t testing.TB) *S3 {
	t.Helper()
	bin, err := WeedBinary()
	if err != nil {
		skipOrFail(t, err.Error())
	}
	dir := t.TempDir()
	s3p, mp, vp, fp := FreePort(t, true), FreePort(t, true), FreePort(t, true), FreePort(t, true)
	s := start(t, bin, "server", "-dir="+dir, "-ip=127.0.0.1", "-ip.bind=127.0.0.1",
		"-s3", "-s3.port="+strconv.Itoa(s3p), "-master.port="+strconv.Itoa(mp),
		"-volume.port="+strconv.Itoa(vp), "-filer.port="+strconv.Itoa(fp),
		"-master.volumeSizeLimitMB=1024", "-volume.max=0")
	s.URL = fmt.Sprintf("http://127.0.0.1:%d", s3p)
	c := s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(s.URL),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider("test", "testsecret", ""),
		// SeaweedFS accepts unsigned payloads; skip the trailing checksum.
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	})
	w := &S3{Server: s, Client: c}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for {
		_, err := c.ListBuckets(ctx, &s3.ListBucketsInput{})
		if err == nil {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("SeaweedFS did not become ready: %v\n%s", err, tail(s.Log()))
		case <-s.done:
			t.Fatalf("SeaweedFS exited:\n%s", tail(s.Log()))
		case <-time.After(300 * time.Millisecond):
		}
	}
	return w
}

func tail(s string) string {
	if len(s) > 4000 {
		return s[len(s)-4000:]
	}
	return s
}

// Bucket creates a bucket (retrying while the filer settles).
func (w *S3) Bucket(t testing.TB, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for {
		_, err := w.Client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &name})
		if err == nil || strings.Contains(err.Error(), "BucketAlreadyOwnedByYou") || strings.Contains(err.Error(), "BucketAlreadyExists") {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("create bucket %s: %v", name, err)
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// Upload puts the file at path as bucket/key.
func (w *S3) Upload(t testing.TB, bucket, key, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	_, err = w.Client.PutObject(context.Background(), &s3.PutObjectInput{
		Bucket: &bucket, Key: &key, Body: f, ContentLength: aws.Int64(st.Size()),
	})
	if err != nil {
		t.Fatalf("upload %s: %v", key, err)
	}
}

// Env sets the variables that point the S3 client at this server.
func (w *S3) Env(t *testing.T) {
	t.Setenv("AWS_ENDPOINT_URL_S3", w.URL)
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "testsecret")
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", os.DevNull)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", os.DevNull)
}

var _ = http.StatusOK

// Registry is a running container registry (the CNCF distribution
// registry, Debian's docker-registry) on a loopback port.
type Registry struct {
	*Server
	Host string // 127.0.0.1:PORT, for image references
}

// ContainerRegistry starts a registry with its storage in a temporary
// directory. With user set, it asks for HTTP basic auth (htpasswd) with
// that user and password; else anyone may pull and push.
func ContainerRegistry(t testing.TB, user, password string) *Registry {
	t.Helper()
	bin, err := exec.LookPath("docker-registry")
	if err != nil {
		if _, e := os.Stat("/usr/bin/docker-registry"); e != nil {
			skipOrFail(t, "docker-registry not installed (Debian's docker-registry)")
		}
		bin = "/usr/bin/docker-registry"
	}
	dir := t.TempDir()
	port := FreePort(t, false)
	auth := ""
	if user != "" {
		h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		pw := filepath.Join(dir, "htpasswd")
		if err := os.WriteFile(pw, []byte(user+":"+string(h)+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		auth = fmt.Sprintf("auth:\n  htpasswd:\n    realm: test\n    path: %s\n", pw)
	}
	conf := fmt.Sprintf(`version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: %s/storage
  delete:
    enabled: true
http:
  addr: 127.0.0.1:%d
%s`, dir, port, auth)
	cf := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(cf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	// The registry takes REGISTRY_* variables as settings; the client's
	// REGISTRY_AUTH_FILE would turn on an auth scheme of its own.
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "REGISTRY_") {
			env = append(env, e)
		}
	}
	s := startEnv(t, env, bin, "serve", cf)
	s.URL = fmt.Sprintf("http://127.0.0.1:%d", port)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := waitPort(ctx, fmt.Sprintf("127.0.0.1:%d", port)); err != nil {
		t.Fatalf("docker-registry: %v\n%s", err, s.Log())
	}
	return &Registry{Server: s, Host: fmt.Sprintf("127.0.0.1:%d", port)}
}

// IsolateAuth points the docker and podman credential lookups of this
// test at an empty home, so that no credentials of the machine are used.
func IsolateAuth(t *testing.T) {
	t.Helper()
	t.Setenv("HOME", t.TempDir())
	t.Setenv("DOCKER_CONFIG", "")
	t.Setenv("REGISTRY_AUTH_FILE", "")
	t.Setenv("XDG_RUNTIME_DIR", "")
	t.Setenv("XDG_CONFIG_HOME", "")
}

// Login writes credentials for host into a docker config.json of its
// own (DOCKER_CONFIG), as docker login would.
func Login(t *testing.T, host, user, password string) {
	t.Helper()
	dir := t.TempDir()
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	conf := fmt.Sprintf(`{"auths":{%q:{"auth":%q}}}`, host, auth)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", dir)
}
