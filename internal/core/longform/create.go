package longform

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/pricing"
)

// Limits of a create request. A scene's narration is limited per language
// (Language.MaxNarration).
const (
	MaxPromptRunes = 5000
	MaxScenePrompt = 2000
	// Deadline bounds a long-form video's processing time.
	Deadline = time.Hour
)

// Request is a validated create request.
type Request struct {
	Prompt          string
	Scenes          []domain.Scene
	LanguageCode    string
	Model           string
	EnableNarration bool
	VideoStyle      string
	Studio          domain.Studio
	Webhook         domain.Webhook
}

// workflowInput is what an execution starts with: ids only. Each task reads
// the rest from the store, so no state carries a prompt and the payloads
// stay far below Step Functions' 256 KiB whatever the request holds.
type workflowInput struct {
	VideoID      string `json:"video_id"`
	SceneNumbers []int  `json:"scene_numbers"`
	// Revision is 0: a first render (RegenerateInput is a regenerate's).
	Revision int `json:"revision"`
}

// InputOf is the execution input of a video's workflow.
func InputOf(v domain.LongVideo) ([]byte, error) {
	in := workflowInput{VideoID: v.ID, SceneNumbers: make([]int, 0, len(v.Scenes))}
	for _, sc := range v.Scenes {
		in.SceneNumbers = append(in.SceneNumbers, sc.SceneNumber)
	}
	raw, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("workflow input of %s: %w", v.ID, err)
	}
	return raw, nil
}

// Creator starts long-form videos: the create route's use case.
type Creator struct{ s *service }

// NewCreator validates, prices, holds, records and starts the workflow.
func NewCreator(store Store, workflow Workflow, prices *pricing.Table, settings Settings) *Creator {
	return &Creator{s: &service{Store: store, Workflow: workflow, Prices: prices, Settings: settings}}
}

// CheckingMusic has the creator fetch and check a music_url given as a
// URL or an uploaded file (m) before any credit moves; without it such a
// request is a 400.
func (c *Creator) CheckingMusic(m *MusicCheck) *Creator {
	c.s.Music = m
	return c
}

// Create starts a video (see service.create).
func (c *Creator) Create(ctx context.Context, userID string, body []byte) (domain.LongVideo, error) {
	return c.s.create(ctx, userID, body)
}

// create validates a request, holds its estimated credits, records the video
// and starts its workflow. A workflow that does not start fails the record
// and releases the hold.
func (s *service) create(ctx context.Context, userID string, body []byte) (domain.LongVideo, error) {
	req, err := ParseCreate(body, s.Validation)
	if err != nil {
		return domain.LongVideo{}, err
	}
	id := uuid.NewString()
	q, err := priceScenes(s.Prices, req.Model, req.Scenes)
	if err != nil {
		return domain.LongVideo{}, fmt.Errorf("price long video: %w", err)
	}
	if u := req.Studio.MusicURL; u != "" {
		// The balance covers the quote (one read; nothing moves) before
		// the music is fetched or copied: a refused create never has the
		// service fetch or copy a file (up to 100 MiB) for nothing.
		a, err := s.Store.GetAccount(ctx, userID)
		if err != nil {
			return domain.LongVideo{}, fmt.Errorf("read account %s: %w", userID, err)
		}
		if err := a.Covers(q.Credits); err != nil {
			return domain.LongVideo{}, fmt.Errorf("hold credits for %s: %w", id, err)
		}
		// Read as audio now, inline, fetched or copied for the video,
		// before any credit moves: music that fails only at assembly
		// would fail a video whose scenes the providers have already
		// made.
		if err := s.Music.check(ctx, userID, id, u); err != nil {
			return domain.LongVideo{}, err
		}
	}
	now := s.now()
	v := domain.LongVideo{
		ID: id, UserID: userID, Prompt: req.Prompt, Model: req.Model, LanguageCode: req.LanguageCode,
		EnableNarration: req.EnableNarration, VideoStyle: req.VideoStyle, Studio: req.Studio, Scenes: req.Scenes,
		Status: domain.StatusProcessing, CreditsHeld: q.Credits, CreatedAt: now, UpdatedAt: now, Deadline: now.Add(Deadline),
		Webhook: req.Webhook,
	}
	log := s.log().With("user_id", userID, "video_id", v.ID)
	if err := s.Store.Hold(ctx, userID, domain.NewHold(ctx, v.ID, domain.WorkLongVideo, q.Credits, now, v.Model)); err != nil {
		return domain.LongVideo{}, fmt.Errorf("hold credits for %s: %w", v.ID, err)
	}
	if err := s.Store.CreateLongVideo(ctx, v); err != nil {
		// The write may have landed although its answer was lost: fail the
		// record too, or nothing would ever look at it again.
		s.abandon(ctx, log, v, "the video could not be recorded")
		return domain.LongVideo{}, fmt.Errorf("record long video: %w", err)
	}
	input, err := InputOf(v)
	if err == nil {
		err = s.Workflow.Start(ctx, v.ID, input)
	}
	if err != nil {
		log.WarnContext(ctx, "workflow did not start", "error", err)
		s.abandon(ctx, log, v, "the workflow could not be started")
		return domain.LongVideo{}, &domain.RecordedWorkError{Kind: domain.WorkLongVideo, ID: v.ID,
			Err: fmt.Errorf("%w: %v", ErrWorkflowUnavailable, err)}
	}
	log.InfoContext(ctx, "long video started", "scenes", len(v.Scenes), "credits", domain.FormatCredits(q.Credits))
	return v, nil
}

// abandon fails a video that never got going and releases its hold. When
// the record cannot be failed, the hold stays open for the sweeper, which
// fails the record at its deadline and releases the hold then.
func (s *service) abandon(ctx context.Context, log *slog.Logger, v domain.LongVideo, reason string) {
	err := s.Store.FinishLongVideo(ctx, v.ID, domain.Outcome{Status: domain.StatusFailed, Error: reason}, s.now())
	if err != nil && !errors.Is(err, domain.ErrConflict) && !errors.Is(err, domain.ErrNotFound) {
		log.WarnContext(ctx, "could not fail the video; the sweeper will", "error", err)
		return
	}
	s.release(ctx, log, v.UserID, v.ID)
}

func (s *service) release(ctx context.Context, log *slog.Logger, userID, workID string) {
	if _, err := s.Store.Release(ctx, userID, workID); err != nil {
		log.WarnContext(ctx, "could not release hold; the sweeper will", "error", err)
	}
}
