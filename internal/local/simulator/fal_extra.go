package simulator

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"strings"
	"time"
)

// The fal face's other hosts, beside the queue under /fal: a base URL of
// <simulator>/fal-run stands for https://fal.run (the synchronous run),
// <simulator>/fal-rest for https://rest.fal.ai (storage).
const (
	falRunPrefix  = "/fal-run"
	falRestPrefix = "/fal-rest"
)

// mountFalMore serves fal's synchronous run, its queue status stream and
// its storage.
func (s *Simulator) mountFalMore() {
	s.mux.HandleFunc("POST "+falRunPrefix+"/{app...}", s.falAuthed(s.handleFalRun))
	s.mux.HandleFunc("GET /fal/{owner}/{alias}/requests/{id}/status/stream", s.falAuthed(s.handleFalStatusStream))
	s.mux.HandleFunc("POST "+falRestPrefix+"/storage/upload/initiate", s.falAuthed(s.handleFalInitiateUpload))
	s.mux.HandleFunc("PUT "+falRestPrefix+"/storage/upload/{id}", s.handleFalPutUpload)
	s.mux.HandleFunc("GET /uploads/{id}/{name}", s.handleUploadFile)
}

// falApp reads the app id of a fal path ({app...}): its model
// (owner/alias) or a 404 answered.
func (s *Simulator) falApp(w http.ResponseWriter, r *http.Request) (string, bool) {
	app := strings.Trim(r.PathValue("app"), "/")
	parts := strings.Split(app, "/")
	if len(parts) < 2 {
		writeJSON(w, http.StatusNotFound, map[string]string{"detail": "Application not found"})
		return "", false
	}
	model := parts[0] + "/" + parts[1]
	if _, ok := s.cfg.Models[model]; !ok {
		writeJSON(w, http.StatusNotFound, map[string]string{"detail": fmt.Sprintf("Application %q not found", app)})
		return "", false
	}
	return model, true
}

// handleFalRun is fal.run: the request runs and the answer is its result
// itself (not the queue's envelope), once it is there.
func (s *Simulator) handleFalRun(w http.ResponseWriter, r *http.Request) {
	model, ok := s.falApp(w, r)
	if !ok {
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
	p, _, refused := s.start(r, model, raw, "", nil, true, model)
	if refused != nil {
		refused.writeFal(w)
		return
	}
	select {
	case <-p.done:
	case <-r.Context().Done():
		return // the client left; the request runs on, as on fal
	}
	view, _ := s.Lookup(p.view.ID)
	s.writeFalResult(w, view)
}

// writeFalResult answers a request's result: its payload once succeeded,
// else the error fal answers.
func (s *Simulator) writeFalResult(w http.ResponseWriter, view Prediction) {
	w.Header().Set("X-Fal-Request-Id", view.ID)
	switch view.Status {
	case statusSucceeded:
		writeJSON(w, http.StatusOK, s.falPayload(view))
	case statusFailed:
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"detail": deref(view.Error)})
	case StatusCanceled:
		writeJSON(w, http.StatusBadRequest, map[string]any{"detail": "Request was cancelled"})
	default:
		writeJSON(w, http.StatusBadRequest, map[string]any{"detail": "Request is still in progress"})
	}
}

// handleFalStatusStream streams a request's queue status as server-sent
// events: the status (as GET .../status answers it) each time it changes,
// the stream ending after COMPLETED.
func (s *Simulator) handleFalStatusStream(w http.ResponseWriter, r *http.Request) {
	view, ok := s.falRequest(w, r)
	if !ok {
		return
	}
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	var last map[string]any
	for {
		changed := s.changes()
		view, _ = s.Lookup(view.ID)
		body := s.falStatus(r, view)
		if !reflect.DeepEqual(body, last) {
			raw, _ := json.Marshal(body)
			if _, err := fmt.Fprintf(w, "data: %s\n\n", raw); err != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
			last = body
		}
		if body["status"] == "COMPLETED" {
			return
		}
		select {
		case <-changed:
		case <-r.Context().Done():
			return
		case <-s.ctx.Done():
			return
		}
	}
}

// changes is a channel closed at the next change of any prediction.
func (s *Simulator) changes() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.changed == nil {
		s.changed = make(chan struct{})
	}
	return s.changed
}

// broadcast wakes the status streams; the caller holds s.mu.
func (s *Simulator) broadcast() {
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
}

// pendingUpload is an upload fal's storage initiated, waiting for its PUT.
type pendingUpload struct {
	token, name, contentType string
	expires                  time.Time
}

// uploadURLLifetime is how long an initiated upload's URL takes its PUT.
const uploadURLLifetime = time.Hour

// handleFalInitiateUpload starts an upload as rest.fal.ai's
// /storage/upload/initiate does: {"content_type","file_name"} answers
// {"upload_url","file_url"}; the file is PUT to upload_url (which carries
// its own authorization), then served at file_url.
func (s *Simulator) handleFalInitiateUpload(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ContentType string `json:"content_type"`
		FileName    string `json:"file_name"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&req); err != nil {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"detail": "the body must be {\"content_type\", \"file_name\"}"})
		return
	}
	name := path.Base(strings.ReplaceAll(req.FileName, "\\", "/"))
	if name == "" || name == "." || name == "/" {
		name = "file"
	}
	if _, _, err := mime.ParseMediaType(req.ContentType); err != nil {
		req.ContentType = "application/octet-stream"
	}
	id, err := newID()
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"detail": err.Error()})
		return
	}
	tok := make([]byte, 16)
	rand.Read(tok)
	p := pendingUpload{token: hex.EncodeToString(tok), name: name, contentType: req.ContentType, expires: s.clock.Now().Add(uploadURLLifetime)}
	s.mu.Lock()
	if s.pending == nil {
		s.pending = map[string]pendingUpload{}
	}
	s.pending[id] = p
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]string{
		"upload_url": s.apiBase(r) + falRestPrefix + "/storage/upload/" + id + "?token=" + p.token,
		"file_url":   s.filesRoot(r) + "/uploads/" + id + "/" + name,
	})
}

// filesRoot is where files are served (FilesBaseURL, else the API's).
func (s *Simulator) filesRoot(r *http.Request) string {
	if s.cfg.FilesBaseURL != "" {
		return strings.TrimRight(s.cfg.FilesBaseURL, "/")
	}
	return s.apiBase(r)
}

// handleFalPutUpload takes the bytes of an initiated upload.
func (s *Simulator) handleFalPutUpload(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	s.mu.Lock()
	p, ok := s.pending[id]
	s.mu.Unlock()
	if !ok || subtle.ConstantTimeCompare([]byte(r.URL.Query().Get("token")), []byte(p.token)) != 1 || !s.clock.Now().Before(p.expires) {
		writeJSON(w, http.StatusForbidden, map[string]string{"detail": "the upload URL is not valid (or has expired)"})
		return
	}
	size, sum, err := s.storeUpload(id, io.LimitReader(http.MaxBytesReader(w, r.Body, maxUploadBytes+1), maxUploadBytes+1))
	if err != nil {
		if !bodyProblem(w, err, func(status int, detail string) { writeJSON(w, status, map[string]string{"detail": detail}) }) {
			writeJSON(w, http.StatusInternalServerError, map[string]string{"detail": "the upload could not be kept"})
		}
		return
	}
	if size > maxUploadBytes {
		os.Remove(filepath.Join(s.uploadsDir(), id))
		writeJSON(w, http.StatusRequestEntityTooLarge, map[string]string{"detail": fmt.Sprintf("the file is over %d bytes", maxUploadBytes)})
		return
	}
	now := s.clock.Now()
	f := File{ID: id, Name: p.name, ContentType: p.contentType, Size: size, ETag: `"` + sum[:32] + `"`,
		Checksums: map[string]string{"sha256": sum}, Metadata: json.RawMessage("{}"),
		CreatedAt: timestamp(now), ExpiresAt: timestamp(now.Add(uploadLifetime)),
		URLs: map[string]string{"get": s.filesRoot(r) + "/uploads/" + id + "/" + p.name}}
	raw, _ := json.Marshal(f)
	if err := os.WriteFile(filepath.Join(s.uploadsDir(), id+".json"), raw, 0o600); err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"detail": "the upload could not be kept"})
		return
	}
	s.mu.Lock()
	delete(s.pending, id)
	s.mu.Unlock()
	s.log.Info("file uploaded", "file", id, "size", size, "content_type", p.contentType, "fal", true)
	w.Header().Set("ETag", f.ETag)
	w.WriteHeader(http.StatusOK)
}

// handleUploadFile serves an uploaded file by its name, without
// authentication, as a CDN does.
func (s *Simulator) handleUploadFile(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	f, ok := s.Upload(id)
	if !ok || f.Name != r.PathValue("name") {
		writeDetail(w, http.StatusNotFound, "file not found")
		return
	}
	file, err := os.Open(filepath.Join(s.uploadsDir(), id))
	if err != nil {
		writeDetail(w, http.StatusNotFound, "file not found")
		return
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		writeDetail(w, http.StatusInternalServerError, "file unreadable")
		return
	}
	w.Header().Set("Content-Type", f.ContentType)
	http.ServeContent(w, r, "", st.ModTime(), file)
}
