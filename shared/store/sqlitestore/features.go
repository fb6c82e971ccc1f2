package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/mediagen-dev/mediagen/shared/domain"
	"github.com/mediagen-dev/mediagen/shared/store"
)

// unmarshalColumns decodes JSON columns into dsts, leaving empty lists and
// maps nil so that a record reads back as it was written.
func unmarshalColumns(id string, dsts []any, cols ...string) error {
	for i, col := range cols {
		if err := json.Unmarshal([]byte(col), dsts[i]); err != nil {
			return fmt.Errorf("read record %s: column %d: %w", id, i, err)
		}
		if v := reflect.ValueOf(dsts[i]).Elem(); (v.Kind() == reflect.Slice || v.Kind() == reflect.Map) && v.Len() == 0 {
			v.Set(reflect.Zero(v.Type()))
		}
	}
	return nil
}

// ---- lists ----

// listWhere is the page condition shared by both lists: the account, the
// filters, and the position after the cursor (newest first, id breaking ties).
func listWhere(q store.ListQuery, idCol string, modelCols ...string) (string, []any, error) {
	c, ok, err := store.ParseCursor(q.Cursor)
	if err != nil {
		return "", nil, err
	}
	where, args := `WHERE user_id = ?`, []any{q.UserID}
	if q.Status != "" {
		where += ` AND status = ?`
		args = append(args, string(q.Status))
	}
	if q.Model != "" {
		where += ` AND (` + strings.Join(modelCols, ` = ? OR `) + ` = ?)`
		for range modelCols {
			args = append(args, q.Model)
		}
	}
	if ok {
		t := formatTime(c.CreatedAt)
		where += ` AND (created_at < ? OR (created_at = ? AND ` + idCol + ` < ?))`
		args = append(args, t, t, c.ID)
	}
	where += ` ORDER BY created_at DESC, ` + idCol + ` DESC LIMIT ?`
	// One more than asked, to know whether a next page exists.
	args = append(args, q.Limit+1)
	return where, args, nil
}

func page[T any](items []T, limit int, cursorOf func(T) store.Cursor) store.Page[T] {
	if len(items) <= limit {
		return store.Page[T]{Items: items}
	}
	items = items[:limit]
	return store.Page[T]{Items: items, Next: cursorOf(items[limit-1]).Encode()}
}

func (s *Store) ListGenerations(ctx context.Context, q store.ListQuery) (store.Page[domain.Generation], error) {
	where, args, err := listWhere(q, "uuid", "model", "model_version")
	if err != nil {
		return store.Page[domain.Generation]{}, err
	}
	gs, err := s.queryGenerations(ctx, where, args...)
	if err != nil {
		return store.Page[domain.Generation]{}, err
	}
	return page(gs, q.Limit, func(g domain.Generation) store.Cursor {
		return store.Cursor{CreatedAt: g.CreatedAt, ID: g.UUID}
	}), nil
}

func (s *Store) ListLongVideos(ctx context.Context, q store.ListQuery) (store.Page[domain.LongVideo], error) {
	where, args, err := listWhere(q, "id", "model")
	if err != nil {
		return store.Page[domain.LongVideo]{}, err
	}
	vs, err := s.queryLongVideos(ctx, where, args...)
	if err != nil {
		return store.Page[domain.LongVideo]{}, err
	}
	return page(vs, q.Limit, func(v domain.LongVideo) store.Cursor {
		return store.Cursor{CreatedAt: v.CreatedAt, ID: v.ID}
	}), nil
}

func (s *Store) SetSceneStatus(ctx context.Context, videoID string, scene int, state domain.SceneState, at time.Time) error {
	b, err := json.Marshal(state)
	if err != nil {
		return fmt.Errorf("scene %d of %s: %w", scene, videoID, err)
	}
	return s.updateProcessing(ctx, "long_videos", "id", videoID,
		`scene_status = json_set(scene_status, ?, json(?)), updated_at = ?`,
		`$."`+strconv.Itoa(scene)+`"`, string(b), formatTime(at))
}

// ---- usage ----

func (s *Store) usage(ctx context.Context, userID string) (map[string]domain.Usage, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT month, credits, jobs FROM usage WHERE user_id = ?`, userID)
	if err != nil {
		return nil, fmt.Errorf("read usage of %s: %w", userID, err)
	}
	defer rows.Close()
	var out map[string]domain.Usage
	for rows.Next() {
		var month string
		var cents int64
		var jobs int
		if err := rows.Scan(&month, &cents, &jobs); err != nil {
			return nil, fmt.Errorf("read usage of %s: %w", userID, err)
		}
		if out == nil {
			out = map[string]domain.Usage{}
		}
		out[month] = domain.Usage{Credits: domain.CentsToCredits(cents), Jobs: jobs}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read usage of %s: %w", userID, err)
	}
	return out, nil
}

// ---- webhooks ----

func (s *Store) EnsureWebhookSecret(ctx context.Context, userID, candidate string) (string, error) {
	var secret string
	err := s.w.QueryRowContext(ctx, `UPDATE accounts SET webhook_secret = CASE WHEN webhook_secret = '' THEN ? ELSE webhook_secret END
		WHERE user_id = ? RETURNING webhook_secret`, candidate, userID).Scan(&secret)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("account %s: %w", userID, domain.ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("webhook secret of %s: %w", userID, err)
	}
	return secret, nil
}

func (s *Store) SetWebhookSecret(ctx context.Context, userID, secret string) error {
	res, err := s.w.ExecContext(ctx, `UPDATE accounts SET webhook_secret = ? WHERE user_id = ?`, secret, userID)
	if err != nil {
		return fmt.Errorf("set webhook secret of %s: %w", userID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("account %s: %w", userID, domain.ErrNotFound)
	}
	return nil
}

func (s *Store) AddWebhookAttempt(ctx context.Context, kind domain.WorkKind, id string, a domain.WebhookAttempt) error {
	table, keyCol := "generations", "uuid"
	if kind == domain.WorkLongVideo {
		table, keyCol = "long_videos", "id"
	}
	b, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("record webhook attempt on %s: %w", id, err)
	}
	res, err := s.w.ExecContext(ctx, `UPDATE `+table+` SET webhook_attempts = json_insert(webhook_attempts, '$[#]', json(?))
		WHERE `+keyCol+` = ?`, string(b), id)
	if err != nil {
		return fmt.Errorf("record webhook attempt on %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("record webhook attempt on %s: %w", id, domain.ErrNotFound)
	}
	return nil
}

// ---- idempotency ----

func (s *Store) ClaimIdempotencyKey(ctx context.Context, r domain.IdempotencyRecord) (domain.IdempotencyRecord, bool, error) {
	var existing domain.IdempotencyRecord
	claimed := false
	err := s.tx(ctx, "claim idempotency key", func(tx *sql.Tx) error {
		// Expired answers go here, as DynamoDB's TTL removes them there.
		if _, err := tx.ExecContext(ctx, `DELETE FROM idempotency WHERE expires_at < ?`, formatTime(r.CreatedAt)); err != nil {
			return fmt.Errorf("expire idempotency keys: %w", err)
		}
		var created, expires string
		var body []byte
		err := tx.QueryRowContext(ctx, `SELECT fingerprint, status_code, body, created_at, expires_at FROM idempotency
			WHERE user_id = ? AND key = ?`, r.UserID, r.Key).Scan(&existing.Fingerprint, &existing.StatusCode, &body, &created, &expires)
		switch {
		case err == nil:
			exp, perr := parseTime(expires)
			if perr != nil {
				return perr
			}
			if exp.After(r.CreatedAt) {
				existing.UserID, existing.Key, existing.Body, existing.ExpiresAt = r.UserID, r.Key, body, exp
				existing.CreatedAt, perr = parseTime(created)
				return perr
			}
		case !errors.Is(err, sql.ErrNoRows):
			return fmt.Errorf("claim idempotency key: %w", err)
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO idempotency (user_id, key, fingerprint, status_code, body, created_at, expires_at)
			VALUES (?, ?, ?, 0, NULL, ?, ?) ON CONFLICT(user_id, key) DO UPDATE SET fingerprint = excluded.fingerprint,
			status_code = 0, body = NULL, created_at = excluded.created_at, expires_at = excluded.expires_at`,
			r.UserID, r.Key, r.Fingerprint, formatTime(r.CreatedAt), formatTime(r.ExpiresAt))
		if err != nil {
			return fmt.Errorf("claim idempotency key: %w", err)
		}
		claimed = true
		return nil
	})
	if err != nil || claimed {
		return domain.IdempotencyRecord{}, claimed, err
	}
	return existing, false, nil
}

func (s *Store) FinishIdempotencyKey(ctx context.Context, userID, key string, status int, body []byte) error {
	res, err := s.w.ExecContext(ctx, `UPDATE idempotency SET status_code = ?, body = ? WHERE user_id = ? AND key = ? AND status_code = 0`,
		status, body, userID, key)
	if err != nil {
		return fmt.Errorf("finish idempotency key: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("finish idempotency key: no claim in progress: %w", domain.ErrConflict)
	}
	return nil
}

func (s *Store) ReleaseIdempotencyKey(ctx context.Context, userID, key string) error {
	if _, err := s.w.ExecContext(ctx, `DELETE FROM idempotency WHERE user_id = ? AND key = ? AND status_code = 0`, userID, key); err != nil {
		return fmt.Errorf("release idempotency key: %w", err)
	}
	return nil
}

// ---- upstream concurrency slots ----

func (s *Store) readSlots(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, provider string) (store.SlotState, error) {
	var raw string
	var st store.SlotState
	err := q.QueryRowContext(ctx, `SELECT state FROM slots WHERE provider = ?`, provider).Scan(&raw)
	if errors.Is(err, sql.ErrNoRows) {
		return st, nil
	}
	if err == nil {
		err = json.Unmarshal([]byte(raw), &st)
	}
	if err != nil {
		return st, fmt.Errorf("read slots of %s: %w", provider, err)
	}
	return st, nil
}

// changeSlots applies change to provider's slots in one transaction.
func (s *Store) changeSlots(ctx context.Context, provider string, change func(*store.SlotState)) error {
	return s.tx(ctx, "slots of "+provider, func(tx *sql.Tx) error {
		st, err := s.readSlots(ctx, tx, provider)
		if err != nil {
			return err
		}
		change(&st)
		raw, err := json.Marshal(st)
		if err != nil {
			return fmt.Errorf("slots of %s: %w", provider, err)
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO slots (provider, state) VALUES (?, ?)
			ON CONFLICT(provider) DO UPDATE SET state = excluded.state`, provider, string(raw))
		if err != nil {
			return fmt.Errorf("write slots of %s: %w", provider, err)
		}
		return nil
	})
}

func (s *Store) AcquireSlot(ctx context.Context, provider, holder string, limit int, at time.Time) (bool, error) {
	acquired := false
	err := s.changeSlots(ctx, provider, func(st *store.SlotState) { acquired = st.Decide(holder, limit, at) })
	return acquired, err
}

func (s *Store) ReleaseSlot(ctx context.Context, provider, holder string) error {
	return s.changeSlots(ctx, provider, func(st *store.SlotState) {
		delete(st.Holders, holder)
		delete(st.Waiting, holder)
	})
}

func (s *Store) SlotQueuePosition(ctx context.Context, provider, holder string) (int, error) {
	st, err := s.readSlots(ctx, s.r, provider)
	return st.Position(holder), err
}

func (s *Store) SlotsInUse(ctx context.Context, provider string) (int, error) {
	st, err := s.readSlots(ctx, s.r, provider)
	return len(st.Holders), err
}
