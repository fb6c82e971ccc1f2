package simulator

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// persisted is a prediction as kept on disk when Config.Persist is set, so a
// restarted simulator still knows its jobs, like a hosted provider would.
type persisted struct {
	View    Prediction        `json:"view"`
	BaseURL string            `json:"base_url"`
	Webhook string            `json:"webhook,omitempty"`
	Events  []string          `json:"events,omitempty"`
	Fal     bool              `json:"fal,omitempty"`
	App     string            `json:"app,omitempty"`
	Names   []string          `json:"names,omitempty"`
	Files   map[string]string `json:"files,omitempty"`
	Job     persistedJob      `json:"job"`
}

type persistedJob struct {
	Model  string    `json:"model"`
	Kind   string    `json:"kind"`
	Prompt string    `json:"prompt"`
	Video  videoSpec `json:"video"`
	Image  imageSpec `json:"image"`
}

func (s *Simulator) recordsDir() string { return filepath.Join(s.cfg.WorkDir, "predictions") }

// save writes a prediction's record; the caller holds s.mu.
func (s *Simulator) save(id string, p *prediction) {
	if !s.cfg.Persist {
		return
	}
	raw, err := json.Marshal(persisted{View: p.view, BaseURL: p.baseURL, Webhook: p.webhook, Files: p.files,
		Events: p.events, Fal: p.fal, App: p.app, Names: slices.Sorted(maps.Keys(p.files)), // output order: 0.png, 1.png, …
		Job: persistedJob{Model: p.job.model, Kind: p.job.kind, Prompt: p.job.prompt, Video: p.job.video, Image: p.job.image}})
	if err == nil {
		tmp := filepath.Join(s.recordsDir(), id+".json.tmp")
		if err = os.WriteFile(tmp, raw, 0o600); err == nil {
			err = os.Rename(tmp, filepath.Join(s.recordsDir(), id+".json"))
		}
	}
	if err != nil {
		s.log.Warn("could not keep the prediction on disk", "prediction", id, "error", err)
	}
}

// load reads the kept predictions and restarts those that were not final
// when the simulator stopped.
func (s *Simulator) load() error {
	if err := os.MkdirAll(s.recordsDir(), 0o755); err != nil {
		return fmt.Errorf("simulator: %w", err)
	}
	entries, err := os.ReadDir(s.recordsDir())
	if err != nil {
		return fmt.Errorf("simulator: %w", err)
	}
	var resume []func()
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(s.recordsDir(), e.Name()))
		if err != nil {
			return fmt.Errorf("simulator: %w", err)
		}
		var rec persisted
		if err := json.Unmarshal(raw, &rec); err != nil {
			s.log.Warn("skipping a damaged prediction record", "file", e.Name(), "error", err)
			continue
		}
		id := rec.View.ID
		p := &prediction{view: rec.View, baseURL: rec.BaseURL, webhook: rec.Webhook, files: rec.Files,
			events: rec.Events, fal: rec.Fal, app: rec.App, done: make(chan struct{}),
			job: job{model: rec.Job.Model, kind: rec.Job.Kind, prompt: rec.Job.Prompt, video: rec.Job.Video, image: rec.Job.Image}}
		s.predictions[id] = p
		s.order = append(s.order, id)
		if base := s.baseURL; base != "" {
			// The simulator may listen elsewhere since: its URLs follow.
			p.baseURL = base
			p.view.URLs = PredictionURLs{Get: base + "/v1/predictions/" + id, Cancel: base + "/v1/predictions/" + id + "/cancel"}
		}
		if p.view.Status == statusSucceeded && len(rec.Names) > 0 {
			p.view.Output = s.outputOf(p, rec.Names)
		}
		if final(p.view.Status) {
			s.markDone(p)
			continue
		}
		// The render was cut off by the stop: start it again.
		p.view.Status, p.view.StartedAt = statusStarting, nil
		ctx, cancel := context.WithCancel(s.ctx)
		p.cancel = cancel
		s.jobs.Add(1)
		s.log.Info("prediction resumed after a restart", "prediction", id)
		resume = append(resume, func() {
			defer cancel()
			s.runJob(ctx, id, p.job)
		})
	}
	// The renders start once every record is in the map: a render updates
	// its prediction under s.mu, which the loading above does not take.
	for _, run := range resume {
		go run()
	}
	return nil
}
