package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/store"
)

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
	return s.changeSlots(ctx, provider, func(st *store.SlotState) { st.Release(holder) })
}

func (s *Store) SlotQueuePosition(ctx context.Context, provider, holder string) (int, error) {
	st, err := s.readSlots(ctx, s.r, provider)
	return st.Position(holder), err
}

func (s *Store) SlotsInUse(ctx context.Context, provider string) (int, error) {
	st, err := s.readSlots(ctx, s.r, provider)
	return len(st.Holders), err
}
