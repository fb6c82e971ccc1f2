package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/store"
)

func (s *Store) CreateLongVideo(ctx context.Context, v domain.LongVideo) error {
	credits, err := domain.CreditsToCents(v.CreditsHeld)
	if err != nil {
		return fmt.Errorf("create long video %s: %w", v.ID, err)
	}
	scenes, err := json.Marshal(v.Scenes)
	if err != nil {
		return fmt.Errorf("create long video %s: %w", v.ID, err)
	}
	events, err := json.Marshal(nonNil(v.Webhook.Events))
	if err != nil {
		return fmt.Errorf("create long video %s: %w", v.ID, err)
	}
	studio, err := json.Marshal(v.Studio)
	if err != nil {
		return fmt.Errorf("create long video %s: %w", v.ID, err)
	}
	return s.insertNew(ctx, "create long video "+v.ID, `INSERT INTO long_videos
		(id, user_id, prompt, model, language_code, enable_narration, video_style, scenes, status, final_video_url,
		 total_duration, error, credits_held, created_at, updated_at, deadline, webhook_url, webhook_events, studio)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO NOTHING`,
		v.ID, v.UserID, v.Prompt, v.Model, v.LanguageCode, v.EnableNarration, v.VideoStyle, string(scenes),
		string(v.Status), v.FinalVideoURL, v.TotalDuration, v.Error, credits, formatTime(v.CreatedAt),
		formatTime(v.UpdatedAt), formatTime(v.Deadline), v.Webhook.URL, string(events), string(studio))
}

func (s *Store) GetLongVideo(ctx context.Context, id string) (domain.LongVideo, error) {
	vs, err := s.queryLongVideos(ctx, `WHERE id = ?`, id)
	return firstOf(vs, err, "long video "+id)
}

func (s *Store) queryLongVideos(ctx context.Context, where string, args ...any) ([]domain.LongVideo, error) {
	return queryRows(ctx, s, "read long videos", `SELECT id, user_id, prompt, model, language_code, enable_narration,
		video_style, scenes, status, final_video_url, total_duration, error, credits_held, created_at, updated_at,
		deadline, webhook_url, webhook_events, webhook_attempts, scene_status, output_expires_at, data_removal, finishing, studio
		FROM long_videos `+where, args,
		func(rows *sql.Rows) (domain.LongVideo, error) {
			var v domain.LongVideo
			var scenes, status, created, updated, deadline, events, attempts, sceneStatus, expires, removal, studio string
			var credits int64
			var finishing bool
			err := rows.Scan(&v.ID, &v.UserID, &v.Prompt, &v.Model, &v.LanguageCode, &v.EnableNarration, &v.VideoStyle,
				&scenes, &status, &v.FinalVideoURL, &v.TotalDuration, &v.Error, &credits, &created, &updated, &deadline,
				&v.Webhook.URL, &events, &attempts, &sceneStatus, &expires, &removal, &finishing, &studio)
			if err != nil {
				return domain.LongVideo{}, fmt.Errorf("read long videos: %w", err)
			}
			v.Status, v.CreditsHeld = domain.Status(status), domain.CentsToCredits(credits)
			if err := unmarshalColumns(v.ID, []any{&v.Scenes, &v.Webhook.Events, &v.WebhookAttempts, &v.SceneStatus, &v.Studio},
				scenes, events, attempts, sceneStatus, studio); err != nil {
				return domain.LongVideo{}, err
			}
			v.CreatedAt, v.UpdatedAt, v.Deadline, err = parseRecordTimes(created, updated, deadline)
			if err == nil {
				v.Files, err = storedFiles(expires, removal, finishing)
			}
			return v, err
		})
}

func (s *Store) FinishLongVideo(ctx context.Context, id string, o domain.Outcome, at time.Time) error {
	url := ""
	if len(o.OutputURLs) > 0 {
		url = o.OutputURLs[0]
	}
	return s.updateOutcome(ctx, "long_videos", "id", id, o.Status,
		`status = ?, final_video_url = ?, total_duration = ?, error = ?, output_expires_at = ?, updated_at = ?`,
		string(o.Status), url, o.TotalDuration, o.Error, formatOptionalTime(o.OutputExpiresAt), formatTime(at))
}

func (s *Store) ClaimLongVideoFinish(ctx context.Context, id string, at time.Time) error {
	return s.updateProcessing(ctx, "long_videos", "id", id, `finishing = 1, updated_at = ?`, formatTime(at))
}

func (s *Store) SetLongVideoRemoval(ctx context.Context, id string, r domain.Removal, at time.Time) error {
	return s.setRemoval(ctx, "long_videos", "id", id, r, at)
}

func (s *Store) ListLongVideos(ctx context.Context, q store.ListQuery) (store.Page[domain.LongVideo], error) {
	where, args, err := listWhere(q, "id")
	if err != nil {
		return store.Page[domain.LongVideo]{}, err
	}
	vs, err := s.queryLongVideos(ctx, where, args...)
	if err != nil {
		return store.Page[domain.LongVideo]{}, err
	}
	return windowPage(vs, q.Window(), q.Limit, func(v domain.LongVideo) bool { return q.Matches(v.Status, v.Model) },
		func(v domain.LongVideo) store.Cursor { return store.Cursor{CreatedAt: v.CreatedAt, ID: v.ID} }), nil
}

func (s *Store) SetSceneStatus(ctx context.Context, videoID string, scene int, state domain.SceneState, at time.Time) error {
	b, err := json.Marshal(state)
	if err != nil {
		return fmt.Errorf("scene %d of %s: %w", scene, videoID, err)
	}
	return s.updateProcessing(ctx, "long_videos", "id", videoID,
		`scene_status = json_set(scene_status, ?, json(?)), updated_at = ?`,
		`$."`+strconv.Itoa(scene)+`"`, string(b), formatTime(at))
}
