package lambdastack

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/mediagen-dev/mediagen/internal/local/localsqs"
)

// startEventSources starts each SQS event source mapping's poller and each
// scheduled rule's timer.
func (s *Stack) startEventSources(ctx context.Context) error {
	for _, logical := range s.resourcesOfType("AWS::Lambda::EventSourceMapping") {
		m, err := s.sqsMapping(logical)
		if err != nil {
			return err
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			m.run(ctx)
		}()
	}
	for _, logical := range s.resourcesOfType("AWS::Events::Rule") {
		props, err := s.properties(logical)
		if err != nil {
			// A pattern rule on the state machine: not modelled yet.
			continue
		}
		expr, _ := props["ScheduleExpression"].(string)
		if expr == "" {
			continue
		}
		every, err := rate(expr)
		if err != nil {
			return fmt.Errorf("%s: %w", logical, err)
		}
		targets, _ := props["Targets"].([]any)
		for _, t := range targets {
			arn := fmt.Sprint(t.(map[string]any)["Arn"])
			fn, err := s.functionOfARN(arn)
			if err != nil {
				return fmt.Errorf("%s: %w", logical, err)
			}
			s.schedules[logical] = append(s.schedules[logical], fn)
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				s.schedule(ctx, logical, every, fn)
			}()
		}
	}
	return nil
}

var rateExpr = regexp.MustCompile(`^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$`)

// rate reads an EventBridge rate expression.
func rate(expr string) (time.Duration, error) {
	m := rateExpr.FindStringSubmatch(expr)
	if m == nil {
		return 0, fmt.Errorf("schedule %q: only rate(N unit) is modelled", expr)
	}
	n, _ := strconv.Atoi(m[1])
	unit := map[string]time.Duration{"minute": time.Minute, "hour": time.Hour, "day": 24 * time.Hour}[strings.TrimSuffix(m[2], "s")]
	return time.Duration(n) * unit, nil
}

// schedule invokes fn every period with a scheduled event, as an
// EventBridge schedule does (asynchronously: an error is logged).
func (s *Stack) schedule(ctx context.Context, rule string, every time.Duration, fn *Function) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if err := invokeJSON(ctx, fn, scheduledEvent(rule, now), nil); err != nil {
				s.cfg.Log.Error("scheduled invocation failed", "rule", rule, "function", fn.Logical, "error", err)
			}
		}
	}
}

// scheduledEvent is the event a schedule's tick sends its targets.
func scheduledEvent(rule string, now time.Time) map[string]any {
	return map[string]any{"version": "0", "id": newID(), "detail-type": "Scheduled Event", "source": "aws.events",
		"account": accountID, "time": now.UTC().Format(time.RFC3339), "region": region,
		"resources": []string{fmt.Sprintf("arn:aws:events:%s:%s:rule/%s", region, accountID, rule)}, "detail": map[string]any{}}
}

// RunSchedules ticks now every schedule that targets the function
// (logical ID): each target is invoked with the event of a tick, as the
// timer does, and the first failure is returned. It is how a test (or an
// operator) need not wait out a rate(5 minutes); it returns how many
// rules ticked.
func (s *Stack) RunSchedules(ctx context.Context, logical string) (int, error) {
	n := 0
	for _, rule := range sortedKeys(s.schedules) {
		for _, fn := range s.schedules[rule] {
			if fn.Logical != logical {
				continue
			}
			n++
			if err := invokeJSON(ctx, fn, scheduledEvent(rule, time.Now()), nil); err != nil {
				return n, fmt.Errorf("schedule %s: %w", rule, err)
			}
		}
	}
	return n, nil
}

// sqsMapping is one SQS event source mapping as the template sets it.
type sqsMapping struct {
	stack          *Stack
	logical        string
	fn             *Function
	queueURL       string
	queueARN       string
	batchSize      int
	maxConcurrency int
	reportFailures bool
	client         *sqs.Client
	// recursiveLoop is the function's RecursiveLoop (Terminate unless the
	// template allows it); deadLetterURL the queue's redrive target
	// ("" without one), where the recursive-loop guard puts the messages
	// it stops, sent by the Lambda service itself (admin).
	recursiveLoop string
	deadLetterURL string
	admin         *sqs.Client
}

func (s *Stack) sqsMapping(logical string) (*sqsMapping, error) {
	props, err := s.properties(logical)
	if err != nil {
		return nil, err
	}
	fn, err := s.functionOfARN(fmt.Sprint(props["FunctionName"]))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", logical, err)
	}
	arn := fmt.Sprint(props["EventSourceArn"])
	m := &sqsMapping{stack: s, logical: logical, fn: fn, queueARN: arn, batchSize: intOf(props["BatchSize"], 10)}
	queue := ""
	for name, p := range s.res.created {
		if p.attrs["Arn"] == arn && p.attrs["QueueUrl"] != "" {
			m.queueURL, queue = p.attrs["QueueUrl"], name
		}
	}
	if m.queueURL == "" {
		return nil, fmt.Errorf("%s: event source %s is not a queue of the stack (only SQS mappings are modelled)", logical, arn)
	}
	qprops, err := s.properties(queue)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", logical, err)
	}
	if rp, ok := qprops["RedrivePolicy"].(map[string]any); ok {
		m.deadLetterURL = s.queueURLOfARN(fmt.Sprint(rp["deadLetterTargetArn"]))
	}
	m.recursiveLoop, _ = s.rawProperties(fn.Logical)["RecursiveLoop"].(string)
	if m.recursiveLoop == "" {
		m.recursiveLoop = localsqs.RecursiveLoopTerminate
	}
	m.admin = sqs.NewFromConfig(s.AdminConfig())
	if sc, ok := props["ScalingConfig"].(map[string]any); ok {
		m.maxConcurrency = intOf(sc["MaximumConcurrency"], 0)
	}
	if m.maxConcurrency <= 0 {
		// Lambda's SQS pollers scale far higher; one machine cannot.
		m.maxConcurrency = 5
	}
	if types, ok := props["FunctionResponseTypes"].([]any); ok {
		m.reportFailures = slices.Contains(types, any("ReportBatchItemFailures"))
	}
	// Lambda polls with the function's execution role.
	m.client = sqs.NewFromConfig(s.awsConfig(s.roles[fn.Logical].creds))
	return m, nil
}

// run receives batches while a concurrent slot is free (at most
// MaximumConcurrency batches at once) and hands each to the function.
func (m *sqsMapping) run(ctx context.Context) {
	slots := make(chan struct{}, m.maxConcurrency)
	for ctx.Err() == nil {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		out, err := m.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(m.queueURL),
			MaxNumberOfMessages: int32(min(m.batchSize, 10)), WaitTimeSeconds: 1,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
			MessageAttributeNames:       []string{"All"}})
		if err != nil || len(out.Messages) == 0 {
			<-slots
			if err != nil && ctx.Err() == nil {
				m.stack.cfg.Log.Error("receive from the queue failed", "mapping", m.logical, "error", err)
				select {
				case <-ctx.Done():
				case <-time.After(time.Second):
				}
			}
			continue
		}
		go func() {
			defer func() { <-slots }()
			m.deliver(context.WithoutCancel(ctx), out.Messages)
		}()
	}
}

// deliver invokes the function with one batch and deletes what it
// settled: every message on success, all but the reported failures with
// ReportBatchItemFailures, none when the function failed (they return
// after their visibility timeout, and go to the dead-letter queue after
// maxReceiveCount receives, by the queue's redrive policy).
func (m *sqsMapping) deliver(ctx context.Context, msgs []sqstypes.Message) {
	msgs, trace := m.guard(ctx, msgs)
	if len(msgs) == 0 {
		return
	}
	ev := events.SQSEvent{}
	for _, msg := range msgs {
		rec := events.SQSMessage{MessageId: aws.ToString(msg.MessageId), ReceiptHandle: aws.ToString(msg.ReceiptHandle),
			Body: aws.ToString(msg.Body), Md5OfBody: aws.ToString(msg.MD5OfBody), Attributes: msg.Attributes,
			EventSource: "aws:sqs", EventSourceARN: m.queueARN, AWSRegion: region, MessageAttributes: map[string]events.SQSMessageAttribute{}}
		for k, a := range msg.MessageAttributes {
			rec.MessageAttributes[k] = events.SQSMessageAttribute{StringValue: a.StringValue, BinaryValue: a.BinaryValue,
				DataType: aws.ToString(a.DataType), StringListValues: a.StringListValues, BinaryListValues: a.BinaryListValues}
		}
		ev.Records = append(ev.Records, rec)
	}
	var resp events.SQSEventResponse
	err := invokeJSONTraced(ctx, m.fn, trace, ev, &resp)
	if err != nil {
		m.stack.cfg.Log.Warn("batch failed: its messages return after their visibility timeout", "mapping", m.logical, "messages", len(msgs), "error", err)
		return
	}
	failed := map[string]bool{}
	if m.reportFailures {
		for _, f := range resp.BatchItemFailures {
			if f.ItemIdentifier == "" || !slices.ContainsFunc(msgs, func(msg sqstypes.Message) bool { return aws.ToString(msg.MessageId) == f.ItemIdentifier }) {
				// Lambda's rule: an unknown or empty identifier fails the
				// whole batch.
				m.stack.cfg.Log.Warn("batch response names an unknown message: the whole batch failed", "mapping", m.logical, "identifier", f.ItemIdentifier)
				return
			}
			failed[f.ItemIdentifier] = true
		}
	}
	// One DeleteMessage each: the execution role's permission
	// (SQSPollerPolicy on its own queue) is sqs:DeleteMessage, which AWS
	// checks for a batch too and moto does not.
	for _, msg := range msgs {
		if failed[aws.ToString(msg.MessageId)] {
			continue
		}
		if _, err := m.client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(m.queueURL), ReceiptHandle: msg.ReceiptHandle}); err != nil {
			m.stack.cfg.Log.Error("delete a settled message failed", "mapping", m.logical, "message", aws.ToString(msg.MessageId), "error", err)
		}
	}
}

func newID() string {
	return physicalName("", "", 14, true)[2:]
}

// guard applies Lambda's recursive-loop guard to a batch, as AWS documents
// it: Lambda counts a function's invocations in a chain of requests in the
// X-Ray trace header's Lineage (the messages' AWSTraceHeader), and unless
// the function's RecursiveLoop is Allow, a message whose chain already
// invoked it localsqs.MaxChainInvocations times does not invoke it again:
// Lambda sends it to the queue's dead-letter queue (or drops it, without
// one) and notifies. It returns the messages to deliver and the trace
// header of their invocation: the deepest chain's (so a loop is never
// counted short), with this invocation counted.
func (m *sqsMapping) guard(ctx context.Context, msgs []sqstypes.Message) ([]sqstypes.Message, string) {
	key := localsqs.FunctionKey(m.fn.Name)
	kept := msgs[:0:0]
	var invocation localsqs.Lineage
	deepest := -1
	for _, msg := range msgs {
		l, ok := localsqs.ParseTraceHeader(msg.Attributes[attrTraceHeader])
		if !ok {
			l = localsqs.Lineage{Trace: localsqs.NewTraceRoot(time.Now())}
		}
		if m.recursiveLoop != localsqs.RecursiveLoopAllow && l.Counts[key] >= localsqs.MaxChainInvocations {
			m.stopLoop(ctx, msg, l.Counts[key])
			continue
		}
		kept = append(kept, msg)
		if l.Counts[key] > deepest {
			invocation, deepest = l, l.Counts[key]
		}
	}
	if len(kept) == 0 {
		return nil, ""
	}
	invocation = invocation.Invoked(key)
	m.fn.noteChain(invocation.Counts[key])
	return kept, invocation.TraceHeader()
}

// stopLoop moves a message the guard stopped to the dead-letter queue,
// with its body, attributes and trace header, and deletes it from the
// source queue; if the move fails, the message stays (it comes back after
// its visibility timeout and is stopped again).
func (m *sqsMapping) stopLoop(ctx context.Context, msg sqstypes.Message, invocations int) {
	log := m.stack.cfg.Log.With("mapping", m.logical, "function", m.fn.Logical, "message", aws.ToString(msg.MessageId),
		"trace", msg.Attributes[attrTraceHeader], "invocations", invocations)
	log.Error("recursive loop detected: the function is not invoked and the message goes to the dead-letter queue (RecursiveLoop is Terminate)",
		"dead_letter_queue", m.deadLetterURL)
	if m.deadLetterURL != "" {
		in := &sqs.SendMessageInput{QueueUrl: aws.String(m.deadLetterURL), MessageBody: msg.Body,
			MessageAttributes: msg.MessageAttributes}
		if h := msg.Attributes[attrTraceHeader]; h != "" {
			in.MessageSystemAttributes = map[string]sqstypes.MessageSystemAttributeValue{
				attrTraceHeader: {DataType: aws.String("String"), StringValue: aws.String(h)}}
		}
		if _, err := m.admin.SendMessage(ctx, in); err != nil {
			log.Error("recursive loop detected: moving the message to the dead-letter queue failed: it returns after its visibility timeout", "error", err)
			return
		}
	}
	if _, err := m.client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(m.queueURL), ReceiptHandle: msg.ReceiptHandle}); err != nil {
		log.Error("recursive loop detected: deleting the stopped message failed", "error", err)
	}
}

// queueURLOfARN is the URL of the stack's queue with that ARN ("" if none).
func (s *Stack) queueURLOfARN(arn string) string {
	for _, p := range s.res.created {
		if p.attrs["Arn"] == arn && p.attrs["QueueUrl"] != "" {
			return p.attrs["QueueUrl"]
		}
	}
	return ""
}
