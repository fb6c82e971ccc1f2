package objectstore

import (
	"context"
	"crypto/subtle"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// S3's answers to a request it cannot authenticate, by their error codes.
var (
	errUnsigned              = errors.New("AccessDenied")
	errInvalidAccessKeyID    = errors.New("InvalidAccessKeyId")
	errSignatureDoesNotMatch = errors.New("SignatureDoesNotMatch")
)

// amzDate is SigV4's X-Amz-Date layout.
const amzDate = "20060102T150405Z"

// verifySigV4 checks a request's AWS Signature Version 4 (the
// Authorization header form the SDK sends) against creds, as S3 does: the
// access key must be creds', and the signature is recomputed with the
// SDK's own signer over the method, path, query and the headers the
// request says it signed, then compared. Query authentication (presigned
// URLs, the uploads' PUT and the providers' GET) is verifyPresigned's.
func verifySigV4(r *http.Request, creds aws.Credentials) error {
	auth := r.Header.Get("Authorization")
	const algorithm = "AWS4-HMAC-SHA256 "
	if !strings.HasPrefix(auth, algorithm) {
		return fmt.Errorf("%w: the object store's S3 API takes signed requests only (AWS4-HMAC-SHA256 Authorization header)", errUnsigned)
	}
	fields := map[string]string{}
	for _, part := range strings.Split(strings.TrimPrefix(auth, algorithm), ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		fields[k] = v
	}
	scope := strings.Split(fields["Credential"], "/")
	if len(scope) != 5 || scope[4] != "aws4_request" || fields["SignedHeaders"] == "" || fields["Signature"] == "" {
		return fmt.Errorf("%w: the Authorization header is malformed", errUnsigned)
	}
	if subtle.ConstantTimeCompare([]byte(scope[0]), []byte(creds.AccessKeyID)) != 1 {
		return fmt.Errorf("%w: the access key is not the store's", errInvalidAccessKeyID)
	}
	signedAt, err := time.Parse(amzDate, r.Header.Get("X-Amz-Date"))
	if err != nil || signedAt.Format("20060102") != scope[1] {
		return fmt.Errorf("%w: X-Amz-Date is missing or not the credential's date", errUnsigned)
	}

	// The request as the client signed it: the same target, and of its
	// headers only those it signed.
	again := &http.Request{Method: r.Method, Host: r.Host, Header: http.Header{},
		URL: &url.URL{Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: r.URL.RawQuery}}
	for _, name := range strings.Split(fields["SignedHeaders"], ";") {
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
	signer := v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true })
	err = signer.SignHTTP(context.Background(), creds, again, r.Header.Get("X-Amz-Content-Sha256"), scope[3], scope[2], signedAt)
	if err != nil {
		return fmt.Errorf("%w: %v", errSignatureDoesNotMatch, err)
	}
	_, want, _ := strings.Cut(again.Header.Get("Authorization"), "Signature=")
	if subtle.ConstantTimeCompare([]byte(want), []byte(fields["Signature"])) != 1 {
		return fmt.Errorf("%w: the request signature we calculated does not match the signature you provided; check your key and signing method", errSignatureDoesNotMatch)
	}
	return nil
}

// writeS3Error answers as S3 does when it refuses a request: 403 with an
// XML error whose Code SDK clients read.
func writeS3Error(w http.ResponseWriter, err error) {
	code := errUnsigned
	for _, c := range []error{errInvalidAccessKeyID, errSignatureDoesNotMatch} {
		if errors.Is(err, c) {
			code = c
		}
	}
	_, msg, _ := strings.Cut(err.Error(), ": ")
	body, _ := xml.Marshal(struct {
		XMLName xml.Name `xml:"Error"`
		Code    string
		Message string
	}{Code: code.Error(), Message: msg})
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(http.StatusForbidden)
	w.Write([]byte(xml.Header))
	w.Write(body)
}
