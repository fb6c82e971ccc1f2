package longform

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"

	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/pricing"
)

// regenerateRequest is a validated request to make one scene of a video
// again.
type regenerateRequest struct {
	// Scene is the scene as this render makes it: its stored texts with
	// the request's in their place.
	Scene domain.Scene
	// Renarrate says the text spoken over the scene changed, so its
	// narration is spoken again (the other scenes' tracks are reused).
	Renarrate bool
}

// regenerateFields are the fields of a regenerate body, all optional.
var regenerateFields = []string{"prompt", "narration"}

// parseRegenerate validates a regenerate of scene (the path's number) of
// v with body, optional {"prompt", "narration"}: a new prompt or narration
// is held to the limits a create holds the scene to (its length, the
// prompt its model takes with the theme and style, the narration that
// fits the scene in the video's language). Every bad field is reported at
// once.
func parseRegenerate(v domain.LongVideo, scene string, body []byte) (regenerateRequest, error) {
	var p catalog.Problems
	n, err := strconv.Atoi(scene)
	i := slices.IndexFunc(v.Scenes, func(sc domain.Scene) bool { return sc.SceneNumber == n })
	if err != nil || i < 0 {
		numbers := make([]string, len(v.Scenes))
		for j, sc := range v.Scenes {
			numbers[j] = strconv.Itoa(sc.SceneNumber)
		}
		p.Add("scene_number", fmt.Sprintf("%q is not a scene of this video: its scenes are %v", truncate(scene, 16), numbers))
	}
	obj := map[string]any{}
	if len(bytes.TrimSpace(body)) > 0 {
		if obj, err = catalog.DecodeObject(body); err != nil {
			return regenerateRequest{}, err
		}
	}
	p.Unknown("", obj, regenerateFields)
	if i < 0 {
		return regenerateRequest{}, p.Err()
	}
	old := v.Scenes[i]
	sc := old
	var sp catalog.Problems
	if _, present := obj["prompt"]; present {
		sc.Prompt = text(obj, "prompt", MaxScenePrompt, true, &sp)
	}
	if _, present := obj["narration"]; present {
		// Leave narration out to keep the scene's; its limit depends on
		// the language (below).
		sc.Narration = text(obj, "narration", math.MaxInt, true, &sp)
	}
	p = append(p, sp...)
	if len(sp) == 0 {
		msg := promptFits(Request{Prompt: v.Prompt, VideoStyle: v.VideoStyle, Model: v.Model})(sc)
		if msg != "" {
			p.Add("prompt", msg)
		}
		lang, known := LookupLanguage(v.LanguageCode)
		spoken{lang: lang, known: known, narrate: v.EnableNarration}.check("", sc, msg == "", &p)
	}
	if err := p.Err(); err != nil {
		return regenerateRequest{}, err
	}
	return regenerateRequest{Scene: sc, Renarrate: v.EnableNarration && script(sc) != script(old)}, nil
}

// RegenerateInput is a regenerate's execution input: ids only, as
// workflowInput. Revision says the execution re-makes SceneNumbers (one
// scene) of a completed video at that revision, reusing the other clips.
type RegenerateInput struct {
	VideoID      string `json:"video_id"`
	SceneNumbers []int  `json:"scene_numbers"`
	Revision     int    `json:"revision"`
}

// RegenerateExecution names the execution of a video's regenerate to
// revision: "<video>-r<revision>" (the first render's is the video's id).
func RegenerateExecution(videoID string, revision int) string {
	return fmt.Sprintf("%s-r%d", videoID, revision)
}

// Regenerator makes one scene of a completed video again: the regenerate
// route's use case.
type Regenerator struct{ s *service }

// NewRegenerator validates, prices and holds the scene, records the
// regenerate on the video and starts its execution.
func NewRegenerator(store Store, workflow Workflow, prices *pricing.Table, settings Settings) *Regenerator {
	return &Regenerator{s: &service{Store: store, Workflow: workflow, Prices: prices, Settings: settings}}
}

// Regenerate starts the regenerate of a caller's scene (the path's
// number) with body (see service.regenerate).
func (r *Regenerator) Regenerate(ctx context.Context, userID, id, scene string, body []byte) (domain.LongVideo, error) {
	return r.s.regenerate(ctx, userID, id, scene, body)
}

// regenerate holds that scene's own price (its model's) as work of its
// own (domain.RegenerateWorkID), records the regenerate on the completed
// video and starts its execution. The video stays completed at its
// revision, with its final video, until the regenerate ends. Refused
// before any credit moves: another owner's or a missing video
// (ErrNotFound), a bad scene or body (ErrInvalid), a video that is not
// completed, has its files removed or a regenerate running (ErrConflict).
func (s *service) regenerate(ctx context.Context, userID, id, scene string, body []byte) (domain.LongVideo, error) {
	v, err := NewReader(s.Store).find(ctx, userID, id)
	if err != nil {
		return domain.LongVideo{}, err
	}
	req, err := parseRegenerate(v, scene, body)
	if err != nil {
		return domain.LongVideo{}, err
	}
	now := s.now()
	switch {
	case v.Status != domain.StatusCompleted:
		return domain.LongVideo{}, fmt.Errorf("%w: video %s is %s; only a completed video regenerates a scene", domain.ErrConflict, v.ID, v.Status)
	case v.Regenerating != nil:
		return domain.LongVideo{}, fmt.Errorf("%w: video %s is regenerating scene %d (revision %d); cancel it or wait for it to end",
			domain.ErrConflict, v.ID, v.Regenerating.SceneNumber, v.Regenerating.Revision)
	case v.Files.Removed(now):
		return domain.LongVideo{}, fmt.Errorf("%w: video %s has its files removed; its other scenes cannot be reused", domain.ErrConflict, v.ID)
	}
	q, err := priceScenes(s.Prices, v.Model, []domain.Scene{req.Scene})
	if err != nil {
		return domain.LongVideo{}, fmt.Errorf("price scene %d of %s: %w", req.Scene.SceneNumber, v.ID, err)
	}
	model := v.SceneModel(req.Scene)
	r := domain.Regeneration{SceneNumber: req.Scene.SceneNumber, Revision: v.NextRevision(), Prompt: req.Scene.Prompt,
		Narration: req.Scene.Narration, Model: model, CreditsHeld: q.Credits, StartedAt: now}
	workID := domain.RegenerateWorkID(v.ID, r.SceneNumber, r.Revision)
	log := s.log().With("user_id", userID, "video_id", v.ID, "scene", r.SceneNumber, "revision", r.Revision)
	if err := s.Store.Hold(ctx, userID, domain.NewHold(ctx, workID, domain.WorkLongVideo, q.Credits, now, model)); err != nil {
		return domain.LongVideo{}, fmt.Errorf("hold credits for %s: %w", workID, err)
	}
	if err := s.Store.BeginRegenerate(ctx, v.ID, r, now); err != nil {
		if errors.Is(err, domain.ErrConflict) || errors.Is(err, domain.ErrNotFound) {
			s.release(ctx, log, userID, workID) // another regenerate, a cancel or a delete came first
			return domain.LongVideo{}, fmt.Errorf("%w: video %s changed meanwhile: %v", domain.ErrConflict, v.ID, err)
		}
		// The write may have landed although its answer was lost.
		s.abandonRegenerate(ctx, log, v.ID, userID, r.Revision, workID, "the regenerate could not be recorded")
		return domain.LongVideo{}, fmt.Errorf("record the regenerate of %s: %w", workID, err)
	}
	input, err := json.Marshal(RegenerateInput{VideoID: v.ID, SceneNumbers: []int{r.SceneNumber}, Revision: r.Revision})
	if err == nil {
		err = s.Workflow.Start(ctx, RegenerateExecution(v.ID, r.Revision), input)
	}
	if err != nil {
		log.WarnContext(ctx, "regenerate workflow did not start", "error", err)
		s.abandonRegenerate(ctx, log, v.ID, userID, r.Revision, workID, "the workflow could not be started")
		return domain.LongVideo{}, fmt.Errorf("%w: %v", ErrWorkflowUnavailable, err)
	}
	log.InfoContext(ctx, "scene regenerate started", "model", model, "credits", domain.FormatCredits(q.Credits), "renarrate", req.Renarrate)
	if v, err = s.Store.GetLongVideo(ctx, v.ID); err != nil {
		return domain.LongVideo{}, fmt.Errorf("reread %s: %w", id, err)
	}
	return v, nil
}

// abandonRegenerate ends a regenerate that never got going, leaving the
// video as it was, and releases its hold. When the regenerate cannot be
// ended, the hold stays open for the sweeper, which ends it at its
// deadline and releases the hold then.
func (s *service) abandonRegenerate(ctx context.Context, log *slog.Logger, videoID, userID string, revision int, workID, reason string) {
	err := s.Store.EndRegenerate(ctx, videoID, revision, domain.Outcome{Status: domain.StatusFailed, Error: reason}, s.now())
	if err != nil && !errors.Is(err, domain.ErrConflict) && !errors.Is(err, domain.ErrNotFound) {
		log.WarnContext(ctx, "could not end the regenerate; the sweeper will", "error", err)
		return
	}
	s.release(ctx, log, userID, workID)
}
