package store

import (
	"context"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// Idempotency remembers the answers to POSTs sent with an Idempotency-Key.
type Idempotency interface {
	// ClaimIdempotencyKey stores r unless a live (unexpired) record holds
	// the same user and key; then it returns that record and claimed false.
	ClaimIdempotencyKey(ctx context.Context, r domain.IdempotencyRecord) (existing domain.IdempotencyRecord, claimed bool, err error)
	// FinishIdempotencyKey stores the answer of a claimed key.
	FinishIdempotencyKey(ctx context.Context, userID, key string, status int, body []byte) error
	// ReleaseIdempotencyKey forgets a claimed key whose request did not
	// finish (a server error), so that a retry runs again.
	ReleaseIdempotencyKey(ctx context.Context, userID, key string) error
}
