package s3source

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/godwarfs/godwarfs/source"
)

func TestS3ErrClassifies(t *testing.T) {
	resp := func(code int) error {
		return &awshttp.ResponseError{ResponseError: &smithyhttp.ResponseError{
			Response: &smithyhttp.Response{Response: &http.Response{StatusCode: code, Header: http.Header{}}},
			Err:      errors.New("reply"),
		}}
	}
	for _, tc := range []struct {
		name      string
		err       error
		retry     bool
		changed   bool
		canceled  bool
		wantInMsg string
	}{
		{"not found", resp(404), false, false, false, "HTTP status 404"},
		{"forbidden", resp(403), false, false, false, "HTTP status 403"},
		{"precondition", resp(412), false, true, false, "HTTP status 412"},
		{"throttled", resp(429), true, false, false, "HTTP status 429"},
		{"server error", resp(503), true, false, false, "HTTP status 503"},
		// A reply the SDK could not read carries no status.
		{"unreadable reply", resp(0), true, false, false, "unreadable reply (reply)"},
		// A listing cut short: a success whose body does not parse.
		{"unreadable body", resp(200), true, false, false, "HTTP status 200 with an unreadable body (reply)"},
		{"deadline", context.DeadlineExceeded, true, false, false, "timed out"},
		{"canceled", context.Canceled, false, false, true, "canceled"},
		{"transport", errors.New("connection reset by peer"), true, false, false, "reset"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := s3Err(tc.err)
			if source.IsRetryable(got) != tc.retry {
				t.Errorf("retryable = %v, want %v (%v)", !tc.retry, tc.retry, got)
			}
			if errors.Is(got, source.ErrChanged) != tc.changed {
				t.Errorf("ErrChanged = %v, want %v (%v)", !tc.changed, tc.changed, got)
			}
			if errors.Is(got, context.Canceled) != tc.canceled {
				t.Errorf("canceled = %v, want %v", !tc.canceled, tc.canceled)
			}
			if msg := got.Error(); !strings.Contains(msg, tc.wantInMsg) {
				t.Errorf("message %q lacks %q", msg, tc.wantInMsg)
			}
		})
	}
}

func TestPathStyle(t *testing.T) {
	for _, tc := range []struct {
		endpoint, env string
		want          bool
	}{
		{"", "", false},
		{"https://s3.example.com", "", false},
		{"http://127.0.0.1:8333", "", true},
		{"http://[::1]:9000", "", true},
		{"http://localhost:9000", "", true},
		{"http://minio:9000", "", true},
		{"http://minio.storage.svc:9000", "", false},
		{"http://minio.storage.svc:9000", "1", true},
		{"http://minio.storage.svc:9000", "true", true},
		{"http://minio.storage.svc:9000", "0", false},
		{"http://minio.storage.svc:9000", "yes please", false},
	} {
		t.Setenv("GODWARFS_S3_PATH_STYLE", tc.env)
		if got := pathStyleEnv() || pathStyleHost(tc.endpoint); got != tc.want {
			t.Errorf("endpoint %q, GODWARFS_S3_PATH_STYLE=%q: path style %v, want %v", tc.endpoint, tc.env, got, tc.want)
		}
	}
}
