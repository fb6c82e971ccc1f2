package generation

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/job"
)

// HandleBatch is the poller's work on one batch of the poll queue. It works on the messages of a
// batch in parallel (PollParallelism at once) and reports the messages to
// deliver again as partial batch failures, so one slow or failing message
// never holds back the others. A message is not started once less than
// StartMargin is left before the Lambda's deadline: it is reported as a
// failure and runs in a later invocation, which is safe because a message
// not started has done nothing, and Poll is idempotent anyway (every write
// conditional, the poll chain claimed).
func (s *Service) HandleBatch(ctx context.Context, batch []domain.QueueMessage) (retry []string) {
	failed := make([]bool, len(batch))
	slots := make(chan struct{}, s.pollParallelism())
	var wg sync.WaitGroup
	for i, msg := range batch {
		slots <- struct{}{} // a message waits for a running one to end
		if left, ok := s.timeLeft(ctx); ctx.Err() != nil || ok && left < s.startMargin() {
			<-slots
			for j := i; j < len(failed); j++ {
				failed[j] = true
			}
			s.log().WarnContext(ctx, "poll messages left for a later invocation: too close to the deadline",
				"not_started", len(failed)-i, "time_left", left, "start_margin", s.startMargin())
			break
		}
		wg.Go(func() {
			defer func() { <-slots }()
			if err := s.handleMessage(ctx, msg); err != nil {
				// Redelivered after the visibility timeout; after
				// maxReceiveCount SQS moves it to the dead-letter queue, and
				// the sweeper settles its hold at the generation's deadline.
				s.log().WarnContext(ctx, "poll failed", "message_id", msg.ID, "error", err)
				failed[i] = true // each goroutine writes its own element
			}
		})
	}
	wg.Wait()
	for i, msg := range batch {
		if failed[i] {
			retry = append(retry, msg.ID)
		}
	}
	return retry
}

// handleMessage does one message's work; it is the one place that reads a
// message, so another kind of message on the queue is dispatched here.
func (s *Service) handleMessage(ctx context.Context, msg domain.QueueMessage) (err error) {
	// A panic fails this message only, not the batch it runs beside.
	defer func() {
		if r := recover(); r != nil {
			s.log().ErrorContext(ctx, "poll panicked", "message_id", msg.ID, "panic", r, "stack", string(debug.Stack()))
			err = fmt.Errorf("message %s: panic: %v", msg.ID, r)
		}
	}()
	kind, err := job.KindOf([]byte(msg.Body))
	if err != nil {
		return err
	}
	switch kind {
	case job.KindGeneration:
		m, err := parsePollMessage(msg.Body)
		if err != nil {
			return err
		}
		return s.Poll(ctx, m)
	case job.KindScene:
		if s.Scenes == nil {
			return fmt.Errorf("message %s: a scene's poll, and this poller has no scenes", msg.ID)
		}
		return s.Scenes.HandleScenePoll(ctx, []byte(msg.Body))
	}
	return fmt.Errorf("message %s: unknown kind %q", msg.ID, kind)
}

// timeLeft is the time before ctx's deadline (the Lambda's, set by
// aws-lambda-go); ok is false when ctx has none.
func (s *Service) timeLeft(ctx context.Context) (left time.Duration, ok bool) {
	dl, ok := ctx.Deadline()
	if !ok {
		return 0, false
	}
	return dl.Sub(s.now()), true
}
