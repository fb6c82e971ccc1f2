package sqlitestore_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// The header is the account as GetAccount reads it, without the usage.
func TestAccountHeaderIsTheAccountWithoutUsage(t *testing.T) {
	ctx := context.Background()
	s := openStore(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	if err := s.CreateAccount(ctx, domain.Account{UserID: "u1", Plan: domain.PlanEnterprise, CustomRateLimit: 250, CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Grant(ctx, "u1", "g1", decimal.NewFromInt(100)); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"w1", "w2"} {
		if err := s.Hold(ctx, "u1", domain.Hold{WorkID: w, Kind: domain.WorkGeneration, Amount: decimal.NewFromInt(10), CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Capture(ctx, "u1", "w1"); err != nil {
		t.Fatal(err)
	}
	whole, err := s.GetAccount(ctx, "u1")
	if err != nil || len(whole.Usage) != 1 {
		t.Fatalf("account %+v, %v: want one month of usage", whole, err)
	}
	header, err := s.GetAccountHeader(ctx, "u1")
	if err != nil {
		t.Fatal(err)
	}
	whole.Usage = nil
	if !reflect.DeepEqual(header, whole) {
		t.Errorf("header %+v, want %+v", header, whole)
	}
	if _, err := s.GetAccountHeader(ctx, "nobody"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("missing account: %v, want ErrNotFound", err)
	}
}
