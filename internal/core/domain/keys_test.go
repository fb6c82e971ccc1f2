package domain

import (
	"errors"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

func TestCheckKeyBudgetNamesTheFirstKeyOfTheChainItWouldPass(t *testing.T) {
	d := decimal.RequireFromString
	at := time.Date(2026, 11, 24, 15, 0, 0, 0, time.UTC)
	h := Hold{Amount: d("3"), CreatedAt: at, KeyPrefix: "mgk_child", KeyDailyLimit: d("10"),
		KeyAncestors: []KeyLimit{{Prefix: "mgk_parent"}, {Prefix: "mgk_root", DailyCreditLimit: d("10")}}}
	tests := []struct {
		name      string
		spent     []decimal.Decimal
		wantKey   string
		wantAbove bool
	}{
		{"within every limit", []decimal.Decimal{d("0"), d("50"), d("7")}, "", false},
		{"exactly at the root's limit", []decimal.Decimal{d("0"), d("0"), d("7")}, "", false},
		{"past the root's limit", []decimal.Decimal{d("0"), d("0"), d("7.01")}, "mgk_root", true},
		{"past its own limit first", []decimal.Decimal{d("8"), d("0"), d("9")}, "mgk_child", false},
		{"an ancestor without a limit never refuses", []decimal.Decimal{d("0"), d("1000"), d("0")}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckKeyBudget(h, tt.spent)
			var over *KeyBudgetExceededError
			if tt.wantKey == "" {
				if err != nil {
					t.Errorf("CheckKeyBudget = %v, want nil", err)
				}
				return
			}
			if !errors.As(err, &over) || over.KeyPrefix != tt.wantKey || over.Above != tt.wantAbove ||
				!over.ResetAt.Equal(time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)) {
				t.Errorf("CheckKeyBudget = %+v, want %s (above: %v) resetting at midnight UTC", err, tt.wantKey, tt.wantAbove)
			}
		})
	}
	if got := (Hold{Amount: d("1")}).KeyChain(); got != nil {
		t.Errorf("a hold no key made has the chain %v, want none", got)
	}
}

func TestAKeyManagesItselfAndTheKeysBelowIt(t *testing.T) {
	owner := APIKey{Prefix: "mgk_owner"}
	lesser := APIKey{Prefix: "mgk_lesser", Ancestors: []KeyLimit{{Prefix: "mgk_owner"}}}
	child := APIKey{Prefix: "mgk_child", Ancestors: []KeyLimit{{Prefix: "mgk_lesser"}, {Prefix: "mgk_owner"}}}
	grand := APIKey{Prefix: "mgk_grand", Ancestors: []KeyLimit{{Prefix: "mgk_child"}, {Prefix: "mgk_lesser"}, {Prefix: "mgk_owner"}}}
	sibling := APIKey{Prefix: "mgk_sibling", Ancestors: []KeyLimit{{Prefix: "mgk_owner"}}}
	otherOwner := APIKey{Prefix: "mgk_owner2"}
	tests := []struct {
		name        string
		by, target  APIKey
		wantManages bool
	}{
		{"an owner's key: another owner's key", owner, otherOwner, true},
		{"an owner's key: a grandchild", owner, grand, true},
		{"a key: itself", lesser, lesser, true},
		{"a key: its child", lesser, child, true},
		{"a key: two below", lesser, grand, true},
		{"a key: its maker", lesser, owner, false},
		{"a key: a sibling", lesser, sibling, false},
		{"a key: an owner's key", child, otherOwner, false},
		{"a grandchild: its grandparent", grand, lesser, false},
	}
	for _, tt := range tests {
		if got := tt.by.Manages(tt.target); got != tt.wantManages {
			t.Errorf("%s: Manages = %v, want %v", tt.name, got, tt.wantManages)
		}
	}
	if child.CreatedBy() != "mgk_lesser" || owner.CreatedBy() != "" {
		t.Errorf("CreatedBy: %q and %q, want mgk_lesser and none", child.CreatedBy(), owner.CreatedBy())
	}
}
