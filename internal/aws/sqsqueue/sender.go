// Package sqsqueue sends messages to the work queue that drives polling.
package sqsqueue

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/mediagen-dev/mediagen/internal/core/generation"
	"github.com/mediagen-dev/mediagen/internal/core/longform"
	"github.com/mediagen-dev/mediagen/internal/core/webhook"
)

// The SQS sender is the poll queue and the webhook queue of the use cases.
var (
	_ generation.Queue = (*SQSSender)(nil)
	_ longform.Queue   = (*SQSSender)(nil)
	_ webhook.Queue    = (*SQSSender)(nil)
)

// MaxDelay is the longest delay SQS accepts on one message.
const maxDelay = 15 * time.Minute

// SQSAPI is the part of the SQS client the sender uses.
type sqsapi interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// SQSSender sends to one SQS queue.
type SQSSender struct {
	Client   sqsapi
	QueueURL string
}

// Send enqueues body to be delivered after delay (capped at MaxDelay).
func (s *SQSSender) Send(ctx context.Context, body []byte, delay time.Duration) error {
	if delay > maxDelay {
		delay = maxDelay
	}
	_, err := s.Client.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl:     aws.String(s.QueueURL),
		MessageBody:  aws.String(string(body)),
		DelaySeconds: int32((delay + time.Second - 1) / time.Second),
	})
	if err != nil {
		return fmt.Errorf("send to queue: %w", err)
	}
	return nil
}
