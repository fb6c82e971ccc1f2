package domain

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// LastUsedGranularity is how stale a key's LastUsedAt may be: it is written
// only when the stored time is older than this, so a key in steady use costs
// one conditional write per interval instead of one per request.
const LastUsedGranularity = 5 * time.Minute

// Limits of an account's keys: MaxActiveKeys keys not revoked at once, and
// chains of at most MaxKeyDepth keys (an owner's key is depth 1, a key it
// makes depth 2, ...), so that a hold checks a short, bounded chain of
// budgets.
const (
	MaxActiveKeys = 100
	MaxKeyDepth   = 5
)

// ParseScope accepts exactly the documented scope names.
func ParseScope(s string) (Scope, error) {
	for _, sc := range AllScopes {
		if string(sc) == s {
			return sc, nil
		}
	}
	return "", fmt.Errorf("%w: unknown scope %q (allowed: %s)", ErrInvalid, s, JoinScopes(AllScopes, ", "))
}

// KeyScopes is a key's scopes as stored, in AllScopes order, each once.
// None stored means every scope: keys made before scopes existed could do
// everything, and keep doing it.
func KeyScopes(stored []Scope) []Scope {
	if len(stored) == 0 {
		return slices.Clone(AllScopes)
	}
	out := make([]Scope, 0, len(stored))
	for _, sc := range AllScopes {
		if slices.Contains(stored, sc) {
			out = append(out, sc)
		}
	}
	return out
}

// JoinScopes is scopes joined by sep ("generate,read").
func JoinScopes(scopes []Scope, sep string) string {
	names := make([]string, len(scopes))
	for i, sc := range scopes {
		names[i] = string(sc)
	}
	return strings.Join(names, sep)
}

// Caller is the key as a request's caller.
func (k APIKey) Caller() Caller {
	return Caller{KeyPrefix: k.Prefix, Scopes: KeyScopes(k.Scopes), DailyCreditLimit: k.DailyCreditLimit,
		Ancestors: slices.Clone(k.Ancestors)}
}

// Chain is k and the keys above it, nearest first: the keys whose daily
// limits a hold of k counts against.
func (k APIKey) Chain() []KeyLimit {
	return append([]KeyLimit{{Prefix: k.Prefix, DailyCreditLimit: k.DailyCreditLimit}}, k.Ancestors...)
}

// Manages reports whether k may revoke or change other: a key manages itself and the keys it made,
// directly or below; an owner's key (no ancestors) manages every key.
func (k APIKey) Manages(other APIKey) bool {
	if len(k.Ancestors) == 0 || other.Prefix == k.Prefix {
		return true
	}
	return slices.ContainsFunc(other.Ancestors, func(a KeyLimit) bool { return a.Prefix == k.Prefix })
}

// TokenCaller is the caller of an identity-provider token: the account's
// owner, with every scope and no key budget.
func TokenCaller() Caller { return Caller{Scopes: slices.Clone(AllScopes)} }

// Has reports whether the caller holds scope s.
func (c Caller) Has(s Scope) bool { return slices.Contains(c.Scopes, s) }

// Lacks lists the scopes of want the caller does not hold.
func (c Caller) Lacks(want []Scope) []Scope {
	var out []Scope
	for _, sc := range want {
		if !c.Has(sc) {
			out = append(out, sc)
		}
	}
	return out
}

// InsufficientScopeError refuses a request its credentials do not cover:
// a route needing a scope the key lacks, or a key asked to give another key
// more than it holds itself. Reason is the refusal for the caller, naming
// what was missing.
type InsufficientScopeError struct {
	Reason string
}

func (e *InsufficientScopeError) Error() string { return "insufficient scope: " + e.Reason }

// KeyRefusedError refuses a new key the account's limits on keys do not
// allow: Code is the API's error code (key_limit_reached: MaxActiveKeys;
// key_depth_exceeded: MaxKeyDepth), Reason the refusal for the caller.
type KeyRefusedError struct {
	Code   string
	Reason string
}

func (e *KeyRefusedError) Error() string { return e.Code + ": " + e.Reason }

// ErrKeyRevoked is a request of a key found revoked when the request is
// served (an authorizer's cached answer may still let it in): it is
// answered 401 as any revoked key.
var ErrKeyRevoked = fmt.Errorf("the API key was revoked")
