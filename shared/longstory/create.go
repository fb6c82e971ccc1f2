package longstory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/mediagen-dev/mediagen/shared/catalog"
	"github.com/mediagen-dev/mediagen/shared/domain"
	"github.com/mediagen-dev/mediagen/shared/pricing"
	"github.com/mediagen-dev/mediagen/shared/routing"
	"github.com/mediagen-dev/mediagen/shared/store"
	"github.com/mediagen-dev/mediagen/shared/upstream"
)

// Limits of a create request. A scene's narration is limited per language
// (Language.MaxNarration).
const (
	MaxPromptRunes = 5000
	MaxScenePrompt = 2000
	// Deadline bounds a long-form video's processing time.
	Deadline = time.Hour
)

// ErrWorkflowUnavailable is a workflow that could not be started; the hold is
// released and the video failed before the caller hears of it.
var ErrWorkflowUnavailable = errors.New("workflow unavailable")

// Store is what the long-form use cases need from the store.
type Store interface {
	Hold(ctx context.Context, userID string, h domain.Hold) error
	Capture(ctx context.Context, userID, workID string) (bool, error)
	Release(ctx context.Context, userID, workID string) (bool, error)
	CreateLongVideo(ctx context.Context, v domain.LongVideo) error
	GetLongVideo(ctx context.Context, id string) (domain.LongVideo, error)
	FinishLongVideo(ctx context.Context, id string, o domain.Outcome, at time.Time) error
	SetSceneStatus(ctx context.Context, videoID string, scene int, state domain.SceneState, at time.Time) error
	ListLongVideos(ctx context.Context, q store.ListQuery) (store.Page[domain.LongVideo], error)
}

// Notifier enqueues a webhook event; nil means no webhooks.
type Notifier interface {
	Notify(ctx context.Context, kind domain.WorkKind, id, event string) error
}

// Providers are the upstreams' clients by routing name, and the routes of
// each variant (*upstream.Router).
type Providers interface {
	Provider(name string) (upstream.Provider, error)
	Routes(model, version string) []routing.Route
	// Limit is an upstream's cap on jobs at once; 0 is none.
	Limit(name string) int
}

// Workflow starts the long-form state machine.
type Workflow interface {
	// Start runs the workflow once per name: starting the same name again
	// with the same input does not start a second execution.
	Start(ctx context.Context, name string, input []byte) error
	// Stop ends the named execution; stopping one that ended or never
	// started is not an error.
	Stop(ctx context.Context, name, cause string) error
}

// Service runs the long-form use cases.
type Service struct {
	Store    Store
	Workflow Workflow
	Prices   *pricing.Table
	// Upstream cancels the scenes' jobs when a video is canceled, and
	// Slots frees their places at the upstreams' caps.
	Upstream   Providers
	Slots      Slots
	Notifier   Notifier
	Validation catalog.Options
	Now        func() time.Time
	Log        *slog.Logger
}

func (s *Service) now() time.Time { return domain.Now(s.Now) }

func (s *Service) log() *slog.Logger { return domain.Logger(s.Log) }

// Request is a validated create request.
type Request struct {
	Prompt          string
	Scenes          []domain.Scene
	LanguageCode    string
	Model           string
	EnableNarration bool
	VideoStyle      string
	Webhook         domain.Webhook
}

// WorkflowInput is what an execution starts with: ids only. Each task reads
// the rest from the store, so no state carries a prompt and the payloads
// stay far below Step Functions' 256 KiB whatever the request holds.
type WorkflowInput struct {
	VideoID      string `json:"video_id"`
	SceneNumbers []int  `json:"scene_numbers"`
}

// InputOf is the execution input of a video's workflow.
func InputOf(v domain.LongVideo) ([]byte, error) {
	in := WorkflowInput{VideoID: v.ID, SceneNumbers: make([]int, 0, len(v.Scenes))}
	for _, sc := range v.Scenes {
		in.SceneNumbers = append(in.SceneNumbers, sc.SceneNumber)
	}
	raw, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("workflow input of %s: %w", v.ID, err)
	}
	return raw, nil
}

// Create validates a request, holds its estimated credits, records the video
// and starts its workflow. A workflow that does not start fails the record
// and releases the hold.
func (s *Service) Create(ctx context.Context, userID string, body []byte) (domain.LongVideo, error) {
	req, err := ParseCreate(body, s.Validation)
	if err != nil {
		return domain.LongVideo{}, err
	}
	q, err := Price(s.Prices, req.Model, len(req.Scenes))
	if err != nil {
		return domain.LongVideo{}, fmt.Errorf("price long video: %w", err)
	}
	now := s.now()
	v := domain.LongVideo{
		ID: uuid.NewString(), UserID: userID, Prompt: req.Prompt, Model: req.Model, LanguageCode: req.LanguageCode,
		EnableNarration: req.EnableNarration, VideoStyle: req.VideoStyle, Scenes: req.Scenes,
		Status: domain.StatusProcessing, CreditsHeld: q.Credits, CreatedAt: now, UpdatedAt: now, Deadline: now.Add(Deadline),
		Webhook: req.Webhook,
	}
	log := s.log().With("user_id", userID, "video_id", v.ID)
	if err := s.Store.Hold(ctx, userID, domain.Hold{WorkID: v.ID, Kind: domain.WorkLongVideo, Amount: q.Credits, CreatedAt: now}); err != nil {
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
		return domain.LongVideo{}, fmt.Errorf("%w: %v", ErrWorkflowUnavailable, err)
	}
	log.InfoContext(ctx, "long video started", "scenes", len(v.Scenes), "credits", domain.FormatCredits(q.Credits))
	return v, nil
}

// abandon fails a video that never got going and releases its hold. When
// the record cannot be failed, the hold stays open for the sweeper, which
// fails the record at its deadline and releases the hold then.
func (s *Service) abandon(ctx context.Context, log *slog.Logger, v domain.LongVideo, reason string) {
	err := s.Store.FinishLongVideo(ctx, v.ID, domain.Outcome{Status: domain.StatusFailed, Error: reason}, s.now())
	if err != nil && !errors.Is(err, domain.ErrConflict) && !errors.Is(err, domain.ErrNotFound) {
		log.WarnContext(ctx, "could not fail the video; the sweeper will", "error", err)
		return
	}
	s.release(ctx, log, v.UserID, v.ID)
}

func (s *Service) release(ctx context.Context, log *slog.Logger, userID, workID string) {
	if _, err := s.Store.Release(ctx, userID, workID); err != nil {
		log.WarnContext(ctx, "could not release hold; the sweeper will", "error", err)
	}
}

// find reads a caller's video; another owner's is not found.
func (s *Service) find(ctx context.Context, userID, id string) (domain.LongVideo, error) {
	if _, err := uuid.Parse(id); err != nil || len(id) != 36 {
		return domain.LongVideo{}, fmt.Errorf("%w: video id %q is not a UUID", domain.ErrInvalid, truncate(id, 64))
	}
	v, err := s.Store.GetLongVideo(ctx, strings.ToLower(id))
	if err != nil {
		return domain.LongVideo{}, err
	}
	if v.UserID != userID {
		return domain.LongVideo{}, fmt.Errorf("long video %s: %w", id, domain.ErrNotFound)
	}
	return v, nil
}

// Lookup finds a caller's video.
func (s *Service) Lookup(ctx context.Context, userID, id string) (domain.LongVideo, error) {
	return s.find(ctx, userID, id)
}

// List pages through a caller's videos, newest first.
func (s *Service) List(ctx context.Context, q store.ListQuery) (store.Page[domain.LongVideo], error) {
	return s.Store.ListLongVideos(ctx, q)
}

// Cancel stops a caller's video: the execution is stopped, the scenes'
// jobs upstream are canceled, the record ends canceled and the hold is
// released. A video already final is a conflict.
func (s *Service) Cancel(ctx context.Context, userID, id string) (domain.LongVideo, error) {
	v, err := s.find(ctx, userID, id)
	if err != nil {
		return domain.LongVideo{}, err
	}
	if v.Status.Terminal() {
		return domain.LongVideo{}, fmt.Errorf("%w: video %s is already %s", domain.ErrConflict, v.ID, v.Status)
	}
	log := s.log().With("user_id", userID, "video_id", v.ID)
	err = s.Store.FinishLongVideo(ctx, v.ID, domain.Outcome{Status: domain.StatusCanceled, Error: "canceled by the caller"}, s.now())
	if errors.Is(err, domain.ErrConflict) {
		if v, err = s.Store.GetLongVideo(ctx, v.ID); err == nil {
			err = fmt.Errorf("%w: video %s is already %s", domain.ErrConflict, v.ID, v.Status)
		}
		return domain.LongVideo{}, err
	}
	if err != nil {
		return domain.LongVideo{}, fmt.Errorf("cancel %s: %w", v.ID, err)
	}
	// The record is final now: every step after this finds it so and stops.
	if err := s.Workflow.Stop(ctx, v.ID, "canceled by the caller"); err != nil {
		log.WarnContext(ctx, "could not stop the workflow; its next step stops on the canceled record", "error", err)
	}
	stopScenes(ctx, log, s.Upstream, s.Slots, v)
	s.release(ctx, log, userID, v.ID)
	if v, err = s.Store.GetLongVideo(ctx, v.ID); err != nil {
		return domain.LongVideo{}, fmt.Errorf("reread %s: %w", v.ID, err)
	}
	if err := notify(ctx, s.Notifier, v); err != nil {
		log.WarnContext(ctx, "could not enqueue the webhook", "error", err)
	}
	return v, nil
}

// notify enqueues the webhook event of a final video, if asked for.
func notify(ctx context.Context, n Notifier, v domain.LongVideo) error {
	event := "long_video." + string(v.Status)
	if n == nil || !v.Webhook.Wants(event) {
		return nil
	}
	if err := n.Notify(ctx, domain.WorkLongVideo, v.ID, event); err != nil {
		return fmt.Errorf("webhook of %s: %w", v.ID, err)
	}
	return nil
}

// Styles maps each video_style to the words it puts before a scene prompt.
var Styles = map[string]string{
	"auto":        "",
	"cinematic":   "Cinematic, dramatic lighting",
	"documentary": "Documentary footage, natural light",
	"animation":   "Animated, vivid colours",
	"noir":        "Black-and-white film noir",
	"vintage":     "Vintage film, warm grain",
}

// StyleNames lists the styles in a stable order.
func StyleNames() []string {
	names := make([]string, 0, len(Styles))
	for k := range Styles {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// ScenePrompt is what the upstream model is asked for one scene: the style's
// words, the scene number, the scene's prompt and the video's theme.
func ScenePrompt(style, theme string, sc domain.Scene) string {
	parts := []string{fmt.Sprintf("Scene %d: %s", sc.SceneNumber, sc.Prompt)}
	if prefix := Styles[style]; prefix != "" {
		parts = append([]string{prefix}, parts...)
	}
	return strings.Join(parts, ". ") + ". Part of: " + theme
}

// ParseCreate validates a create body and reports every bad field at once.
func ParseCreate(body []byte, opts catalog.Options) (Request, error) {
	obj, err := catalog.DecodeObject(body)
	if err != nil {
		return Request{}, err
	}
	allowed := append([]string{"prompt", "scenes", "language_code", "model", "enable_narration", "video_style"}, catalog.WebhookFields...)
	var p catalog.Problems
	for k := range obj {
		if !slices.Contains(allowed, k) {
			p.Add(k, fmt.Sprintf("unknown field %q (allowed: %s)", k, strings.Join(allowed, ", ")))
		}
	}
	req := Request{Model: DefaultModel, EnableNarration: true, VideoStyle: "auto"}
	req.Prompt = text(obj, "prompt", MaxPromptRunes, true, &p)
	lang, langOK := language(obj, &p)
	req.LanguageCode = lang.Code
	if raw, present := obj["model"]; present {
		if m, ok := raw.(string); !ok {
			p.Add("model", "must be a string")
		} else if _, err := videoVariant(m); err != nil {
			p.Add("model", err.Error())
		} else {
			req.Model = m
		}
	}
	req.EnableNarration = enableNarration(obj, &p)
	if raw, present := obj["video_style"]; present {
		st, ok := raw.(string)
		if _, known := Styles[st]; !ok || !known {
			p.Add("video_style", "must be one of "+strings.Join(StyleNames(), ", "))
		} else {
			req.VideoStyle = st
		}
	}
	req.Scenes = scenes(obj["scenes"], &p, promptFits(req), spoken{lang: lang, known: langOK, narrate: req.EnableNarration})
	req.Webhook = catalog.CheckWebhook(obj, catalog.LongVideoEvents, opts, &p)
	if err := p.Err(); err != nil {
		return Request{}, err
	}
	return req, nil
}

// promptFits checks what a scene asks of req's model (ScenePrompt) against
// the model's own prompt limit; "" when it fits.
func promptFits(req Request) func(domain.Scene) string {
	maxLen := 0
	if v, err := videoVariant(req.Model); err == nil {
		if f, ok := v.Field("prompt"); ok {
			maxLen = f.MaxLen
		}
	}
	return func(sc domain.Scene) string {
		if maxLen == 0 || sc.Prompt == "" || req.Prompt == "" {
			return ""
		}
		if n := utf8.RuneCountInString(ScenePrompt(req.VideoStyle, req.Prompt, sc)); n > maxLen {
			return fmt.Sprintf("with the theme and the style's words it makes a prompt of %d characters; model %s takes at most %d characters", n, req.Model, maxLen)
		}
		return ""
	}
}

// language reads the required language_code; ok is false when it is
// missing or not supported (and reported).
func language(obj map[string]any, p *catalog.Problems) (Language, bool) {
	code, ok := obj["language_code"].(string)
	if !ok {
		p.Add("language_code", "is required: one of "+strings.Join(LanguageCodes(), ", "))
		return Language{}, false
	}
	l, ok := LookupLanguage(code)
	if !ok {
		p.Add("language_code", fmt.Sprintf("%q is not a supported narration language (supported: %s)", truncate(code, 16), strings.Join(LanguageCodes(), ", ")))
	}
	return l, ok
}

// enableNarration reads the optional enable_narration, true by default.
func enableNarration(obj map[string]any, p *catalog.Problems) bool {
	raw, present := obj["enable_narration"]
	if !present {
		return true
	}
	b, ok := raw.(bool)
	if !ok {
		p.Add("enable_narration", "must be true or false")
		return true
	}
	return b
}

// spoken holds what a scene says to its narration limit: the text spoken
// over a scene (its narration, else its prompt: see Narrate) must be
// speakable in NarrationSeconds in the video's language, or the scene
// would outlast its 5 s or lose the end of its narration.
type spoken struct {
	lang Language
	// known is false when language_code is bad: the narration is then
	// held to the largest limit of any language, and the prompt to none.
	known bool
	// narrate is enable_narration: a scene's prompt is spoken only then.
	narrate bool
}

func (s spoken) limit() int {
	if !s.known {
		return maxNarrationAnyLanguage()
	}
	return s.lang.MaxNarration()
}

// check reports the scene's spoken text when it is too long to fit; its
// prompt only when nothing else was said of it (promptOK).
func (s spoken) check(field string, sc domain.Scene, promptOK bool, p *catalog.Problems) {
	limit := s.limit()
	why := fmt.Sprintf("a scene lasts %d s and its narration is sped up at most %g×, so it must be speakable in %g s", SceneSeconds, maxNarrationRate, NarrationSeconds)
	in := "in any supported language"
	if s.known {
		in = fmt.Sprintf("in %s (language_code %q)", s.lang.Name, s.lang.Code)
	}
	if n := utf8.RuneCountInString(sc.Narration); n > limit {
		p.Add(field+".narration", fmt.Sprintf("must be at most %d characters %s, got %d: %s", limit, in, n, why))
		return
	}
	if promptOK && s.known && s.narrate && sc.Narration == "" {
		if n := utf8.RuneCountInString(sc.Prompt); n > limit {
			p.Add(field+".prompt", fmt.Sprintf("is spoken over the scene when it has no narration, so it must be at most %d characters %s, got %d: %s; "+
				"add a narration of at most %d characters, shorten the prompt or set enable_narration to false", limit, in, n, why, limit))
		}
	}
}

func scenes(raw any, p *catalog.Problems, fits func(domain.Scene) string, speech spoken) []domain.Scene {
	list, ok := raw.([]any)
	switch {
	case raw == nil:
		p.Add("scenes", fmt.Sprintf("is required: %d to %d scenes, each {scene_number, prompt}", MinScenes, MaxScenes))
		return nil
	case !ok:
		p.Add("scenes", "must be an array of scene objects")
		return nil
	case len(list) < MinScenes || len(list) > MaxScenes:
		p.Add("scenes", fmt.Sprintf("must hold %d to %d scenes, got %d", MinScenes, MaxScenes, len(list)))
		return nil
	}
	seen := map[int64]bool{}
	var out []domain.Scene
	for i, item := range list {
		field := fmt.Sprintf("scenes[%d]", i)
		obj, ok := item.(map[string]any)
		if !ok {
			p.Add(field, "must be an object {scene_number, prompt}")
			continue
		}
		for k := range obj {
			if k != "scene_number" && k != "prompt" && k != "narration" {
				p.Add(field+"."+k, fmt.Sprintf("unknown field %q (allowed: scene_number, prompt, narration)", k))
			}
		}
		sc := domain.Scene{}
		n, ok := obj["scene_number"].(json.Number)
		num, err := n.Int64()
		switch {
		case !ok:
			p.Add(field+".scene_number", "is required: a positive whole number")
		case err != nil || num < 1 || num > 1000:
			p.Add(field+".scene_number", fmt.Sprintf("must be a whole number from 1 to 1000, got %s", truncate(string(n), 32)))
		case seen[num]:
			p.Add(field+".scene_number", fmt.Sprintf("%d is used by another scene; scene numbers must be unique", num))
		default:
			seen[num] = true
			sc.SceneNumber = int(num)
		}
		var sp catalog.Problems
		sc.Prompt = text(obj, "prompt", MaxScenePrompt, true, &sp)
		// The narration's limit depends on the language: checked below.
		sc.Narration = text(obj, "narration", math.MaxInt, false, &sp)
		for _, e := range sp {
			p.Add(field+"."+e.Field, e.Message)
		}
		if len(sp) == 0 {
			msg := fits(sc)
			if msg != "" {
				p.Add(field+".prompt", msg)
			}
			speech.check(field, sc, msg == "", p)
		}
		out = append(out, sc)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].SceneNumber < out[j].SceneNumber })
	return out
}

// text reads a string field with a length limit in characters.
func text(obj map[string]any, key string, max int, required bool, p *catalog.Problems) string {
	raw, present := obj[key]
	if !present {
		if required {
			p.Add(key, "is required")
		}
		return ""
	}
	s, ok := raw.(string)
	switch {
	case !ok:
		p.Add(key, "must be a string")
	case required && strings.TrimSpace(s) == "":
		p.Add(key, "must not be empty")
	case utf8.RuneCountInString(s) > max:
		p.Add(key, fmt.Sprintf("must be at most %d characters long, got %d", max, utf8.RuneCountInString(s)))
	default:
		return s
	}
	return ""
}

func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}
