package accounts

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/core/apikey"
	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/store"
)

// The keys' holders manage them through the API (/api/account/keys): a use
// case per route, each with the store methods it calls and no more.

// MaxKeyName bounds a key's name, in characters.
const maxKeyName = 64

// DefaultKeyName names the keys the admin command makes.
const DefaultKeyName = "default"

// DefaultScopes are a key's scopes when its creator names none: it can
// generate and read, not manage keys.
var defaultScopes = []domain.Scope{domain.ScopeGenerate, domain.ScopeRead}

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
	in := NewKey{Scopes: slices.Clone(defaultScopes)}
	switch name, ok := obj["name"].(string); {
	case obj["name"] == nil:
		p.Add("name", fmt.Sprintf("is required: 1 to %d characters", maxKeyName))
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
	case n == 0 || n > maxKeyName:
		return fmt.Sprintf("must be 1 to %d characters, got %d", maxKeyName, n)
	case strings.TrimSpace(name) == "":
		return "must not be blank"
	case strings.ContainsFunc(name, unsafeInName):
		return "must not contain control, format or bidirectional characters (such as U+202E)"
	}
	return ""
}

// unsafeInName is a character a key's name may not hold: a control (Cc) or
// format (Cf) character, which covers the bidirectional controls (U+202A–E,
// U+2066–9, U+200E/F, U+061C), or another bidirectional control: a name
// that reorders or hides its text shows the holder a key that is not the
// one they revoke.
func unsafeInName(r rune) bool {
	return unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Bidi_Control, r) ||
		r == utf8.RuneError
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
type keyPutter interface {
	PutAPIKey(ctx context.Context, k domain.APIKey) error
}

// mintKey makes a key for userID as in asks, below the keys of ancestors,
// and stores its hash; the plain key is returned once, here.
func mintKey(ctx context.Context, st keyPutter, userID string, in NewKey, ancestors []domain.KeyLimit, at time.Time) (domain.APIKey, string, error) {
	k, err := apikey.New()
	if err != nil {
		return domain.APIKey{}, "", err
	}
	key := domain.APIKey{Hash: k.Hash, Prefix: k.Prefix, UserID: userID, Name: in.Name,
		Scopes: domain.KeyScopes(in.Scopes), DailyCreditLimit: in.DailyCreditLimit, Ancestors: ancestors, CreatedAt: at}
	if err := st.PutAPIKey(ctx, key); err != nil {
		return domain.APIKey{}, "", fmt.Errorf("create key for %s: %w", userID, err)
	}
	return key, k.Plain, nil
}

// KeyReader reads an account's keys.
type keyReader interface {
	ListAPIKeys(ctx context.Context, userID string) ([]domain.APIKey, error)
}

// KeyCreatorStore lists an account's keys, stores new ones and revokes one
// that its creation must not keep.
type keyCreatorStore interface {
	keyPutter
	keyReader
	RevokeAPIKey(ctx context.Context, prefix string, at time.Time) (time.Time, error)
}

// KeyCreator is POST /api/account/keys: a caller mints a key of its own
// account.
type KeyCreator struct {
	Store keyCreatorStore
	Now   func() time.Time
}

// Create mints the key in asks for, below the caller's key, which may hold
// no scope and no budget beyond the caller's own: a key with a daily limit
// makes only keys with a limit no higher. The new key records the caller's
// key and the keys above it (domain.APIKey.Ancestors), whose limits bound
// its spend too. The account holds at most domain.MaxActiveKeys keys not
// revoked, in chains of at most domain.MaxKeyDepth. The plain key is
// returned once, here.
//
// The caller's key is read as stored, not as the authorizer's cached answer
// says: a key revoked since (or below a revoked key) makes nothing.
// Concurrent creations may both pass the checks; each then lists the keys
// again once its key is stored, and refuses (revoking its new key) when the
// account is past the cap or a key above the new one was revoked
// meanwhile. The last one stored sees every other, so the account never
// keeps more than the cap; racing at the cap, both may be refused.
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
	keys, err := c.Store.ListAPIKeys(ctx, userID)
	if err != nil {
		return domain.APIKey{}, "", fmt.Errorf("list keys of %s: %w", userID, err)
	}
	var ancestors []domain.KeyLimit
	if caller.KeyPrefix != "" {
		maker, err := activeKey(keys, caller.KeyPrefix)
		if err != nil {
			return domain.APIKey{}, "", err
		}
		ancestors = maker.Chain()
		if len(ancestors) >= domain.MaxKeyDepth {
			return domain.APIKey{}, "", &domain.KeyRefusedError{Code: "key_depth_exceeded", Reason: fmt.Sprintf(
				"keys make keys at most %d deep: this key (%s) is %d keys below the owner's, so it cannot make more",
				domain.MaxKeyDepth, caller.KeyPrefix, len(ancestors)-1)}
		}
	}
	if n := countActive(keys); n >= domain.MaxActiveKeys {
		return domain.APIKey{}, "", tooManyKeys(n)
	}
	now := domain.Now(c.Now)
	key, plain, err := mintKey(ctx, c.Store, userID, in, ancestors, now)
	if err != nil {
		return domain.APIKey{}, "", err
	}
	if err := c.stillAllowed(ctx, userID, key); err != nil {
		if _, rerr := c.Store.RevokeAPIKey(ctx, key.Prefix, now); rerr != nil {
			return domain.APIKey{}, "", fmt.Errorf("revoke key %s made past the account's limits: %w", key.Prefix, errors.Join(err, rerr))
		}
		return domain.APIKey{}, "", err
	}
	return key, plain, nil
}

// stillAllowed lists the keys again once key is stored: the keys above it
// must still be active, and the account within MaxActiveKeys active keys.
func (c *KeyCreator) stillAllowed(ctx context.Context, userID string, key domain.APIKey) error {
	keys, err := c.Store.ListAPIKeys(ctx, userID)
	if err != nil {
		return fmt.Errorf("list keys of %s: %w", userID, err)
	}
	if !slices.ContainsFunc(keys, func(k domain.APIKey) bool { return k.Prefix == key.Prefix }) {
		keys = append(keys, key) // an index that lags behind the write
	}
	for _, a := range key.Ancestors {
		if _, err := activeKey(keys, a.Prefix); err != nil {
			return err
		}
	}
	if n := countActive(keys); n > domain.MaxActiveKeys {
		return tooManyKeys(n - 1)
	}
	return nil
}

func tooManyKeys(active int) error {
	return &domain.KeyRefusedError{Code: "key_limit_reached", Reason: fmt.Sprintf(
		"an account holds at most %d keys that are not revoked, and this one holds %d: revoke one first",
		domain.MaxActiveKeys, active)}
}

func countActive(keys []domain.APIKey) int {
	n := 0
	for _, k := range keys {
		if !k.Revoked() {
			n++
		}
	}
	return n
}

// activeKey is the key with this prefix, which must be stored and not
// revoked (domain.ErrKeyRevoked otherwise: the request's key was revoked
// after the authorizer's answer was cached).
func activeKey(keys []domain.APIKey, prefix string) (domain.APIKey, error) {
	i := slices.IndexFunc(keys, func(k domain.APIKey) bool { return k.Prefix == prefix })
	if i < 0 || keys[i].Revoked() {
		return domain.APIKey{}, fmt.Errorf("key %s: %w", prefix, domain.ErrKeyRevoked)
	}
	return keys[i], nil
}

// SpendReader reads what each key's holds took on a UTC day.
type spendReader interface {
	KeySpend(ctx context.Context, userID, day string) (map[string]decimal.Decimal, error)
}

// KeyLister is GET /api/account/keys.
type KeyLister struct {
	Keys  keyReader
	Spend spendReader
	Now   func() time.Time
}

// KeyWithSpend is a key and what its holds and those of the keys below it
// took today (UTC), released and refunded holds given back.
type keyWithSpend struct {
	domain.APIKey
	SpentToday decimal.Decimal
}

// List is a page of the account's keys, revoked ones included, newest
// first (ties by prefix), as the other lists page: limit keys after the
// cursor, and the cursor of the next page when there are more. The account
// holds at most domain.MaxActiveKeys active keys; the revoked ones stay
// listed.
func (l *KeyLister) List(ctx context.Context, userID string, limit int, cursor string) (store.Page[keyWithSpend], error) {
	after, paged, err := store.ParseCursor(cursor)
	if err != nil {
		return store.Page[keyWithSpend]{}, err
	}
	keys, err := l.Keys.ListAPIKeys(ctx, userID)
	if err != nil {
		return store.Page[keyWithSpend]{}, fmt.Errorf("list keys of %s: %w", userID, err)
	}
	slices.SortStableFunc(keys, func(a, b domain.APIKey) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), strings.Compare(a.Prefix, b.Prefix))
	})
	if paged {
		keys = slices.DeleteFunc(keys, func(k domain.APIKey) bool {
			return cmp.Or(after.CreatedAt.Compare(k.CreatedAt), strings.Compare(k.Prefix, after.ID)) <= 0
		})
	}
	keys = keys[:min(len(keys), limit+1)]
	spend, err := l.Spend.KeySpend(ctx, userID, domain.UsageDay(domain.Now(l.Now)))
	if err != nil {
		return store.Page[keyWithSpend]{}, fmt.Errorf("keys' spend of %s: %w", userID, err)
	}
	out := make([]keyWithSpend, len(keys))
	for i, k := range keys {
		out[i] = keyWithSpend{APIKey: k, SpentToday: spend[k.Prefix]}
	}
	// Read up to limit+1: the page, and whether one more follows it.
	return store.WindowPage(out, limit, func(k keyWithSpend) store.Cursor {
		return store.Cursor{CreatedAt: k.CreatedAt, ID: k.Prefix}
	}, store.Cursor{}, false), nil
}

// KeyRevokerStore finds an account's keys and revokes them.
type keyRevokerStore interface {
	keyReader
	RevokeAPIKey(ctx context.Context, prefix string, at time.Time) (time.Time, error)
}

// KeyRevoker is DELETE /api/account/keys/{prefix}.
type KeyRevoker struct {
	Store keyRevokerStore
	Now   func() time.Time
}

// Revocation is what a revocation did: the key is revoked from At (its
// first revocation's time), and so are the keys below it (Below, the ones
// this call revoked or found revoked, by prefix).
type revocation struct {
	At    time.Time
	Below []string
}

// Revoke revokes the caller's key with this prefix and every key below it
// (the keys it made, directly or below: a key's tree goes with it), and
// says from when: a key revoked before keeps its first time, and its tree
// is revoked again, which finishes a revocation a crash interrupted. A key
// may revoke itself and the keys below it; an owner's key (and an
// identity-provider token) any key of the account; any other key is 403
// insufficient_scope. Another account's key is ErrNotFound, as a missing
// one.
func (r *KeyRevoker) Revoke(ctx context.Context, userID string, caller domain.Caller, prefix string) (revocation, error) {
	if err := checkPrefix(prefix); err != nil {
		return revocation{}, err
	}
	keys, err := r.Store.ListAPIKeys(ctx, userID)
	if err != nil {
		return revocation{}, fmt.Errorf("list keys of %s: %w", userID, err)
	}
	i := slices.IndexFunc(keys, func(k domain.APIKey) bool { return k.Prefix == prefix })
	if i < 0 {
		return revocation{}, fmt.Errorf("api key %s of %s: %w", prefix, userID, domain.ErrNotFound)
	}
	target := keys[i]
	if caller.KeyPrefix != "" {
		by, err := activeKey(keys, caller.KeyPrefix)
		if err != nil && !(caller.KeyPrefix == prefix && target.Revoked()) {
			return revocation{}, err
		}
		if err == nil && !by.Manages(target) {
			return revocation{}, &domain.InsufficientScopeError{Reason: fmt.Sprintf(
				"a key can revoke only itself and the keys it made, directly or below: %s was not made below %s", prefix, caller.KeyPrefix)}
		}
	}
	now := domain.Now(r.Now)
	// The key first, then its tree: a key made below it meanwhile either is
	// listed below and revoked here, or finds its maker revoked when it
	// checks after being stored (KeyCreator.Create).
	out := revocation{At: target.RevokedAt}
	if !target.Revoked() {
		if out.At, err = r.Store.RevokeAPIKey(ctx, prefix, now); err != nil {
			return revocation{}, fmt.Errorf("revoke key %s: %w", prefix, err)
		}
	}
	for _, k := range keys {
		if !slices.ContainsFunc(k.Ancestors, func(a domain.KeyLimit) bool { return a.Prefix == prefix }) {
			continue
		}
		out.Below = append(out.Below, k.Prefix)
		if k.Revoked() {
			continue
		}
		if _, err := r.Store.RevokeAPIKey(ctx, k.Prefix, now); err != nil {
			return revocation{}, fmt.Errorf("revoke key %s below %s: %w", k.Prefix, prefix, err)
		}
	}
	return out, nil
}

// checkPrefix refuses what cannot be a key prefix before any lookup.
func checkPrefix(prefix string) error {
	if !apikey.ValidPrefix(prefix) {
		return fmt.Errorf("%w: %.32q is not a key prefix (they look like mgk_ followed by 10 letters and digits)", domain.ErrInvalid, prefix)
	}
	return nil
}
