// Package sweeper settles, on a schedule, the credit holds that a crash left
// open: work past its deadline is failed and its hold released. The work it
// ends or settles sends its final webhook event, which the crash may have
// kept from being enqueued.
package sweeper

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// DefaultGrace is how old an open hold must be before the sweeper looks at
// it. It is longer than the longest Lambda run (15 minutes), so a request
// that is still between its hold and its record write is never swept.
const DefaultGrace = 20 * time.Minute

// SweepStore is what the sweeper needs from the store.
type SweepStore interface {
	OpenHolds(ctx context.Context, createdBefore time.Time) ([]domain.OpenHold, error)
	Capture(ctx context.Context, userID, workID string) (bool, error)
	Release(ctx context.Context, userID, workID string) (bool, error)
	Refund(ctx context.Context, userID, workID string) (bool, error)
	GetGeneration(ctx context.Context, uuid string) (domain.Generation, error)
	FinishGeneration(ctx context.Context, uuid string, o domain.Outcome, at time.Time) error
	GetLongVideo(ctx context.Context, id string) (domain.LongVideo, error)
	FinishLongVideo(ctx context.Context, id string, o domain.Outcome, at time.Time) error
	EndRegenerate(ctx context.Context, id string, revision int, o domain.Outcome, at time.Time) error
}

// SlotReleaser frees a holder's upstream slot or place in line (a repeat
// changes nothing).
type slotReleaser interface {
	ReleaseSlot(ctx context.Context, provider, holder string) error
}

// Notifier enqueues a webhook event (webhook.Notifier).
type Notifier interface {
	Notify(ctx context.Context, kind domain.WorkKind, id, event string) error
	// NotifyRevision enqueues event for the revision of long video id
	// that a scene regenerate made.
	NotifyRevision(ctx context.Context, id string, revision int, event string) error
}

// Sweeper settles holds whose work is finished, failed, past its deadline,
// or never appeared, and frees the upstream slots that work held.
type Sweeper struct {
	Store SweepStore
	// Slots, when set, frees the slots of the work it settles: work whose
	// poll chain was lost still holds its slot, which would otherwise be
	// taken from the upstream's max_concurrent until it expires.
	Slots slotReleaser
	// Notifier, when set, enqueues the final webhook event of the work
	// whose hold it settles, if the record asks for it and lists no
	// attempt at it: the crash that left the hold open may have come
	// before the event was enqueued, or the work never ended but here. An
	// event enqueued twice is sent once (the deliverer drops an attempt
	// already made; receivers see one webhook-id).
	Notifier Notifier
	Grace    time.Duration
	Now      func() time.Time
	Log      *slog.Logger
}

// SweepReport counts what one sweep did.
type SweepReport struct {
	Captured int `json:"captured"`
	Released int `json:"released"`
	TimedOut int `json:"timed_out"`
	Open     int `json:"still_open"`
}

// work is the state of the record a hold pays for.
type work struct {
	exists   bool
	status   domain.Status
	deadline time.Time
	// slots are the upstream slots it may hold.
	slots []slot
	// finishing: its outputs were being stored (StoredFiles.Finishing).
	finishing bool
	// webhook is the record's: which final events it asks for; attempts
	// are the deliveries it lists.
	webhook  domain.Webhook
	attempts []domain.WebhookAttempt
}

// slot is a holder at an upstream.
type slot struct{ upstream, holder string }

// Sweep looks at every open hold older than the grace period once.
func (s *Sweeper) Sweep(ctx context.Context) (SweepReport, error) {
	now := s.now()
	grace := s.Grace
	if grace == 0 {
		grace = DefaultGrace
	}
	holds, err := s.Store.OpenHolds(ctx, now.Add(-grace))
	if err != nil {
		return SweepReport{}, fmt.Errorf("sweep: %w", err)
	}
	var report SweepReport
	var errs []error
	for _, h := range holds {
		if err := s.settle(ctx, h, now, &report); err != nil {
			errs = append(errs, fmt.Errorf("sweep hold %s of %s: %w", h.WorkID, h.UserID, err))
		}
	}
	return report, errors.Join(errs...)
}

func (s *Sweeper) settle(ctx context.Context, h domain.OpenHold, now time.Time, report *SweepReport) error {
	w, err := s.lookup(ctx, h)
	if err != nil {
		return err
	}
	if w.exists && w.finishing && w.status != domain.StatusCompleted {
		// Its outputs may be in the bucket, which the sweeper cannot
		// reach: the poller (redelivered by the queue) or the workflow's
		// MarkFailed (its Catch, or the safety net at the execution's
		// timeout) ends it completed, or failed with its outputs deleted
		// first. Failing or releasing it here could give back the credits
		// of outputs still served.
		report.Open++
		if !now.Before(w.deadline) {
			s.log().ErrorContext(ctx, "a finishing record past its deadline is still open; the poller or MarkFailed settles it",
				"alert", "operator", "user_id", h.UserID, "work_id", h.WorkID, "kind", h.Kind, "status", w.status)
		}
		return nil
	}
	if w.exists && w.status == domain.StatusProcessing {
		if now.Before(w.deadline) {
			report.Open++
			return nil
		}
		// Past its deadline: fail it, unless it finished meanwhile.
		if err := s.finish(ctx, h, now); err != nil && !errors.Is(err, domain.ErrConflict) {
			return err
		}
		slots := w.slots
		if w, err = s.lookup(ctx, h); err != nil {
			return err
		}
		if len(w.slots) == 0 {
			w.slots = slots // an ended regenerate no longer names its job's slot
		}
		if w.status == domain.StatusFailed {
			report.TimedOut++
		}
	}
	return s.settleWork(ctx, h, w, report)
}

// SettleEnded settles at once, whatever its age, the hold h of a
// generation or long video whose record is final, as a sweep does, its
// final webhook event included (true when this call settled it). Work not
// final or not recorded is left to the sweeps (false), and so is a scene
// regenerate's hold: its video does not tell one that ended from one not
// begun yet. The local runtime calls it when it starts again after a stop
// that came between a record's final write and its hold's settlement.
func (s *Sweeper) SettleEnded(ctx context.Context, h domain.OpenHold) (bool, error) {
	if _, _, _, regen := domain.RegenerateOf(h.WorkID); regen {
		return false, nil
	}
	w, err := s.lookup(ctx, h)
	if err != nil || !w.exists || !w.status.Terminal() {
		return false, err
	}
	var report SweepReport
	if err := s.settleWork(ctx, h, w, &report); err != nil {
		return false, err
	}
	return report.Captured+report.Released > 0, nil
}

// settleWork frees the slots of work w no longer processing, settles its
// hold by its status (a missing work's is released) and, when this call
// settled it, enqueues its final webhook event.
func (s *Sweeper) settleWork(ctx context.Context, h domain.OpenHold, w work, report *SweepReport) error {
	status := domain.StatusFailed // a missing work is released
	if w.exists {
		status = w.status
	}
	// Before the hold: a slot left held comes back at the next sweep.
	if err := s.releaseSlots(ctx, h, w); err != nil {
		return err
	}
	how, settled, err := domain.Settle(ctx, s.Store, h.UserID, h.WorkID, status)
	if err != nil {
		return err
	}
	if !settled {
		return nil // settled meanwhile by the poller or the workflow
	}
	if how == domain.EntryCapture {
		report.Captured++
	} else {
		report.Released++
	}
	s.log().InfoContext(ctx, "sweeper settled hold", "user_id", h.UserID, "work_id", h.WorkID,
		"kind", h.Kind, "outcome", how, "work_found", w.exists, "amount", domain.FormatCredits(h.Amount))
	if err := s.notify(ctx, h, w); err != nil {
		// The hold stays settled: as the poller and the workflow do, a
		// failed enqueue is logged, never undone by a refund.
		s.log().WarnContext(ctx, "could not enqueue the webhook", "user_id", h.UserID, "work_id", h.WorkID, "error", err)
	}
	return nil
}

// notify enqueues the final event of the work whose hold was just
// settled, if its record asks for it and lists no attempt at it yet:
// generation.<status> or long_video.<status>; for a scene regenerate,
// long_video.completed of its revision when it completed, and nothing when
// it ended otherwise (the video is as it was). A missing work sends
// nothing.
func (s *Sweeper) notify(ctx context.Context, h domain.OpenHold, w work) error {
	if s.Notifier == nil || !w.exists {
		return nil
	}
	if videoID, _, revision, regen := domain.RegenerateOf(h.WorkID); regen && h.Kind == domain.WorkLongVideo {
		event := domain.FinalEvent(domain.WorkLongVideo, domain.StatusCompleted)
		if w.status != domain.StatusCompleted || !w.webhook.Wants(event) {
			return nil
		}
		if err := s.Notifier.NotifyRevision(ctx, videoID, revision, event); err != nil {
			return fmt.Errorf("webhook of %s revision %d: %w", videoID, revision, err)
		}
		return nil
	}
	event := domain.FinalEvent(h.Kind, w.status)
	// One the record lists an attempt at was enqueued: the deliverer has it.
	if !w.status.Terminal() || !w.webhook.Wants(event) || domain.Attempted(w.attempts, event) {
		return nil
	}
	if err := s.Notifier.Notify(ctx, h.Kind, h.WorkID, event); err != nil {
		return fmt.Errorf("webhook of %s: %w", h.WorkID, err)
	}
	return nil
}

func (s *Sweeper) lookup(ctx context.Context, h domain.OpenHold) (work, error) {
	var (
		w   work
		err error
	)
	videoID, scene, revision, regen := domain.RegenerateOf(h.WorkID)
	switch {
	case h.Kind == domain.WorkLongVideo && regen:
		var v domain.LongVideo
		v, err = s.Store.GetLongVideo(ctx, videoID)
		w = regenerateWork(v, scene, revision)
		w.exists, w.webhook = err == nil, v.Webhook
	case h.Kind == domain.WorkLongVideo:
		var v domain.LongVideo
		v, err = s.Store.GetLongVideo(ctx, h.WorkID)
		w = work{exists: err == nil, status: v.Status, deadline: v.Deadline, finishing: v.Files.Finishing,
			webhook: v.Webhook, attempts: v.WebhookAttempts}
		for n, sc := range v.SceneStatus {
			// A finished scene freed its slot; the others may hold one.
			if sc.Upstream != "" && sc.Status != domain.StatusCompleted && sc.Status != domain.StatusFailed {
				w.slots = append(w.slots, slot{sc.Upstream, domain.SceneSlotHolder(v.ID, n)})
			}
		}
	default:
		var g domain.Generation
		g, err = s.Store.GetGeneration(ctx, h.WorkID)
		w = work{exists: err == nil, status: g.Status, deadline: g.Deadline, finishing: g.Files.Finishing,
			webhook: g.Webhook, attempts: g.WebhookAttempts}
		if g.Upstream != "" {
			w.slots = []slot{{g.Upstream, g.UUID}}
		}
	}
	if err != nil && !errors.Is(err, domain.ErrNotFound) {
		return work{}, err
	}
	return w, nil
}

// releaseSlots frees the slots of work that is no longer processing. A
// waiter's place in line (work never submitted names no upstream) is left
// to expire: it stopped asking (store.SlotWaiterTimeout).
func (s *Sweeper) releaseSlots(ctx context.Context, h domain.OpenHold, w work) error {
	if s.Slots == nil || w.status == domain.StatusProcessing {
		return nil
	}
	for _, sl := range w.slots {
		if err := s.Slots.ReleaseSlot(ctx, sl.upstream, sl.holder); err != nil {
			return fmt.Errorf("release the slot of %s at %s: %w", sl.holder, sl.upstream, err)
		}
		s.log().InfoContext(ctx, "sweeper released the work's upstream slot", "user_id", h.UserID, "work_id", h.WorkID, "upstream", sl.upstream, "holder", sl.holder)
	}
	return nil
}

// regenerateWork is a regenerate of scene n at revision as its video
// shows it: processing while it runs (until its deadline), completed once
// the video is at its revision, failed when it ended otherwise.
func regenerateWork(v domain.LongVideo, n, revision int) work {
	w := work{status: domain.StatusFailed}
	switch r := v.Regenerating; {
	case r != nil && r.Revision == revision:
		w.status, w.deadline = domain.StatusProcessing, r.Deadline()
		if st := r.State; st.Upstream != "" && st.Status != domain.StatusCompleted && st.Status != domain.StatusFailed {
			w.slots = []slot{{r.State.Upstream, domain.SceneSlotHolder(v.ID, n)}}
		}
	case v.Revision >= revision:
		w.status = domain.StatusCompleted
	}
	return w
}

func (s *Sweeper) finish(ctx context.Context, h domain.OpenHold, now time.Time) error {
	o := domain.Outcome{Status: domain.StatusFailed, Error: domain.TimedOutError}
	if videoID, _, revision, ok := domain.RegenerateOf(h.WorkID); ok && h.Kind == domain.WorkLongVideo {
		return s.Store.EndRegenerate(ctx, videoID, revision, o, now)
	}
	if h.Kind == domain.WorkLongVideo {
		return s.Store.FinishLongVideo(ctx, h.WorkID, o, now)
	}
	return s.Store.FinishGeneration(ctx, h.WorkID, o, now)
}

func (s *Sweeper) now() time.Time { return domain.Now(s.Now) }

func (s *Sweeper) log() *slog.Logger { return domain.Logger(s.Log) }
