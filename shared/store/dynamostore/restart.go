package dynamostore

import (
	"context"
	"fmt"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mediagen-dev/mediagen/shared/domain"
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
	p := dynamodb.NewScanPaginator(s.db, &dynamodb.ScanInput{
		TableName:                 aws.String(s.tables.Generations),
		FilterExpression:          aws.String("#s = :p"),
		ExpressionAttributeNames:  map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": strAV(string(domain.StatusProcessing))},
		ConsistentRead:            aws.Bool(true),
	})
	var out []domain.Generation
	for p.HasMorePages() && len(out) < limit {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("scan processing generations: %w", err)
		}
		for _, raw := range page.Items {
			var it generationItem
			if err := attributevalue.UnmarshalMap(raw, &it); err != nil {
				return nil, fmt.Errorf("decode generation: %w", err)
			}
			g, err := it.generation()
			if err != nil {
				return nil, err
			}
			out = append(out, g)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// ProcessingLongVideos scans for videos still processing, oldest first, so
// that a restarted local runtime can run their workflows again. Only the
// local runtime uses it; Step Functions keeps its own executions.
func (s *Store) ProcessingLongVideos(ctx context.Context, limit int) ([]domain.LongVideo, error) {
	p := dynamodb.NewScanPaginator(s.db, &dynamodb.ScanInput{
		TableName:                 aws.String(s.tables.LongVideos),
		FilterExpression:          aws.String("#s = :p"),
		ExpressionAttributeNames:  map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": strAV(string(domain.StatusProcessing))},
		ConsistentRead:            aws.Bool(true),
	})
	var out []domain.LongVideo
	for p.HasMorePages() && len(out) < limit {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("scan processing long videos: %w", err)
		}
		for _, raw := range page.Items {
			var it longVideoItem
			if err := attributevalue.UnmarshalMap(raw, &it); err != nil {
				return nil, fmt.Errorf("decode long video: %w", err)
			}
			v, err := it.longVideo()
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.Before(out[j].CreatedAt) })
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}
