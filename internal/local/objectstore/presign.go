package objectstore

import (
	"context"
	"crypto/subtle"
	"encoding/xml"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// Presigned URLs (SigV4 query authentication,
// https://docs.aws.amazon.com/AmazonS3/latest/API/sigv4-query-string-auth.html):
// the store takes them as S3 does, so that an upload URL the service
// hands out behaves here as it does in AWS.
const (
	// maxPresignExpiry is the longest X-Amz-Expires S3 takes: a week.
	maxPresignExpiry = 604800
	// unsignedPayload is the payload hash of a presigned request: S3
	// never signs a presigned request's body.
	unsignedPayload = "UNSIGNED-PAYLOAD"
)

// presignError is a refusal of a presigned request, answered as S3 does:
// its status and error code, and for an expired URL the times S3 names.
type presignError struct {
	status   int
	code     string
	message  string
	expires  string // when the URL expired, RFC 3339
	expired  bool
	serverAt time.Time
}

func (e *presignError) Error() string { return e.code + ": " + e.message }

// Presigned reports whether r authenticates by its query (a presigned URL).
func Presigned(r *http.Request) bool { return presigned(r) }

// VerifyPresigned checks a presigned request against creds at now, as S3
// does (verifyPresigned); the deployed-shape stack uses it in front of
// moto, whose IAM checks read only the Authorization header.
func VerifyPresigned(r *http.Request, creds aws.Credentials, now time.Time) error {
	return verifyPresigned(r, creds, now)
}

// ErrUnknownAccessKey is a presigned URL whose access key is no one's.
var ErrUnknownAccessKey error = &presignError{status: http.StatusForbidden, code: "InvalidAccessKeyId", message: "The AWS Access Key Id you provided does not exist in our records."}

// WritePresignError answers a refused presigned request as S3 does.
func WritePresignError(w http.ResponseWriter, err error) { writePresignError(w, err) }

func presigned(r *http.Request) bool {
	q := r.URL.Query()
	return q.Has("X-Amz-Algorithm") || q.Has("X-Amz-Signature") || q.Has("X-Amz-Credential")
}

// verifyPresigned checks a presigned request as S3 does: the algorithm,
// the credential (the store's access key), the date and its expiry
// (X-Amz-Expires seconds after X-Amz-Date, at most a week), then the
// signature, recomputed with the SDK's own presigner over the method,
// path, query (without the signature) and the headers the URL says it
// signed: a request that changes any of them, such as another
// Content-Type or Content-Length than the URL was made for, does not
// match.
func verifyPresigned(r *http.Request, creds aws.Credentials, now time.Time) error {
	q := r.URL.Query()
	missing := func(msg string) error {
		return &presignError{status: http.StatusBadRequest, code: "AuthorizationQueryParametersError", message: msg}
	}
	if q.Get("X-Amz-Algorithm") != "AWS4-HMAC-SHA256" {
		return missing("X-Amz-Algorithm only supports \"AWS4-HMAC-SHA256\"")
	}
	for _, name := range []string{"X-Amz-Credential", "X-Amz-Signature", "X-Amz-SignedHeaders", "X-Amz-Date", "X-Amz-Expires"} {
		if q.Get(name) == "" {
			return missing("Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters.")
		}
	}
	scope := strings.Split(q.Get("X-Amz-Credential"), "/")
	if len(scope) != 5 || scope[4] != "aws4_request" {
		return missing("Error parsing the X-Amz-Credential parameter; the Credential is mal-formed; expecting \"<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request\".")
	}
	if subtle.ConstantTimeCompare([]byte(scope[0]), []byte(creds.AccessKeyID)) != 1 {
		return &presignError{status: http.StatusForbidden, code: "InvalidAccessKeyId", message: "The AWS Access Key Id you provided does not exist in our records."}
	}
	signedAt, err := time.Parse(amzDate, q.Get("X-Amz-Date"))
	if err != nil || signedAt.Format("20060102") != scope[1] {
		return missing("X-Amz-Date must be in the ISO8601 Long Format \"yyyyMMdd'T'HHmmss'Z'\" and the Credential's date")
	}
	seconds, err := strconv.Atoi(q.Get("X-Amz-Expires"))
	switch {
	case err != nil || seconds < 0:
		return missing("X-Amz-Expires should be a number")
	case seconds > maxPresignExpiry:
		return missing("X-Amz-Expires must be less than a week (in seconds) that is; 604800")
	}
	if now.Before(signedAt) {
		return &presignError{status: http.StatusForbidden, code: "AccessDenied", message: "Request is not valid yet"}
	}
	if expires := signedAt.Add(time.Duration(seconds) * time.Second); !now.Before(expires) {
		return &presignError{status: http.StatusForbidden, code: "AccessDenied", message: "Request has expired",
			expired: true, expires: expires.UTC().Format(time.RFC3339), serverAt: now.UTC()}
	}

	// The request as it was presigned: its query without the signature,
	// and of its headers only those the URL signed.
	given := q.Get("X-Amz-Signature")
	q.Del("X-Amz-Signature")
	again := &http.Request{Method: r.Method, Host: r.Host, Header: http.Header{},
		URL: &url.URL{Scheme: "http", Host: r.Host, Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: q.Encode()}}
	for _, name := range strings.Split(q.Get("X-Amz-SignedHeaders"), ";") {
		switch name {
		case "host":
		case "content-length":
			again.ContentLength = r.ContentLength
		default:
			if vs := r.Header.Values(name); len(vs) > 0 {
				again.Header[http.CanonicalHeaderKey(name)] = vs
			}
		}
	}
	signer := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping, o.DisableHeaderHoisting = true, true })
	signedURL, _, err := signer.PresignHTTP(context.Background(), creds, again, unsignedPayload, scope[3], scope[2], signedAt)
	if err != nil {
		return &presignError{status: http.StatusForbidden, code: "SignatureDoesNotMatch", message: err.Error()}
	}
	u, err := url.Parse(signedURL)
	if err != nil || subtle.ConstantTimeCompare([]byte(u.Query().Get("X-Amz-Signature")), []byte(given)) != 1 {
		return &presignError{status: http.StatusForbidden, code: "SignatureDoesNotMatch",
			message: "The request signature we calculated does not match the signature you provided. Check your key and signing method."}
	}
	return nil
}

// writePresignError answers a refused presigned request as S3 does: its
// status, and an XML error whose Code SDK clients read.
func writePresignError(w http.ResponseWriter, err error) {
	var pe *presignError
	if !errors.As(err, &pe) {
		pe = &presignError{status: http.StatusForbidden, code: "AccessDenied", message: err.Error()}
	}
	type answer struct {
		XMLName    xml.Name `xml:"Error"`
		Code       string
		Message    string
		Expires    string `xml:",omitempty"`
		ServerTime string `xml:",omitempty"`
	}
	a := answer{Code: pe.code, Message: pe.message}
	if pe.expired {
		a.Expires, a.ServerTime = pe.expires, pe.serverAt.Format(time.RFC3339)
	}
	body, _ := xml.Marshal(a)
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(pe.status)
	w.Write([]byte(xml.Header))
	w.Write(body)
}
