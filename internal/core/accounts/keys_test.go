package accounts_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/core/accounts"
	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/local/sqlitestore"
)

var (
	generateRead = []domain.Scope{domain.ScopeGenerate, domain.ScopeRead}
	allScopes    = domain.AllScopes
)

func TestParseNewKey(t *testing.T) {
	tests := []struct {
		name       string
		body       string
		want       accounts.NewKey
		wantFields []string // the fields the 400 names, every one at once
	}{
		{"name only: generate and read, no limit", `{"name":"ci"}`, accounts.NewKey{Name: "ci", Scopes: generateRead}, nil},
		{"scopes in the documented order, a limit as a string", `{"name":"ops","scopes":["admin","read","read"],"daily_credit_limit":"10.50"}`,
			accounts.NewKey{Name: "ops", Scopes: []domain.Scope{domain.ScopeRead, domain.ScopeAdmin}, DailyCreditLimit: decimal.RequireFromString("10.5")}, nil},
		{"a limit as a number", `{"name":"n","daily_credit_limit":10}`, accounts.NewKey{Name: "n", Scopes: generateRead, DailyCreditLimit: decimal.NewFromInt(10)}, nil},
		{"a null limit is none", `{"name":"n","daily_credit_limit":null}`, accounts.NewKey{Name: "n", Scopes: generateRead}, nil},
		{"64 characters", `{"name":"` + strings.Repeat("é", 64) + `"}`, accounts.NewKey{Name: strings.Repeat("é", 64), Scopes: generateRead}, nil},
		{"no name", `{}`, accounts.NewKey{}, []string{"name"}},
		{"null name", `{"name":null}`, accounts.NewKey{}, []string{"name"}},
		{"empty name", `{"name":""}`, accounts.NewKey{}, []string{"name"}},
		{"65 characters", `{"name":"` + strings.Repeat("x", 65) + `"}`, accounts.NewKey{}, []string{"name"}},
		{"blank name", `{"name":"   "}`, accounts.NewKey{}, []string{"name"}},
		{"a control character", `{"name":"a\nb"}`, accounts.NewKey{}, []string{"name"}},
		{"a right-to-left override (bidi, Cf)", `{"name":"ci\u202Egnp.exe"}`, accounts.NewKey{}, []string{"name"}},
		{"a right-to-left isolate", `{"name":"a\u2067b"}`, accounts.NewKey{}, []string{"name"}},
		{"an Arabic letter mark", `{"name":"a\u061Cb"}`, accounts.NewKey{}, []string{"name"}},
		{"a zero-width space (Cf)", `{"name":"admin\u200B"}`, accounts.NewKey{}, []string{"name"}},
		{"a byte order mark (Cf)", `{"name":"\uFEFFci"}`, accounts.NewKey{}, []string{"name"}},
		{"a C1 control", `{"name":"a\u0085b"}`, accounts.NewKey{}, []string{"name"}},
		{"right-to-left letters are fine", `{"name":"مفتاح"}`, accounts.NewKey{Name: "مفتاح", Scopes: generateRead}, nil},
		{"name not a string", `{"name":7}`, accounts.NewKey{}, []string{"name"}},
		{"no scopes", `{"name":"n","scopes":[]}`, accounts.NewKey{}, []string{"scopes"}},
		{"scopes not a list", `{"name":"n","scopes":"read"}`, accounts.NewKey{}, []string{"scopes"}},
		{"an unknown scope", `{"name":"n","scopes":["read","write"]}`, accounts.NewKey{}, []string{"scopes[1]"}},
		{"a zero limit", `{"name":"n","daily_credit_limit":"0"}`, accounts.NewKey{}, []string{"daily_credit_limit"}},
		{"a negative limit", `{"name":"n","daily_credit_limit":-5}`, accounts.NewKey{}, []string{"daily_credit_limit"}},
		{"three places", `{"name":"n","daily_credit_limit":"1.234"}`, accounts.NewKey{}, []string{"daily_credit_limit"}},
		{"not a number", `{"name":"n","daily_credit_limit":"ten"}`, accounts.NewKey{}, []string{"daily_credit_limit"}},
		{"a boolean limit", `{"name":"n","daily_credit_limit":true}`, accounts.NewKey{}, []string{"daily_credit_limit"}},
		{"an unknown field", `{"name":"n","expires_at":"2027-01-01"}`, accounts.NewKey{}, []string{"expires_at"}},
		{"every problem at once", `{"scopes":["root"],"daily_credit_limit":"x"}`, accounts.NewKey{}, []string{"daily_credit_limit", "name", "scopes[0]"}},
		{"not an object", `["ci"]`, accounts.NewKey{}, []string{"body"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := accounts.ParseNewKey([]byte(tt.body))
			if tt.wantFields == nil {
				if err != nil || got.Name != tt.want.Name || !reflect.DeepEqual(got.Scopes, tt.want.Scopes) || !got.DailyCreditLimit.Equal(tt.want.DailyCreditLimit) {
					t.Errorf("ParseNewKey = %+v, %v; want %+v", got, err, tt.want)
				}
				return
			}
			var v *catalog.ValidationError
			if !errors.As(err, &v) || !errors.Is(err, domain.ErrInvalid) {
				t.Fatalf("ParseNewKey = %+v, %v; want a validation error", got, err)
			}
			var fields []string
			for _, d := range v.Details {
				fields = append(fields, d.Field)
			}
			if !reflect.DeepEqual(fields, tt.wantFields) {
				t.Errorf("fields %v (%v), want %v", fields, err, tt.wantFields)
			}
		})
	}
}

// keysStore is an embedded store with two accounts.
func keysStore(t *testing.T) *sqlitestore.Store {
	t.Helper()
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for _, id := range []string{"u1", "u2"} {
		if err := st.CreateAccount(ctx, domain.Account{UserID: id, Plan: domain.PlanPro, CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

// A key gives no more than it holds: no scope it lacks, and, when it has a
// daily limit, no key without one or with a higher one.
func TestAKeyCreatesOnlyKeysWithinItsOwnScopesAndBudget(t *testing.T) {
	ten := decimal.NewFromInt(10)
	tests := []struct {
		name    string
		caller  domain.Caller
		in      accounts.NewKey
		refused bool
	}{
		{"every scope, no limit: anything", domain.Caller{Scopes: allScopes}, accounts.NewKey{Scopes: allScopes}, false},
		{"a token's caller: anything", domain.TokenCaller(), accounts.NewKey{Scopes: allScopes, DailyCreditLimit: ten}, false},
		{"read and admin: a read key", domain.Caller{Scopes: []domain.Scope{domain.ScopeRead, domain.ScopeAdmin}}, accounts.NewKey{Scopes: []domain.Scope{domain.ScopeRead}}, false},
		{"read and admin: not a generate key", domain.Caller{Scopes: []domain.Scope{domain.ScopeRead, domain.ScopeAdmin}}, accounts.NewKey{Scopes: generateRead}, true},
		{"limited: a lower limit", domain.Caller{Scopes: allScopes, DailyCreditLimit: ten}, accounts.NewKey{Scopes: generateRead, DailyCreditLimit: decimal.NewFromInt(5)}, false},
		{"limited: the same limit", domain.Caller{Scopes: allScopes, DailyCreditLimit: ten}, accounts.NewKey{Scopes: generateRead, DailyCreditLimit: ten}, false},
		{"limited: not a higher one", domain.Caller{Scopes: allScopes, DailyCreditLimit: ten}, accounts.NewKey{Scopes: generateRead, DailyCreditLimit: decimal.NewFromInt(11)}, true},
		{"limited: not an unlimited one", domain.Caller{Scopes: allScopes, DailyCreditLimit: ten}, accounts.NewKey{Scopes: generateRead}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := keysStore(t)
			c := &accounts.KeyCreator{Store: st}
			tt.in.Name = "k"
			k, plain, err := c.Create(context.Background(), "u1", tt.caller, tt.in)
			keys, _ := st.ListAPIKeys(context.Background(), "u1")
			if tt.refused {
				var scopeErr *domain.InsufficientScopeError
				if !errors.As(err, &scopeErr) || len(keys) != 0 {
					t.Errorf("Create = %v with %d keys stored; want InsufficientScopeError and nothing stored", err, len(keys))
				}
				return
			}
			if err != nil || len(keys) != 1 || !strings.HasPrefix(plain, k.Prefix+"_") ||
				!reflect.DeepEqual(keys[0].Scopes, tt.in.Scopes) || !keys[0].DailyCreditLimit.Equal(tt.in.DailyCreditLimit) {
				t.Errorf("Create = %+v, %q, %v; stored %+v", k, plain, err, keys)
			}
		})
	}
}

func TestKeysAreListedNewestFirstWithTodaysSpend(t *testing.T) {
	ctx := context.Background()
	st := keysStore(t)
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	c := &accounts.KeyCreator{Store: st, Now: clock}
	var prefixes []string
	for i := 0; i < 3; i++ {
		k, _, err := c.Create(ctx, "u1", domain.TokenCaller(), accounts.NewKey{Name: "k", Scopes: generateRead})
		if err != nil {
			t.Fatal(err)
		}
		prefixes = append(prefixes, k.Prefix)
		now = now.Add(time.Second)
	}
	if _, err := st.Grant(ctx, "u1", "g", decimal.NewFromInt(100)); err != nil {
		t.Fatal(err)
	}
	spender := domain.WithCaller(ctx, domain.Caller{KeyPrefix: prefixes[1], Scopes: generateRead})
	if err := st.Hold(ctx, "u1", domain.NewHold(spender, "w1", domain.WorkGeneration, decimal.RequireFromString("2.60"), now, "provider-a")); err != nil {
		t.Fatal(err)
	}
	page, err := (&accounts.KeyLister{Keys: st, Spend: st, Now: clock}).List(ctx, "u1", 10, "")
	got := page.Items
	if err != nil || len(got) != 3 || page.Next != "" {
		t.Fatalf("List = %+v, %v", page, err)
	}
	for i, want := range []struct {
		prefix string
		spent  string
	}{{prefixes[2], "0"}, {prefixes[1], "2.6"}, {prefixes[0], "0"}} {
		if got[i].Prefix != want.prefix || !got[i].SpentToday.Equal(decimal.RequireFromString(want.spent)) {
			t.Errorf("key %d: %s spent %s, want %s spent %s", i, got[i].Prefix, got[i].SpentToday, want.prefix, want.spent)
		}
	}
	if other, err := (&accounts.KeyLister{Keys: st, Spend: st}).List(ctx, "u2", 10, ""); err != nil || len(other.Items) != 0 {
		t.Errorf("the other account lists %+v, %v", other, err)
	}
}

func TestAKeyIsRevokedOnlyByItsOwnAccountAndKeepsItsFirstTime(t *testing.T) {
	ctx := context.Background()
	st := keysStore(t)
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	k, _, err := (&accounts.KeyCreator{Store: st}).Create(ctx, "u1", domain.TokenCaller(), accounts.NewKey{Name: "k", Scopes: generateRead})
	if err != nil {
		t.Fatal(err)
	}
	r := &accounts.KeyRevoker{Store: st, Now: func() time.Time { return now }}
	owner := domain.TokenCaller()
	if _, err := r.Revoke(ctx, "u2", owner, k.Prefix); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("another account's revoke = %v, want ErrNotFound", err)
	}
	if got, _ := st.GetAPIKey(ctx, k.Hash); got.Revoked() {
		t.Fatal("another account revoked the key")
	}
	if _, err := r.Revoke(ctx, "u1", owner, "not-a-prefix"); !errors.Is(err, domain.ErrInvalid) {
		t.Errorf("a malformed prefix = %v, want ErrInvalid", err)
	}
	first, err := r.Revoke(ctx, "u1", owner, k.Prefix)
	if err != nil || !first.At.Equal(now) {
		t.Fatalf("Revoke = %v, %v; want %v", first, err, now)
	}
	now = now.Add(time.Hour)
	if again, err := r.Revoke(ctx, "u1", owner, k.Prefix); err != nil || !again.At.Equal(first.At) {
		t.Errorf("revoking again = %v, %v; want the first time %v", again, err, first)
	}
}
