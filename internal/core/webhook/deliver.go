package webhook

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// Message asks the deliverer for one attempt at one event.
type Message struct {
	Kind  domain.WorkKind `json:"kind"`
	ID    string          `json:"id"`
	Event string          `json:"event"`
	// Revision, when set, is the long video's revision a scene regenerate
	// made: that revision's completion is an event of its own.
	Revision int `json:"revision,omitempty"`
	// Attempt counts from 1.
	Attempt int `json:"attempt"`
}

// ID is the webhook-id of an event: the same on every attempt, so that a
// receiver can drop repeats, and another for each revision of a long
// video (a first render's id is as it was before revisions).
func (m Message) WebhookID() string {
	key := string(m.Kind) + "\x00" + m.ID + "\x00" + m.Event
	if m.Revision > 0 {
		key += "\x00" + strconv.Itoa(m.Revision)
	}
	sum := sha256.Sum256([]byte(key))
	return "msg_" + hex.EncodeToString(sum[:12])
}

// Queue delays messages.
type Queue interface {
	Send(ctx context.Context, body []byte, delay time.Duration) error
}

// Notifier enqueues the first attempt of an event; the poller and the
// workflow call it and go on, so delivery never blocks them.
type Notifier struct {
	Queue Queue
}

// sendAttempts bounds the tries to enqueue a message.
const sendAttempts = 3

// Notify enqueues event for the record.
func (n Notifier) Notify(ctx context.Context, kind domain.WorkKind, id, event string) error {
	return send(ctx, n.Queue, Message{Kind: kind, ID: id, Event: event, Attempt: 1}, 0)
}

// NotifyRevision enqueues event for the revision of long video id that a
// scene regenerate made.
func (n Notifier) NotifyRevision(ctx context.Context, id string, revision int, event string) error {
	return send(ctx, n.Queue, Message{Kind: domain.WorkLongVideo, ID: id, Event: event, Revision: revision, Attempt: 1}, 0)
}

func send(ctx context.Context, q Queue, m Message, delay time.Duration) error {
	body, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode webhook message: %w", err)
	}
	for i := 0; ; i++ {
		err = q.Send(ctx, body, delay)
		if err == nil || i+1 == sendAttempts {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("enqueue webhook %s of %s: %w", m.Event, m.ID, err)
	}
	return nil
}

// Record is what a webhook reports: its owner, where it goes, the status
// view sent as data, and the attempts so far.
type Record struct {
	UserID   string
	Webhook  domain.Webhook
	Attempts []domain.WebhookAttempt
	Data     any
}

// Records loads a record and renders its status view.
type records interface {
	WebhookRecord(ctx context.Context, kind domain.WorkKind, id string) (Record, error)
}

// Store is what delivery keeps. ClaimIdempotencyKey is the claim of an
// attempt, under a key no API request can use (see claimAttempt).
type Store interface {
	EnsureWebhookSecret(ctx context.Context, userID, candidate string) (string, error)
	AddWebhookAttempt(ctx context.Context, kind domain.WorkKind, id string, a domain.WebhookAttempt) error
	ClaimIdempotencyKey(ctx context.Context, r domain.IdempotencyRecord) (existing domain.IdempotencyRecord, claimed bool, err error)
}

// claimLease bounds how long a claimed attempt keeps others off: the
// attempt's own timeout and time to record it. A delivery that died holding
// it is taken over once it ends (its message comes back from the queue).
const claimLease = Timeout + 20*time.Second

// DefaultBackoff is the wait before each attempt after the first: nine
// attempts over about an hour (SQS delays a message by 15 minutes at most).
var DefaultBackoff = []time.Duration{
	30 * time.Second, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute,
	15 * time.Minute, 15 * time.Minute, 15 * time.Minute, 15 * time.Minute,
}

// Timeout bounds one delivery attempt.
const Timeout = 10 * time.Second

// Payload is the body POSTed to the receiver.
type payload struct {
	Type      string `json:"type"`
	Timestamp string `json:"timestamp"`
	Data      any    `json:"data"`
}

// Deliverer sends webhook events, one attempt per queue message.
type Deliverer struct {
	Records records
	Store   Store
	Queue   Queue
	// Client sends the requests; build it with SafeClient.
	Client *http.Client
	// Backoff is the wait before attempts 2, 3, ...; its length + 1 is the
	// number of attempts. Default DefaultBackoff.
	Backoff []time.Duration
	Now     func() time.Time
	Log     *slog.Logger
}

func (d *Deliverer) backoff() []time.Duration {
	if d.Backoff != nil {
		return d.Backoff
	}
	return DefaultBackoff
}

// HandleBatch is the webhook function's work on a batch: one attempt per
// message, failed messages (the store or queue unreachable) returned for
// redelivery.
func (d *Deliverer) HandleBatch(ctx context.Context, batch []domain.QueueMessage) (retry []string) {
	for _, msg := range batch {
		var m Message
		err := json.Unmarshal([]byte(msg.Body), &m)
		if err != nil || m.ID == "" || m.Event == "" {
			domain.Logger(d.Log).WarnContext(ctx, "dropping malformed webhook message", "message_id", msg.ID)
			continue
		}
		if err := d.Deliver(ctx, m); err != nil {
			domain.Logger(d.Log).WarnContext(ctx, "webhook attempt failed", "message_id", msg.ID, "error", err)
			retry = append(retry, msg.ID)
		}
	}
	return retry
}

// Deliver makes one attempt, records it on the record and schedules the
// next one when the receiver did not take it. It returns an error only when
// the message should be delivered again.
func (d *Deliverer) Deliver(ctx context.Context, m Message) error {
	log := domain.Logger(d.Log).With("kind", m.Kind, "id", m.ID, "event", m.Event, "attempt", m.Attempt)
	rec, err := d.Records.WebhookRecord(ctx, m.Kind, m.ID)
	if errors.Is(err, domain.ErrNotFound) {
		log.WarnContext(ctx, "webhook for a record that does not exist")
		return nil
	}
	if err != nil {
		return fmt.Errorf("load %s %s: %w", m.Kind, m.ID, err)
	}
	if !rec.Webhook.Wants(m.Event) {
		return nil
	}
	hookID := m.WebhookID()
	for _, a := range rec.Attempts {
		if a.WebhookID == hookID && (a.Delivered || a.Attempt == m.Attempt) {
			return nil // a repeated message: the receiver has it, or this attempt was made
		}
	}
	now := domain.Now(d.Now)
	// The event can be enqueued more than once (the provider's callback and
	// a poll may both see the generation end; SQS delivers at least once):
	// only the delivery that claims the attempt makes it.
	leaseEnd, claimed, err := d.claimAttempt(ctx, rec.UserID, hookID, m.Attempt, now)
	if err != nil {
		return err
	}
	if !claimed {
		// Another delivery makes it now. Look again once its lease ends: by
		// then it is recorded (and this message is dropped), or its maker
		// died and this one makes it.
		log.InfoContext(ctx, "webhook attempt already being made by another delivery")
		return send(ctx, d.Queue, m, max(leaseEnd.Sub(now), time.Second))
	}
	secret, err := d.Store.EnsureWebhookSecret(ctx, rec.UserID, NewSecret())
	if err != nil {
		return fmt.Errorf("signing secret of %s: %w", rec.UserID, err)
	}
	status, sendErr := d.post(ctx, rec, m, hookID, secret, now)
	attempt := domain.WebhookAttempt{WebhookID: hookID, Event: m.Event, Attempt: m.Attempt, At: now,
		StatusCode: status, Delivered: sendErr == nil}
	if sendErr != nil {
		// The record shows the class; the log keeps the detail.
		attempt.Error = Classify(sendErr)
	}
	if err := d.Store.AddWebhookAttempt(ctx, m.Kind, m.ID, attempt); err != nil {
		// The attempt still counts; the record only misses its line.
		log.WarnContext(ctx, "could not record webhook attempt", "error", err)
	}
	if sendErr == nil {
		log.InfoContext(ctx, "webhook delivered", "status_code", status)
		return nil
	}
	backoff := d.backoff()
	if m.Attempt > len(backoff) {
		log.WarnContext(ctx, "webhook given up", "error", sendErr, "error_class", attempt.Error)
		return nil
	}
	log.InfoContext(ctx, "webhook not taken, will retry", "error", sendErr, "error_class", attempt.Error)
	next := m
	next.Attempt++
	return send(ctx, d.Queue, next, backoff[m.Attempt-1])
}

// claimAttempt takes attempt n of an event for claimLease. The claim is kept
// with the idempotency keys, owned by "webhook#<user id>" (no account has
// that id, so no request's Idempotency-Key can meet it).
// When another delivery holds it, leaseEnd is when its claim ends.
func (d *Deliverer) claimAttempt(ctx context.Context, userID, hookID string, n int, now time.Time) (leaseEnd time.Time, claimed bool, err error) {
	held, claimed, err := d.Store.ClaimIdempotencyKey(ctx, domain.IdempotencyRecord{
		UserID: "webhook#" + userID, Key: fmt.Sprintf("%s#%d", hookID, n),
		Fingerprint: hookID, CreatedAt: now, ExpiresAt: now.Add(claimLease),
	})
	if err != nil {
		return time.Time{}, false, fmt.Errorf("claim webhook attempt %d of %s: %w", n, hookID, err)
	}
	return held.ExpiresAt, claimed, nil
}

// post sends one attempt; a 2xx answer is delivery.
func (d *Deliverer) post(ctx context.Context, rec Record, m Message, hookID, secret string, now time.Time) (int, error) {
	body, err := json.Marshal(payload{Type: m.Event, Timestamp: now.UTC().Format(time.RFC3339), Data: rec.Data})
	if err != nil {
		return 0, fmt.Errorf("encode webhook: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rec.Webhook.URL, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("webhook request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "mediagen-webhooks/1")
	if err := SetHeaders(req.Header, secret, hookID, now, body); err != nil {
		return 0, err
	}
	client := d.Client
	if client == nil {
		client = SafeClient()
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("webhook request: %w", err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp.StatusCode, fmt.Errorf("%w: HTTP %d", errStatus, resp.StatusCode)
	}
	return resp.StatusCode, nil
}
