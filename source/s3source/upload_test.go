//go:build unix

package s3source_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/godwarfs/godwarfs/internal/remotetest"
	"github.com/godwarfs/godwarfs/source"
	"github.com/godwarfs/godwarfs/source/s3source"
)

func TestUpload(t *testing.T) {
	w := remotetest.SeaweedFS(t)
	w.Env(t)
	w.Bucket(t, "bkt")
	data := make([]byte, 11<<20+7) // three parts of 5 MiB
	for i := range data {
		data[i] = byte(i * 7 / 5)
	}
	pending := func(t *testing.T) int {
		t.Helper()
		out, err := w.Client.ListMultipartUploads(context.Background(), &s3.ListMultipartUploadsInput{Bucket: aws.String("bkt")})
		if err != nil {
			t.Fatal(err)
		}
		return len(out.Uploads)
	}
	exists := func(key string) bool {
		_, err := w.Client.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: &key})
		return err == nil
	}
	client := func(t *testing.T, endpoint string) *s3source.Client {
		t.Helper()
		c, err := s3source.NewClient(context.Background(), source.Options{S3: source.S3Options{Endpoint: endpoint}, RetryWait: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}

	t.Run("complete", func(t *testing.T) {
		var parts int
		var mu sync.Mutex
		var objectSeen bool
		px := remotetest.NewProxy(t, w.URL, func(n int64, r *http.Request) remotetest.Fault {
			if r.Method == http.MethodPut && r.URL.Query().Get("partNumber") != "" {
				mu.Lock()
				parts++
				// No object while parts are still going up.
				objectSeen = objectSeen || exists("whole")
				mu.Unlock()
			}
			return remotetest.Fault{}
		})
		c := client(t, px.URL)
		if err := c.Upload(context.Background(), "bkt", "whole", bytes.NewReader(data), int64(len(data)), s3source.UploadOptions{PartSize: 5 << 20, Workers: 2}); err != nil {
			t.Fatal(err)
		}
		if parts != 3 || objectSeen {
			t.Errorf("%d parts, object visible during the upload: %v", parts, objectSeen)
		}
		out, err := w.Client.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("whole")})
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(out.Body)
		out.Body.Close()
		if !bytes.Equal(got, data) {
			t.Error("object differs from the data")
		}
		if obj, ok, err := c.Stat(context.Background(), "bkt", "whole"); err != nil || !ok || obj.Size != int64(len(data)) {
			t.Errorf("Stat: %+v %v %v", obj, ok, err)
		}
		if _, ok, err := c.Stat(context.Background(), "bkt", "none"); err != nil || ok {
			t.Errorf("Stat of a missing key: %v %v", ok, err)
		}
	})

	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		px := remotetest.NewProxy(t, w.URL, func(n int64, r *http.Request) remotetest.Fault {
			if r.Method == http.MethodPut && r.URL.Query().Get("partNumber") == "2" {
				cancel()
				return remotetest.Fault{Delay: 200 * time.Millisecond}
			}
			return remotetest.Fault{}
		})
		c := client(t, px.URL)
		err := c.Upload(ctx, "bkt", "cancelled", bytes.NewReader(data), int64(len(data)), s3source.UploadOptions{PartSize: 5 << 20, Workers: 1})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("error %v, want a cancellation", err)
		}
		if exists("cancelled") {
			t.Error("a cancelled upload left an object")
		}
		if n := pending(t); n != 0 {
			t.Errorf("%d multipart uploads left", n)
		}
	})

	t.Run("retries exhausted", func(t *testing.T) {
		px := remotetest.NewProxy(t, w.URL, func(n int64, r *http.Request) remotetest.Fault {
			if r.Method == http.MethodPut && r.URL.Query().Get("partNumber") == "3" {
				return remotetest.Fault{Status: http.StatusInternalServerError}
			}
			return remotetest.Fault{}
		})
		c := client(t, px.URL)
		err := c.Upload(context.Background(), "bkt", "failing", bytes.NewReader(data), int64(len(data)), s3source.UploadOptions{PartSize: 5 << 20})
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte("s3://bkt/failing: part 3 (bytes 10485760-11534342): HTTP status 500")) {
			t.Errorf("error %v", err)
		}
		if exists("failing") {
			t.Error("a failed upload left an object")
		}
		if n := pending(t); n != 0 {
			t.Errorf("%d multipart uploads left", n)
		}
	})
}
