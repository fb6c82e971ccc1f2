// Package sqsbatch adapts a use case's batch handler to Lambda's SQS event
// source: the event's records in, the messages to deliver again out as
// partial batch item failures (the event source mapping's
// ReportBatchItemFailures).
package sqsbatch

import (
	"context"

	"github.com/aws/aws-lambda-go/events"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// BatchHandler works on a batch and returns the ids of the messages to
// deliver again.
type batchHandler func(ctx context.Context, batch []domain.QueueMessage) (retry []string)

// Handler is an SQS-triggered Lambda's handler running h.
func Handler(h batchHandler) func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		batch := make([]domain.QueueMessage, len(ev.Records))
		for i, rec := range ev.Records {
			batch[i] = domain.QueueMessage{ID: rec.MessageId, Body: rec.Body}
		}
		var resp events.SQSEventResponse
		for _, id := range h(ctx, batch) {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: id})
		}
		return resp, nil
	}
}
