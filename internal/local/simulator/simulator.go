// Package simulator is a local stand-in for the hosted generation providers.
// It is an http.Handler that speaks the Replicate predictions protocol and
// fal's queue protocol as their official clients (npm replicate,
// @fal-ai/client) expect, and renders real media with ffmpeg, so the
// service can run and be tested end to end without a provider. Local only:
// no Lambda imports it. The contract tests (contract_test.go) run the
// official clients against it.
//
// Replicate face (Authorization: Bearer <token>; errors are problem+json):
//
//	POST /v1/models/{owner}/{name}/predictions  {"input":{...},"webhook":"...","webhook_events_filter":[...]} -> 201
//	POST /v1/predictions                        {"version":"<id>"|"owner/name:<id>","input":{...},...}    -> 201
//	     (both honour Prefer: wait and Prefer: wait=N: the answer waits until the prediction is final)
//	GET  /v1/predictions                        recent predictions, newest first
//	GET  /v1/predictions/{id}, POST /v1/predictions/{id}/cancel
//	GET  /v1/models                             every model, a page at a time (next: a cursor URL)
//	GET  /v1/models/{owner}/{name}[/versions/{id}]  the published input and Output schema (openapi_schema)
//	POST /v1/files (multipart: content, metadata), GET /v1/files[/{id}]  uploads (files.go)
//	GET  /v1/hardware, GET /v1/webhooks/default/secret {"key":"whsec_..."}
//
// Webhook events: start, logs (processing), output (while the output
// grows: each image as it is rendered), completed.
//
// fal face under /fal (Authorization: Key <token>; see faces.go and
// fal_extra.go): the queue's submit, status (with queue_position), status
// stream (SSE), result and cancel, signed webhooks and the JWKS of their
// keys; under /fal-run the synchronous run (https://fal.run: the answer is
// the result), under /fal-rest storage (https://rest.fal.ai: initiate,
// then a PUT to the signed upload URL).
//
// Outputs are served at GET /files/{id}/{name} and uploads at GET
// /uploads/{id}/{name} with no authentication, like a CDN, from
// FilesBaseURL: another host than the API's (the local runtime serves it
// over https with a CA of its own: ca.go).
//
// Inputs are checked against the model's published types (Config.Inputs):
// a value of another JSON type is refused with 422, as a real model does.
// A prediction goes starting -> processing -> succeeded | failed | canceled.
// Video models render an H.264 mp4, image models one file per image
// (png, jpeg or webp). Every picture is a solid background of ColorFor(prompt)
// with the start of the prompt in white; the top-left cleanCorner x
// cleanCorner pixels show nothing but the background, so a test can tell
// which prompt a frame came from.
//
// Inputs read: prompt (required); video: duration or seconds (default 5),
// fps (24), resolution "<short side>p" (720p), aspect_ratio "w:h" |
// landscape | portrait (16:9), generate_audio (adds a sine-tone AAC track);
// image: num_outputs or num_images (1, at most 4), output_format png | jpeg
// | jpg | webp (png), resolution 1K | 2K | 4K (long side, 1K), aspect_ratio
// "w:h" | match_input_image (1:1). Other inputs are accepted and ignored.
//
// Markers in the prompt make behaviour deterministic for tests:
//
//	[simulate:fail]  the prediction fails, after the latency, with the error
//	                 "simulated failure: the prompt asked for it"
//	[simulate:slow]  two more seconds of latency before rendering starts
//	[simulate:refuse] the create is refused with 422 and an invalid field
//	                 (prompt), as a model refuses input it will not take
//	[simulate:hold]  the prediction stays starting until it is canceled (or
//	                 the simulator closes): a test cancels it with no race
//	                 against its completion
//	[simulate:progress=N] the prediction starts processing, logs a
//	                 progress line at N % (as a model's tqdm bar does) and
//	                 stays so until it is canceled
//
// A job reports its progress in its logs as models do on Replicate and
// fal: a tqdm line ("  45%|████▌     | 45/100") when it starts rendering
// and after each output (progressLine).
// Fault hooks (Fault) make the next creates misbehave as a provider can.
package simulator

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base32"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mediagen-dev/mediagen/internal/adapters/ffmpeg"
	"github.com/mediagen-dev/mediagen/internal/core/clock"
)

// Model kinds of Config.Models.
const (
	kindImage = "image"
	kindVideo = "video"
)

// Prediction states.
const (
	statusStarting   = "starting"
	statusProcessing = "processing"
	statusSucceeded  = "succeeded"
	statusFailed     = "failed"
	StatusCanceled   = "canceled"
)

// Prompt markers; see the package comment.
const (
	MarkerFail = "[simulate:fail]"
	MarkerSlow = "[simulate:slow]"
	// MarkerRefuse makes the create a 422 about the prompt.
	MarkerRefuse = "[simulate:refuse]"
	// MarkerHold keeps the prediction starting until it is canceled.
	MarkerHold = "[simulate:hold]"
	// markerProgress, followed by a whole number and "]", holds the
	// prediction processing at that progress until it is canceled.
	markerProgress = "[simulate:progress="
	// SimulatedRefusal is the invalid field's description of MarkerRefuse.
	SimulatedRefusal = "the prompt asked to be refused"
	// SimulatedFailure is the error of a prediction whose prompt has MarkerFail.
	SimulatedFailure = "simulated failure: the prompt asked for it"
	// slowExtraLatency is what MarkerSlow adds.
	slowExtraLatency = 2 * time.Second
)

// defaultMaxConcurrentRenders bounds the renders running at once.
const defaultMaxConcurrentRenders = 2

const (
	maxBodyBytes   = 8 << 20
	webhookTimeout = 5 * time.Second
)

// Config configures a Simulator.
type Config struct {
	// Token, when not empty, is required as "Authorization: Bearer <Token>"
	// on /v1/ routes.
	Token string
	// Latency is the delay before a job starts rendering.
	Latency time.Duration
	// BaseURL is the absolute URL where the handler is served, used in output
	// URLs and urls.get; empty means derived from each create request's Host.
	BaseURL string
	// Models maps upstream model names ("owner/name") to kindImage or kindVideo.
	Models map[string]string
	// ClipSeconds is the native clip length of video models whose input has
	// no duration (e.g. a model that always renders 6 s); others default to 5.
	ClipSeconds map[string]float64
	// WorkDir is where outputs are written; empty means a temporary folder
	// that Close removes.
	WorkDir string
	// FFmpeg runs the renders; its Timeout bounds each ffmpeg run.
	FFmpeg ffmpeg.Runner
	// Logger defaults to discarding.
	Logger *slog.Logger
	// MaxConcurrentRenders defaults to defaultMaxConcurrentRenders; jobs
	// beyond it wait in "starting".
	MaxConcurrentRenders int
	// FontFile defaults to ffmpeg.DefaultFontFile.
	FontFile string
	// Persist keeps every prediction under WorkDir, so that a restarted
	// simulator still answers for it and finishes the renders a stop cut off.
	Persist bool
	// WebhookSecret signs the webhook calls (Standard Webhooks, whsec_...);
	// empty sends them unsigned, as a misconfigured provider would.
	WebhookSecret string
	// Inputs are each model's published input types (field -> integer,
	// number, boolean, string or array); a model without an entry takes
	// any input.
	Inputs map[string]map[string]string
	// FilesBaseURL is where outputs are served (another host than the
	// API's); empty means BaseURL.
	FilesBaseURL string
	// BodyReadTimeout bounds the arrival of a request's body (default
	// defaultBodyReadTimeout): a client sending it a byte at a time is
	// answered 408 and cut off rather than holding a connection open.
	BodyReadTimeout time.Duration
	// Versions pins a model's one version id (64 hex digits, as the
	// provider's); a model without an entry has one derived from its name.
	Versions map[string]string
	// Clock is the simulator's time (default the wall clock): latencies,
	// Prefer: wait, a fault's hang, and the dates it records and signs.
	// (A request body's read deadline is the connection's, on the wall
	// clock.)
	Clock clock.Clock
}

// defaultBodyReadTimeout lets an 8 MB body arrive at about 280 KB/s.
const defaultBodyReadTimeout = 30 * time.Second

// Simulator is the provider stand-in. Create it with New; stop it with Close.
type Simulator struct {
	cfg         Config
	baseURL     string
	ownsWorkDir bool
	log         *slog.Logger
	mux         *http.ServeMux
	slots       chan struct{}
	clock       clock.Clock
	// waitingForSlot counts the jobs waiting for a render slot, so that a
	// test sees a job wait there without sleeping.
	waitingForSlot atomic.Int32
	webhooks       *http.Client

	// ctx ends at Close and stops every job.
	ctx    context.Context
	stop   context.CancelFunc
	jobs   sync.WaitGroup
	closer sync.Once

	mu          sync.Mutex
	closed      bool
	predictions map[string]*prediction
	order       []string
	faults      []Fault
	// creates counts the create requests per model, refused ones too.
	creates map[string]int
	// falKey signs the fal face's webhooks; its public half is in the JWKS.
	falKey ed25519.PrivateKey
	// changed closes at the next change of a prediction (broadcast), for
	// the status streams.
	changed chan struct{}
	// pending are the uploads fal's storage initiated, by id.
	pending map[string]pendingUpload
}

// New checks the configuration and that ffmpeg and the font are installed.
func New(cfg Config) (*Simulator, error) {
	if len(cfg.Models) == 0 {
		return nil, errors.New("simulator: no models configured")
	}
	for model, kind := range cfg.Models {
		owner, name, ok := strings.Cut(model, "/")
		if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
			return nil, fmt.Errorf("simulator: model %q is not owner/name", model)
		}
		if kind != kindImage && kind != kindVideo {
			return nil, fmt.Errorf("simulator: model %s has kind %q, want %q or %q", model, kind, kindImage, kindVideo)
		}
	}
	for model, v := range cfg.Versions {
		if _, ok := cfg.Models[model]; !ok {
			return nil, fmt.Errorf("simulator: a version is pinned for %s, which is not a model", model)
		}
		if _, err := hex.DecodeString(v); err != nil || len(v) != 64 {
			return nil, fmt.Errorf("simulator: version %q of %s is not 64 hex digits", v, model)
		}
	}
	base := strings.TrimRight(cfg.BaseURL, "/")
	if base != "" {
		u, err := url.Parse(base)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("simulator: base URL %q is not an absolute http(s) URL", cfg.BaseURL)
		}
	}
	if err := cfg.FFmpeg.Available(); err != nil {
		return nil, fmt.Errorf("simulator: %w", err)
	}
	if cfg.FontFile == "" {
		cfg.FontFile = ffmpeg.DefaultFontFile
	}
	if _, err := os.Stat(cfg.FontFile); err != nil {
		return nil, fmt.Errorf("simulator: font (install it with `apt-get install fonts-dejavu-core`): %w", err)
	}
	if cfg.BodyReadTimeout <= 0 {
		cfg.BodyReadTimeout = defaultBodyReadTimeout
	}
	if cfg.MaxConcurrentRenders <= 0 {
		cfg.MaxConcurrentRenders = defaultMaxConcurrentRenders
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Persist && cfg.WorkDir == "" {
		return nil, errors.New("simulator: Persist needs a WorkDir that outlives the simulator")
	}
	owns := false
	if cfg.WorkDir == "" {
		dir, err := os.MkdirTemp("", "mediagen-simulator-")
		if err != nil {
			return nil, fmt.Errorf("simulator: work dir: %w", err)
		}
		cfg.WorkDir, owns = dir, true
	} else if err := os.MkdirAll(cfg.WorkDir, 0o755); err != nil {
		return nil, fmt.Errorf("simulator: work dir: %w", err)
	}

	_, falKey, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("simulator: fal signing key: %w", err)
	}
	ctx, stop := context.WithCancel(context.Background())
	s := &Simulator{
		falKey:      falKey,
		cfg:         cfg,
		baseURL:     base,
		ownsWorkDir: owns,
		log:         log.With("component", "simulator"),
		slots:       make(chan struct{}, cfg.MaxConcurrentRenders),
		clock:       clock.Or(cfg.Clock),
		webhooks:    &http.Client{Timeout: webhookTimeout},
		ctx:         ctx,
		stop:        stop,
		predictions: map[string]*prediction{},
	}
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("POST /v1/models/{owner}/{name}/predictions", s.authed(s.handleCreateForModel))
	s.mux.HandleFunc("POST /v1/predictions", s.authed(s.handleCreateForVersion))
	s.mux.HandleFunc("GET /v1/predictions", s.authed(s.handleList))
	s.mux.HandleFunc("GET /v1/predictions/{id}", s.authed(handlePrediction(s.Lookup)))
	s.mux.HandleFunc("POST /v1/predictions/{id}/cancel", s.authed(handlePrediction(s.cancelPrediction)))
	s.mux.HandleFunc("GET /v1/models/{owner}/{name}", s.authed(s.handleModel))
	s.mux.HandleFunc("GET /v1/models/{owner}/{name}/versions/{version}", s.authed(s.handleModel))
	s.mux.HandleFunc("GET /v1/models", s.authed(s.handleListModels))
	s.mux.HandleFunc("POST /v1/files", s.authed(s.handleCreateFile))
	s.mux.HandleFunc("GET /v1/files/{id}", s.authed(s.handleGetFile))
	s.mux.HandleFunc("GET /v1/files", s.authed(s.handleListFiles))
	s.mux.HandleFunc("GET /v1/hardware", s.authed(handleHardware))
	s.mux.HandleFunc("GET /v1/webhooks/default/secret", s.authed(s.handleWebhookSecret))
	s.mux.HandleFunc("GET /files/{id}/{name}", s.handleFile)
	s.mountFal()
	s.mountFalMore()
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeDetail(w, http.StatusNotFound, fmt.Sprintf("no route for %s %s", r.Method, r.URL.Path))
	})
	if cfg.Persist {
		if err := s.load(); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// ServeHTTP serves the protocol.
func (s *Simulator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Body != nil && r.Body != http.NoBody {
		// The body must arrive within BodyReadTimeout; the deadline is lifted
		// once it has, so a create that waits for its job (Prefer: wait)
		// keeps its connection.
		rc := http.NewResponseController(w)
		if rc.SetReadDeadline(time.Now().Add(s.cfg.BodyReadTimeout)) == nil {
			r.Body = &deadlineBody{ReadCloser: r.Body, lift: func() { rc.SetReadDeadline(time.Time{}) }}
		}
	}
	s.mux.ServeHTTP(w, r)
}

// deadlineBody lifts the read deadline at the end of the body.
type deadlineBody struct {
	io.ReadCloser
	lift   func()
	lifted bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.lifted {
		b.lifted = true
		b.lift()
	}
	return n, err
}

// bodyProblem answers a body that could not be read: 408 (and the
// connection closed) when it did not arrive in time, 413 when too large,
// false when neither.
func bodyProblem(w http.ResponseWriter, err error, answer func(status int, detail string)) bool {
	var tooBig *http.MaxBytesError
	var netErr net.Error
	switch {
	case errors.As(err, &netErr) && netErr.Timeout():
		w.Header().Set("Connection", "close")
		answer(http.StatusRequestTimeout, "the body did not arrive in time")
	case errors.As(err, &tooBig):
		answer(http.StatusRequestEntityTooLarge, fmt.Sprintf("body is over %d bytes", maxBodyBytes))
	default:
		return false
	}
	return true
}

// WorkDir is where outputs are written.
func (s *Simulator) WorkDir() string { return s.cfg.WorkDir }

// Close stops every job (they end failed, without webhooks) and waits for
// them. Later creates answer 503. Safe to call more than once.
func (s *Simulator) Close() {
	s.closer.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		s.stop()
		s.jobs.Wait()
		s.webhooks.CloseIdleConnections()
		if s.ownsWorkDir {
			if err := os.RemoveAll(s.cfg.WorkDir); err != nil {
				s.log.Warn("remove work dir", "dir", s.cfg.WorkDir, "error", err)
			}
		}
	})
}

func (s *Simulator) authed(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.Token != "" {
			token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(token), []byte(s.cfg.Token)) != 1 {
				w.Header().Set("WWW-Authenticate", "Bearer")
				writeDetail(w, http.StatusUnauthorized, "You did not pass a valid authentication token")
				return
			}
		}
		h(w, r)
	}
}

// createRequest is the body of both create routes.
type createRequest struct {
	Version             string          `json:"version"`
	Input               json.RawMessage `json:"input"`
	Webhook             string          `json:"webhook"`
	WebhookEventsFilter []string        `json:"webhook_events_filter"`
}

func (s *Simulator) handleCreateForModel(w http.ResponseWriter, r *http.Request) {
	model := r.PathValue("owner") + "/" + r.PathValue("name")
	if _, ok := s.cfg.Models[model]; !ok {
		writeDetail(w, http.StatusNotFound, fmt.Sprintf("model %s not found", model))
		return
	}
	req, ok := readCreateRequest(w, r)
	if !ok {
		return
	}
	s.create(w, r, model, req)
}

func (s *Simulator) handleCreateForVersion(w http.ResponseWriter, r *http.Request) {
	req, ok := readCreateRequest(w, r)
	if !ok {
		return
	}
	if req.Version == "" {
		writeDetail(w, http.StatusUnprocessableEntity, "version is required")
		return
	}
	// A bare version id (as the official clients send it), or
	// "owner/name:<version id>": the simulator has one version per model.
	model, ok := s.modelOfVersion(req.Version)
	if !ok {
		writeDetail(w, http.StatusNotFound, fmt.Sprintf("version %s not found", req.Version))
		return
	}
	s.create(w, r, model, req)
}

func readCreateRequest(w http.ResponseWriter, r *http.Request) (createRequest, bool) {
	var req createRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err := dec.Decode(&req); err != nil {
		if bodyProblem(w, err, func(status int, detail string) { writeDetail(w, status, detail) }) {
			return req, false
		}
		writeDetail(w, http.StatusBadRequest, "body is not a valid JSON object: "+err.Error())
		return req, false
	}
	if dec.More() {
		writeDetail(w, http.StatusBadRequest, "body has data after the JSON object")
		return req, false
	}
	return req, true
}

func (s *Simulator) create(w http.ResponseWriter, r *http.Request, model string, req createRequest) {
	s.countCreate(model)
	if len(req.Input) == 0 || string(req.Input) == "null" {
		writeDetail(w, http.StatusUnprocessableEntity, "input is required")
		return
	}
	if f, ok := s.takeFault(FaceReplicate, model, false); ok {
		writeDetail(w, f.Status, "simulated fault: the create was refused")
		return
	}
	p, created, refused := s.start(r, model, req.Input, req.Webhook, req.WebhookEventsFilter, false, "")
	if refused != nil {
		refused.writeReplicate(w)
		return
	}
	if f, ok := s.takeFault(FaceReplicate, model, true); ok && s.misanswer(w, r, f) {
		// The job runs, but the answer is lost: a 5xx or a hang.
		return
	}
	// Without Prefer: wait the answer is the prediction as it was made
	// (starting), as the provider answers a create however fast its job
	// then runs.
	view := created
	if wait, ok := preferWait(r.Header.Get("Prefer")); ok {
		waited, stop := clock.After(s.clock, wait)
		select {
		case <-p.done:
		case <-waited:
		case <-r.Context().Done():
		}
		stop()
		view, _ = s.Lookup(created.ID)
	}
	writeJSON(w, http.StatusCreated, view)
}

// preferWait reads "Prefer: wait" (60 s, the most the provider waits) or
// "Prefer: wait=N".
func preferWait(h string) (time.Duration, bool) {
	for _, part := range strings.Split(h, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		if strings.TrimSpace(k) != "wait" {
			continue
		}
		if v == "" {
			return 60 * time.Second, true
		}
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n >= 1 && n <= 60 {
			return time.Duration(n) * time.Second, true
		}
	}
	return 0, false
}

// start validates an input and starts its job, or says why not.
func (s *Simulator) start(r *http.Request, model string, rawInput json.RawMessage, hook string, events []string, fal bool, app string) (*prediction, Prediction, *refusal) {
	var input map[string]any
	if err := json.Unmarshal(rawInput, &input); err != nil || input == nil {
		return nil, Prediction{}, refuse(http.StatusUnprocessableEntity, "input must be a JSON object")
	}
	if bad := typeErrors(s.cfg.Inputs[model], input); len(bad) > 0 {
		return nil, Prediction{}, &refusal{status: http.StatusUnprocessableEntity, detail: "Input validation failed", fields: bad}
	}
	prompt, _ := input["prompt"].(string)
	if !s.takesPrompt(model) {
		// A model without a prompt (an upscaler, say) renders its name.
		if prompt == "" {
			prompt = model
		}
	} else if strings.TrimSpace(prompt) == "" {
		return nil, Prediction{}, &refusal{status: http.StatusUnprocessableEntity, detail: "Input validation failed",
			fields: []fieldError{{Field: "prompt", Description: "prompt is required (a non-empty string)"}}}
	}
	if strings.Contains(prompt, MarkerRefuse) {
		return nil, Prediction{}, &refusal{status: http.StatusUnprocessableEntity, detail: "Input validation failed",
			fields: []fieldError{{Field: "prompt", Description: SimulatedRefusal}}}
	}
	job := job{model: model, kind: s.cfg.Models[model], prompt: prompt}
	var err error
	if job.kind == kindVideo {
		job.video, err = parseVideoSpec(input)
		_, hasDuration := input["duration"]
		_, hasSeconds := input["seconds"]
		if secs := s.cfg.ClipSeconds[model]; secs > 0 && !hasDuration && !hasSeconds {
			job.video.Seconds = secs
		}
	} else {
		job.image, err = parseImageSpec(input)
	}
	if err != nil {
		return nil, Prediction{}, refuse(http.StatusUnprocessableEntity, err.Error())
	}
	for _, e := range events {
		if !slices.Contains([]string{eventStart, eventOutput, eventLogs, eventCompleted}, e) {
			return nil, Prediction{}, refuse(http.StatusUnprocessableEntity, fmt.Sprintf("webhook_events_filter: %q is not one of start, output, logs, completed", e))
		}
	}
	if hook != "" {
		u, err := url.Parse(hook)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, Prediction{}, refuse(http.StatusUnprocessableEntity, "webhook must be an absolute http(s) URL")
		}
	}
	id, err := newID()
	if err != nil {
		return nil, Prediction{}, refuse(http.StatusInternalServerError, "could not make a prediction id")
	}
	base := s.baseURL
	if base == "" {
		base = requestBaseURL(r)
	}
	p := &prediction{
		view: Prediction{
			ID: id, Model: model, Version: s.versionOf(model), Input: rawInput, Status: statusStarting,
			CreatedAt: timestamp(s.clock.Now()), Source: "api", Webhook: hook, WebhookEventsFilter: events,
			URLs: PredictionURLs{Get: base + "/v1/predictions/" + id, Cancel: base + "/v1/predictions/" + id + "/cancel"},
		},
		baseURL: base, webhook: hook, events: events, job: job, fal: fal, app: app, done: make(chan struct{}),
	}
	ctx, cancel := context.WithCancel(s.ctx)
	p.cancel = cancel
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		cancel()
		return nil, Prediction{}, refuse(http.StatusServiceUnavailable, "the simulator is shutting down")
	}
	created := p.view
	s.predictions[id] = p
	s.order = append(s.order, id)
	s.save(id, p)
	s.broadcast()
	s.jobs.Add(1)
	s.mu.Unlock()

	s.log.Info("prediction created", "prediction", id, "model", model, "kind", job.kind, "fal", fal)
	go func() {
		defer cancel()
		s.sendWebhook(id, eventStart)
		s.runJob(ctx, id, job)
	}()
	return p, created, nil
}

// takesPrompt tells whether a model takes a prompt: every model unless its
// published inputs (Config.Inputs) have none.
func (s *Simulator) takesPrompt(model string) bool {
	types, ok := s.cfg.Inputs[model]
	if !ok {
		return true
	}
	_, has := types["prompt"]
	return has
}

// versionOf is a model's one version id.
func (s *Simulator) versionOf(model string) string {
	if v := s.cfg.Versions[model]; v != "" {
		return v
	}
	return versionOf(model)
}

// modelOfVersion finds the model of a bare version id or owner/name:id.
func (s *Simulator) modelOfVersion(v string) (string, bool) {
	if model, id, ok := strings.Cut(v, ":"); ok {
		_, known := s.cfg.Models[model]
		return model, known && id == s.versionOf(model)
	}
	if _, ok := s.cfg.Models[v]; ok {
		return v, true // owner/name, as older clients send it
	}
	for model := range s.cfg.Models {
		if s.versionOf(model) == v {
			return model, true
		}
	}
	return "", false
}

func (s *Simulator) handleList(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	results := make([]Prediction, 0, 100)
	for i := len(s.order) - 1; i >= 0 && len(results) < 100; i-- {
		if p, ok := s.predictions[s.order[i]]; ok && !p.fal {
			results = append(results, p.view)
		}
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{"previous": nil, "next": nil, "results": results})
}

// handleModel publishes a model's (or its one version's) input schema, as
// an OpenAPI document like the provider's.
func (s *Simulator) handleModel(w http.ResponseWriter, r *http.Request) {
	model := r.PathValue("owner") + "/" + r.PathValue("name")
	if _, ok := s.cfg.Models[model]; !ok {
		writeDetail(w, http.StatusNotFound, fmt.Sprintf("model %s not found", model))
		return
	}
	view := s.modelView(model)
	if v := r.PathValue("version"); v != "" {
		if v != s.versionOf(model) {
			writeDetail(w, http.StatusNotFound, fmt.Sprintf("version %s of %s not found", v, model))
			return
		}
		writeJSON(w, http.StatusOK, view["latest_version"])
		return
	}
	writeJSON(w, http.StatusOK, view)
}

// modelView is a model as GET /v1/models/{owner}/{name} shows it, with its
// one version as latest_version.
func (s *Simulator) modelView(model string) map[string]any {
	kind := s.cfg.Models[model]
	version := map[string]any{"id": s.versionOf(model), "created_at": timestamp(time.Unix(0, 0)),
		"cog_version": "0.9.0", "openapi_schema": openAPISchema(s.cfg.Inputs[model], kind, s.takesPrompt(model))}
	owner, name, _ := strings.Cut(model, "/")
	return map[string]any{"url": "https://replicate.com/" + model, "owner": owner, "name": name,
		"description": "simulated " + kind + " model", "visibility": "public", "run_count": 0,
		"github_url": nil, "paper_url": nil, "license_url": nil, "cover_image_url": nil, "default_example": nil,
		"latest_version": version}
}

func (s *Simulator) handleWebhookSecret(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"key": s.cfg.WebhookSecret})
}

// handlePrediction answers a route of one prediction ({id}) with what do
// returns of it: its view, or 404 when there is no such prediction.
func handlePrediction(do func(id string) (Prediction, bool)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		view, ok := do(r.PathValue("id"))
		if !ok {
			writeDetail(w, http.StatusNotFound, "prediction not found")
			return
		}
		writeJSON(w, http.StatusOK, view)
	}
}

// cancelPrediction cancels a prediction not final yet; false when there is
// no such prediction.
func (s *Simulator) cancelPrediction(id string) (Prediction, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.predictions[id]
	if !ok {
		return Prediction{}, false
	}
	if !final(p.view.Status) {
		p.view.Status = StatusCanceled
		p.view.CompletedAt = ptr(timestamp(s.clock.Now()))
		p.view.Logs += "canceled\n"
		s.markDone(p)
		s.broadcast()
		s.save(id, p)
		// The job sees its context end, stops ffmpeg, cleans up and sends
		// the webhook.
		p.cancel()
		s.log.Info("prediction canceled", "prediction", id)
	}
	return p.view, true
}

// contentTypes are the output types by file extension.
var contentTypes = map[string]string{
	".mp4":  "video/mp4",
	".png":  "image/png",
	".jpg":  "image/jpeg",
	".webp": "image/webp",
}

func (s *Simulator) handleFile(w http.ResponseWriter, r *http.Request) {
	id, name := r.PathValue("id"), r.PathValue("name")
	s.mu.Lock()
	var path string
	if p, ok := s.predictions[id]; ok && (p.view.Status == statusSucceeded || p.view.Status == statusProcessing) {
		path = p.files[name] // only listed outputs (published so far): no path tricks
	}
	s.mu.Unlock()
	if path == "" {
		writeDetail(w, http.StatusNotFound, "file not found")
		return
	}
	f, err := os.Open(path)
	if err != nil {
		s.log.Warn("open output", "prediction", id, "file", name, "error", err)
		writeDetail(w, http.StatusNotFound, "file not found")
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		writeDetail(w, http.StatusInternalServerError, "file unreadable")
		return
	}
	w.Header().Set("Content-Type", contentTypes[filepath.Ext(name)])
	http.ServeContent(w, r, name, st.ModTime(), f)
}

// newID makes an id shaped like the provider's: 26 lowercase base32 chars.
func newID() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("prediction id: %w", err)
	}
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b)), nil
}

func requestBaseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		status, body = http.StatusInternalServerError, []byte(`{"detail":"could not encode the answer"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}

// writeDetail answers an error as the provider does: problem+json.
func writeDetail(w http.ResponseWriter, status int, detail string) {
	body, _ := json.Marshal(map[string]any{"title": http.StatusText(status), "detail": detail, "status": status})
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}

// progressLine is a progress line at n % as tqdm prints it in a model's
// logs: "  45%|████▌     | 45/100".
func progressLine(n int) string {
	n = min(max(n, 0), 100)
	bar := strings.Repeat("█", n/10)
	if n%10 >= 5 {
		bar += "▌"
	}
	return fmt.Sprintf("%3d%%|%s%s| %d/100\n", n, bar, strings.Repeat(" ", 10-len([]rune(bar))), n)
}

// progressMarker reads markerProgress from a prompt.
func progressMarker(prompt string) (int, bool) {
	_, rest, ok := strings.Cut(prompt, markerProgress)
	if !ok {
		return 0, false
	}
	num, _, ok := strings.Cut(rest, "]")
	n, err := strconv.Atoi(num)
	if !ok || err != nil || n < 0 || n > 100 {
		return 0, false
	}
	return n, true
}
