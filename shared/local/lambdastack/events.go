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
			ev := map[string]any{"version": "0", "id": newID(), "detail-type": "Scheduled Event", "source": "aws.events",
				"account": AccountID, "time": now.UTC().Format(time.RFC3339), "region": Region,
				"resources": []string{fmt.Sprintf("arn:aws:events:%s:%s:rule/%s", Region, AccountID, rule)}, "detail": map[string]any{}}
			if err := invokeJSON(ctx, fn, ev, nil); err != nil {
				s.cfg.Log.Error("scheduled invocation failed", "rule", rule, "function", fn.Logical, "error", err)
			}
		}
	}
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
	for name, p := range s.res.created {
		if p.attrs["Arn"] == arn && p.attrs["QueueUrl"] != "" {
			m.queueURL = p.attrs["QueueUrl"]
			_ = name
		}
	}
	if m.queueURL == "" {
		return nil, fmt.Errorf("%s: event source %s is not a queue of the stack (only SQS mappings are modelled)", logical, arn)
	}
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
	ev := events.SQSEvent{}
	for _, msg := range msgs {
		rec := events.SQSMessage{MessageId: aws.ToString(msg.MessageId), ReceiptHandle: aws.ToString(msg.ReceiptHandle),
			Body: aws.ToString(msg.Body), Md5OfBody: aws.ToString(msg.MD5OfBody), Attributes: msg.Attributes,
			EventSource: "aws:sqs", EventSourceARN: m.queueARN, AWSRegion: Region, MessageAttributes: map[string]events.SQSMessageAttribute{}}
		for k, a := range msg.MessageAttributes {
			rec.MessageAttributes[k] = events.SQSMessageAttribute{StringValue: a.StringValue, BinaryValue: a.BinaryValue,
				DataType: aws.ToString(a.DataType), StringListValues: a.StringListValues, BinaryListValues: a.BinaryListValues}
		}
		ev.Records = append(ev.Records, rec)
	}
	var resp events.SQSEventResponse
	err := invokeJSON(ctx, m.fn, ev, &resp)
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
