package objectstore

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mediagen-dev/mediagen/internal/testkit/waitfor"
)

// movedClock is the wall clock moved on by what a test adds.
type movedClock struct {
	mu sync.Mutex
	by time.Duration
}

func (c *movedClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return time.Now().Add(c.by) }
func (c *movedClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.by += d
}

// TestPresignedURLsAreCheckedAsS3ChecksThem: a PUT URL made by the SDK's
// presigner for a key, a content type and a length stores exactly that
// upload, and a GET URL reads it back, with no credentials in the
// request. As S3 answers (sigv4-query-string-auth): another length, another
// content type, another key or a changed signature is 403
// SignatureDoesNotMatch; a URL past X-Amz-Expires is 403 AccessDenied
// "Request has expired"; an expiry over a week is 400
// AuthorizationQueryParametersError; nothing refused writes anything.
func TestPresignedURLsAreCheckedAsS3ChecksThem(t *testing.T) {
	ctx := context.Background()
	clock := &movedClock{}
	st, err := Serve(ctx, Config{Bucket: "outputs", Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { waitfor.Close(t, st.Close) })
	presigner := s3.NewPresignClient(st.Client())
	body := "\x89PNG\r\n\x1a\n a picture"
	putURL := func(t *testing.T, key string, size int64, expires time.Duration) string {
		t.Helper()
		req, err := presigner.PresignPutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("outputs"), Key: aws.String(key),
			ContentType: aws.String("image/png"), ContentLength: aws.Int64(size)}, s3.WithPresignExpires(expires))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(req.URL, "content-length") {
			t.Fatalf("the presigned URL signs no content-length: %s", req.URL)
		}
		return req.URL
	}
	do := func(t *testing.T, method, u, ctype, payload string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, method, u, strings.NewReader(payload))
		if err != nil {
			t.Fatal(err)
		}
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	exists := func(key string) bool {
		ok, err := st.MediaBucket().Exists(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}

	good := putURL(t, "uploads/u1/f1", int64(len(body)), 15*time.Minute)
	tampered := strings.Replace(good, "X-Amz-Signature=", "X-Amz-Signature=0", 1)
	otherKey := strings.Replace(good, "/uploads/u1/f1", "/uploads/u2/f1", 1)
	for _, tt := range []struct {
		name, url, ctype, body string
		status                 int
		code                   string
	}{
		{"a longer body than signed", good, "image/png", body + "more", http.StatusForbidden, "SignatureDoesNotMatch"},
		{"another content type", good, "text/html", body, http.StatusForbidden, "SignatureDoesNotMatch"},
		{"a changed signature", tampered, "image/png", body, http.StatusForbidden, "SignatureDoesNotMatch"},
		{"another key", otherKey, "image/png", body, http.StatusForbidden, "SignatureDoesNotMatch"},
		{"an expiry over a week", putURL(t, "uploads/u1/f1", int64(len(body)), 8*24*time.Hour), "image/png", body, http.StatusBadRequest, "AuthorizationQueryParametersError"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, answer := do(t, http.MethodPut, tt.url, tt.ctype, tt.body)
			if status != tt.status || !strings.Contains(answer, "<Code>"+tt.code+"</Code>") {
				t.Errorf("HTTP %d %s, want %d %s", status, answer, tt.status, tt.code)
			}
			if exists("uploads/u1/f1") || exists("uploads/u2/f1") {
				t.Fatal("a refused upload was stored")
			}
		})
	}

	if status, answer := do(t, http.MethodPut, good, "image/png", body); status != http.StatusOK {
		t.Fatalf("the presigned PUT: HTTP %d %s", status, answer)
	}
	get, err := presigner.PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("outputs"), Key: aws.String("uploads/u1/f1")},
		s3.WithPresignExpires(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(get.URL)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(got) != body || resp.Header.Get("Content-Type") != "image/png" {
		t.Errorf("the presigned GET: HTTP %d %s %q, want 200 image/png and the bytes put", resp.StatusCode, resp.Header.Get("Content-Type"), got)
	}

	clock.Advance(15*time.Minute + time.Second)
	late := putURL(t, "uploads/u1/f2", int64(len(body)), 15*time.Minute) // signed now, by the wall clock
	status, answer := do(t, http.MethodPut, late, "image/png", body)
	if status != http.StatusForbidden || !strings.Contains(answer, "<Code>AccessDenied</Code>") || !strings.Contains(answer, "Request has expired") {
		t.Errorf("an expired PUT URL: HTTP %d %s, want 403 AccessDenied Request has expired", status, answer)
	}
	if exists("uploads/u1/f2") {
		t.Error("an expired URL stored its upload")
	}
	resp, err = http.Get(get.URL) // within its hour still
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("the GET URL within its hour: HTTP %d", resp.StatusCode)
	}
}

// TestTheCORSRuleLetsPagesPutToPresignedURLsOnly: with the bucket's rule
// (PUT from any origin with Content-Type), a preflight for that PUT is
// answered 200 with the rule's headers, and the presigned PUT's answer
// carries Access-Control-Allow-Origin, so a page can upload; a preflight
// for another method or header is 403, as S3 answers one its rules do not
// allow, and a store without a rule answers none.
func TestTheCORSRuleLetsPagesPutToPresignedURLsOnly(t *testing.T) {
	ctx := context.Background()
	rule := &CORSRule{AllowedOrigins: []string{"*"}, AllowedMethods: []string{"PUT"}, AllowedHeaders: []string{"Content-Type"}, MaxAgeSeconds: 3000}
	with, err := Serve(ctx, Config{Bucket: "outputs", CORS: rule})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { waitfor.Close(t, with.Close) })
	without, err := Serve(ctx, Config{Bucket: "outputs"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { waitfor.Close(t, without.Close) })
	preflight := func(st *Store, method, headers string) *http.Response {
		req, _ := http.NewRequest(http.MethodOptions, st.Endpoint+"/outputs/uploads/u1/f1", nil)
		req.Header.Set("Origin", "http://127.0.0.1:8080")
		req.Header.Set("Access-Control-Request-Method", method)
		if headers != "" {
			req.Header.Set("Access-Control-Request-Headers", headers)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for _, tt := range []struct {
		name           string
		st             *Store
		method, header string
		want           int
	}{
		{"the upload's PUT", with, "PUT", "content-type", http.StatusOK},
		{"a DELETE", with, "DELETE", "", http.StatusForbidden},
		{"a PUT with another header", with, "PUT", "content-type,x-amz-acl", http.StatusForbidden},
		{"the upload's PUT, no rule", without, "PUT", "content-type", http.StatusForbidden},
	} {
		resp := preflight(tt.st, tt.method, tt.header)
		allowed := resp.Header.Get("Access-Control-Allow-Origin")
		if resp.StatusCode != tt.want || (tt.want == http.StatusOK) != (allowed == "*") {
			t.Errorf("preflight for %s: HTTP %d, Access-Control-Allow-Origin %q; want %d", tt.name, resp.StatusCode, allowed, tt.want)
		}
	}

	body := "\x89PNG\r\n\x1a\n"
	signed, err := s3.NewPresignClient(with.Client()).PresignPutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("outputs"),
		Key: aws.String("uploads/u1/f1"), ContentType: aws.String("image/png")}, s3.WithPresignExpires(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPut, signed.URL, strings.NewReader(body))
	req.Header.Set("Content-Type", "image/png")
	req.Header.Set("Origin", "http://127.0.0.1:8080")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("a page's presigned PUT: HTTP %d, Access-Control-Allow-Origin %q; want 200 and *", resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
	}
}
