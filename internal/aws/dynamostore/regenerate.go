package dynamostore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// regenerateItem is a video's running regenerate of a scene
// (domain.Regeneration). It holds one scene's texts (at most a few KB),
// written a few times while it runs, so it stays in the record.
type regenerateItem struct {
	SceneNumber int                   `dynamodbav:"scene_number"`
	Revision    int                   `dynamodbav:"revision"`
	Prompt      string                `dynamodbav:"prompt"`
	Narration   string                `dynamodbav:"narration,omitempty"`
	Model       string                `dynamodbav:"model"`
	CreditsHeld attributevalue.Number `dynamodbav:"credits_held"`
	StartedAt   string                `dynamodbav:"started_at"`
	State       sceneStateItem        `dynamodbav:"state"`
}

func (r regenerateItem) regeneration() (domain.Regeneration, error) {
	held, err := dec(r.CreditsHeld)
	if err != nil {
		return domain.Regeneration{}, err
	}
	started, err := parseTime(r.StartedAt)
	if err != nil {
		return domain.Regeneration{}, err
	}
	return domain.Regeneration{SceneNumber: r.SceneNumber, Revision: r.Revision, Prompt: r.Prompt, Narration: r.Narration,
		Model: r.Model, CreditsHeld: held, StartedAt: started, State: r.State.state()}, nil
}

// Reserved words among the names these updates use go through placeholders.
var regenerateNames = map[string]string{"#s": "status", "#rg": "regenerate", "#rv": "revision", "#st": "state", "#lr": "last_regenerate"}

// running is the condition that the regenerate of :rev runs.
const running = "#rg.#rv = :rev"

func (s *Store) BeginRegenerate(ctx context.Context, id string, r domain.Regeneration, at time.Time) error {
	what := "regenerate long video " + id
	if err := domain.CheckCredits(r.CreditsHeld); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	av, err := attributevalue.Marshal(regenerateItem{SceneNumber: r.SceneNumber, Revision: r.Revision, Prompt: r.Prompt,
		Narration: r.Narration, Model: r.Model, CreditsHeld: num(r.CreditsHeld), StartedAt: formatTime(r.StartedAt),
		State: sceneStateItemOf(r.State)})
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	// The revision is the next after any the video was at or a regenerate
	// began (domain.LongVideo.NextRevision): the latest begun, else the
	// video's own (a record stored before revisions has none, and is at
	// revision 1). A regenerate that ended completed leaves both equal.
	atRevision := "(#lr = :prev OR (attribute_not_exists(#lr) AND #rv = :prev))"
	if r.Revision-1 == 1 {
		atRevision = "(attribute_not_exists(#lr) AND (#rv = :prev OR attribute_not_exists(#rv)))"
	}
	return s.updateLongVideoWhere(ctx, what, id, "SET #rg = :r, #lr = :rev, updated_at = :at",
		"#s = :completed AND attribute_not_exists(#rg) AND attribute_not_exists(data_removal) AND "+atRevision, map[string]types.AttributeValue{
			":r": av, ":at": strAV(formatTime(at)), ":completed": strAV(string(domain.StatusCompleted)),
			":prev": &types.AttributeValueMemberN{Value: strconv.Itoa(r.Revision - 1)}, ":rev": revAV(r.Revision),
		})
}

func (s *Store) SetRegenerateState(ctx context.Context, id string, revision int, state domain.SceneState, at time.Time) error {
	av, err := attributevalue.Marshal(sceneStateItemOf(state))
	if err != nil {
		return fmt.Errorf("regenerate r%d of long video %s: %w", revision, id, err)
	}
	return s.updateLongVideoWhere(ctx, fmt.Sprintf("regenerate r%d of long video %s", revision, id), id,
		"SET #rg.#st = :state, updated_at = :at", running, map[string]types.AttributeValue{
			":state": av, ":at": strAV(formatTime(at)), ":rev": revAV(revision),
		})
}

func revAV(revision int) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.Itoa(revision)}
}

func (s *Store) EndRegenerate(ctx context.Context, id string, revision int, o domain.Outcome, at time.Time) error {
	what := fmt.Sprintf("end regenerate r%d of long video %s", revision, id)
	values := map[string]types.AttributeValue{":at": strAV(formatTime(at)), ":rev": revAV(revision)}
	if o.Status != domain.StatusCompleted {
		return s.updateLongVideoWhere(ctx, what, id, "REMOVE #rg SET updated_at = :at", running, values)
	}
	l, err := getItem(ctx, s, s.tables.LongVideos, "id", id, "long video "+id, decoder("long video "+id, longVideoItem.stored))
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	r := l.rec.Regenerating
	if r == nil || r.Revision != revision {
		return fmt.Errorf("%s: it is not running: %w", what, domain.ErrConflict)
	}
	i := slices.IndexFunc(l.rec.Scenes, func(sc domain.Scene) bool { return sc.SceneNumber == r.SceneNumber })
	if i < 0 {
		return fmt.Errorf("%s: the video has no scene %d", what, r.SceneNumber)
	}
	set := "REMOVE #rg SET #rv = :rev, scene_status.#n = :scene, total_duration = :dur, updated_at = :at"
	if values[":scene"], err = attributevalue.Marshal(sceneStateItemOf(r.Made())); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	sceneName := []string{"#n", strconv.Itoa(r.SceneNumber)}
	values[":dur"] = &types.AttributeValueMemberN{Value: strconv.FormatFloat(o.TotalDuration, 'f', -1, 64)}
	if len(o.OutputURLs) > 0 {
		set += ", final_video_url = :url"
		values[":url"] = strAV(o.OutputURLs[0])
	}
	set = setOutputExpiry(set, values, o)
	texts, textValues := sceneTextsUpdate(i, *r)
	if !l.apart {
		for k, v := range textValues {
			values[k] = v
		}
		return s.updateLongVideoWhere(ctx, what, id, set+texts, running, values, sceneName...)
	}
	// The texts are in their own item: both change in one transaction, so
	// the scene's texts change only with the revision that made them.
	err = s.transact(ctx,
		types.TransactWriteItem{Update: &types.Update{TableName: aws.String(s.tables.LongVideos), Key: key("id", id),
			UpdateExpression: aws.String(set), ConditionExpression: aws.String(running),
			ExpressionAttributeNames: namesUsed(set+running, sceneName...), ExpressionAttributeValues: values}},
		types.TransactWriteItem{Update: &types.Update{TableName: aws.String(s.tables.LongVideos), Key: key("id", id+textsApartSuffix),
			UpdateExpression: aws.String("SET " + texts[len(", "):]), ExpressionAttributeValues: textValues}})
	if err == nil {
		return nil
	}
	if failed, _ := conditionFailed(cancelReasons(err), 0); failed {
		return fmt.Errorf("%s: it is not running: %w", what, domain.ErrConflict)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// sceneTextsUpdate sets the texts of the scene at index i to the
// regenerate's (", SET ..." to append to an update's SET clause, and its
// values; no narration is none).
func sceneTextsUpdate(i int, r domain.Regeneration) (string, map[string]types.AttributeValue) {
	at := "scenes[" + strconv.Itoa(i) + "]"
	values := map[string]types.AttributeValue{":prompt": strAV(r.Prompt)}
	set := ", " + at + ".prompt = :prompt"
	if r.Narration != "" {
		set += ", " + at + ".narration = :narration"
		values[":narration"] = strAV(r.Narration)
	}
	return set, values
}

// namesUsed is regenerateNames reduced to the placeholders expr uses, as
// DynamoDB refuses names an expression does not use.
// extra are placeholder/name pairs beyond them.
func namesUsed(expr string, extra ...string) map[string]string {
	names := map[string]string{}
	for i := 0; i+1 < len(extra); i += 2 {
		names[extra[i]] = extra[i+1]
	}
	for k, v := range regenerateNames {
		if containsName(expr, k) {
			names[k] = v
		}
	}
	return names
}

// containsName says whether expr uses the placeholder name (not as a
// prefix of a longer one).
func containsName(expr, name string) bool {
	for i := 0; i+len(name) <= len(expr); i++ {
		if expr[i:i+len(name)] != name {
			continue
		}
		end := i + len(name)
		if end == len(expr) || !isNameChar(expr[end]) {
			return true
		}
	}
	return false
}

func isNameChar(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// updateLongVideoWhere updates a long video where cond holds: ErrNotFound
// if it is missing, ErrConflict if cond does not hold.
func (s *Store) updateLongVideoWhere(ctx context.Context, what, id, update, cond string, values map[string]types.AttributeValue, extraNames ...string) error {
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.tables.LongVideos), Key: key("id", id),
		UpdateExpression: aws.String(update), ConditionExpression: aws.String("attribute_exists(id) AND " + cond),
		ExpressionAttributeNames: namesUsed(update+" "+cond, extraNames...), ExpressionAttributeValues: values,
	})
	if err == nil {
		return nil
	}
	if !isConditionFailed(err) {
		return fmt.Errorf("%s: %w", what, err)
	}
	if _, err := s.GetLongVideo(ctx, id); errors.Is(err, domain.ErrNotFound) {
		return fmt.Errorf("%s: %w", what, domain.ErrNotFound)
	}
	return fmt.Errorf("%s: the video is not completed, at another revision or regenerating another: %w", what, domain.ErrConflict)
}
