package simulator

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// maxUploadBytes is the largest file POST /v1/files and fal's storage take
// (Replicate's limit, 100 MiB).
const maxUploadBytes = 100 << 20

// uploadLifetime is how long an uploaded file is kept (Replicate: 24 h).
const uploadLifetime = 24 * time.Hour

// File is an uploaded file as Replicate's files API shows it.
type File struct {
	ID          string            `json:"id"`
	Name        string            `json:"name"`
	ContentType string            `json:"content_type"`
	Size        int64             `json:"size"`
	ETag        string            `json:"etag"`
	Checksums   map[string]string `json:"checksums"`
	Metadata    json.RawMessage   `json:"metadata"`
	CreatedAt   string            `json:"created_at"`
	ExpiresAt   string            `json:"expires_at"`
	URLs        map[string]string `json:"urls"`
}

func (s *Simulator) uploadsDir() string { return filepath.Join(s.cfg.WorkDir, "uploads") }

// storeUpload keeps an upload's bytes under WorkDir/uploads/{id} and its
// record beside them, and reports its size and SHA-256.
func (s *Simulator) storeUpload(id string, body io.Reader) (int64, string, error) {
	if err := os.MkdirAll(s.uploadsDir(), 0o755); err != nil {
		return 0, "", fmt.Errorf("upload %s: %w", id, err)
	}
	f, err := os.Create(filepath.Join(s.uploadsDir(), id))
	if err != nil {
		return 0, "", fmt.Errorf("upload %s: %w", id, err)
	}
	sum := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, sum), body)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return 0, "", fmt.Errorf("upload %s: %w", id, err)
	}
	return n, hex.EncodeToString(sum.Sum(nil)), nil
}

// handleCreateFile takes a multipart upload as Replicate's POST /v1/files
// does: the file in the part "content" (its filename and type), optional
// JSON "metadata". The answer is the file, whose urls.get is what an input
// takes.
func (s *Simulator) handleCreateFile(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxUploadBytes+1<<20)
	mr, err := r.MultipartReader()
	if err != nil {
		writeDetail(w, http.StatusBadRequest, "the body must be multipart/form-data with a part named content: "+err.Error())
		return
	}
	id, err := newID()
	if err != nil {
		writeDetail(w, http.StatusInternalServerError, err.Error())
		return
	}
	file := File{ID: id, Metadata: json.RawMessage("{}")}
	got := false
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if !bodyProblem(w, err, func(status int, detail string) { writeDetail(w, status, detail) }) {
				writeDetail(w, http.StatusBadRequest, "the multipart body could not be read: "+err.Error())
			}
			return
		}
		switch part.FormName() {
		case "content":
			size, sum, err := s.storeUpload(id, io.LimitReader(part, maxUploadBytes+1))
			if err != nil {
				if !bodyProblem(w, err, func(status int, detail string) { writeDetail(w, status, detail) }) {
					writeDetail(w, http.StatusInternalServerError, err.Error())
				}
				return
			}
			if size > maxUploadBytes {
				os.Remove(filepath.Join(s.uploadsDir(), id))
				writeDetail(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the file is over %d bytes", maxUploadBytes))
				return
			}
			got = true
			file.Name, file.Size = part.FileName(), size
			file.ContentType = part.Header.Get("Content-Type")
			if mt, _, err := mime.ParseMediaType(file.ContentType); err != nil || mt == "" {
				file.ContentType = "application/octet-stream"
			}
			file.Checksums = map[string]string{"sha256": sum}
			file.ETag = strconv.Quote(sum[:32])
		case "metadata":
			raw, err := io.ReadAll(io.LimitReader(part, 1<<20))
			if err != nil || !json.Valid(raw) {
				writeDetail(w, http.StatusBadRequest, "metadata must be valid JSON")
				return
			}
			file.Metadata = raw
		}
	}
	if !got {
		writeDetail(w, http.StatusBadRequest, "the part content (the file) is required")
		return
	}
	if file.Name == "" {
		file.Name = id
	}
	now := s.clock.Now()
	file.CreatedAt, file.ExpiresAt = timestamp(now), timestamp(now.Add(uploadLifetime))
	file.URLs = map[string]string{"get": s.apiBase(r) + "/v1/files/" + id}
	raw, _ := json.Marshal(file)
	if err := os.WriteFile(filepath.Join(s.uploadsDir(), id+".json"), raw, 0o600); err != nil {
		writeDetail(w, http.StatusInternalServerError, "could not keep the file")
		return
	}
	s.log.Info("file uploaded", "file", id, "size", file.Size, "content_type", file.ContentType)
	writeJSON(w, http.StatusCreated, file)
}

// Upload reads an uploaded file's record (Replicate's files API or fal's
// storage), false when there is none or it has expired.
func (s *Simulator) Upload(id string) (File, bool) {
	var f File
	raw, err := os.ReadFile(filepath.Join(s.uploadsDir(), filepath.Base(id)+".json"))
	if err != nil || json.Unmarshal(raw, &f) != nil || f.ID != id {
		return File{}, false
	}
	if exp, err := time.Parse(timestampLayout, f.ExpiresAt); err == nil && !s.clock.Now().Before(exp) {
		return File{}, false
	}
	return f, true
}

func (s *Simulator) handleGetFile(w http.ResponseWriter, r *http.Request) {
	f, ok := s.Upload(r.PathValue("id"))
	if !ok {
		writeDetail(w, http.StatusNotFound, "Not found.")
		return
	}
	writeJSON(w, http.StatusOK, f)
}

// apiBase is the API's root URL for a request.
func (s *Simulator) apiBase(r *http.Request) string {
	if s.baseURL != "" {
		return s.baseURL
	}
	return requestBaseURL(r)
}

// modelsPageSize is how many models a page of GET /v1/models holds.
const modelsPageSize = 25

// handleListModels lists the public models a page at a time, as Replicate
// does: {"next": <URL of the next page>|null, "previous": ..., "results"}.
// The cursor is opaque to clients.
func (s *Simulator) handleListModels(w http.ResponseWriter, r *http.Request) {
	names := slices.Sorted(func(yield func(string) bool) {
		for m := range s.cfg.Models {
			if !yield(m) {
				return
			}
		}
	})
	start := 0
	if c := r.URL.Query().Get("cursor"); c != "" {
		raw, err := base64.RawURLEncoding.DecodeString(c)
		n, perr := strconv.Atoi(string(raw))
		if err != nil || perr != nil || n < 0 || n > len(names) {
			writeDetail(w, http.StatusBadRequest, "the cursor is not one this API gave")
			return
		}
		start = n
	}
	end := min(start+modelsPageSize, len(names))
	results := make([]map[string]any, 0, end-start)
	for _, m := range names[start:end] {
		results = append(results, s.modelView(m))
	}
	page := func(n int) any {
		return s.apiBase(r) + "/v1/models?cursor=" + base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(n)))
	}
	var next, prev any
	if end < len(names) {
		next = page(end)
	}
	if start > 0 {
		prev = page(max(0, start-modelsPageSize))
	}
	writeJSON(w, http.StatusOK, map[string]any{"next": next, "previous": prev, "results": results})
}

// handleListFiles lists the uploaded files, newest first, as Replicate's
// GET /v1/files does (one page: the simulator keeps few).
func (s *Simulator) handleListFiles(w http.ResponseWriter, r *http.Request) {
	entries, err := os.ReadDir(s.uploadsDir())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		writeDetail(w, http.StatusInternalServerError, "could not list the files")
		return
	}
	results := []File{}
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			continue
		}
		if f, ok := s.Upload(id); ok && f.URLs["get"] == s.apiBase(r)+"/v1/files/"+id {
			results = append(results, f)
		}
	}
	slices.SortFunc(results, func(a, b File) int { return strings.Compare(b.CreatedAt, a.CreatedAt) })
	writeJSON(w, http.StatusOK, map[string]any{"next": nil, "previous": nil, "results": results})
}

// handleHardware lists the hardware models run on, as GET /v1/hardware.
func handleHardware(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, []map[string]string{{"name": "CPU", "sku": "cpu"}, {"name": "Nvidia T4 GPU", "sku": "gpu-t4"}})
}
