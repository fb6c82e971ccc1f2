package dynamostore

import (
	"context"
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

type sceneItem struct {
	SceneNumber int    `dynamodbav:"scene_number"`
	Prompt      string `dynamodbav:"prompt"`
	Narration   string `dynamodbav:"narration,omitempty"`
	Model       string `dynamodbav:"model,omitempty"`
}

// A long video's texts (its prompt, each scene's prompt and narration: up
// to 20 scenes of 2,000 characters each, about 138 KB) never change, but
// every write of its record (each scene's state, the heartbeats' polls,
// the outcome) is billed by the whole item's size. Texts of more than one
// write unit are kept in an item of their own, "<id>#texts", written once
// before the record, which keeps the scenes' numbers and says so
// (texts_apart): a scene update then writes a few KB at most (the record
// and the scenes' states), whatever the texts. Like a generation's input
// item it has no index key and no status, so no list and no restart scan
// sees it.
const textsApartSuffix = "#texts"

type longVideoTexts struct {
	ID     string      `dynamodbav:"id"`
	Prompt string      `dynamodbav:"prompt"`
	Scenes []sceneItem `dynamodbav:"scenes"`
}

// studioItem is a video's domain.Studio; an empty field is left out.
type studioItem struct {
	AspectRatio    string   `dynamodbav:"aspect_ratio,omitempty"`
	Captions       string   `dynamodbav:"captions,omitempty"`
	Transition     string   `dynamodbav:"transition,omitempty"`
	MusicURL       string   `dynamodbav:"music_url,omitempty"`
	MusicVolume    *float64 `dynamodbav:"music_volume,omitempty"`
	Voice          string   `dynamodbav:"voice,omitempty"`
	NarrationSpeed *float64 `dynamodbav:"narration_speed,omitempty"`
}

type longVideoItem struct {
	ID              string                `dynamodbav:"id"`
	UserID          string                `dynamodbav:"user_id"`
	Prompt          string                `dynamodbav:"prompt"`
	Model           string                `dynamodbav:"model"`
	LanguageCode    string                `dynamodbav:"language_code"`
	EnableNarration bool                  `dynamodbav:"enable_narration"`
	VideoStyle      string                `dynamodbav:"video_style,omitempty"`
	Studio          studioItem            `dynamodbav:"studio"`
	Scenes          []sceneItem           `dynamodbav:"scenes"`
	Status          string                `dynamodbav:"status"`
	FinalVideoURL   string                `dynamodbav:"final_video_url,omitempty"`
	TotalDuration   float64               `dynamodbav:"total_duration"`
	Error           string                `dynamodbav:"error,omitempty"`
	CreditsHeld     attributevalue.Number `dynamodbav:"credits_held"`
	recordTimes
	// SceneStatus maps scene numbers to states; created empty so that
	// SetSceneStatus can set one entry.
	SceneStatus map[string]sceneStateItem `dynamodbav:"scene_status"`
	// TextsApart: the prompt and the scenes' texts are in the item
	// textsApartSuffix keys; Scenes keeps their numbers.
	TextsApart bool `dynamodbav:"texts_apart,omitempty"`
	// Revision is the video's render count (absent: 1, a record stored
	// before revisions); Regenerate its running regenerate of a scene.
	Revision   int             `dynamodbav:"revision,omitempty"`
	Regenerate *regenerateItem `dynamodbav:"regenerate,omitempty"`
	// LastRegenerate is the revision the latest regenerate begun was to
	// make (absent: none began).
	LastRegenerate int `dynamodbav:"last_regenerate,omitempty"`
	webhookFields
	filesFields
}

func (s *Store) CreateLongVideo(ctx context.Context, v domain.LongVideo) error {
	if err := domain.CheckCredits(v.CreditsHeld); err != nil {
		return fmt.Errorf("create long video %s: %w", v.ID, err)
	}
	scenes := make([]sceneItem, len(v.Scenes))
	for i, sc := range v.Scenes {
		scenes[i] = sceneItem(sc)
	}
	it := longVideoItem{
		ID: v.ID, UserID: v.UserID, Prompt: v.Prompt, Model: v.Model, LanguageCode: v.LanguageCode,
		EnableNarration: v.EnableNarration, VideoStyle: v.VideoStyle, Studio: studioItem(v.Studio), Scenes: scenes, Status: string(v.Status),
		FinalVideoURL: v.FinalVideoURL, TotalDuration: v.TotalDuration, Error: v.Error, CreditsHeld: num(v.CreditsHeld),
		recordTimes: recordTimesOf(v.CreatedAt, v.UpdatedAt, v.Deadline),
		SceneStatus: map[string]sceneStateItem{}, webhookFields: webhookFieldsOf(v.Webhook), Revision: max(v.Revision, 1),
	}
	if err := s.keepTextsApart(ctx, &it); err != nil {
		return fmt.Errorf("create long video %s: %w", v.ID, err)
	}
	return s.putNew(ctx, s.tables.LongVideos, "id", it, "create long video "+v.ID)
}

// keepTextsApart writes the video's texts to their own item, and takes
// them out of the record, when they are more than one write unit. The
// write is not conditional: the creator makes a new id for each request,
// so the item is this video's, written again at most by a retry of the
// same create.
func (s *Store) keepTextsApart(ctx context.Context, it *longVideoItem) error {
	texts, err := attributevalue.MarshalMap(longVideoTexts{ID: it.ID + textsApartSuffix, Prompt: it.Prompt, Scenes: it.Scenes})
	if err != nil {
		return err
	}
	if ItemSize(texts) <= writeUnitBytes {
		return nil
	}
	if _, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.tables.LongVideos), Item: texts}); err != nil {
		return fmt.Errorf("write the texts: %w", err)
	}
	numbers := make([]sceneItem, len(it.Scenes))
	for i, sc := range it.Scenes {
		numbers[i] = sceneItem{SceneNumber: sc.SceneNumber}
	}
	it.Prompt, it.Scenes, it.TextsApart = "", numbers, true
	return nil
}

func (it longVideoItem) stored() (stored[domain.LongVideo], error) {
	v, err := it.longVideo()
	return stored[domain.LongVideo]{rec: v, apart: it.TextsApart}, err
}

// texts is how a video's texts are kept apart (keepTextsApart).
func (s *Store) texts() keptApart[domain.LongVideo] {
	return keptApart[domain.LongVideo]{noun: "long video", part: "texts", table: s.tables.LongVideos, key: "id",
		suffix: textsApartSuffix, id: func(v domain.LongVideo) string { return v.ID },
		join: func(v domain.LongVideo, raw map[string]types.AttributeValue) (domain.LongVideo, error) {
			var t longVideoTexts
			if err := attributevalue.UnmarshalMap(raw, &t); err != nil {
				return domain.LongVideo{}, fmt.Errorf("decode long video %s texts: %w", v.ID, err)
			}
			v.Prompt = t.Prompt
			v.Scenes = make([]domain.Scene, len(t.Scenes))
			for i, sc := range t.Scenes {
				v.Scenes[i] = domain.Scene(sc)
			}
			return v, nil
		}}
}

func (s *Store) GetLongVideo(ctx context.Context, id string) (domain.LongVideo, error) {
	return s.texts().get(ctx, s, id, decoder("long video "+id, longVideoItem.stored))
}

func (it longVideoItem) longVideo() (domain.LongVideo, error) {
	v := domain.LongVideo{
		ID: it.ID, UserID: it.UserID, Prompt: it.Prompt, Model: it.Model, LanguageCode: it.LanguageCode,
		EnableNarration: it.EnableNarration, VideoStyle: it.VideoStyle, Studio: domain.Studio(it.Studio),
		Status: domain.Status(it.Status), FinalVideoURL: it.FinalVideoURL, TotalDuration: it.TotalDuration,
		Error: it.Error, Webhook: it.webhook(), Revision: max(it.Revision, 1), LastRegenerate: it.LastRegenerate,
	}
	for n, st := range it.SceneStatus {
		scene, err := strconv.Atoi(n)
		if err != nil {
			return domain.LongVideo{}, fmt.Errorf("long video %s: scene status key %q", it.ID, n)
		}
		if v.SceneStatus == nil {
			v.SceneStatus = map[int]domain.SceneState{}
		}
		v.SceneStatus[scene] = st.state()
	}
	for _, sc := range it.Scenes {
		v.Scenes = append(v.Scenes, domain.Scene(sc))
	}
	var err error
	if v.CreditsHeld, err = dec(it.CreditsHeld); err != nil {
		return domain.LongVideo{}, fmt.Errorf("long video %s: %w", it.ID, err)
	}
	if v.WebhookAttempts, err = it.attempts(); err != nil {
		return domain.LongVideo{}, fmt.Errorf("long video %s: %w", it.ID, err)
	}
	if v.CreatedAt, v.UpdatedAt, v.Deadline, err = it.parse(); err != nil {
		return domain.LongVideo{}, fmt.Errorf("long video %s: %w", it.ID, err)
	}
	if v.Files, err = it.files(); err != nil {
		return domain.LongVideo{}, fmt.Errorf("long video %s: %w", it.ID, err)
	}
	if it.Regenerate != nil {
		r, err := it.Regenerate.regeneration()
		if err != nil {
			return domain.LongVideo{}, fmt.Errorf("long video %s: its regenerate: %w", it.ID, err)
		}
		v.Regenerating = &r
	}
	return v, nil
}

func (s *Store) FinishLongVideo(ctx context.Context, id string, o domain.Outcome, at time.Time) error {
	set := "SET #s = :status, total_duration = :dur, updated_at = :at"
	values := map[string]types.AttributeValue{
		":status": strAV(string(o.Status)), ":at": strAV(formatTime(at)),
		":dur": &types.AttributeValueMemberN{Value: strconv.FormatFloat(o.TotalDuration, 'f', -1, 64)},
	}
	if len(o.OutputURLs) > 0 {
		set += ", final_video_url = :url"
		values[":url"] = strAV(o.OutputURLs[0])
	}
	if o.Error != "" {
		set += ", #e = :err"
		values[":err"] = strAV(o.Error)
	}
	set = setOutputExpiry(set, values, o)
	return s.updateOutcome(ctx, s.tables.LongVideos, "id", id, o.Status, set, values)
}

func (s *Store) ListLongVideos(ctx context.Context, q store.ListQuery) (store.Page[domain.LongVideo], error) {
	return queryPage(ctx, s, s.tables.LongVideos, "id", q, decoder("long video", longVideoItem.longVideo),
		func(v domain.LongVideo) bool { return q.Matches(v.Status, v.Model) },
		func(v domain.LongVideo) store.Cursor { return store.Cursor{CreatedAt: v.CreatedAt, ID: v.ID} })
}

type sceneStateItem struct {
	Status      string `dynamodbav:"status"`
	UpstreamID  string `dynamodbav:"upstream_id,omitempty"`
	Upstream    string `dynamodbav:"upstream,omitempty"`
	CancelURL   string `dynamodbav:"cancel_url,omitempty"`
	StatusURL   string `dynamodbav:"status_url,omitempty"`
	ResponseURL string `dynamodbav:"response_url,omitempty"`
	Submitting  bool   `dynamodbav:"submitting,omitempty"`
	Progress    int    `dynamodbav:"progress,omitempty"`
	Revision    int    `dynamodbav:"revision,omitempty"`
}

func sceneStateItemOf(state domain.SceneState) sceneStateItem {
	return sceneStateItem{Status: string(state.Status), UpstreamID: state.ID,
		Upstream: state.Upstream, CancelURL: state.CancelURL, StatusURL: state.StatusURL, ResponseURL: state.ResponseURL,
		Submitting: state.Submitting, Progress: state.Progress, Revision: state.Revision}
}

func (st sceneStateItem) state() domain.SceneState {
	return domain.SceneState{Status: domain.Status(st.Status), Upstream: st.Upstream,
		UpstreamJob: domain.UpstreamJob{ID: st.UpstreamID, CancelURL: st.CancelURL, StatusURL: st.StatusURL, ResponseURL: st.ResponseURL},
		Submitting:  st.Submitting, Progress: st.Progress, Revision: st.Revision}
}

func (s *Store) SetSceneStatus(ctx context.Context, videoID string, scene int, state domain.SceneState, at time.Time) error {
	av, err := attributevalue.Marshal(sceneStateItemOf(state))
	if err != nil {
		return fmt.Errorf("scene %d of %s: %w", scene, videoID, err)
	}
	return s.updateProcessing(ctx, s.tables.LongVideos, "id", videoID,
		"SET scene_status.#n = :scene, updated_at = :at", map[string]types.AttributeValue{
			":scene": av, ":at": strAV(formatTime(at)),
		}, "#n", strconv.Itoa(scene))
}
