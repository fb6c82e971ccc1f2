package storetest

import (
	"context"
	"errors"
	"testing"

	"github.com/google/uuid"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/store"
)

func testAccounts(t *testing.T, s store.Store) {
	ctx := context.Background()
	id := "user-" + uuid.NewString()
	want := domain.Account{UserID: id, Plan: domain.PlanEnterprise, CustomRateLimit: 500, CreatedAt: now}
	if err := s.CreateAccount(ctx, want); err != nil {
		t.Fatalf("CreateAccount: %v", err)
	}
	if err := s.CreateAccount(ctx, want); !errors.Is(err, domain.ErrAlreadyExists) {
		t.Fatalf("second CreateAccount = %v, want ErrAlreadyExists", err)
	}
	got := checkAccount(t, s, id, "0", "0", "0", "0")
	if got.Plan != domain.PlanEnterprise || got.CustomRateLimit != 500 || got.RateLimit() != 500 || !got.CreatedAt.Equal(now) {
		t.Errorf("account = %+v, want plan enterprise, limit 500, created %v", got, now)
	}
	if _, err := s.GetAccount(ctx, "user-missing-"+uuid.NewString()); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("GetAccount(missing) = %v, want ErrNotFound", err)
	}
	// A store may read the header alone for authentication: the same
	// account, its settings at least.
	if hr, ok := s.(interface {
		GetAccountHeader(ctx context.Context, userID string) (domain.Account, error)
	}); ok {
		h, err := hr.GetAccountHeader(ctx, id)
		if err != nil || h.UserID != id || h.Plan != domain.PlanEnterprise || h.RateLimit() != 500 || !h.CreatedAt.Equal(now) {
			t.Errorf("GetAccountHeader = %+v, %v; want the account's plan, limit and creation", h, err)
		}
		if _, err := hr.GetAccountHeader(ctx, "user-missing-"+uuid.NewString()); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("GetAccountHeader(missing) = %v, want ErrNotFound", err)
		}
	}
}
