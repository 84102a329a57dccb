// Package s3source reads images stored as s3://BUCKET/KEY objects with
// ranged GetObject calls of the AWS SDK. Importing it registers the
// scheme with package source, so that source.Open and godwarfs.Open
// read such URLs:
//
//	import _ "github.com/godwarfs/godwarfs/source/s3source"
//
// source.Options.S3 sets the endpoint, region, path-style addressing and
// profile; empty fields fall back to the environment and the shared AWS
// configuration files. Without any credentials, objects are read
// anonymously.
package s3source

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/godwarfs/godwarfs/source"
	"github.com/godwarfs/godwarfs/source/internal/httpfetch"
)

func init() { source.Register("s3", source.Backend{Open: open}) }

// s3Fetcher reads an object with ranged GetObject calls. The SDK's own
// retries are off: the shared retry loop decides, so HTTP and S3 behave
// alike.
type s3Fetcher struct {
	bucket, objKey string
	endpoint       string
	client         *s3.Client
	tr             *http.Transport
}

// s3Object splits an s3:// URL into bucket and key.
func s3Object(u *url.URL) (bucket, key string, err error) {
	bucket, key = u.Host, strings.TrimPrefix(u.Path, "/")
	if bucket == "" || key == "" || u.User != nil {
		return "", "", fmt.Errorf("%s: an S3 URL is s3://BUCKET/KEY (credentials come from the environment or the shared config files)", source.Redact(u.String()))
	}
	return bucket, key, nil
}

func open(ctx context.Context, name string, o source.Options) (source.Fetcher, error) {
	u, err := url.Parse(name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source.Redact(name), httpfetch.RedactErr(err))
	}
	bucket, key, err := s3Object(u)
	if err != nil {
		return nil, err
	}
	c, err := NewClient(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("s3://%s/%s: %w", bucket, key, err)
	}
	return &s3Fetcher{bucket: bucket, objKey: key, endpoint: c.endpoint, client: c.client, tr: c.tr}, nil
}

// Client is an S3 client set up as image reads set theirs up: o.S3's
// endpoint, region, path style and profile, else the environment and the
// shared configuration files; anonymous without credentials; the SDK's
// own retries off, source.Retry deciding instead.
type Client struct {
	client   *s3.Client
	tr       *http.Transport
	endpoint string
	o        source.Options
}

// NewClient returns a Client for the options o (o.Workers sizes its
// connection pool; the retry fields bound its requests).
func NewClient(ctx context.Context, o source.Options) (*Client, error) {
	lo := []func(*config.LoadOptions) error{config.WithRetryMaxAttempts(1)}
	if o.S3.Region != "" {
		lo = append(lo, config.WithRegion(o.S3.Region))
	}
	if o.S3.Profile != "" {
		lo = append(lo, config.WithSharedConfigProfile(o.S3.Profile))
	}
	tr := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:   true,
		MaxIdleConns:        max(4*o.Workers, source.HeaderRequests),
		MaxIdleConnsPerHost: max(2*o.Workers, source.HeaderRequests),
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
		DisableCompression:  true,
	}
	cfg, err := config.LoadDefaultConfig(ctx, lo...)
	if err != nil {
		return nil, fmt.Errorf("loading AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	endpoint := o.S3.Endpoint
	if endpoint == "" {
		endpoint = os.Getenv("AWS_ENDPOINT_URL_S3")
	}
	if endpoint == "" && cfg.BaseEndpoint != nil {
		endpoint = *cfg.BaseEndpoint
	}
	pathStyle := o.S3.PathStyle || pathStyleEnv() || pathStyleHost(endpoint)
	// Without any credentials, read public objects anonymously rather
	// than fail.
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	if cfg.Credentials == nil {
		cfg.Credentials = aws.AnonymousCredentials{}
	} else if _, err := cfg.Credentials.Retrieve(cctx); err != nil {
		cfg.Credentials = aws.AnonymousCredentials{}
	}
	cancel()
	client := s3.NewFromConfig(cfg, func(so *s3.Options) {
		if endpoint != "" {
			so.BaseEndpoint = aws.String(endpoint)
		}
		so.UsePathStyle = pathStyle
		so.HTTPClient = &http.Client{Transport: tr}
		so.RetryMaxAttempts = 1
		// Ranged reads carry no whole-object checksum to validate;
		// block checksums are verified by the image reader.
		so.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		so.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	})
	return &Client{client: client, tr: tr, endpoint: endpoint, o: o}, nil
}

// Close releases the client's idle connections.
func (c *Client) Close() { c.tr.CloseIdleConnections() }

// pathStyleEnv reports GODWARFS_S3_PATH_STYLE set to a true value: the
// way to ask for path-style requests where no -o s3_path_style exists
// (mkdwarfs), for a self-hosted store under a DNS name, such as a
// cluster's service, that has no per-bucket names.
func pathStyleEnv() bool {
	v, err := strconv.ParseBool(os.Getenv("GODWARFS_S3_PATH_STYLE"))
	return err == nil && v
}

// pathStyleHost reports endpoints that cannot carry the bucket in the host
// name: IP addresses, localhost and single-label names (a container's or
// service's short name), as used by self-hosted services.
func pathStyleHost(endpoint string) bool {
	if endpoint == "" {
		return false
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return false
	}
	h := u.Hostname()
	return h != "" && !strings.Contains(h, ".") || net.ParseIP(h) != nil
}

// Share implements source.Sharer: another object over the same client
// and credentials.
func (f *s3Fetcher) Share(name string) source.Fetcher {
	u, err := url.Parse(name)
	if err != nil || !strings.EqualFold(u.Scheme, "s3") {
		return nil
	}
	bucket, key, err := s3Object(u)
	if err != nil {
		return nil // a fetcher of its own reports it
	}
	return &s3Fetcher{bucket: bucket, objKey: key, endpoint: f.endpoint, client: f.client, tr: f.tr}
}

func (f *s3Fetcher) Name() string { return "s3://" + f.bucket + "/" + f.objKey }
func (f *s3Fetcher) Key() string  { return f.endpoint + "\x00" + f.Name() }
func (f *s3Fetcher) Close()       { f.tr.CloseIdleConnections() }

func (f *s3Fetcher) Stat(ctx context.Context) (source.Version, error) {
	out, err := f.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &f.bucket, Key: &f.objKey})
	if err != nil {
		return source.Version{}, s3Err(err)
	}
	info := source.Version{ETag: aws.ToString(out.ETag), Size: aws.ToInt64(out.ContentLength)}
	if out.LastModified != nil {
		info.LastModified = out.LastModified.UTC().Format(http.TimeFormat)
	}
	return info, nil
}

func (f *s3Fetcher) Get(ctx context.Context, p []byte, off int64, pin source.Version, got *atomic.Int64) error {
	in := &s3.GetObjectInput{
		Bucket: &f.bucket, Key: &f.objKey,
		Range: aws.String(fmt.Sprintf("bytes=%d-%d", off, off+int64(len(p))-1)),
	}
	if pin.ETag != "" {
		in.IfMatch = aws.String(pin.ETag)
	} else if pin.LastModified != "" {
		if t, err := http.ParseTime(pin.LastModified); err == nil {
			in.IfUnmodifiedSince = &t
		}
	}
	out, err := f.client.GetObject(ctx, in)
	if err != nil {
		return s3Err(err)
	}
	defer httpfetch.Drain(out.Body)
	if et := aws.ToString(out.ETag); pin.ETag != "" && et != "" && et != pin.ETag {
		return fmt.Errorf("%w (ETag %s, opened %s)", source.ErrChanged, et, pin.ETag)
	}
	if cr := aws.ToString(out.ContentRange); cr != "" {
		s, e, total, err := httpfetch.ParseContentRange(cr)
		if err != nil {
			return err
		}
		if total >= 0 && total != pin.Size {
			return fmt.Errorf("%w (size %d, opened %d)", source.ErrChanged, total, pin.Size)
		}
		if s != off || e != off+int64(len(p))-1 {
			return fmt.Errorf("server sent bytes %d-%d for a request of %d-%d", s, e, off, off+int64(len(p))-1)
		}
	} else if off != 0 || int64(len(p)) != pin.Size {
		return errors.New("server ignored the Range header")
	}
	return httpfetch.ReadBody(out.Body, p, got)
}

// s3Err classifies SDK errors: a failed precondition means the object
// changed; throttling, server errors and transport failures are retryable.
func s3Err(err error) error {
	if errors.Is(err, context.Canceled) {
		return err
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		code := re.HTTPStatusCode()
		var api smithy.APIError
		msg := fmt.Sprintf("HTTP status %d", code)
		if code == 0 {
			msg = fmt.Sprintf("unreadable reply (%v)", re.Err)
		} else if code < 300 {
			msg = fmt.Sprintf("HTTP status %d with an unreadable body (%v)", code, re.Err)
		} else if errors.As(err, &api) {
			msg += " " + api.ErrorCode()
		}
		e := errors.New(msg)
		switch {
		case code == http.StatusPreconditionFailed:
			return fmt.Errorf("%w (server answered %s)", source.ErrChanged, msg)
		// Code 0, or a success whose body the SDK could not parse (a
		// listing cut short): a torn or garbled reply, which is no
		// answer from the server at all.
		case code < 300, code == http.StatusTooManyRequests, code == http.StatusRequestTimeout, code >= 500:
			var after time.Duration
			if re.Response != nil {
				after = httpfetch.RetryAfter(re.Response.Header.Get("Retry-After"))
			}
			return source.Retryable(e, after)
		}
		return e
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return source.Retryable(errors.New("request timed out"), 0)
	}
	var oe *smithy.OperationError
	if errors.As(err, &oe) {
		err = oe.Err
	}
	return source.Retryable(err, 0)
}
