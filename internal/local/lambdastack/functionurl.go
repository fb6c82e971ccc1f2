package lambdastack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/mediagen-dev/mediagen/internal/local/apigw"
)

// startFunctionURLs serves each AWS::Lambda::Url of the template on a
// listener of its own, as each function URL is a host of its own
// (https://<id>.lambda-url.<region>.on.aws/): every request invokes its
// function's built bootstrap with a payload 2.0 function URL event. In
// RESPONSE_STREAM mode the runtime's streamed answer (its head, eight NUL
// bytes, the body) reaches the client as the function makes it; in
// BUFFERED mode the answer is one JSON response. The URL's Cors is
// answered as an HTTP API's is (Lambda answers preflights itself).
// AuthType AWS_IAM (SigV4 callers) is not modelled, nor is a streaming
// environment's concurrency: the pool has it back once the answer's head
// arrived, and an invocation it is then given waits for the runtime's next
// /next, after the stream.
func (s *Stack) startFunctionURLs() error {
	s.FunctionURLs = map[string]string{}
	for _, logical := range s.resourcesOfType("AWS::Lambda::Url") {
		props, err := s.properties(logical)
		if err != nil {
			return err
		}
		fn, err := s.functionOfARN(fmt.Sprint(props["TargetFunctionArn"]))
		if err != nil {
			return fmt.Errorf("%s: %w", logical, err)
		}
		if auth := fmt.Sprint(props["AuthType"]); auth != "NONE" {
			return fmt.Errorf("%s: AuthType %s is not modelled here (NONE is)", logical, auth)
		}
		streaming := props["InvokeMode"] == "RESPONSE_STREAM"
		var handler http.Handler = apigw.FunctionURL(func(ctx context.Context, ev events.LambdaFunctionURLRequest) (*events.LambdaFunctionURLStreamingResponse, error) {
			return invokeURL(ctx, fn, ev, streaming)
		}, s.cfg.Log)
		if c, _ := props["Cors"].(map[string]any); c != nil {
			handler = corsOf(c).Wrap(handler)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return fmt.Errorf("%s: listen: %w", logical, err)
		}
		srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
		s.urlServers = append(s.urlServers, srv)
		go srv.Serve(ln)
		s.FunctionURLs[logical] = "http://" + ln.Addr().String() + "/"
	}
	return nil
}

// corsOf reads a function URL's Cors as apigw's CORS (the same fields).
func corsOf(c map[string]any) *apigw.CORS {
	strs := func(key string) []string {
		list, _ := c[key].([]any)
		out := make([]string, 0, len(list))
		for _, v := range list {
			out = append(out, fmt.Sprint(v))
		}
		return out
	}
	allowCredentials, _ := c["AllowCredentials"].(bool)
	return &apigw.CORS{AllowOrigins: strs("AllowOrigins"), AllowMethods: strs("AllowMethods"), AllowHeaders: strs("AllowHeaders"),
		ExposeHeaders: strs("ExposeHeaders"), MaxAge: intOf(c["MaxAge"], 0), AllowCredentials: allowCredentials}
}

// invokeURL invokes fn with a function URL's event and reads its answer:
// a stream (its head, then the body as it comes) or a buffered response.
func invokeURL(ctx context.Context, fn *Function, ev events.LambdaFunctionURLRequest, streaming bool) (*events.LambdaFunctionURLStreamingResponse, error) {
	payload, err := json.Marshal(ev)
	if err != nil {
		return nil, err
	}
	inv, err := fn.pool.Invoke(ctx, payload)
	if err != nil {
		return nil, fmt.Errorf("invoke %s: %w", fn.Logical, err)
	}
	if inv.Err != nil {
		return nil, fmt.Errorf("%s: %w", fn.Logical, inv.Err)
	}
	if inv.Stream != nil {
		if !streaming {
			inv.Stream.Close()
			return nil, fmt.Errorf("%s streamed its answer to a BUFFERED function URL", fn.Logical)
		}
		return streamedAnswer(inv.Stream)
	}
	var resp events.LambdaFunctionURLResponse
	if err := json.Unmarshal(inv.Response, &resp); err != nil {
		return nil, fmt.Errorf("%s answered %.200s: %w", fn.Logical, inv.Response, err)
	}
	return &events.LambdaFunctionURLStreamingResponse{StatusCode: resp.StatusCode, Headers: resp.Headers, Cookies: resp.Cookies,
		Body: strings.NewReader(resp.Body)}, nil
}

// maxPrelude bounds a streamed answer's head.
const maxPrelude = 64 << 10

// streamedAnswer reads a streamed answer's head (JSON up to eight NUL
// bytes) and hands on the rest as the body.
func streamedAnswer(stream io.ReadCloser) (*events.LambdaFunctionURLStreamingResponse, error) {
	sep := make([]byte, 8)
	var head bytes.Buffer
	one := make([]byte, 1)
	for {
		if head.Len() > maxPrelude {
			stream.Close()
			return nil, errors.New("a streamed answer's head is over 64 KiB, or has no end")
		}
		if _, err := io.ReadFull(stream, one); err != nil {
			stream.Close()
			return nil, fmt.Errorf("a streamed answer ended in its head: %w", err)
		}
		head.WriteByte(one[0])
		if head.Len() >= 8 && bytes.Equal(head.Bytes()[head.Len()-8:], sep) {
			break
		}
	}
	var prelude struct {
		StatusCode int               `json:"statusCode"`
		Headers    map[string]string `json:"headers"`
		Cookies    []string          `json:"cookies"`
	}
	if err := json.Unmarshal(head.Bytes()[:head.Len()-8], &prelude); err != nil {
		stream.Close()
		return nil, fmt.Errorf("a streamed answer's head %.200q: %w", head.Bytes(), err)
	}
	return &events.LambdaFunctionURLStreamingResponse{StatusCode: prelude.StatusCode, Headers: prelude.Headers,
		Cookies: prelude.Cookies, Body: stream}, nil
}
