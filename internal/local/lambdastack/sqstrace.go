package lambdastack

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
)

// SQS keeps the X-Ray trace header a message was sent with: a SendMessage
// with the X-Amzn-Trace-Id header (which the Go SDK sets from
// _X_AMZN_TRACE_ID in a Lambda function, its RecursionDetection
// middleware) stores it as the message's AWSTraceHeader system attribute,
// and ReceiveMessage returns it when AWSTraceHeader (or All) is asked for.
// moto keeps only an AWSTraceHeader passed in MessageSystemAttributes, so
// moto's proxy does the rest: it notes the header of each SendMessage it
// passes on, by the message id moto answers, and adds it to the
// ReceiveMessage answers that ask for it. (SendMessageBatch, which no
// function calls, is not covered.) The notes last as long as the stack: a
// few hundred bytes a message, which a local run can afford.

const (
	targetSendMessage    = "AmazonSQS.SendMessage"
	targetReceiveMessage = "AmazonSQS.ReceiveMessage"
	headerTrace          = "X-Amzn-Trace-Id"
	attrTraceHeader      = "AWSTraceHeader"
)

type traceWantKey struct{}

// noteTraceRequest readies a request for traceResponse: a ReceiveMessage
// says whether it asks for AWSTraceHeader. It is called before the
// request is passed on.
func noteTraceRequest(r *http.Request) *http.Request {
	if r.Header.Get("X-Amz-Target") != targetReceiveMessage {
		return r
	}
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return r
	}
	var in struct {
		AttributeNames              []string
		MessageSystemAttributeNames []string
	}
	if json.Unmarshal(body, &in) != nil {
		return r
	}
	names := append(in.AttributeNames, in.MessageSystemAttributeNames...)
	if !slices.Contains(names, "All") && !slices.Contains(names, attrTraceHeader) {
		return r
	}
	return r.WithContext(context.WithValue(r.Context(), traceWantKey{}, true))
}

// traceResponse notes a sent message's trace header, or adds the noted
// headers to a ReceiveMessage's answer; resp is a success.
func (m *Moto) traceResponse(resp *http.Response) error {
	r := resp.Request
	target := r.Header.Get("X-Amz-Target")
	send := target == targetSendMessage && r.Header.Get(headerTrace) != ""
	receive := target == targetReceiveMessage && r.Context().Value(traceWantKey{}) != nil
	if !send && !receive {
		return nil
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if send {
		var out struct{ MessageId string }
		if json.Unmarshal(body, &out) == nil && out.MessageId != "" {
			h := r.Header.Get(headerTrace)
			if u, err := url.PathUnescape(h); err == nil {
				h = u
			}
			m.mu.Lock()
			if m.traces == nil {
				m.traces = map[string]string{}
			}
			m.traces[out.MessageId] = h
			m.mu.Unlock()
		}
		return nil
	}
	var out map[string]any
	if json.Unmarshal(body, &out) != nil {
		return nil
	}
	msgs, _ := out["Messages"].([]any)
	changed := false
	m.mu.Lock()
	for _, v := range msgs {
		msg, _ := v.(map[string]any)
		id, _ := msg["MessageId"].(string)
		h, ok := m.traces[id]
		if !ok {
			continue
		}
		attrs, _ := msg["Attributes"].(map[string]any)
		if attrs == nil {
			attrs = map[string]any{}
		}
		if _, has := attrs[attrTraceHeader]; !has {
			attrs[attrTraceHeader] = h
			msg["Attributes"] = attrs
			changed = true
		}
	}
	m.mu.Unlock()
	if !changed {
		return nil
	}
	if body, err = json.Marshal(out); err != nil {
		return err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	return nil
}
