package apigw

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// StreamingFunction is the handler of a function behind a Lambda function
// URL with InvokeMode RESPONSE_STREAM (aws-lambda-go's streaming answer).
type StreamingFunction = func(ctx context.Context, req events.LambdaFunctionURLRequest) (*events.LambdaFunctionURLStreamingResponse, error)

// FunctionURL serves fn as a Lambda function URL (AuthType NONE,
// InvokeMode RESPONSE_STREAM) does: each request becomes an
// events.LambdaFunctionURLRequest (payload format 2.0, its headers'
// names lowercased, no route key: the function matches the path itself),
// and the answer's head is written, then its body as the function makes
// it, each piece flushed to the client at once. A client that goes away
// closes the body, so the function stops making it.
func FunctionURL(fn StreamingFunction, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := NewRequestID()
		body, err := io.ReadAll(io.LimitReader(r.Body, LambdaPayloadLimit+1))
		if err != nil || len(body) > LambdaPayloadLimit {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusRequestEntityTooLarge)
			json.NewEncoder(w).Encode(map[string]string{"Message": "Request must be smaller than 6291456 bytes for the InvokeFunction operation"})
			return
		}
		ev := functionURLEvent(r, body, id)
		resp, err := fn(r.Context(), ev)
		if err != nil {
			// A function error before the answer's head: the URL answers 502.
			log.ErrorContext(r.Context(), "function URL: the function failed", "path", r.URL.Path, "error", err)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadGateway)
			json.NewEncoder(w).Encode(map[string]string{"Message": "Internal Server Error"})
			return
		}
		if resp.Body != nil {
			if c, ok := resp.Body.(io.Closer); ok {
				defer c.Close()
			}
		}
		h := w.Header()
		h.Set("X-Amzn-Requestid", id)
		for k, v := range resp.Headers {
			h.Set(k, v)
		}
		for _, c := range resp.Cookies {
			h.Add("Set-Cookie", c)
		}
		status := resp.StatusCode
		if status == 0 {
			status = http.StatusOK
		}
		w.WriteHeader(status)
		rc := http.NewResponseController(w)
		// The streamed answer is not bound by the server's write timeout;
		// the function's own time limit ends it.
		_ = rc.SetWriteDeadline(time.Time{})
		_ = rc.Flush()
		if resp.Body == nil {
			return
		}
		buf := make([]byte, 32<<10)
		for {
			n, err := resp.Body.Read(buf)
			if n > 0 {
				if _, werr := w.Write(buf[:n]); werr != nil {
					return
				}
				if rc.Flush() != nil {
					return
				}
			}
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				if r.Context().Err() == nil {
					log.WarnContext(r.Context(), "function URL: the streamed answer ended on an error", "path", r.URL.Path, "error", err)
				}
				return
			}
		}
	})
}

func functionURLEvent(r *http.Request, body []byte, id string) events.LambdaFunctionURLRequest {
	headers := make(map[string]string, len(r.Header))
	var cookies []string
	for k, vs := range r.Header {
		if strings.EqualFold(k, "Cookie") {
			cookies = append(cookies, vs...)
			continue
		}
		headers[lowerName(k)] = strings.Join(vs, ",")
	}
	ev := events.LambdaFunctionURLRequest{Version: "2.0", RawPath: r.URL.EscapedPath(), RawQueryString: r.URL.RawQuery,
		Cookies: cookies, Headers: headers,
		RequestContext: events.LambdaFunctionURLRequestContext{AccountID: "anonymous", RequestID: id, APIID: "local",
			DomainName: r.Host, DomainPrefix: "local",
			HTTP: events.LambdaFunctionURLRequestContextHTTPDescription{Method: r.Method, Path: r.URL.Path, Protocol: r.Proto,
				UserAgent: r.UserAgent()}}}
	ev.RequestContext.Time, ev.RequestContext.TimeEpoch = requestTime(time.Now())
	ev.RequestContext.HTTP.SourceIP, _, _ = net.SplitHostPort(r.RemoteAddr)
	if r.URL.RawQuery != "" {
		query := map[string]string{}
		for k, vs := range r.URL.Query() {
			query[k] = strings.Join(vs, ",")
		}
		ev.QueryStringParameters = query
	}
	if len(body) > 0 {
		if textType(r.Header.Get("Content-Type")) {
			ev.Body = string(body)
		} else {
			ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
		}
	}
	return ev
}
