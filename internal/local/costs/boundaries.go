package costs

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/mediagen-dev/mediagen/internal/api/routes"
	"github.com/mediagen-dev/mediagen/internal/local/apigw"
	"github.com/mediagen-dev/mediagen/internal/local/localsqs"
	"github.com/mediagen-dev/mediagen/internal/local/stepfunctions"
)

// routeFunctions names the function behind each route (routes.Table, the
// table template.yaml is checked against); a route not in it is counted
// under its route key.
var routeFunctions = routes.Functions()

// Routes counts each route call as one API Gateway request and one Lambda
// invocation of its function.
func (m *Meter) Routes(routes []apigw.Route) []apigw.Route {
	out := make([]apigw.Route, len(routes))
	for i, rt := range routes {
		key := rt.Method + " " + rt.Path
		name, ok := routeFunctions[key]
		if !ok {
			name = key
		}
		h := rt.Handler
		rt.Handler = func(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
			m.api.Add(1)
			ctx, clock := startInvocation(ctx)
			resp, err := h(ctx, req)
			m.invocation(name, clock.billed())
			return resp, err
		}
		out[i] = rt
	}
	return out
}

// FunctionURL counts each call of the stream function's URL
// (routes.StreamFunction) as one invocation of that function, billed for as
// long as it ran: until its streamed body ended and was closed (a response
// stream's invocation lasts as long as its stream), or at once for an
// answer without a body. A function URL is not the HTTP API: no API
// Gateway request is counted.
func (m *Meter) FunctionURL(fn apigw.StreamingFunction) apigw.StreamingFunction {
	return func(ctx context.Context, req events.LambdaFunctionURLRequest) (*events.LambdaFunctionURLStreamingResponse, error) {
		ctx, clock := startInvocation(ctx)
		resp, err := fn(ctx, req)
		if err != nil || resp == nil || resp.Body == nil {
			m.invocation(routes.StreamFunction, clock.billed())
			return resp, err
		}
		body := &meteredBody{Reader: resp.Body}
		body.end = func() { m.invocation(routes.StreamFunction, clock.billed()) }
		resp.Body = body
		return resp, nil
	}
}

// meteredBody is a streamed body that counts its invocation once, when it
// is closed.
type meteredBody struct {
	io.Reader
	once sync.Once
	end  func()
}

func (b *meteredBody) Close() error {
	var err error
	b.once.Do(func() {
		if c, ok := b.Reader.(io.Closer); ok {
			err = c.Close()
		}
		b.end()
	})
	return err
}

// AuthorizerCacheTTL is how long API Gateway reuses the authorizer's answer
// for the same Authorization header in a stack deployed with
// template.yaml's defaults (its AuthorizerCacheTtl parameter; a deploy test
// keeps the two equal). The bench's cost runtimes run with it
// (runtime.Config.AuthCacheTTL), so their meters count the authorizer
// invocations that stack would bill.
const AuthorizerCacheTTL = 60 * time.Second

// Authorizer counts each call of the Lambda authorizer as one invocation.
// Wrap the function the gateway invokes on a cache miss
// (apigw.LambdaAuthorizer.Func): a request answered from the gateway's
// authorizer cache invokes no authorizer and is not counted, nor is one
// without an Authorization header, which the gateway refuses itself.
func (m *Meter) Authorizer(a apigw.Authorizer) apigw.Authorizer {
	return func(ctx context.Context, req events.APIGatewayV2CustomAuthorizerV2Request) (events.APIGatewayV2CustomAuthorizerSimpleResponse, error) {
		ctx, clock := startInvocation(ctx)
		resp, err := a(ctx, req)
		m.invocation("authorizer", clock.billed())
		return resp, err
	}
}

// Sender is the queue's sending side.
type sender interface {
	Send(ctx context.Context, body []byte, delay time.Duration) error
}

type sqsSender struct {
	sender
	m *Meter
}

func (s sqsSender) Send(ctx context.Context, body []byte, delay time.Duration) error {
	s.m.sqs.Add(1) // SendMessage
	return s.sender.Send(ctx, body, delay)
}

// SQSSender counts each message sent as one SendMessage request.
func (m *Meter) SQSSender(s sender) sender { return sqsSender{s, m} }

// SQSConsumer counts a delivered batch as Lambda's event source mapping
// makes it: one ReceiveMessage that returned it, one invocation of the
// consuming function (poller or webhooks), and one DeleteMessageBatch for the messages that succeeded
// (failed ones are left to become visible again). The mapping's empty long
// polls are a fixed cost per queue, not per message, and are not counted.
func (m *Meter) SQSConsumer(function string, h localsqs.BatchHandler) localsqs.BatchHandler {
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		m.sqs.Add(1)
		ctx, clock := startInvocation(ctx)
		resp, err := h(ctx, ev)
		m.invocation(function, clock.billed())
		if err == nil && len(resp.BatchItemFailures) < len(ev.Records) {
			m.sqs.Add(1)
		}
		return resp, err
	}
}

// Task counts each call of a workflow task as one invocation of its
// function (the ARN's function name).
func (m *Meter) Task(arn string, fn stepfunctions.TaskFunc) stepfunctions.TaskFunc {
	name := taskFunctions[arn[strings.LastIndex(arn, ":")+1:]]
	return func(ctx context.Context, input json.RawMessage) (json.RawMessage, error) {
		ctx, clock := startInvocation(ctx)
		out, err := fn(ctx, input)
		m.invocation(name, clock.billed())
		return out, err
	}
}

// taskFunctions maps the template's task function names to their folders.
var taskFunctions = map[string]string{
	"SubmitScene": "submit-scene", "Narrate": "narrate",
	"Assemble": "assemble", "Finalize": "finalize", "MarkFailed": "mark-failed",
}

// S3 counts the requests the object store answers, by S3's price classes:
// GET and HEAD, or everything else (PUT, POST, COPY, LIST).
func (m *Meter) S3(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && r.URL.Query().Has("list-type"), r.Method == http.MethodGet && r.URL.Query().Has("uploads"):
			m.s3put.Add(1) // LIST is billed as a PUT-class request
		case r.Method == http.MethodGet, r.Method == http.MethodHead:
			m.s3get.Add(1)
		default:
			m.s3put.Add(1)
		}
		h.ServeHTTP(w, r)
	})
}
