package simulator

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/clock"
)

// Faces a fault applies to.
const (
	FaceReplicate = "replicate"
	faceFal       = "fal"
)

// Fault makes the next creates of a face misbehave as a provider can. It is
// used once per create it matches, Count times (default once).
type Fault struct {
	Face string
	// Model limits it to one model ("owner/name"); empty matches every one.
	Model string
	// Status is the HTTP status answered (e.g. 503, 500).
	Status int
	// AfterCreate starts the job before answering: the answer is lost
	// although a paid job runs. Hang, when set, holds the answer that long
	// first (a client's timeout fires), then answers Status; a 2xx Status
	// then gives the right answer, late (a slow provider).
	AfterCreate bool
	Hang        time.Duration
	Count       int
}

// Inject arms a fault.
func (s *Simulator) Inject(f Fault) {
	if f.Count <= 0 {
		f.Count = 1
	}
	if f.Status == 0 {
		f.Status = http.StatusInternalServerError
	}
	s.mu.Lock()
	s.faults = append(s.faults, f)
	s.mu.Unlock()
}

// takeFault uses up a fault armed for this create, before or after it runs.
func (s *Simulator) takeFault(face, model string, after bool) (Fault, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, f := range s.faults {
		if f.Face == face && (f.Model == "" || f.Model == model) && f.AfterCreate == after {
			s.faults[i].Count--
			if s.faults[i].Count <= 0 {
				s.faults = slices.Delete(s.faults, i, i+1)
			}
			return f, true
		}
	}
	return Fault{}, false
}

// misanswer loses the answer of a create that started its job, or only
// delays it when the fault's Status is a success: then it answers nothing
// and reports false, and the create answers as usual.
func (s *Simulator) misanswer(w http.ResponseWriter, r *http.Request, f Fault) (answered bool) {
	if f.Hang > 0 {
		hung, stop := clock.After(s.clock, f.Hang)
		select {
		case <-hung:
		case <-r.Context().Done():
		case <-s.ctx.Done():
		}
		stop()
	}
	if f.Status >= 200 && f.Status < 300 {
		return false
	}
	writeDetail(w, f.Status, "simulated fault: the answer was lost after the job started")
	return true
}

// Jobs counts the jobs ever created for a model ("owner/name"), on either
// face: what a provider would bill.
func (s *Simulator) Jobs(model string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, p := range s.predictions {
		if p.view.Model == model {
			n++
		}
	}
	return n
}

// Creates counts the create requests a model ("owner/name") received on
// either face, refused ones included: what a provider's logs would show.
func (s *Simulator) Creates(model string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.creates[model]
}

func (s *Simulator) countCreate(model string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.creates == nil {
		s.creates = map[string]int{}
	}
	s.creates[model]++
}

// Predictions lists snapshots of a model's jobs, oldest first.
func (s *Simulator) Predictions(model string) []Prediction {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Prediction
	for _, id := range s.order {
		if p := s.predictions[id]; p != nil && p.view.Model == model {
			out = append(out, p.view)
		}
	}
	return out
}

// refusal is a create the simulator does not take.
type refusal struct {
	status int
	detail string
	fields []fieldError
}

type fieldError struct {
	Field       string `json:"field"`
	Type        string `json:"type,omitempty"`
	Description string `json:"description"`
}

func refuse(status int, detail string) *refusal { return &refusal{status: status, detail: detail} }

// writeReplicate answers as Replicate does: problem+json with the invalid
// fields.
func (r *refusal) writeReplicate(w http.ResponseWriter) {
	body := map[string]any{"title": http.StatusText(r.status), "detail": r.detail, "status": r.status}
	if len(r.fields) > 0 {
		body["title"] = "Input validation failed"
		parts := make([]string, len(r.fields))
		for i, f := range r.fields {
			parts[i] = f.Field + ": " + f.Description
		}
		body["detail"] = strings.Join(parts, "\n")
		body["invalid_fields"] = r.fields
	}
	raw, _ := json.Marshal(body)
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(r.status)
	w.Write(append(raw, '\n'))
}

// writeFal answers as a fal app does: FastAPI's detail.
func (r *refusal) writeFal(w http.ResponseWriter) {
	var body any = map[string]any{"detail": r.detail}
	if len(r.fields) > 0 {
		detail := make([]map[string]any, len(r.fields))
		for i, f := range r.fields {
			detail[i] = map[string]any{"loc": []string{"body", f.Field}, "msg": f.Description, "type": "type_error"}
		}
		body = map[string]any{"detail": detail}
	}
	writeJSON(w, r.status, body)
}

// typeErrors checks input values against the published types.
func typeErrors(types map[string]string, input map[string]any) []fieldError {
	var out []fieldError
	for _, field := range slices.Sorted(maps.Keys(types)) {
		v, ok := input[field]
		if !ok || v == nil {
			continue
		}
		if given := jsonType(v); !typeMatches(types[field], v) {
			out = append(out, fieldError{Field: field, Type: "invalid_type",
				Description: fmt.Sprintf("Invalid type. Expected: %s, given: %s", types[field], given)})
		}
	}
	return out
}

func typeMatches(want string, v any) bool {
	switch want {
	case "integer":
		f, ok := v.(float64)
		return ok && f == math.Trunc(f)
	case "number":
		_, ok := v.(float64)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	}
	return true
}

func jsonType(v any) string {
	switch x := v.(type) {
	case string:
		return "string"
	case bool:
		return "boolean"
	case float64:
		if x == math.Trunc(x) {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	}
	return "object"
}

// openAPISchema is a model version's schema as the provider publishes it:
// components.schemas.Input with each field's type.
// Output is what the model returns: an image model a list of URIs (one
// per image), a video model one URI.
func openAPISchema(types map[string]string, kind string, prompt bool) map[string]any {
	props := map[string]any{}
	for _, f := range slices.Sorted(maps.Keys(types)) {
		p := map[string]any{"type": types[f], "title": f}
		if types[f] == "array" {
			p["items"] = map[string]any{"type": "string", "format": "uri"}
		}
		props[f] = p
	}
	required := []string{}
	if prompt {
		if _, ok := props["prompt"]; !ok {
			props["prompt"] = map[string]any{"type": "string", "title": "Prompt"}
		}
		required = append(required, "prompt")
	}
	return map[string]any{
		"openapi": "3.0.2", "info": map[string]any{"title": "Cog", "version": "0.1.0"},
		"components": map[string]any{"schemas": map[string]any{
			"Input":  map[string]any{"type": "object", "title": "Input", "required": required, "properties": props},
			"Output": outputSchema(kind),
		}},
	}
}

// ---- fal face ----

// mountFal serves fal's queue under /fal: a fal base URL of
// <simulator>/fal stands for https://queue.fal.run.
func (s *Simulator) mountFal() {
	s.mux.HandleFunc("GET /fal/.well-known/jwks.json", s.handleJWKS)
	s.mux.HandleFunc("POST /fal/{app...}", s.falAuthed(s.handleFalSubmit))
	s.mux.HandleFunc("GET /fal/{owner}/{alias}/requests/{id}/status", s.falAuthed(s.handleFalStatus))
	s.mux.HandleFunc("GET /fal/{owner}/{alias}/requests/{id}", s.falAuthed(s.handleFalResult))
	s.mux.HandleFunc("PUT /fal/{owner}/{alias}/requests/{id}/cancel", s.falAuthed(s.handleFalCancel))
}

func (s *Simulator) falAuthed(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.Token != "" {
			key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Key ")
			if !ok || key != s.cfg.Token {
				writeJSON(w, http.StatusUnauthorized, map[string]string{"detail": "No user found for Key ID and Secret"})
				return
			}
		}
		h(w, r)
	}
}

func (s *Simulator) falBase(r *http.Request) string {
	base := s.baseURL
	if base == "" {
		base = requestBaseURL(r)
	}
	return base + "/fal"
}

func (s *Simulator) handleFalSubmit(w http.ResponseWriter, r *http.Request) {
	app := strings.Trim(r.PathValue("app"), "/")
	parts := strings.Split(app, "/")
	if len(parts) < 2 {
		writeJSON(w, http.StatusNotFound, map[string]string{"detail": "Application not found"})
		return
	}
	model := parts[0] + "/" + parts[1]
	if _, ok := s.cfg.Models[model]; !ok {
		writeJSON(w, http.StatusNotFound, map[string]string{"detail": fmt.Sprintf("Application %q not found", app)})
		return
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		if !bodyProblem(w, err, func(status int, detail string) { writeJSON(w, status, map[string]string{"detail": detail}) }) {
			writeJSON(w, http.StatusBadRequest, map[string]string{"detail": "the body could not be read"})
		}
		return
	}
	s.countCreate(model)
	if f, ok := s.takeFault(faceFal, model, false); ok {
		writeJSON(w, f.Status, map[string]string{"detail": "simulated fault: the submit was refused"})
		return
	}
	p, _, refused := s.start(r, model, raw, r.URL.Query().Get("fal_webhook"), nil, true, model)
	if refused != nil {
		refused.writeFal(w)
		return
	}
	if f, ok := s.takeFault(faceFal, model, true); ok && s.misanswer(w, r, f) {
		return
	}
	// The queue's URLs are under the app's owner/alias, without its
	// sub-path: a client must use these rather than build its own.
	base := s.falBase(r) + "/" + model + "/requests/" + p.view.ID
	w.Header().Set("X-Fal-Request-Id", p.view.ID)
	writeJSON(w, http.StatusOK, map[string]any{"request_id": p.view.ID, "gateway_request_id": p.view.ID,
		"status": "IN_QUEUE", "queue_position": s.queuePosition(p.view.ID),
		"response_url": base, "status_url": base + "/status", "cancel_url": base + "/cancel"})
}

// falRequest finds a request of the fal face by its URL.
func (s *Simulator) falRequest(w http.ResponseWriter, r *http.Request) (Prediction, bool) {
	model := r.PathValue("owner") + "/" + r.PathValue("alias")
	s.mu.Lock()
	p, ok := s.predictions[r.PathValue("id")]
	var view Prediction
	if ok {
		ok = p.fal && p.app == model
		view = p.view
	}
	s.mu.Unlock()
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]string{"detail": "Request not found"})
	}
	return view, ok
}

// queuePosition counts the jobs still starting that were created before id.
func (s *Simulator) queuePosition(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, other := range s.order {
		if other == id {
			return n
		}
		if p := s.predictions[other]; p != nil && p.view.Status == statusStarting {
			n++
		}
	}
	return n
}

func (s *Simulator) handleFalStatus(w http.ResponseWriter, r *http.Request) {
	view, ok := s.falRequest(w, r)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, s.falStatus(r, view))
}

// falStatus is a request's queue status as fal shows it.
func (s *Simulator) falStatus(r *http.Request, view Prediction) map[string]any {
	base := s.falBase(r) + "/" + r.PathValue("owner") + "/" + r.PathValue("alias") + "/requests/" + view.ID
	body := map[string]any{"request_id": view.ID, "response_url": base, "status_url": base + "/status", "cancel_url": base + "/cancel"}
	switch view.Status {
	case statusStarting:
		body["status"], body["queue_position"] = "IN_QUEUE", s.queuePosition(view.ID)
	case statusProcessing:
		body["status"] = "IN_PROGRESS"
	default:
		body["status"] = "COMPLETED"
	}
	if r.URL.Query().Get("logs") == "1" {
		logs := []map[string]string{}
		for _, line := range strings.Split(strings.TrimSpace(view.Logs), "\n") {
			if line != "" {
				logs = append(logs, map[string]string{"message": line, "level": "INFO", "source": "user", "timestamp": view.CreatedAt})
			}
		}
		body["logs"] = logs
	}
	return body
}

func (s *Simulator) handleFalResult(w http.ResponseWriter, r *http.Request) {
	view, ok := s.falRequest(w, r)
	if !ok {
		return
	}
	s.writeFalResult(w, view)
}

// falPayload is a finished request's result: {"video": {...}} or
// {"images": [...]}, each file an object with its url.
func (s *Simulator) falPayload(view Prediction) map[string]any {
	var urls []string
	switch out := view.Output.(type) {
	case string:
		urls = []string{out}
	case []string:
		urls = out
	case []any:
		for _, u := range out {
			if str, ok := u.(string); ok {
				urls = append(urls, str)
			}
		}
	}
	if s.cfg.Models[view.Model] == kindVideo && len(urls) > 0 {
		return map[string]any{"video": map[string]any{"url": urls[0], "content_type": "video/mp4", "file_name": "0.mp4"}, "seed": 42}
	}
	images := make([]map[string]any, len(urls))
	for i, u := range urls {
		images[i] = map[string]any{"url": u, "content_type": contentTypes[extOf(u)], "file_name": u[strings.LastIndex(u, "/")+1:]}
	}
	return map[string]any{"images": images, "seed": 42}
}

func extOf(u string) string {
	if i := strings.LastIndex(u, "."); i >= 0 {
		return u[i:]
	}
	return ""
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func (s *Simulator) handleFalCancel(w http.ResponseWriter, r *http.Request) {
	view, ok := s.falRequest(w, r)
	if !ok {
		return
	}
	if final(view.Status) {
		writeJSON(w, http.StatusBadRequest, map[string]string{"status": "ALREADY_COMPLETED"})
		return
	}
	s.cancelPrediction(view.ID)
	writeJSON(w, http.StatusAccepted, map[string]string{"status": "CANCELLATION_REQUESTED"})
}

// FalPublicKey is the key the fal face's webhooks verify with.
func (s *Simulator) FalPublicKey() ed25519.PublicKey { return s.falKey.Public().(ed25519.PublicKey) }

func (s *Simulator) handleJWKS(w http.ResponseWriter, r *http.Request) {
	x := base64.RawURLEncoding.EncodeToString(s.FalPublicKey())
	writeJSON(w, http.StatusOK, map[string]any{"keys": []map[string]string{
		{"kty": "OKP", "crv": "Ed25519", "x": x, "kid": "sim-" + x[:8], "alg": "EdDSA", "use": "sig"}}})
}

// falUserID is the account the fal face's webhooks name.
const falUserID = "simulated-user"

// falWebhook is fal's callback body for a finished request.
func (s *Simulator) falWebhook(view Prediction) []byte {
	body := map[string]any{"request_id": view.ID, "gateway_request_id": view.ID}
	if view.Status == statusSucceeded {
		body["status"], body["payload"] = "OK", s.falPayload(view)
	} else {
		reason := deref(view.Error)
		if reason == "" {
			reason = "request " + view.Status
		}
		body["status"], body["error"] = "ERROR", reason
		body["payload"] = map[string]any{"detail": reason}
	}
	raw, _ := json.Marshal(body)
	return raw
}

// signFal sets fal's webhook headers: ED25519 over request id, user id,
// timestamp and the body's SHA-256, one per line.
func (s *Simulator) signFal(h http.Header, requestID string, body []byte, at time.Time) {
	ts := strconv.FormatInt(at.Unix(), 10)
	sum := sha256.Sum256(body)
	msg := strings.Join([]string{requestID, falUserID, ts, hex.EncodeToString(sum[:])}, "\n")
	h.Set("X-Fal-Webhook-Request-Id", requestID)
	h.Set("X-Fal-Webhook-User-Id", falUserID)
	h.Set("X-Fal-Webhook-Timestamp", ts)
	h.Set("X-Fal-Webhook-Signature", hex.EncodeToString(ed25519.Sign(s.falKey, []byte(msg))))
}

// post sends one webhook request; errors are logged, never retried: the
// caller also polls.
func (s *Simulator) post(target string, body []byte, sign func(http.Header), what string) {
	ctx, cancel := context.WithTimeout(s.ctx, webhookTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		s.log.Warn("webhook request", "what", what, "error", err)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "mediagen-simulator")
	sign(req.Header)
	resp, err := s.webhooks.Do(req)
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			s.log.Warn("webhook not delivered", "what", what, "error", err)
		}
		return
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode >= 300 {
		s.log.Warn("webhook refused", "what", what, "status", resp.StatusCode)
	}
}

// WebhookSecret is the secret the Replicate face signs its webhooks with
// (what GET /v1/webhooks/default/secret answers).
func (s *Simulator) WebhookSecret() string { return s.cfg.WebhookSecret }

// outputSchema is a model's published Output: what outputOf returns.
func outputSchema(kind string) map[string]any {
	uri := map[string]any{"type": "string", "format": "uri", "title": "Output"}
	if kind == kindVideo {
		return uri
	}
	return map[string]any{"type": "array", "title": "Output", "items": map[string]any{"type": "string", "format": "uri"}}
}
