package runtime_test

// Trees of keys, through HTTP on the local runtime: the key that made a key
// (created_by), budgets shared up the tree, revocation only downward and
// with the subtree, the cap on an account's keys and the paged key list.

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/local/runtime"
	"github.com/mediagen-dev/mediagen/internal/testkit/runtimetest"
)

// prefixOf is the prefix of a plain key.
func prefixOf(plain string) string {
	rest, _, _ := strings.Cut(strings.TrimPrefix(plain, "mgk_"), "_")
	return "mgk_" + rest
}

// onBothStores runs test on a runtime over the embedded store and over
// DynamoDB (moto's server behind the one-request-at-a-time proxy).
func onBothStores(t *testing.T, cfg runtime.Config, test func(t *testing.T, rt *runtime.Runtime)) {
	t.Run("embedded", func(t *testing.T) { test(t, start(t, cfg)) })
	t.Run("dynamodb", func(t *testing.T) {
		c := cfg
		c.DynamoDB = runtimetest.DynamoDB(t)
		test(t, start(t, c))
	})
}

// A key's limit bounds the keys below it together: children minted with
// the parent's full limit, and their children, share it, so the tree never
// spends more a day than its root's limit. The refusal names the key whose
// limit was hit; a released hold gives back to every key above it; the
// list shows created_by and each key's spend with the keys below it.
func TestAKeyTreeNeverSpendsMoreADayThanItsRootsLimit(t *testing.T) {
	cfg := runtimeConfig()
	cfg.SimulatorLatency = time.Minute // the accepted generations stay held while the test counts
	onBothStores(t, cfg, func(t *testing.T, rt *runtime.Runtime) {
		owner := newAccount(t, rt, domain.PlanEnterprise, 1000)
		image := func(prompt string) map[string]any { return gen("zeta", map[string]any{"prompt": prompt}) }
		price := quote(t, image("x"))
		limit := domain.FormatCredits(price.Mul(decimal.NewFromInt(2))) // two generations a day for the whole tree
		all := []string{"generate", "read", "admin"}

		root := createKey(t, rt, owner.APIKey, map[string]any{"name": "root", "scopes": all, "daily_credit_limit": limit})
		rootKey, rootPrefix := root.str("api_key"), root.str("prefix")
		childA := createKey(t, rt, rootKey, map[string]any{"name": "a", "scopes": all, "daily_credit_limit": limit})
		childB := createKey(t, rt, rootKey, map[string]any{"name": "b", "scopes": all, "daily_credit_limit": limit})
		grand := createKey(t, rt, childA.str("api_key"), map[string]any{"name": "a1", "daily_credit_limit": limit})
		for _, c := range []struct {
			key answer
			by  string
		}{{root, prefixOf(owner.APIKey)}, {childA, rootPrefix}, {childB, rootPrefix}, {grand, childA.str("prefix")}} {
			if got := c.key.str("created_by"); got != c.by {
				t.Errorf("key %s answers created_by %q, want %s", c.key.str("name"), got, c.by)
			}
			if got, _ := listedKey(t, rt, owner.APIKey, c.key.str("prefix"))["created_by"].(string); got != c.by {
				t.Errorf("key %s lists created_by %q, want %s", c.key.str("name"), got, c.by)
			}
		}
		if by := listedKey(t, rt, owner.APIKey, prefixOf(owner.APIKey))["created_by"]; by != nil {
			t.Errorf("the admin command's key lists created_by %v, want null", by)
		}

		// A canceled generation of the grandchild is refunded, and gives
		// back to every key above it.
		canceled := call(t, rt, http.MethodPost, "/api/generations/generate", grand.str("api_key"), image("a storm"))
		if canceled.status != http.StatusOK {
			t.Fatalf("the generation to cancel: HTTP %d %s", canceled.status, canceled.body)
		}
		if spent := listedKey(t, rt, owner.APIKey, rootPrefix)["spent_today"]; spent != domain.FormatCredits(price) {
			t.Errorf("the root's spent_today %v while its grandchild's generation is held, want %s", spent, domain.FormatCredits(price))
		}
		if a := call(t, rt, http.MethodPost, "/api/generations/"+canceled.str("uuid")+"/cancel", grand.str("api_key"), nil); a.status != http.StatusOK {
			t.Fatalf("cancel: HTTP %d %s", a.status, a.body)
		}
		for _, p := range []string{grand.str("prefix"), childA.str("prefix"), rootPrefix} {
			if spent := listedKey(t, rt, owner.APIKey, p)["spent_today"]; spent != "0.00" {
				t.Errorf("%s spent_today %v after the refund, want 0.00", p, spent)
			}
		}

		// Two generations fit the root's limit, whichever keys of the tree
		// make them.
		for _, k := range []answer{grand, childB} {
			if a := call(t, rt, http.MethodPost, "/api/generations/generate", k.str("api_key"), image("a lighthouse")); a.status != http.StatusOK {
				t.Fatalf("a generation within the root's limit by %s: HTTP %d %s", k.str("name"), a.status, a.body)
			}
		}
		before := account(t, rt, owner.UserID)
		for _, k := range []answer{childA, childB, grand, root} {
			over := call(t, rt, http.MethodPost, "/api/generations/generate", k.str("api_key"), image("one too many"))
			if code := checkEnvelope(t, over, http.StatusPaymentRequired); code != "key_budget_exceeded" {
				t.Errorf("key %s past the root's limit: code %q", k.str("name"), code)
			}
			if msg, _ := over.decoded["error"].(map[string]any)["message"].(string); !strings.Contains(msg, rootPrefix) || !strings.Contains(msg, limit) {
				t.Errorf("key %s: the 402 %q does not name the root %s and its limit %s", k.str("name"), msg, rootPrefix, limit)
			}
		}
		if after := account(t, rt, owner.UserID); !after.Held.Equal(before.Held) || !after.Balance.Equal(before.Balance) {
			t.Errorf("the refusals moved credits: held %s → %s", before.Held, after.Held)
		}
		want := map[string]string{rootPrefix: limit, childA.str("prefix"): domain.FormatCredits(price), childB.str("prefix"): domain.FormatCredits(price),
			grand.str("prefix"): domain.FormatCredits(price), prefixOf(owner.APIKey): limit}
		for p, w := range want {
			if spent := listedKey(t, rt, owner.APIKey, p)["spent_today"]; spent != w {
				t.Errorf("%s spent_today %v, want %s", p, spent, w)
			}
		}
		// Another tree of the account is not bound by it.
		other := createKey(t, rt, owner.APIKey, map[string]any{"name": "other", "daily_credit_limit": limit})
		if a := call(t, rt, http.MethodPost, "/api/generations/generate", other.str("api_key"), image("elsewhere")); a.status != http.StatusOK {
			t.Errorf("a key of another tree: HTTP %d %s", a.status, a.body)
		}
	})
}

// Concurrent generations through every key of a tree never take the tree
// past its root's limit: the chain of budgets is checked in the hold's
// atomic write, on both stores.
func TestConcurrentGenerationsOfAKeyTreeStayWithinTheRootsLimit(t *testing.T) {
	cfg := runtimeConfig()
	cfg.SimulatorLatency = time.Minute
	onBothStores(t, cfg, func(t *testing.T, rt *runtime.Runtime) {
		owner := newAccount(t, rt, domain.PlanEnterprise, 1000)
		body := gen("zeta", map[string]any{"prompt": "a race"})
		price := quote(t, body)
		const fits = 3
		limit := domain.FormatCredits(price.Mul(decimal.NewFromInt(fits)))
		all := []string{"generate", "read", "admin"}
		root := createKey(t, rt, owner.APIKey, map[string]any{"name": "root", "scopes": all, "daily_credit_limit": limit})
		var keys []string
		for i := range 4 {
			keys = append(keys, createKey(t, rt, root.str("api_key"), map[string]any{"name": fmt.Sprintf("child %d", i), "daily_credit_limit": limit}).str("api_key"))
		}
		before := account(t, rt, owner.UserID)

		var wg sync.WaitGroup
		statuses := make(chan answer, 3*len(keys))
		for range 3 {
			for _, k := range keys {
				wg.Go(func() { statuses <- call(t, rt, http.MethodPost, "/api/generations/generate", k, body) })
			}
		}
		wg.Wait()
		close(statuses)
		accepted := 0
		for a := range statuses {
			switch a.status {
			case http.StatusOK:
				accepted++
			case http.StatusPaymentRequired:
				if code := checkEnvelope(t, a, http.StatusPaymentRequired); code != "key_budget_exceeded" {
					t.Errorf("a refusal: code %q", code)
				}
			default:
				t.Errorf("HTTP %d %s, want 200 or 402", a.status, a.body)
			}
		}
		if accepted != fits {
			t.Errorf("%d of 12 concurrent generations accepted through 4 children, want %d: the root's limit %s holds %d", accepted, fits, limit, fits)
		}
		held := account(t, rt, owner.UserID).Held.Sub(before.Held)
		if !held.Equal(price.Mul(decimal.NewFromInt(int64(accepted)))) || held.GreaterThan(price.Mul(decimal.NewFromInt(fits))) {
			t.Errorf("the tree holds %s, want %d × %s, at most the root's limit %s", held, accepted, price, limit)
		}
		if spent := listedKey(t, rt, owner.APIKey, root.str("prefix"))["spent_today"]; spent != domain.FormatCredits(held) {
			t.Errorf("the root's spent_today %v, want %s", spent, held)
		}
	})
}

// A key revokes itself and the keys below it, never a key above or beside
// it: a lesser admin key cannot revoke the owner's key. Revoking a key
// revokes its subtree, and a key revoked while an authorizer's cached
// answer still lets it in makes no key.
func TestAKeyRevokesOnlyTheKeysBelowIt(t *testing.T) {
	cfg := runtimeConfig()
	clock := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	cfg.AuthCacheTTL, cfg.AuthCacheClock = time.Hour, func() time.Time { return clock } // answers stay cached: the route itself must check
	rt := start(t, cfg)
	owner := newAccount(t, rt, domain.PlanEnterprise, 100)
	lesser := createKey(t, rt, owner.APIKey, map[string]any{"name": "lesser", "scopes": []string{"admin"}, "daily_credit_limit": "1.00"})
	sibling := createKey(t, rt, owner.APIKey, map[string]any{"name": "sibling", "scopes": []string{"read"}})
	child := createKey(t, rt, lesser.str("api_key"), map[string]any{"name": "child", "scopes": []string{"admin"}, "daily_credit_limit": "1.00"})
	grand := createKey(t, rt, child.str("api_key"), map[string]any{"name": "grand", "scopes": []string{"admin"}, "daily_credit_limit": "1.00"})
	great := createKey(t, rt, grand.str("api_key"), map[string]any{"name": "great", "scopes": []string{"admin"}, "daily_credit_limit": "1.00"})

	for _, tt := range []struct {
		name, key, target string
	}{
		{"the lesser key: the owner's key", lesser.str("api_key"), prefixOf(owner.APIKey)},
		{"the lesser key: a sibling", lesser.str("api_key"), sibling.str("prefix")},
		{"a child: its maker", child.str("api_key"), lesser.str("prefix")},
		{"a grandchild: the owner's key", grand.str("api_key"), prefixOf(owner.APIKey)},
	} {
		a := call(t, rt, http.MethodDelete, "/api/account/keys/"+tt.target, tt.key, nil)
		if code := checkEnvelope(t, a, http.StatusForbidden); code != "insufficient_scope" {
			t.Errorf("%s: code %q, want insufficient_scope", tt.name, code)
		}
	}
	if a := call(t, rt, http.MethodGet, "/api/account/keys", owner.APIKey, nil); a.status != http.StatusOK {
		t.Fatalf("the owner's key after the refusals: HTTP %d %s", a.status, a.body)
	}
	for _, k := range []answer{lesser, sibling, child} {
		if listedKey(t, rt, owner.APIKey, k.str("prefix"))["revoked_at"] != nil {
			t.Errorf("key %s was revoked by a refused request", k.str("name"))
		}
	}

	// Downward: the lesser key revokes its grandchild's child directly.
	if a := call(t, rt, http.MethodDelete, "/api/account/keys/"+great.str("prefix"), lesser.str("api_key"), nil); a.status != http.StatusOK {
		t.Fatalf("the lesser key revoking a key two below it: HTTP %d %s", a.status, a.body)
	}
	// The owner's key revokes the lesser key, and its tree goes with it.
	revoked := call(t, rt, http.MethodDelete, "/api/account/keys/"+lesser.str("prefix"), owner.APIKey, nil)
	if revoked.status != http.StatusOK {
		t.Fatalf("the owner revoking the lesser key: HTTP %d %s", revoked.status, revoked.body)
	}
	below, _ := revoked.decoded["revoked_below"].([]any)
	if got := fmt.Sprint(below); !strings.Contains(got, child.str("prefix")) || !strings.Contains(got, grand.str("prefix")) || !strings.Contains(got, great.str("prefix")) {
		t.Errorf("revoked_below %v, want the child, the grandchild and its child", below)
	}
	for _, k := range []answer{lesser, child, grand, great} {
		if listedKey(t, rt, owner.APIKey, k.str("prefix"))["revoked_at"] == nil {
			t.Errorf("key %s is not revoked with the tree", k.str("name"))
		}
	}
	if listedKey(t, rt, owner.APIKey, sibling.str("prefix"))["revoked_at"] != nil {
		t.Error("the sibling was revoked with another tree")
	}

	// The child's answer is still cached: it gets through the gateway, but
	// the route reads the stored key and makes nothing.
	keysBefore, _ := rt.Store.ListAPIKeys(context.Background(), owner.UserID)
	minted := call(t, rt, http.MethodPost, "/api/account/keys", child.str("api_key"), map[string]any{"name": "late", "scopes": []string{"admin"}, "daily_credit_limit": "1.00"})
	if code := checkEnvelope(t, minted, http.StatusUnauthorized); code != "unauthorized" {
		t.Errorf("a revoked key (cached) making a key: code %q", code)
	}
	if keys, _ := rt.Store.ListAPIKeys(context.Background(), owner.UserID); len(keys) != len(keysBefore) {
		t.Errorf("%d keys after the revoked key's create, want %d", len(keys), len(keysBefore))
	}
}

// A key at the depth limit makes no key (409 key_depth_exceeded).
func TestKeysAreAtMostFiveDeep(t *testing.T) {
	rt := start(t, runtimeConfig())
	owner := newAccount(t, rt, domain.PlanPro, 100)
	key := owner.APIKey
	for depth := 2; depth <= domain.MaxKeyDepth; depth++ {
		key = createKey(t, rt, key, map[string]any{"name": fmt.Sprintf("depth %d", depth), "scopes": []string{"admin"}}).str("api_key")
	}
	a := call(t, rt, http.MethodPost, "/api/account/keys", key, map[string]any{"name": "too deep", "scopes": []string{"admin"}})
	if code := checkEnvelope(t, a, http.StatusConflict); code != "key_depth_exceeded" {
		t.Errorf("a key %d deep making another: code %q", domain.MaxKeyDepth, code)
	}
}

// An account holds at most 100 active keys: the 101st is a 409
// key_limit_reached that makes nothing, also when creations race at the
// cap; a revoked key frees its place. The list comes in cursor pages,
// newest first, every key once.
func TestKeysAreCappedAndListedInPages(t *testing.T) {
	rt := start(t, runtimeConfig())
	owner := newAccount(t, rt, domain.PlanEnterprise, 100)
	var made []string
	for i := 1; i < domain.MaxActiveKeys-5; i++ { // the owner's key is the first
		made = append(made, createKey(t, rt, owner.APIKey, map[string]any{"name": fmt.Sprintf("k%d", i), "scopes": []string{"read"}}).str("prefix"))
	}
	// Ten creations race for the last five places.
	var wg sync.WaitGroup
	answers := make(chan answer, 10)
	for i := range 10 {
		wg.Go(func() {
			answers <- call(t, rt, http.MethodPost, "/api/account/keys", owner.APIKey, map[string]any{"name": fmt.Sprintf("race %d", i), "scopes": []string{"read"}})
		})
	}
	wg.Wait()
	close(answers)
	created := 0
	for a := range answers {
		switch a.status {
		case http.StatusCreated:
			created++
		case http.StatusConflict:
			if code := checkEnvelope(t, a, http.StatusConflict); code != "key_limit_reached" {
				t.Errorf("a refused create: code %q", code)
			}
		default:
			t.Errorf("a racing create: HTTP %d %s", a.status, a.body)
		}
	}
	active := func() int {
		keys, err := rt.Store.ListAPIKeys(context.Background(), owner.UserID)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, k := range keys {
			if !k.Revoked() {
				n++
			}
		}
		return n
	}
	if n := active(); n > domain.MaxActiveKeys || n != domain.MaxActiveKeys-5+created || created == 0 {
		t.Fatalf("%d active keys after %d of 10 racing creates succeeded, want at most %d and 95 + the successes", n, created, domain.MaxActiveKeys)
	}
	for active() < domain.MaxActiveKeys {
		createKey(t, rt, owner.APIKey, map[string]any{"name": "fill", "scopes": []string{"read"}})
	}
	over := call(t, rt, http.MethodPost, "/api/account/keys", owner.APIKey, map[string]any{"name": "one too many"})
	if code := checkEnvelope(t, over, http.StatusConflict); code != "key_limit_reached" {
		t.Errorf("the 101st key: code %q", code)
	}
	if msg, _ := over.decoded["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "100") {
		t.Errorf("the 409 %q does not name the cap", msg)
	}
	if n := active(); n != domain.MaxActiveKeys {
		t.Errorf("%d active keys after the refusal, want %d", n, domain.MaxActiveKeys)
	}
	if a := call(t, rt, http.MethodDelete, "/api/account/keys/"+made[0], owner.APIKey, nil); a.status != http.StatusOK {
		t.Fatalf("revoke: HTTP %d %s", a.status, a.body)
	}
	createKey(t, rt, owner.APIKey, map[string]any{"name": "in the freed place"})

	// Pages of 30, newest first, each key once, the revoked one too.
	all, _ := rt.Store.ListAPIKeys(context.Background(), owner.UserID)
	seen := map[string]bool{}
	var last string
	cursor, pages := "", 0
	for {
		path := "/api/account/keys?limit=30"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		page := call(t, rt, http.MethodGet, path, owner.APIKey, nil)
		if page.status != http.StatusOK {
			t.Fatalf("GET %s: HTTP %d %s", path, page.status, page.body)
		}
		pages++
		data, _ := page.decoded["data"].([]any)
		for _, v := range data {
			k := v.(map[string]any)
			p, at := k["prefix"].(string), k["created_at"].(string)
			if seen[p] {
				t.Errorf("key %s listed twice", p)
			}
			if last != "" && at > last {
				t.Errorf("key %s (%s) after one made at %s: not newest first", p, at, last)
			}
			seen[p], last = true, at
		}
		more, _ := page.decoded["has_more"].(bool)
		if !more {
			if page.decoded["next_cursor"] != nil {
				t.Errorf("the last page has a next_cursor: %s", page.body)
			}
			break
		}
		if len(data) != 30 {
			t.Errorf("a page of %d keys with more to come, want 30", len(data))
		}
		cursor = page.str("next_cursor")
	}
	if len(seen) != len(all) || pages != (len(all)+29)/30 {
		t.Errorf("%d keys in %d pages, want all %d in %d", len(seen), pages, len(all), (len(all)+29)/30)
	}
	if first := call(t, rt, http.MethodGet, "/api/account/keys", owner.APIKey, nil); len(first.decoded["data"].([]any)) != 20 {
		t.Errorf("the default page holds %d keys, want 20", len(first.decoded["data"].([]any)))
	}
	for _, q := range []string{"?limit=0", "?limit=101", "?cursor=nope", "?status=active"} {
		if code := checkEnvelope(t, call(t, rt, http.MethodGet, "/api/account/keys"+q, owner.APIKey, malformed(nil)), http.StatusBadRequest); code != "invalid_request" {
			t.Errorf("GET /api/account/keys%s: code %q", q, code)
		}
	}
}

// Names that hide or reorder their text are a 400 naming the field, and
// make no key.
func TestKeyNamesWithControlFormatOrBidiCharactersAreRefused(t *testing.T) {
	rt := start(t, runtimeConfig())
	owner := newAccount(t, rt, domain.PlanPro, 100)
	for _, name := range []string{"ci\u202Egnp.exe", "a\u2066b\u2069", "admin\u200B", "\uFEFFci", "tab\there", "a\u0085b", "x\u061Cy"} {
		a := call(t, rt, http.MethodPost, "/api/account/keys", owner.APIKey, map[string]any{"name": name})
		if code := checkEnvelope(t, a, http.StatusBadRequest); code != "invalid_request" {
			t.Errorf("name %q: code %q", name, code)
		}
		details, _ := a.decoded["error"].(map[string]any)["details"].([]any)
		if len(details) != 1 || details[0].(map[string]any)["field"] != "name" {
			t.Errorf("name %q: details %v, want the field name", name, details)
		}
	}
	if keys, _ := rt.Store.ListAPIKeys(context.Background(), owner.UserID); len(keys) != 1 {
		t.Errorf("%d keys after the refusals, want the owner's 1", len(keys))
	}
	if a := createKey(t, rt, owner.APIKey, map[string]any{"name": "مفتاح النشر"}); a.str("name") != "مفتاح النشر" {
		t.Errorf("a right-to-left name: %s", a.body)
	}
}
