package simulator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/clock"
	signing "github.com/mediagen-dev/mediagen/internal/core/webhook"
)

// job is the work of one prediction.
type job struct {
	model  string
	kind   string
	prompt string
	video  videoSpec
	image  imageSpec
}

// runJob takes a prediction from starting to a final state, then sends the
// webhook. It owns the prediction's files.
func (s *Simulator) runJob(ctx context.Context, id string, j job) {
	defer s.jobs.Done()
	log := s.log.With("prediction", id, "model", j.model)

	if strings.Contains(j.prompt, MarkerHold) {
		<-ctx.Done() // a cancel, or the simulator closing
		s.stopped(id, log)
		return
	}
	if n, ok := progressMarker(j.prompt); ok {
		now := s.clock.Now()
		if s.update(id, func(p *prediction) {
			p.view.Status = statusProcessing
			p.view.StartedAt = ptr(timestamp(now))
			p.view.Logs += progressLine(0) + progressLine(n)
		}) {
			s.sendWebhook(id, eventLogs)
		}
		<-ctx.Done()
		s.stopped(id, log)
		return
	}
	latency := s.cfg.Latency
	if strings.Contains(j.prompt, MarkerSlow) {
		latency += slowExtraLatency
	}
	if !clock.Sleep(ctx, s.clock, latency) {
		s.stopped(id, log)
		return
	}
	if strings.Contains(j.prompt, MarkerFail) {
		s.finish(id, log, nil, errors.New(SimulatedFailure))
		return
	}

	// Wait for a render slot in "starting", as a busy provider would.
	s.waitingForSlot.Add(1)
	select {
	case s.slots <- struct{}{}:
		s.waitingForSlot.Add(-1)
	case <-ctx.Done():
		s.waitingForSlot.Add(-1)
		s.stopped(id, log)
		return
	}
	files, err := s.render(ctx, id, j, log)
	<-s.slots
	if ctx.Err() != nil {
		s.stopped(id, log)
		return
	}
	if err != nil {
		log.Error("render failed", "error", err)
	}
	s.finish(id, log, files, err)
}

// render marks the prediction processing and renders its outputs, returning
// file name -> path in output order.
func (s *Simulator) render(ctx context.Context, id string, j job, log *slog.Logger) ([]outputFile, error) {
	started := s.clock.Now()
	var describe string
	if j.kind == kindVideo {
		v := j.video
		describe = fmt.Sprintf("rendering video %dx%d, %gs at %g fps, audio %t", v.Width, v.Height, v.Seconds, v.FPS, v.Audio)
	} else {
		im := j.image
		describe = fmt.Sprintf("rendering %d %s image(s) %dx%d", im.Count, im.Format, im.Width, im.Height)
	}
	if !s.update(id, func(p *prediction) {
		p.view.Status = statusProcessing
		p.view.StartedAt = ptr(timestamp(started))
		p.view.Logs += describe + "\n" + progressLine(0)
	}) {
		return nil, context.Canceled // canceled in the meantime
	}
	s.sendWebhook(id, eventLogs)
	log.Info("render started", "what", describe)

	dir := filepath.Join(s.cfg.WorkDir, id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("render %s: %w", id, err)
	}
	var files []outputFile
	if j.kind == kindVideo {
		f := outputFile{name: "0.mp4", path: filepath.Join(dir, "0.mp4")}
		if err := s.renderVideo(ctx, dir, f.path, j.prompt, j.video); err != nil {
			return nil, fmt.Errorf("render %s: %w", id, err)
		}
		files = append(files, f)
		s.progress(id, 100)
		s.publish(id, files)
	} else {
		ext := map[string]string{"png": ".png", "jpeg": ".jpg", "webp": ".webp"}[j.image.Format]
		for i := range j.image.Count {
			name := strconv.Itoa(i) + ext
			f := outputFile{name: name, path: filepath.Join(dir, name)}
			if err := s.renderImage(ctx, dir, f.path, j.prompt, j.image, i); err != nil {
				return nil, fmt.Errorf("render %s image %d: %w", id, i, err)
			}
			files = append(files, f)
			s.progress(id, (i+1)*100/j.image.Count)
			s.publish(id, files)
		}
	}
	log.Info("render done", "elapsed", s.clock.Now().Sub(started).Round(time.Millisecond).String())
	return files, nil
}

type outputFile struct{ name, path string }

// progress logs a progress line at n % (the logs webhook follows with the
// output's).
func (s *Simulator) progress(id string, n int) {
	s.update(id, func(p *prediction) { p.view.Logs += progressLine(n) })
}

// update applies change to a prediction that is not final yet; false means
// it was final already (canceled).
func (s *Simulator) update(id string, change func(*prediction)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.predictions[id]
	if !ok || final(p.view.Status) {
		return false
	}
	change(p)
	s.markDone(p)
	s.save(id, p)
	s.broadcast()
	return true
}

// markDone wakes the creates waiting (Prefer: wait) on a prediction that
// became final; the caller holds s.mu.
func (s *Simulator) markDone(p *prediction) {
	if final(p.view.Status) && p.done != nil && !p.doneClosed {
		p.doneClosed = true
		close(p.done)
	}
}

// finish records the outcome of a job that ran to its end, then sends the
// webhook. A cancel that won the race keeps the prediction canceled.
func (s *Simulator) finish(id string, log *slog.Logger, files []outputFile, err error) {
	now := s.clock.Now()
	ok := s.update(id, func(p *prediction) {
		p.view.CompletedAt = ptr(timestamp(now))
		if p.view.StartedAt == nil {
			p.view.StartedAt = p.view.CompletedAt
		}
		if err != nil {
			p.view.Status = statusFailed
			p.view.Error = ptr(err.Error())
			p.view.Logs += "failed: " + err.Error() + "\n"
			return
		}
		p.files = make(map[string]string, len(files))
		names := make([]string, 0, len(files))
		for _, f := range files {
			p.files[f.name] = f.path
			names = append(names, f.name)
		}
		p.view.Status = statusSucceeded
		p.view.Output = s.outputOf(p, names)
		p.view.Logs += "succeeded\n"
	})
	if !ok || err != nil {
		s.removeFiles(id)
	}
	view, _ := s.Lookup(id)
	log.Info("prediction finished", "status", view.Status)
	s.sendWebhook(id, eventCompleted)
}

// publish shows the outputs rendered so far while the prediction is still
// processing, and sends the output event: as the provider does, output
// events come while the output grows, and the completed event carries the
// final prediction.
func (s *Simulator) publish(id string, files []outputFile) {
	if !s.update(id, func(p *prediction) {
		p.files = make(map[string]string, len(files))
		names := make([]string, 0, len(files))
		for _, f := range files {
			p.files[f.name] = f.path
			names = append(names, f.name)
		}
		p.view.Output = s.outputOf(p, names)
	}) {
		return
	}
	s.sendWebhook(id, eventOutput)
}

// filesBase is where outputs are served.
func (s *Simulator) filesBase(p *prediction) string {
	if s.cfg.FilesBaseURL != "" {
		return strings.TrimRight(s.cfg.FilesBaseURL, "/")
	}
	return p.baseURL
}

// outputOf is a prediction's output: a video model's URL as a string, an
// image model's URLs as a list.
func (s *Simulator) outputOf(p *prediction, names []string) any {
	urls := make([]string, len(names))
	for i, n := range names {
		urls[i] = s.filesBase(p) + "/files/" + p.view.ID + "/" + n
	}
	if p.job.kind == kindVideo && len(urls) == 1 {
		return urls[0]
	}
	return urls
}

// stopped ends a job whose context ended: by a cancel (the prediction is
// canceled already) or by Close (it fails, without a webhook).
func (s *Simulator) stopped(id string, log *slog.Logger) {
	s.removeFiles(id)
	if s.ctx.Err() != nil && s.cfg.Persist {
		log.Info("prediction left for a restart to finish")
		return
	}
	if s.ctx.Err() != nil {
		s.update(id, func(p *prediction) {
			p.view.Status = statusFailed
			p.view.Error = ptr("the simulator shut down before the prediction finished")
			p.view.CompletedAt = ptr(timestamp(s.clock.Now()))
		})
		log.Info("prediction stopped by shutdown")
		return
	}
	log.Info("prediction stopped by cancel")
	s.sendWebhook(id, eventCompleted)
}

func (s *Simulator) removeFiles(id string) {
	if err := os.RemoveAll(filepath.Join(s.cfg.WorkDir, id)); err != nil {
		s.log.Warn("remove outputs", "prediction", id, "error", err)
	}
}

// sendWebhook posts a prediction event to its webhook, if its filter lets
// the event through: the prediction itself (Replicate, Standard Webhooks
// signature), or for the fal face only the final result (fal's body and
// ED25519 signature).
func (s *Simulator) sendWebhook(id, event string) {
	s.mu.Lock()
	p, ok := s.predictions[id]
	var view Prediction
	var target string
	var fal, wants bool
	if ok {
		view, target, fal, wants = p.view, p.webhook, p.fal, p.wants(event)
	}
	s.mu.Unlock()
	if target == "" {
		return
	}
	if fal {
		if event != eventCompleted {
			return
		}
		body := s.falWebhook(view)
		s.post(target, body, func(h http.Header) { s.signFal(h, view.ID, body, s.clock.Now()) }, "fal "+id)
		return
	}
	if !wants {
		return
	}
	body, err := json.Marshal(view)
	if err != nil {
		s.log.Error("webhook encode", "prediction", id, "error", err)
		return
	}
	s.post(target, body, func(h http.Header) {
		msgID := "msg_" + id + "_" + event
		if s.cfg.WebhookSecret == "" {
			// Unsigned, as a provider without a configured secret sends them.
			h.Set(signing.HeaderID, msgID)
			h.Set(signing.HeaderTimestamp, strconv.FormatInt(s.clock.Now().Unix(), 10))
			return
		}
		if err := signing.SetHeaders(h, s.cfg.WebhookSecret, msgID, s.clock.Now(), body); err != nil {
			s.log.Error("webhook signature", "prediction", id, "error", err)
		}
	}, "prediction "+id+" "+event)
}
