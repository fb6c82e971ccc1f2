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

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/store"
)

// generationsSeq is the prefix of each account's generation counter:
// "generations#<user_id>".
const generationsSeq = "generations#"

// A generation's input never changes, but DynamoDB bills each write of an
// item by the whole item's size: a long prompt kept in the record would be
// billed again by every write of it (the upstream run, the poll's claim,
// the outcome). So an input that would take the record past one write
// unit is kept in an item of its own, written once, before the record,
// which then says so (input_apart). That item has no index key, so no
// index lists it, and no status, so the restart's scan skips it.
const (
	// inputApartSuffix makes the key of a generation's input item,
	// "<uuid>#input"; no generation's uuid has a '#'.
	inputApartSuffix = "#input"
	// writeUnitBytes is the item size one write unit covers.
	writeUnitBytes = 1024
	// recordGrowth is about what a generation's item gains after it is
	// made: the upstream run (tens of bytes, a few hundred with fal's
	// URLs), the poll chain's claim and the output URLs; 271 bytes for a
	// simulator image.
	recordGrowth = 400
)

type generationItem struct {
	UUID         string `dynamodbav:"uuid"`
	ID           int64  `dynamodbav:"id"`
	UserID       string `dynamodbav:"user_id"`
	UpstreamID   string `dynamodbav:"upstream_id,omitempty"`
	Model        string `dynamodbav:"model"`
	ModelVersion string `dynamodbav:"model_version"`
	Kind         string `dynamodbav:"kind"`
	Input        string `dynamodbav:"input,omitempty"`
	// InputApart: the input is in the item inputApartSuffix keys.
	InputApart bool `dynamodbav:"input_apart,omitempty"`
	// InputObject: the bucket key of the whole input, of which the record
	// keeps the elided form (domain.Generation.InputObject).
	InputObject string                `dynamodbav:"input_object,omitempty"`
	ImageCount  int                   `dynamodbav:"image_count"`
	OutputURLs  []string              `dynamodbav:"output_urls"`
	Status      string                `dynamodbav:"status"`
	Error       string                `dynamodbav:"error,omitempty"`
	CreditsUsed attributevalue.Number `dynamodbav:"credits_used"`
	recordTimes
	// Upstream, UpstreamModel and UpstreamJobs (JSON) say where it runs.
	Upstream      string `dynamodbav:"upstream,omitempty"`
	UpstreamModel string `dynamodbav:"upstream_model,omitempty"`
	UpstreamJobs  string `dynamodbav:"upstream_jobs,omitempty"`
	// Progress is the provider's own figure (domain.Generation.Progress).
	Progress int `dynamodbav:"progress,omitempty"`
	// CancelAt is the caller's deadline (domain.Generation.CancelAt).
	CancelAt string `dynamodbav:"cancel_at,omitempty"`
	webhookFields
	filesFields
}

func (it generationItem) generation() (domain.Generation, error) {
	g := domain.Generation{
		ID: it.ID, UUID: it.UUID, UserID: it.UserID, UpstreamID: it.UpstreamID, Model: it.Model,
		ModelVersion: it.ModelVersion, Kind: domain.MediaKind(it.Kind), InputObject: it.InputObject,
		ImageCount: it.ImageCount, OutputURLs: it.OutputURLs, Status: domain.Status(it.Status), Error: it.Error,
		Webhook: it.webhook(), Upstream: it.Upstream, UpstreamModel: it.UpstreamModel, Progress: it.Progress,
	}
	if it.Input != "" {
		g.Input = json.RawMessage(it.Input)
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
	if it.CancelAt != "" {
		if g.CancelAt, err = parseTime(it.CancelAt); err != nil {
			return domain.Generation{}, fmt.Errorf("generation %s: cancel_at: %w", it.UUID, err)
		}
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
	it := generationItem{
		UUID: g.UUID, ID: id, UserID: g.UserID, UpstreamID: g.UpstreamID, Model: g.Model,
		ModelVersion: g.ModelVersion, Kind: string(g.Kind), Input: string(g.Input), InputObject: g.InputObject, ImageCount: g.ImageCount,
		OutputURLs: urls, Status: string(g.Status), Error: g.Error, CreditsUsed: num(g.CreditsUsed),
		recordTimes: recordTimesOf(g.CreatedAt, g.UpdatedAt, g.Deadline), webhookFields: webhookFieldsOf(g.Webhook),
	}
	if !g.CancelAt.IsZero() {
		it.CancelAt = formatTime(g.CancelAt)
	}
	if err := s.keepInputApart(ctx, &it); err != nil {
		return fmt.Errorf("create generation %s: %w", g.UUID, err)
	}
	if err := s.putNew(ctx, s.tables.Generations, "uuid", it, "create generation "+g.UUID); err != nil {
		return err
	}
	g.ID = id
	return nil
}

// keepInputApart writes the input to its own item, and takes it out of
// the record, when the record would otherwise outgrow one write unit by
// the time it is complete. The write is not conditional: the creator
// makes a new uuid for each request, so the item is this generation's
// input, written again at most by a retry of the same create.
func (s *Store) keepInputApart(ctx context.Context, it *generationItem) error {
	av, err := attributevalue.MarshalMap(*it)
	if err != nil {
		return err
	}
	if ItemSize(av)+recordGrowth <= writeUnitBytes {
		return nil
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.tables.Generations),
		Item: map[string]types.AttributeValue{"uuid": strAV(it.UUID + inputApartSuffix), "input": strAV(it.Input)}})
	if err != nil {
		return fmt.Errorf("write the input: %w", err)
	}
	it.Input, it.InputApart = "", true
	return nil
}

func (it generationItem) stored() (stored[domain.Generation], error) {
	g, err := it.generation()
	return stored[domain.Generation]{rec: g, apart: it.InputApart}, err
}

// inputs is how a generation's input is kept apart (keepInputApart).
func (s *Store) inputs() keptApart[domain.Generation] {
	return keptApart[domain.Generation]{noun: "generation", part: "input", table: s.tables.Generations, key: "uuid",
		suffix: inputApartSuffix, id: func(g domain.Generation) string { return g.UUID },
		join: func(g domain.Generation, raw map[string]types.AttributeValue) (domain.Generation, error) {
			g.Input = json.RawMessage(stringAttr(raw, "input"))
			return g, nil
		}}
}

func (s *Store) GetGeneration(ctx context.Context, uuid string) (domain.Generation, error) {
	return s.inputs().get(ctx, s, uuid, decoder("generation "+uuid, generationItem.stored))
}

func (s *Store) GetGenerationByID(ctx context.Context, userID string, id int64) (domain.Generation, error) {
	out, err := s.db.Query(ctx, &dynamodb.QueryInput{
		TableName: aws.String(s.tables.Generations), IndexName: aws.String(indexUserGenerationID),
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

func (s *Store) SetGenerationProgress(ctx context.Context, uuid string, progress int) error {
	progress = min(max(progress, 0), 100)
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(s.tables.Generations),
		Key:                      key("uuid", uuid),
		UpdateExpression:         aws.String("SET progress = :p"),
		ConditionExpression:      aws.String("#s = :processing AND (attribute_not_exists(progress) OR progress < :p)"),
		ExpressionAttributeNames: map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":p": &types.AttributeValueMemberN{Value: strconv.Itoa(progress)}, ":processing": strAV(string(domain.StatusProcessing)),
		},
	})
	if err == nil {
		return nil
	}
	if !isConditionFailed(err) {
		return fmt.Errorf("set progress of %s: %w", uuid, err)
	}
	_, err = s.GetGeneration(ctx, uuid) // missing: ErrNotFound; else unchanged on purpose
	return err
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
	return s.updateOutcome(ctx, s.tables.Generations, "uuid", uuid, o.Status, set, values)
}

func (s *Store) ListGenerations(ctx context.Context, q store.ListQuery) (store.Page[domain.Generation], error) {
	page, err := queryPage(ctx, s, s.tables.Generations, "uuid", q, decoder("generation", generationItem.stored),
		func(l stored[domain.Generation]) bool {
			return q.Matches(l.rec.Status, l.rec.Model, l.rec.ModelVersion)
		},
		func(l stored[domain.Generation]) store.Cursor {
			return store.Cursor{CreatedAt: l.rec.CreatedAt, ID: l.rec.UUID}
		})
	if err != nil {
		return store.Page[domain.Generation]{}, err
	}
	// The list shows no input: one kept apart is not read, and one in its
	// record is left out too, so that no item carries one.
	items := make([]domain.Generation, len(page.Items))
	for i, l := range page.Items {
		items[i] = l.rec
		items[i].Input = nil
	}
	return store.Page[domain.Generation]{Items: items, Next: page.Next}, nil
}
