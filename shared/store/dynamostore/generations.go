package dynamostore

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mediagen-dev/mediagen/shared/domain"
	"github.com/mediagen-dev/mediagen/shared/store"
)

// generationsSeq is the prefix of each account's generation counter:
// "generations#<user_id>".
const generationsSeq = "generations#"

type generationItem struct {
	UUID         string                `dynamodbav:"uuid"`
	ID           int64                 `dynamodbav:"id"`
	UserID       string                `dynamodbav:"user_id"`
	UpstreamID   string                `dynamodbav:"upstream_id,omitempty"`
	Model        string                `dynamodbav:"model"`
	ModelVersion string                `dynamodbav:"model_version"`
	Kind         string                `dynamodbav:"kind"`
	Input        string                `dynamodbav:"input"`
	ImageCount   int                   `dynamodbav:"image_count"`
	OutputURLs   []string              `dynamodbav:"output_urls"`
	Status       string                `dynamodbav:"status"`
	Error        string                `dynamodbav:"error,omitempty"`
	CreditsUsed  attributevalue.Number `dynamodbav:"credits_used"`
	recordTimes
	// Upstream, UpstreamModel and UpstreamJobs (JSON) say where it runs.
	Upstream      string `dynamodbav:"upstream,omitempty"`
	UpstreamModel string `dynamodbav:"upstream_model,omitempty"`
	UpstreamJobs  string `dynamodbav:"upstream_jobs,omitempty"`
	webhookFields
	filesFields
}

func (it generationItem) generation() (domain.Generation, error) {
	g := domain.Generation{
		ID: it.ID, UUID: it.UUID, UserID: it.UserID, UpstreamID: it.UpstreamID, Model: it.Model,
		ModelVersion: it.ModelVersion, Kind: domain.MediaKind(it.Kind), Input: json.RawMessage(it.Input),
		ImageCount: it.ImageCount, OutputURLs: it.OutputURLs, Status: domain.Status(it.Status), Error: it.Error,
		Webhook: it.webhook(), Upstream: it.Upstream, UpstreamModel: it.UpstreamModel,
	}
	var err error
	if g.CreditsUsed, err = dec(it.CreditsUsed); err != nil {
		return domain.Generation{}, fmt.Errorf("generation %s: %w", it.UUID, err)
	}
	if it.UpstreamJobs != "" {
		if err := json.Unmarshal([]byte(it.UpstreamJobs), &g.UpstreamJobs); err != nil {
			return domain.Generation{}, fmt.Errorf("generation %s: upstream jobs: %w", it.UUID, err)
		}
	}
	if g.WebhookAttempts, err = it.attempts(); err != nil {
		return domain.Generation{}, fmt.Errorf("generation %s: %w", it.UUID, err)
	}
	if g.CreatedAt, g.UpdatedAt, g.Deadline, err = it.parse(); err != nil {
		return domain.Generation{}, fmt.Errorf("generation %s: %w", it.UUID, err)
	}
	if g.Files, err = it.files(); err != nil {
		return domain.Generation{}, fmt.Errorf("generation %s: %w", it.UUID, err)
	}
	return g, nil
}

// nextID takes the next value of a sequence. A value taken by a write that
// then fails is skipped, never reused.
func (s *Store) nextID(ctx context.Context, name string) (int64, error) {
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.tables.Counters),
		Key:                       key("name", name),
		UpdateExpression:          aws.String("ADD #v :one"),
		ExpressionAttributeNames:  map[string]string{"#v": "value"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}},
		ReturnValues:              types.ReturnValueUpdatedNew,
	})
	if err != nil {
		return 0, fmt.Errorf("next %s id: %w", name, err)
	}
	v, ok := out.Attributes["value"].(*types.AttributeValueMemberN)
	if !ok {
		return 0, fmt.Errorf("next %s id: counter has no number", name)
	}
	id, err := strconv.ParseInt(v.Value, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("next %s id: %w", name, err)
	}
	return id, nil
}

func (s *Store) CreateGeneration(ctx context.Context, g *domain.Generation) error {
	if err := domain.CheckCredits(g.CreditsUsed); err != nil {
		return fmt.Errorf("create generation %s: %w", g.UUID, err)
	}
	id, err := s.nextID(ctx, generationsSeq+g.UserID)
	if err != nil {
		return fmt.Errorf("create generation %s: %w", g.UUID, err)
	}
	urls := g.OutputURLs
	if urls == nil {
		urls = []string{}
	}
	err = s.putNew(ctx, s.tables.Generations, "uuid", generationItem{
		UUID: g.UUID, ID: id, UserID: g.UserID, UpstreamID: g.UpstreamID, Model: g.Model,
		ModelVersion: g.ModelVersion, Kind: string(g.Kind), Input: string(g.Input), ImageCount: g.ImageCount,
		OutputURLs: urls, Status: string(g.Status), Error: g.Error, CreditsUsed: num(g.CreditsUsed),
		recordTimes: recordTimesOf(g.CreatedAt, g.UpdatedAt, g.Deadline), webhookFields: webhookFieldsOf(g.Webhook),
	}, "create generation "+g.UUID)
	if err != nil {
		return err
	}
	g.ID = id
	return nil
}

func (s *Store) GetGeneration(ctx context.Context, uuid string) (domain.Generation, error) {
	what := "generation " + uuid
	return getItem(ctx, s, s.tables.Generations, "uuid", uuid, what, decoder(what, generationItem.generation))
}

func (s *Store) GetGenerationByID(ctx context.Context, userID string, id int64) (domain.Generation, error) {
	out, err := s.db.Query(ctx, &dynamodb.QueryInput{
		TableName: aws.String(s.tables.Generations), IndexName: aws.String(IndexUserGenerationID),
		KeyConditionExpression: aws.String("user_id = :u AND id = :id"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":u": strAV(userID), ":id": &types.AttributeValueMemberN{Value: strconv.FormatInt(id, 10)}},
	})
	if err != nil {
		return domain.Generation{}, fmt.Errorf("find generation %d: %w", id, err)
	}
	if len(out.Items) == 0 {
		return domain.Generation{}, fmt.Errorf("generation %d: %w", id, domain.ErrNotFound)
	}
	u, ok := out.Items[0]["uuid"].(*types.AttributeValueMemberS)
	if !ok {
		return domain.Generation{}, fmt.Errorf("generation %d: index entry has no uuid", id)
	}
	return s.GetGeneration(ctx, u.Value)
}

func (s *Store) SetUpstreamJobs(ctx context.Context, uuid string, run domain.UpstreamRun, at time.Time) error {
	first, jobs, err := store.UpstreamJobsOf(run)
	if err != nil {
		return fmt.Errorf("set upstream jobs of %s: %w", uuid, err)
	}
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(s.tables.Generations),
		Key:                      key("uuid", uuid),
		UpdateExpression:         aws.String("SET upstream_id = :up, upstream = :name, upstream_model = :model, upstream_jobs = :jobs, updated_at = :at"),
		ConditionExpression:      aws.String("#s = :processing AND (attribute_not_exists(upstream_id) OR upstream_id = :up)"),
		ExpressionAttributeNames: map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":up": strAV(first), ":name": strAV(run.Upstream), ":model": strAV(run.Model), ":jobs": strAV(string(jobs)),
			":at": strAV(formatTime(at)), ":processing": strAV(string(domain.StatusProcessing)),
		},
	})
	if err == nil {
		return nil
	}
	if !isConditionFailed(err) {
		return fmt.Errorf("set upstream jobs of %s: %w", uuid, err)
	}
	g, err := s.GetGeneration(ctx, uuid)
	if err != nil {
		return err
	}
	return fmt.Errorf("set upstream jobs of %s: status %s, job %q: %w", uuid, g.Status, g.UpstreamID, domain.ErrConflict)
}

func (s *Store) FinishGeneration(ctx context.Context, uuid string, o domain.Outcome, at time.Time) error {
	urls := make([]types.AttributeValue, 0, len(o.OutputURLs))
	for _, u := range o.OutputURLs {
		urls = append(urls, strAV(u))
	}
	set := "SET #s = :status, output_urls = :urls, updated_at = :at"
	values := map[string]types.AttributeValue{
		":status": strAV(string(o.Status)), ":urls": &types.AttributeValueMemberL{Value: urls},
		":at": strAV(formatTime(at)),
	}
	if o.Error != "" {
		set += ", #e = :err"
		values[":err"] = strAV(o.Error)
	}
	set = setOutputExpiry(set, values, o)
	return s.updateProcessing(ctx, s.tables.Generations, "uuid", uuid, set, values)
}

func (s *Store) ListGenerations(ctx context.Context, q store.ListQuery) (store.Page[domain.Generation], error) {
	return queryPage(ctx, s, s.tables.Generations, "uuid", []string{"model", "model_version"}, q,
		decoder("generation", generationItem.generation),
		func(g domain.Generation) store.Cursor { return store.Cursor{CreatedAt: g.CreatedAt, ID: g.UUID} })
}
