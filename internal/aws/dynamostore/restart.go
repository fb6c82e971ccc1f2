package dynamostore

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// The local runtime (mediagen serve) can keep its records in DynamoDB. When
// it restarts it lists the work it left in flight, with Scans: the methods
// here are not part of store.Store, which the Lambda functions use, and no
// function's code reaches them (deploy's TestNoLambdaScansATable).

// ProcessingGenerations scans for generations still processing, oldest
// first, so that a restarted local runtime (serve --dynamodb) can resume
// polling them. Only the local runtime uses it; production polls through
// the queue.
func (s *Store) ProcessingGenerations(ctx context.Context, limit int) ([]domain.Generation, error) {
	listed, err := scanProcessing(ctx, s, s.tables.Generations, "generations", limit,
		decoder("generation", generationItem.stored),
		func(l stored[domain.Generation]) time.Time { return l.rec.CreatedAt })
	if err != nil {
		return nil, err
	}
	return s.inputs().joinAll(ctx, s, listed)
}

// ProcessingLongVideos scans for videos still processing, oldest first, so
// that a restarted local runtime can run their workflows again. Only the
// local runtime uses it; Step Functions keeps its own executions.
func (s *Store) ProcessingLongVideos(ctx context.Context, limit int) ([]domain.LongVideo, error) {
	listed, err := scanProcessing(ctx, s, s.tables.LongVideos, "long videos", limit,
		decoder("long video", longVideoItem.stored),
		func(l stored[domain.LongVideo]) time.Time { return l.rec.CreatedAt })
	if err != nil {
		return nil, err
	}
	return s.texts().joinAll(ctx, s, listed)
}

// scanProcessing scans table for the records still processing until it has
// limit of them or the table ends, and returns the oldest limit.
func scanProcessing[T any](ctx context.Context, s *Store, table, what string, limit int,
	decode func(map[string]types.AttributeValue) (T, error), createdAt func(T) time.Time) ([]T, error) {
	p := dynamodb.NewScanPaginator(s.db, &dynamodb.ScanInput{
		TableName:                 aws.String(table),
		FilterExpression:          aws.String("#s = :p"),
		ExpressionAttributeNames:  map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": strAV(string(domain.StatusProcessing))},
		ConsistentRead:            aws.Bool(true),
	})
	var out []T
	for p.HasMorePages() && len(out) < limit {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("scan processing %s: %w", what, err)
		}
		for _, raw := range page.Items {
			rec, err := decode(raw)
			if err != nil {
				return nil, err
			}
			out = append(out, rec)
		}
	}
	sort.Slice(out, func(i, j int) bool { return createdAt(out[i]).Before(createdAt(out[j])) })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}
