package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
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
		 total_duration, error, credits_held, created_at, updated_at, deadline, webhook_url, webhook_events, studio, revision)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO NOTHING`,
		v.ID, v.UserID, v.Prompt, v.Model, v.LanguageCode, v.EnableNarration, v.VideoStyle, string(scenes),
		string(v.Status), v.FinalVideoURL, v.TotalDuration, v.Error, credits, formatTime(v.CreatedAt),
		formatTime(v.UpdatedAt), formatTime(v.Deadline), v.Webhook.URL, string(events), string(studio), max(v.Revision, 1))
}

func (s *Store) GetLongVideo(ctx context.Context, id string) (domain.LongVideo, error) {
	vs, err := s.queryLongVideos(ctx, `WHERE id = ?`, id)
	return firstOf(vs, err, "long video "+id)
}

func (s *Store) queryLongVideos(ctx context.Context, where string, args ...any) ([]domain.LongVideo, error) {
	return queryRows(ctx, s, "read long videos", `SELECT id, user_id, prompt, model, language_code, enable_narration,
		video_style, scenes, status, final_video_url, total_duration, error, credits_held, created_at, updated_at,
		deadline, webhook_url, webhook_events, webhook_attempts, scene_status, output_expires_at, data_removal, finishing, studio,
		revision, regenerate, last_regenerate
		FROM long_videos `+where, args,
		func(rows *sql.Rows) (domain.LongVideo, error) {
			var v domain.LongVideo
			var scenes, status, created, updated, deadline, events, attempts, sceneStatus, expires, removal, studio, regen string
			var credits int64
			var finishing bool
			err := rows.Scan(&v.ID, &v.UserID, &v.Prompt, &v.Model, &v.LanguageCode, &v.EnableNarration, &v.VideoStyle,
				&scenes, &status, &v.FinalVideoURL, &v.TotalDuration, &v.Error, &credits, &created, &updated, &deadline,
				&v.Webhook.URL, &events, &attempts, &sceneStatus, &expires, &removal, &finishing, &studio,
				&v.Revision, &regen, &v.LastRegenerate)
			if err != nil {
				return domain.LongVideo{}, fmt.Errorf("read long videos: %w", err)
			}
			v.Status, v.CreditsHeld = domain.Status(status), domain.CentsToCredits(credits)
			if err := unmarshalColumns(v.ID, []any{&v.Scenes, &v.Webhook.Events, &v.WebhookAttempts, &v.SceneStatus, &v.Studio},
				scenes, events, attempts, sceneStatus, studio); err != nil {
				return domain.LongVideo{}, err
			}
			if regen != "" {
				v.Regenerating = new(domain.Regeneration)
				if err := json.Unmarshal([]byte(regen), v.Regenerating); err != nil {
					return domain.LongVideo{}, fmt.Errorf("long video %s: its regenerate: %w", v.ID, err)
				}
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
	// A regenerate reuses the video's files: they are not removed under it
	// (and BeginRegenerate waits for no removal).
	return s.setRemoval(ctx, "long_videos", "id", id, r, at, `regenerate = ''`)
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

// The regenerate of a scene is written where the video is completed, so
// these updates name their own conditions instead of updateProcessing's.

func (s *Store) BeginRegenerate(ctx context.Context, id string, r domain.Regeneration, at time.Time) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("regenerate long video %s: %w", id, err)
	}
	// The revision is the next after any the video was at or a regenerate
	// began: the one the caller read.
	return s.updateLongVideoWhere(ctx, "regenerate long video "+id, `regenerate = ?, last_regenerate = ?, updated_at = ?`,
		`status = ? AND regenerate = '' AND data_removal = '' AND max(revision, last_regenerate, 1) = ?`,
		[]any{string(b), r.Revision, formatTime(at)}, []any{string(domain.StatusCompleted), r.Revision - 1}, id)
}

func (s *Store) SetRegenerateState(ctx context.Context, id string, revision int, state domain.SceneState, at time.Time) error {
	b, err := json.Marshal(state)
	if err != nil {
		return fmt.Errorf("regenerate of long video %s: %w", id, err)
	}
	return s.updateLongVideoWhere(ctx, fmt.Sprintf("regenerate r%d of long video %s", revision, id),
		`regenerate = json_set(regenerate, '$.state', json(?)), updated_at = ?`, regenerating,
		[]any{string(b), formatTime(at)}, []any{revision}, id)
}

// regenerating is the condition that the regenerate of a revision runs.
const regenerating = `regenerate != '' AND json_extract(regenerate, '$.revision') = ?`

func (s *Store) EndRegenerate(ctx context.Context, id string, revision int, o domain.Outcome, at time.Time) error {
	what := fmt.Sprintf("end regenerate r%d of long video %s", revision, id)
	if o.Status != domain.StatusCompleted {
		return s.updateLongVideoWhere(ctx, what, `regenerate = '', updated_at = ?`, regenerating,
			[]any{formatTime(at)}, []any{revision}, id)
	}
	v, err := s.GetLongVideo(ctx, id)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if v.Regenerating == nil || v.Regenerating.Revision != revision {
		return fmt.Errorf("%s: it is not running: %w", what, domain.ErrConflict)
	}
	scenes, err := json.Marshal(v.Regenerating.Applied(v.Scenes))
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	url := v.FinalVideoURL
	if len(o.OutputURLs) > 0 {
		url = o.OutputURLs[0]
	}
	state, err := json.Marshal(v.Regenerating.Made())
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return s.updateLongVideoWhere(ctx, what,
		`regenerate = '', revision = ?, scenes = ?, scene_status = json_set(scene_status, ?, json(?)), final_video_url = ?, total_duration = ?, output_expires_at = ?, updated_at = ?`,
		regenerating, []any{revision, string(scenes), `$."` + strconv.Itoa(v.Regenerating.SceneNumber) + `"`, string(state), url, o.TotalDuration,
			formatOptionalTime(o.OutputExpiresAt), formatTime(at)},
		[]any{revision}, id)
}

// updateLongVideoWhere updates a long video where cond holds: ErrNotFound
// if it is missing, ErrConflict if cond does not hold.
func (s *Store) updateLongVideoWhere(ctx context.Context, what, set, cond string, setArgs, condArgs []any, id string) error {
	args := append(append(append([]any{}, setArgs...), id), condArgs...)
	res, err := s.w.ExecContext(ctx, `UPDATE long_videos SET `+set+` WHERE id = ? AND `+cond, args...)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if n, _ := res.RowsAffected(); n > 0 {
		return nil
	}
	var status string
	err = s.w.QueryRowContext(ctx, `SELECT status FROM long_videos WHERE id = ?`, id).Scan(&status)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%s: %w", what, domain.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return fmt.Errorf("%s: the video is %s, at another revision or regenerating another: %w", what, status, domain.ErrConflict)
}
