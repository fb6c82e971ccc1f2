// Package httpapi turns API requests into use case calls and back:
// authentication, rate limits, the error envelope and the JSON views of the
// spec. Its Request and Response are API Gateway's HTTP API event (payload
// 2.0) cut to what the routes read; lambdahttp adapts them to the Lambda
// event types, in Lambda and in the local runtime alike.
package httpapi

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/generation"
	"github.com/mediagen-dev/mediagen/internal/core/longform"
)

// Request is one API request.
type Request struct {
	// RouteKey is the matched route, "METHOD /path/{param}".
	RouteKey string
	// Method is the request's HTTP method.
	Method string
	// RequestID is the gateway's id of the request, echoed in errors.
	RequestID string
	// Headers are the request's headers, names lowercased (as API Gateway
	// sends them); read them with header.
	Headers               map[string]string
	PathParameters        map[string]string
	QueryStringParameters map[string]string
	Body                  string
	IsBase64Encoded       bool
	// Authorizer is the context the Lambda authorizer returned for this
	// request; nil when none ran.
	Authorizer map[string]any
}

// Response is a route's answer.
type Response struct {
	StatusCode      int
	Headers         map[string]string
	Body            string
	IsBase64Encoded bool
}

// Handler is one route.
type Handler = func(ctx context.Context, req Request) (Response, error)

// AuthorizerRequest is what the authorizer reads of a request.
type AuthorizerRequest struct {
	RouteKey string
	Headers  map[string]string
}

// AuthorizerResult is the authorizer's answer (API Gateway's simple
// response): whether the request goes on, and the context the route gets.
type AuthorizerResult struct {
	IsAuthorized bool
	Context      map[string]any
}

// The body limit is what the whole path holds: API Gateway passes a
// request to its function as one JSON event (payload format 2.0), and
// Lambda refuses a synchronous invocation whose event is 6 MiB or more
// ("Request must be smaller than 6291456 bytes"), before any code runs,
// so that the client gets the gateway's 413 and no envelope. The body is
// in the event as a JSON string: a JSON body (Content-Type:
// application/json) as text, with a backslash more before each quote or
// backslash, a body without a JSON type base64-encoded, a third larger.
// The rest of the event (headers, the request line twice, the request
// context, the authorizer's context) is kept under eventEnvelopeBytes, so
// a body the service takes always reaches it, and one just over
// MaxBodyBytes gets the service's own 413 body_too_large.
const (
	// LambdaPayloadLimit: an invocation's event must be smaller.
	LambdaPayloadLimit = 6 << 20
	// eventEnvelopeBytes is the room kept for the event around the body:
	// an HTTP API takes at most 10,240 bytes of request line and headers,
	// and the event carries the path and query twice.
	eventEnvelopeBytes = 32 << 10
	// MaxBodyBytes is the most a body may take in the event (BodyEventSize).
	MaxBodyBytes = LambdaPayloadLimit - eventEnvelopeBytes
)

// BodyEventSize is how many bytes a body takes in the event: a base64
// body as it is, a text one as a JSON string's content (escapes as Go's
// encoder writes them without HTML escaping: two bytes for a quote, a
// backslash, \n, \r, \t, \b or \f, six for another control character
// or U+2028/U+2029).
func BodyEventSize(body string, isBase64 bool) int {
	if isBase64 {
		return len(body)
	}
	n := len(body)
	for i := 0; i < len(body); i++ {
		switch c := body[i]; {
		case c == '"' || c == '\\' || c == '\n' || c == '\r' || c == '\t' || c == '\b' || c == '\f':
			n++
		case c < 0x20:
			n += 5
		case c == 0xe2 && i+2 < len(body) && body[i+1] == 0x80 && (body[i+2] == 0xa8 || body[i+2] == 0xa9):
			n += 3 // U+2028 and U+2029 are three bytes written as six
		}
	}
	return n
}

// Error is an answer other than success, rendered as the error envelope.
type Error struct {
	Status  int
	Code    string
	Message string
	Details []catalog.FieldError
	Headers map[string]string
	// GenerationID and VideoID name the record a create wrote (and
	// failed) before it failed, so that the client can find it.
	GenerationID, VideoID string
}

func (e *Error) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }

type envelope struct {
	Error     envelopeError `json:"error"`
	RequestID string        `json:"request_id"`
}

type envelopeError struct {
	Code         string               `json:"code"`
	Message      string               `json:"message"`
	Details      []catalog.FieldError `json:"details,omitempty"`
	GenerationID string               `json:"generation_id,omitempty"`
	VideoID      string               `json:"video_id,omitempty"`
}

// classify maps every error a use case returns to its HTTP answer. It is the
// one place where domain errors become statuses. A create that failed after
// writing its record names the record.
func classify(err error) *Error {
	e := classifyCause(err)
	var recorded *domain.RecordedWorkError
	if errors.As(err, &recorded) {
		named := *e
		switch recorded.Kind {
		case domain.WorkGeneration:
			named.GenerationID = recorded.ID
		case domain.WorkLongVideo:
			named.VideoID = recorded.ID
		}
		return &named
	}
	return e
}

func classifyCause(err error) *Error {
	var (
		upErr  *generation.UpstreamError
		apiErr *Error
		valErr *catalog.ValidationError
		short  *domain.InsufficientCreditsError
		budget *domain.KeyBudgetExceededError
		scope  *domain.InsufficientScopeError

		refusedKey *domain.KeyRefusedError
	)
	switch {
	case errors.As(err, &apiErr):
		return apiErr
	case errors.As(err, &valErr):
		return &Error{Status: http.StatusBadRequest, Code: "invalid_request", Message: valErr.Message, Details: valErr.Details}
	case errors.As(err, &short):
		return &Error{Status: http.StatusPaymentRequired, Code: "insufficient_credits",
			Message: fmt.Sprintf("this request costs %s credits and the balance is %s", domain.FormatCredits(short.Required), domain.FormatCredits(short.Available))}
	case errors.As(err, &budget):
		whose := fmt.Sprintf("this API key's (%s) daily credit limit is %s; it has", budget.KeyPrefix, domain.FormatCredits(budget.Limit))
		if budget.Above {
			whose = fmt.Sprintf("the daily credit limit of key %s, above this one, is %s, shared by the keys below it; they have",
				budget.KeyPrefix, domain.FormatCredits(budget.Limit))
		}
		return &Error{Status: http.StatusPaymentRequired, Code: "key_budget_exceeded",
			Message: fmt.Sprintf("%s spent %s today (UTC) and this request costs %s; the limit resets at %s",
				whose, domain.FormatCredits(budget.Spent), domain.FormatCredits(budget.Required),
				budget.ResetAt.UTC().Format(time.RFC3339))}
	case errors.As(err, &scope):
		return &Error{Status: http.StatusForbidden, Code: "insufficient_scope", Message: scope.Reason}
	case errors.As(err, &refusedKey):
		return &Error{Status: http.StatusConflict, Code: refusedKey.Code, Message: refusedKey.Reason}
	case errors.Is(err, domain.ErrKeyRevoked):
		return unauthorized("invalid API key")
	case errors.Is(err, domain.ErrInvalid):
		return &Error{Status: http.StatusBadRequest, Code: "invalid_request", Message: invalidMessage(err)}
	case errors.Is(err, domain.ErrFinishing):
		return &Error{Status: http.StatusConflict, Code: "finishing", Message: sentinelMessage(err, domain.ErrFinishing)}
	case errors.Is(err, domain.ErrConflict):
		return &Error{Status: http.StatusConflict, Code: "conflict", Message: sentinelMessage(err, domain.ErrConflict)}
	case errors.Is(err, domain.ErrNotFound):
		return &Error{Status: http.StatusNotFound, Code: "not_found", Message: "no such resource"}
	case errors.Is(err, domain.ErrBusy):
		return &Error{Status: http.StatusServiceUnavailable, Code: "busy",
			Message: "other requests of this account kept the ledger busy; nothing was charged, please retry",
			Headers: map[string]string{"Retry-After": "1"}}
	case errors.Is(err, longform.ErrWorkflowUnavailable):
		return &Error{Status: http.StatusBadGateway, Code: "workflow_unavailable",
			Message: "the video workflow could not be started; no credits were charged, please retry"}
	case errors.As(err, &upErr) && upErr.Refused:
		return &Error{Status: http.StatusBadGateway, Code: "upstream_refused",
			Message: "upstream " + upErr.Upstream + " refused the job: " + upErr.Reason + "; no credits were charged"}
	case errors.As(err, &upErr):
		return &Error{Status: http.StatusBadGateway, Code: "upstream_unavailable",
			Message: "the generation provider did not accept the job (" + upErr.Reason + "); no credits were charged, please retry"}
	case errors.Is(err, generation.ErrUpstreamRefused):
		return &Error{Status: http.StatusBadGateway, Code: "upstream_refused",
			Message: "the generation provider refused the job; no credits were charged"}
	case errors.Is(err, generation.ErrUpstreamUnavailable):
		return &Error{Status: http.StatusBadGateway, Code: "upstream_unavailable",
			Message: "the generation provider did not accept the job; no credits were charged, please retry"}
	default:
		return &Error{Status: http.StatusInternalServerError, Code: "internal_error", Message: "internal error; the request id identifies it in our logs"}
	}
}

// invalidMessage keeps the part of a domain.ErrInvalid chain meant for users:
// the text after the sentinel.
func invalidMessage(err error) string { return sentinelMessage(err, domain.ErrInvalid) }

// sentinelMessage keeps the text after sentinel in err's chain: the part
// written for users ("conflict: video v is already completed").
func sentinelMessage(err, sentinel error) string {
	msg := err.Error()
	if i := strings.Index(msg, sentinel.Error()+": "); i >= 0 {
		return msg[i+len(sentinel.Error())+2:]
	}
	return msg
}

// errorResponse renders err as the envelope and logs what a 5xx hides.
func errorResponse(ctx context.Context, log *slog.Logger, req Request, err error) Response {
	e := classify(err)
	if e.Status >= 500 {
		log.ErrorContext(ctx, "request failed", "route", req.RouteKey, "status", e.Status, "error", err)
	}
	resp := jsonResponse(e.Status, envelope{Error: envelopeError{Code: e.Code, Message: e.Message, Details: e.Details,
		GenerationID: e.GenerationID, VideoID: e.VideoID}, RequestID: requestID(req)})
	for k, v := range e.Headers {
		resp.Headers[k] = v
	}
	return resp
}

func jsonResponse(status int, v any) Response {
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // an API answer, not HTML: keep <, > and & readable
	body := ""
	if err := enc.Encode(v); err != nil {
		status, body = http.StatusInternalServerError, `{"error":{"code":"internal_error","message":"could not encode the answer"}}`
	} else {
		body = strings.TrimSuffix(buf.String(), "\n")
	}
	// Room for the rate-limit headers (and Retry-After) the gate adds to
	// most answers, so the map is not grown for them.
	headers := make(map[string]string, 8)
	headers["Content-Type"], headers["Cache-Control"], headers["X-Content-Type-Options"] = "application/json", "no-store", "nosniff"
	return Response{StatusCode: status, Body: body, Headers: headers}
}

func requestID(req Request) string { return req.RequestID }

// header reads a header case-insensitively (API Gateway lowercases them).
func header(req Request, name string) string {
	if v, ok := req.Headers[strings.ToLower(name)]; ok {
		return v
	}
	for k, v := range req.Headers {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

// jsonBody returns the request body, refusing what is too large, not JSON by
// its declared type, or not UTF-8.
func jsonBody(req Request) ([]byte, error) {
	if ct := header(req, "Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return nil, &Error{Status: http.StatusUnsupportedMediaType, Code: "unsupported_media_type",
				Message: "send the body as JSON with Content-Type: application/json"}
		}
	}
	if n := BodyEventSize(req.Body, req.IsBase64Encoded); n > MaxBodyBytes {
		msg := fmt.Sprintf("the body takes %d bytes in the function's event, over the limit of %d", n, MaxBodyBytes)
		if req.IsBase64Encoded {
			msg += "; sent without Content-Type: application/json it is base64-encoded, a third larger"
		}
		return nil, &Error{Status: http.StatusRequestEntityTooLarge, Code: "body_too_large", Message: msg}
	}
	body := []byte(req.Body)
	if req.IsBase64Encoded {
		var err error
		if body, err = base64.StdEncoding.DecodeString(req.Body); err != nil {
			return nil, &Error{Status: http.StatusBadRequest, Code: "invalid_request", Message: "the body could not be decoded"}
		}
	}
	if !utf8.Valid(body) {
		return nil, &Error{Status: http.StatusBadRequest, Code: "invalid_request", Message: "the body is not valid UTF-8"}
	}
	return body, nil
}
