package lambdastack

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/mediagen-dev/mediagen/internal/local/objectstore"
)

// S3's presigned URLs in front of moto. S3 authorizes a presigned request
// as its signer: the URL carries the signer's access key (and session
// token) and a SigV4 signature of the method, path, query and the headers
// signed, valid X-Amz-Expires seconds. moto 5.2.1 checks IAM on the
// Authorization header only (a presigned SigV4 request is a 500 there),
// so the stack checks the URL as S3 does (objectstore.VerifyPresigned),
// then hands moto the same request signed in the header with the same
// credentials: moto then decides, from the signer's role, whether the
// action is allowed, as S3 would.

// s3Presigned takes a presigned S3 request; it reports whether it
// answered (a refusal). Otherwise r is signed in its header and goes on to
// moto.
func (s *Stack) s3Presigned(w http.ResponseWriter, r *http.Request) bool {
	// A browser's preflight goes to the same URL, query and all, but is
	// no presigned request: the bucket's CORS rule answers it, as S3 does
	// (moto, checking IAM, cannot: it is unsigned).
	if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
		bucket, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		if rule, ok := s.cors[bucket]; ok {
			rule.Preflight(w, r)
			return true
		}
		return false
	}
	if !objectstore.Presigned(r) {
		return false
	}
	q := r.URL.Query()
	key, _, _ := strings.Cut(q.Get("X-Amz-Credential"), "/")
	c, ok := s.credsOf(key)
	if !ok {
		objectstore.WritePresignError(w, objectstore.ErrUnknownAccessKey)
		return true
	}
	signer := aws.Credentials{AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey, SessionToken: c.SessionToken}
	if err := objectstore.VerifyPresigned(r, signer, time.Now()); err != nil {
		for k, v := range s.cors[strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 2)[0]].Headers(r, r.Method) {
			w.Header()[k] = v
		}
		objectstore.WritePresignError(w, err)
		return true
	}
	for name := range q {
		if strings.HasPrefix(name, "X-Amz-") {
			q.Del(name)
		}
	}
	// moto's server answers every request with its own
	// Access-Control-Allow-Origin: *, which is the rule's answer here.
	r.URL.RawQuery = q.Encode()
	r.Header.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
	r.Header.Del("Authorization")
	if err := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }).SignHTTP(context.Background(),
		signer, r, "UNSIGNED-PAYLOAD", "s3", region, time.Now()); err != nil {
		objectstore.WritePresignError(w, err)
		return true
	}
	return false
}

// credsOf is the credentials of an access key the stack handed out: a
// function's role session, or the admin's.
func (s *Stack) credsOf(accessKeyID string) (creds, bool) {
	if s.admin.AccessKeyID == accessKeyID {
		return s.admin, true
	}
	for _, r := range s.roles {
		if r.creds.AccessKeyID == accessKeyID {
			return r.creds, true
		}
	}
	return creds{}, false
}
