package playground_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/core/accounts"
	"github.com/mediagen-dev/mediagen/internal/local/runtime"
	"github.com/mediagen-dev/mediagen/internal/testkit/runtimetest"
)

// grantsBeforeTheRun give the dev account's journal more than one page
// (20 rows) before the dashboard opens.
const grantsBeforeTheRun = 24

// TestTheDashboardShowsTheAccountAndManagesKeysInChromium drives the
// dashboard in Debian's Chromium, headless, through playwright-core
// (testdata/dashboard.cjs), against the local runtime: a wrong key is
// refused at sign-in; the admin dev key signs in and is kept in the tab's
// sessionStorage only; the balance, the 30 days of the usage chart and the
// journal's pages are the API's; a key created with a daily limit shows
// its secret once, copied by the copy button; a generation with that key
// shows as its spend, its journal rows and its usage; revoked, it is
// refused; and a tab whose key is revoked is back at sign-in. Screenshots
// are kept in test-output/dashboard/.
func TestTheDashboardShowsTheAccountAndManagesKeysInChromium(t *testing.T) {
	pw := browserTools(t)
	out := screenshotDir(t, "dashboard")
	rt := runtimetest.Start(t, runtime.Config{SimulatorLatency: 300 * time.Millisecond})
	admin := &accounts.Service{Store: rt.Store}
	for i := range grantsBeforeTheRun {
		if _, _, err := admin.Grant(context.Background(), rt.Dev.UserID, fmt.Sprintf("dashboard-test-%d", i), decimal.NewFromInt(1)); err != nil {
			t.Fatalf("grant: %v", err)
		}
	}

	checks, err := runBrowserScript(t, pw, "dashboard.cjs", "BASE_URL="+rt.BaseURL, "API_KEY="+rt.Dev.APIKey, "OUT_DIR="+out)
	t.Logf("screenshots in %s", out)
	if err != nil {
		t.Fatalf("the browser run failed (%v)\n(see %s/failure.png)", err, out)
	}

	str := func(m map[string]any, field string) string { s, _ := m[field].(string); return s }
	sub := func(m map[string]any, field string) map[string]any { s, _ := m[field].(map[string]any); return s }
	strs := func(v any) []string {
		var out []string
		l, _ := v.([]any)
		for _, x := range l {
			s, _ := x.(string)
			out = append(out, s)
		}
		return out
	}
	// The page shows amounts with thousands separators.
	amount := func(shown string) string { return strings.ReplaceAll(strings.TrimSpace(shown), ",", "") }

	if c := checks.last("sign-in page"); c["signInShown"] != true || c["boardShown"] != false {
		t.Errorf("a new visit shows %v, want the sign-in form alone", c)
	}
	if c := checks.last("bad key"); !strings.Contains(str(c, "error"), "refused") || c["boardShown"] != false {
		t.Errorf("an unknown key at sign-in: %v, want the API's refusal shown and no board", c)
	}

	// The key is in the tab's sessionStorage, and nowhere else.
	signedIn := checks.last("signed in")
	if signedIn["session"] != true {
		t.Errorf("after sign-in the key is not in sessionStorage: %v", signedIn)
	}
	if len(strs(signedIn["local"])) != 0 || str(signedIn, "documentCookie") != "" || signedIn["cookies"] != float64(0) ||
		signedIn["urlHasKey"] != false || str(signedIn, "input") != "" {
		t.Errorf("the key is kept outside sessionStorage: localStorage %v, cookies %q/%v, URL %v, sign-in field %q",
			signedIn["local"], signedIn["documentCookie"], signedIn["cookies"], signedIn["url"], signedIn["input"])
	}
	if withKey := strs(checks.last("urls")["withKey"]); len(withKey) != 0 {
		t.Errorf("a key went into a URL: %v", withKey)
	}

	if c := checks.last("balance"); amount(str(c, "balance")) != str(sub(c, "api"), "balance") || amount(str(c, "held")) != str(sub(c, "api"), "held") {
		t.Errorf("the page shows balance %q and held %q; the API says %v", c["balance"], c["held"], c["api"])
	}

	// One bar per day of the API's 30 days, in order.
	chart := checks.last("usage chart")
	bars, _ := chart["bars"].([]any)
	api := sub(chart, "api")
	if len(bars) != 30 || api["days"] != float64(30) {
		t.Errorf("the chart has %d bars, the API %v days; want 30", len(bars), api["days"])
	} else if first, last := bars[0].(map[string]any), bars[29].(map[string]any); first["day"] != api["from"] || last["day"] != api["to"] {
		t.Errorf("the chart runs from %v to %v, the API from %v to %v", first["day"], last["day"], api["from"], api["to"])
	}

	// The journal's pages are the API's, and Newer comes back to the first.
	paging := checks.last("transactions paging")
	p1, p2, back := strs(paging["page1"]), strs(paging["page2"]), strs(paging["back"])
	if len(p1) != 20 || !slices.Equal(p1, strs(sub(paging, "api")["page1"])) {
		t.Errorf("page 1 lists %v, the API %v (want 20 rows)", p1, sub(paging, "api")["page1"])
	}
	if len(p2) == 0 || !slices.Equal(p2, strs(sub(paging, "api")["page2"])) {
		t.Errorf("page 2 lists %v, the API %v", p2, sub(paging, "api")["page2"])
	}
	if !slices.Equal(back, p1) {
		t.Errorf("Newer from page 2 lists %v, want page 1 %v", back, p1)
	}
	if paging["newerDisabledOnFirst"] != true || (sub(paging, "api")["hasMoreAfter2"] == false && paging["olderDisabledOnLast"] != true) {
		t.Errorf("the pager's buttons: %v", paging)
	}

	// The new key: its secret once, copied as shown, its limit listed.
	created := checks.last("create key")
	secret, prefix := str(created, "secret"), str(created, "prefix")
	if !regexp.MustCompile(`^mgk_[a-z0-9]{10}_[A-Za-z0-9_-]{43}$`).MatchString(secret) {
		t.Errorf("the secret shown is %q, not an API key", secret)
	}
	if created["copyButton"] != true || str(created, "clipboard") != secret {
		t.Errorf("the copy button put %q on the clipboard, want the secret shown", created["clipboard"])
	}
	if row := str(created, "row"); !strings.Contains(row, "ci-bot") || !strings.Contains(row, "10.00") || created["active"] != float64(1) {
		t.Errorf("the new key's row %q: want its name, its limit 10.00 and active", row)
	}
	once := checks.last("secret shown once")
	for _, when := range []string{"afterDone", "afterReload"} {
		s := sub(once, when)
		if s["html"] != false || len(strs(s["local"])) != 0 || s["session"] != false || s["urlHasKey"] != false {
			t.Errorf("%s, the secret is still somewhere: %v", when, s)
		}
	}
	if once["stillSignedIn"] != true || once["secretBoxShown"] != false {
		t.Errorf("after a reload: signed in %v (want true, sessionStorage), secret box %v (want hidden)", once["stillSignedIn"], once["secretBoxShown"])
	}

	// The generation made with the key is its spend.
	gen := checks.last("generation")
	if gen["status"] != "completed" {
		t.Fatalf("the generation with the new key: %v", gen)
	}
	price := decimal.RequireFromString(str(gen, "credits_used"))
	before := decimal.RequireFromString(str(sub(checks.last("balance"), "api"), "balance"))
	spend := checks.last("spend")
	if got := amount(str(spend, "balance")); got != before.Sub(price).StringFixed(2) || got != str(sub(spend, "api"), "balance") {
		t.Errorf("after the generation the page shows balance %s; want %s - %s, as the API says (%v)", got, before, price, sub(spend, "api")["balance"])
	}
	if ks := str(spend, "keySpent"); !strings.HasPrefix(ks, price.StringFixed(2)+" / 10.00") {
		t.Errorf("the key's spend today shows %q, want %s / 10.00", ks, price.StringFixed(2))
	}
	rows, _ := spend["workRows"].([]any)
	var types []string
	for _, r := range rows {
		m, _ := r.(map[string]any)
		types = append(types, str(m, "type"))
		if cells := strs(m["cells"]); len(cells) == 0 || cells[len(cells)-1] != prefix {
			t.Errorf("the %s row of the generation names key %v, want %s", m["type"], cells, prefix)
		}
	}
	if slices.Sort(types); !slices.Equal(types, []string{"capture", "hold"}) {
		t.Errorf("the generation's transactions shown: %v, want its hold and its capture", types)
	}
	if row := str(checks.last("usage by key"), "row"); !strings.Contains(row, prefix) || !strings.Contains(row, price.StringFixed(2)) {
		t.Errorf("usage by key shows %q, want %s with %s", row, prefix, price.StringFixed(2))
	}
	if today := sub(checks.last("usage chart after"), "today"); today["credits"] != price.StringFixed(2) || today["height"].(float64) <= 0 {
		t.Errorf("today's bar: %v, want %s credits drawn", today, price.StringFixed(2))
	}

	if r := checks.last("revoke"); !strings.Contains(str(r, "row"), "revoked") || r["revokeButtons"] != float64(0) || r["apiStatus"] != float64(401) {
		t.Errorf("after revoking, the row shows %q (revoke buttons %v) and the key gets %v; want revoked and 401", r["row"], r["revokeButtons"], r["apiStatus"])
	}

	tab := checks.last("second tab")
	if fresh := sub(tab, "fresh"); fresh["signInShown"] != true || fresh["boardShown"] != false {
		t.Errorf("a second tab starts %v, want signed out (the key is per tab)", fresh)
	}
	if a := sub(tab, "afterRevoke"); a["signInShown"] != true || a["boardShown"] != false || !strings.Contains(str(a, "error"), "Signed out") ||
		a["keyKept"] != nil || str(a, "balanceShown") != "" {
		t.Errorf("the tab whose key was revoked: %v, want back at sign-in with the reason, its key and data gone", a)
	}
	if tab["firstTabSignedIn"] != true {
		t.Error("revoking another tab's key signed the first tab out")
	}

	for _, shot := range []string{"signed-in.png", "key-created.png", "dashboard.png", "signed-out.png"} {
		if info, err := os.Stat(filepath.Join(out, shot)); err != nil || info.Size() == 0 {
			t.Errorf("screenshot %s missing: %v", shot, err)
		}
	}
}
