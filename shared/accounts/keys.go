package accounts

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/shared/apikey"
	"github.com/mediagen-dev/mediagen/shared/catalog"
	"github.com/mediagen-dev/mediagen/shared/domain"
)

// The keys' holders manage them through the API (/api/account/keys): a use
// case per route, each with the store methods it calls and no more.

// MaxKeyName bounds a key's name, in characters.
const MaxKeyName = 64

// DefaultKeyName names the keys the admin command makes.
const DefaultKeyName = "default"

// DefaultScopes are a key's scopes when its creator names none: it can
// generate and read, not manage keys.
var DefaultScopes = []domain.Scope{domain.ScopeGenerate, domain.ScopeRead}

// NewKey is what a new key is asked to be.
type NewKey struct {
	Name   string
	Scopes []domain.Scope
	// DailyCreditLimit is zero for no limit.
	DailyCreditLimit decimal.Decimal
}

// ParseNewKey reads the body of POST /api/account/keys: name (required),
// scopes (default DefaultScopes) and daily_credit_limit (a decimal string
// or number above zero, at most two places; absent or null for none). Every
// bad field is reported at once.
func ParseNewKey(body []byte) (NewKey, error) {
	obj, err := catalog.DecodeObject(body)
	if err != nil {
		return NewKey{}, err
	}
	allowed := []string{"name", "scopes", "daily_credit_limit"}
	var p catalog.Problems
	p.Unknown("", obj, allowed)
	in := NewKey{Scopes: slices.Clone(DefaultScopes)}
	switch name, ok := obj["name"].(string); {
	case obj["name"] == nil:
		p.Add("name", fmt.Sprintf("is required: 1 to %d characters", MaxKeyName))
	case !ok:
		p.Add("name", "must be a string")
	default:
		if msg := checkKeyName(name); msg != "" {
			p.Add("name", msg)
		}
		in.Name = name
	}
	if raw, present := obj["scopes"]; present {
		in.Scopes = parseScopes(raw, &p)
	}
	if raw := obj["daily_credit_limit"]; raw != nil {
		in.DailyCreditLimit = parseDailyLimit(raw, &p)
	}
	if err := p.Err(); err != nil {
		return NewKey{}, err
	}
	return in, nil
}

// checkKeyName says what is wrong with a name, or "".
func checkKeyName(name string) string {
	n := utf8.RuneCountInString(name)
	switch {
	case n == 0 || n > MaxKeyName:
		return fmt.Sprintf("must be 1 to %d characters, got %d", MaxKeyName, n)
	case strings.TrimSpace(name) == "":
		return "must not be blank"
	case strings.ContainsFunc(name, unicode.IsControl):
		return "must not contain control characters"
	}
	return ""
}

func parseScopes(raw any, p *catalog.Problems) []domain.Scope {
	list, ok := raw.([]any)
	if !ok || len(list) == 0 {
		p.Add("scopes", "must be a non-empty list of: "+domain.JoinScopes(domain.AllScopes, ", "))
		return nil
	}
	var out []domain.Scope
	for i, v := range list {
		name, _ := v.(string)
		sc, err := domain.ParseScope(name)
		if err != nil {
			p.Add(fmt.Sprintf("scopes[%d]", i), fmt.Sprintf("must be one of %s", domain.JoinScopes(domain.AllScopes, ", ")))
			continue
		}
		out = append(out, sc)
	}
	return domain.KeyScopes(out)
}

func parseDailyLimit(raw any, p *catalog.Problems) decimal.Decimal {
	const want = "must be a number of credits above 0 with at most 2 decimal places, such as \"25.50\""
	var text string
	switch v := raw.(type) {
	case string:
		text = v
	case json.Number:
		text = v.String()
	default:
		p.Add("daily_credit_limit", want)
		return decimal.Zero
	}
	d, err := domain.ParseCredits(text)
	if err == nil {
		_, err = domain.CreditsToCents(d)
	}
	if err != nil || !d.IsPositive() {
		p.Add("daily_credit_limit", want)
		return decimal.Zero
	}
	return d
}

// KeyPutter stores new keys.
type KeyPutter interface {
	PutAPIKey(ctx context.Context, k domain.APIKey) error
}

// mintKey makes a key for userID as in asks and stores its hash; the plain
// key is returned once, here.
func mintKey(ctx context.Context, st KeyPutter, userID string, in NewKey, at time.Time) (domain.APIKey, string, error) {
	k, err := apikey.New()
	if err != nil {
		return domain.APIKey{}, "", err
	}
	key := domain.APIKey{Hash: k.Hash, Prefix: k.Prefix, UserID: userID, Name: in.Name,
		Scopes: domain.KeyScopes(in.Scopes), DailyCreditLimit: in.DailyCreditLimit, CreatedAt: at}
	if err := st.PutAPIKey(ctx, key); err != nil {
		return domain.APIKey{}, "", fmt.Errorf("create key for %s: %w", userID, err)
	}
	return key, k.Plain, nil
}

// KeyCreator is POST /api/account/keys: a caller mints a key of its own
// account.
type KeyCreator struct {
	Store KeyPutter
	Now   func() time.Time
}

// Create mints the key in asks for, which may hold no scope and no budget
// beyond the caller's own: a key with a daily limit makes only keys with a
// limit no higher. The plain key is returned once, here.
func (c *KeyCreator) Create(ctx context.Context, userID string, caller domain.Caller, in NewKey) (domain.APIKey, string, error) {
	if lacks := caller.Lacks(in.Scopes); len(lacks) > 0 {
		return domain.APIKey{}, "", &domain.InsufficientScopeError{Reason: fmt.Sprintf(
			"a key cannot grant scopes it does not hold: this one lacks %s (it holds %s)",
			domain.JoinScopes(lacks, ", "), domain.JoinScopes(caller.Scopes, ", "))}
	}
	if limit := caller.DailyCreditLimit; limit.IsPositive() && (!in.DailyCreditLimit.IsPositive() || in.DailyCreditLimit.GreaterThan(limit)) {
		return domain.APIKey{}, "", &domain.InsufficientScopeError{Reason: fmt.Sprintf(
			"a key cannot grant a budget beyond its own: this one has a daily credit limit of %s, so the key it creates needs a daily_credit_limit of at most %s",
			domain.FormatCredits(limit), domain.FormatCredits(limit))}
	}
	return mintKey(ctx, c.Store, userID, in, domain.Now(c.Now))
}

// KeyReader reads an account's keys.
type KeyReader interface {
	ListAPIKeys(ctx context.Context, userID string) ([]domain.APIKey, error)
}

// SpendReader reads what each key's holds took on a UTC day.
type SpendReader interface {
	KeySpend(ctx context.Context, userID, day string) (map[string]decimal.Decimal, error)
}

// KeyLister is GET /api/account/keys.
type KeyLister struct {
	Keys  KeyReader
	Spend SpendReader
	Now   func() time.Time
}

// KeyWithSpend is a key and what its holds took today (UTC), released and
// refunded holds given back.
type KeyWithSpend struct {
	domain.APIKey
	SpentToday decimal.Decimal
}

// List is the account's keys, revoked ones included, newest first.
func (l *KeyLister) List(ctx context.Context, userID string) ([]KeyWithSpend, error) {
	keys, err := l.Keys.ListAPIKeys(ctx, userID)
	if err != nil {
		return nil, fmt.Errorf("list keys of %s: %w", userID, err)
	}
	spend, err := l.Spend.KeySpend(ctx, userID, domain.UsageDay(domain.Now(l.Now)))
	if err != nil {
		return nil, fmt.Errorf("keys' spend of %s: %w", userID, err)
	}
	out := make([]KeyWithSpend, len(keys))
	for i, k := range keys {
		out[i] = KeyWithSpend{APIKey: k, SpentToday: spend[k.Prefix]}
	}
	slices.SortStableFunc(out, func(a, b KeyWithSpend) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), strings.Compare(a.Prefix, b.Prefix))
	})
	return out, nil
}

// KeyRevokerStore finds an account's keys and revokes them.
type KeyRevokerStore interface {
	KeyReader
	RevokeAPIKey(ctx context.Context, prefix string, at time.Time) (time.Time, error)
}

// KeyRevoker is DELETE /api/account/keys/{prefix}.
type KeyRevoker struct {
	Store KeyRevokerStore
	Now   func() time.Time
}

// Revoke revokes the caller's key with this prefix and says from when: a
// key revoked before keeps its first time. Another account's key is
// ErrNotFound, as a missing one.
func (r *KeyRevoker) Revoke(ctx context.Context, userID, prefix string) (time.Time, error) {
	if err := checkPrefix(prefix); err != nil {
		return time.Time{}, err
	}
	keys, err := r.Store.ListAPIKeys(ctx, userID)
	if err != nil {
		return time.Time{}, fmt.Errorf("list keys of %s: %w", userID, err)
	}
	i := slices.IndexFunc(keys, func(k domain.APIKey) bool { return k.Prefix == prefix })
	switch {
	case i < 0:
		return time.Time{}, fmt.Errorf("api key %s of %s: %w", prefix, userID, domain.ErrNotFound)
	case keys[i].Revoked():
		return keys[i].RevokedAt, nil
	}
	at, err := r.Store.RevokeAPIKey(ctx, prefix, domain.Now(r.Now))
	if err != nil {
		return time.Time{}, fmt.Errorf("revoke key %s: %w", prefix, err)
	}
	return at, nil
}

// checkPrefix refuses what cannot be a key prefix before any lookup.
func checkPrefix(prefix string) error {
	if !apikey.ValidPrefix(prefix) {
		return fmt.Errorf("%w: %.32q is not a key prefix (they look like mgk_ followed by 10 letters and digits)", domain.ErrInvalid, prefix)
	}
	return nil
}
