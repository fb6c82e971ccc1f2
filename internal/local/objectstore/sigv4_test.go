package objectstore

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mediagen-dev/mediagen/internal/testkit/waitfor"
)

// TestTheS3APIChecksSignaturesWithItsOwnKey: a store started with its own
// credentials serves the service's adapter (put, tag, list, read, delete,
// and a file upload), and refuses, as S3 does with 403 and its error code,
// a client holding the wrong secret (SignatureDoesNotMatch), another
// access key (InvalidAccessKeyId), a signature made up or made for
// another request, and unsigned requests; none of them writes or deletes
// anything.
func TestTheS3APIChecksSignaturesWithItsOwnKey(t *testing.T) {
	ctx := context.Background()
	st, err := Serve(ctx, Config{Bucket: "outputs", AccessKey: "mediagen-local", SecretKey: "the-started-secret"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { waitfor.Close(t, st.Close) })

	bucket := st.MediaBucket()
	if err := bucket.Put(ctx, "generations/g1/0.png", strings.NewReader("png bytes"), "image/png"); err != nil {
		t.Fatalf("the service's adapter: Put: %v", err)
	}
	if err := bucket.Tag(ctx, "generations/g1/0.png", map[string]string{"retention": "7"}); err != nil {
		t.Fatalf("the service's adapter: Tag: %v", err)
	}
	file := filepath.Join(t.TempDir(), "clip.mp4")
	if err := os.WriteFile(file, []byte(strings.Repeat("mp4 ", 4096)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := bucket.PutFile(ctx, "generations/g1/1.mp4", file, "video/mp4"); err != nil {
		t.Fatalf("the service's adapter: PutFile: %v", err)
	}
	if err := bucket.GetFile(ctx, "generations/g1/1.mp4", filepath.Join(t.TempDir(), "back.mp4")); err != nil {
		t.Fatalf("the service's adapter: GetFile: %v", err)
	}
	if keys, err := bucket.Keys(ctx, "generations/g1/"); err != nil || len(keys) != 2 {
		t.Fatalf("the service's adapter: Keys = %v, %v; want both objects", keys, err)
	}

	client := func(key, secret string) *s3.Client {
		return s3.New(s3.Options{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider(key, secret, ""),
			BaseEndpoint: aws.String(st.Endpoint), UsePathStyle: true})
	}
	for _, tt := range []struct {
		name   string
		client *s3.Client
		code   string
	}{
		{"the wrong secret", client("mediagen-local", "a-guessed-secret"), "SignatureDoesNotMatch"},
		{"the default credentials", client(AccessKey, SecretKey), "InvalidAccessKeyId"},
	} {
		_, err := tt.client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("outputs"), Key: aws.String("generations/g1/0.png"),
			Body: strings.NewReader("forged"), ContentType: aws.String("text/html")})
		// The SDK's error reads "api error <Code>: <Message>".
		if err == nil || !strings.Contains(err.Error(), "api error "+tt.code) {
			t.Errorf("%s: PutObject = %v, want %s", tt.name, err, tt.code)
		}
		_, err = tt.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("outputs"), Key: aws.String("generations/g1/0.png")})
		if err == nil || !strings.Contains(err.Error(), "api error "+tt.code) {
			t.Errorf("%s: DeleteObject = %v, want %s", tt.name, err, tt.code)
		}
	}

	// Raw requests: a made-up signature, a signature of another request,
	// and none.
	signed := func(method, path string) *http.Request {
		req, _ := http.NewRequest(method, st.Endpoint+path, nil)
		req.Header.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
		err := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }).SignHTTP(ctx,
			aws.Credentials{AccessKeyID: "mediagen-local", SecretAccessKey: "the-started-secret"}, req, "UNSIGNED-PAYLOAD", "s3", "us-east-1", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return req
	}
	madeUp := signed(http.MethodDelete, "/outputs/generations/g1/0.png")
	auth := madeUp.Header.Get("Authorization")
	madeUp.Header.Set("Authorization", auth[:strings.Index(auth, "Signature=")]+"Signature=00")
	otherKey := signed(http.MethodDelete, "/outputs/generations/g1/unimportant.png")
	otherKey.URL.Path = "/outputs/generations/g1/0.png"
	unsigned, _ := http.NewRequest(http.MethodDelete, st.Endpoint+"/outputs/generations/g1/0.png", nil)
	for _, tt := range []struct {
		name string
		req  *http.Request
		code string
	}{
		{"a made-up signature", madeUp, "SignatureDoesNotMatch"},
		{"the signature of another key's delete", otherKey, "SignatureDoesNotMatch"},
		{"no signature", unsigned, "AccessDenied"},
	} {
		resp, err := http.DefaultClient.Do(tt.req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "<Code>"+tt.code+"</Code>") {
			t.Errorf("%s: HTTP %d %s, want 403 %s", tt.name, resp.StatusCode, body, tt.code)
		}
	}
	if resp, err := http.DefaultClient.Do(signed(http.MethodGet, "/outputs/generations/g1/0.png")); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("a request signed with the store's key: %v %v", resp, err)
	} else {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != "png bytes" {
			t.Errorf("the object after the refused requests is %q, want it untouched", body)
		}
	}
}
