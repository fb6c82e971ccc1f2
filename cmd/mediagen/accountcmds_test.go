package main

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/client"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// After a generation with --wait, transactions shows its hold and capture
// under the grant, and usage counts it under its model.
func TestTransactionsAndUsageShowAGeneration(t *testing.T) {
	clientEnv(t)
	if code, _, stderr := mediagen(t, "generate", "--model", "provider-a", "--version", "theta-4-fast",
		"--input", "prompt=a fox", "--out", t.TempDir()); code != 0 {
		t.Fatalf("generate exited %d: %s", code, stderr)
	}

	code, stdout, stderr := mediagen(t, "transactions", "--all", "--limit", "1", "--json")
	if code != 0 {
		t.Fatalf("transactions exited %d: %s", code, stderr)
	}
	var types []string
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var e client.Transaction
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		types = append(types, e.Type)
	}
	if strings.Join(types, ",") != "capture,hold,grant" {
		t.Errorf("transactions, newest first, pages of 1 = %v; want capture, hold, grant", types)
	}

	code, stdout, stderr = mediagen(t, "transactions", "--type", "capture")
	if code != 0 || !strings.Contains(stdout, "capture") || !strings.Contains(stdout, "theta-4-fast") || strings.Contains(stdout, "grant") {
		t.Errorf("transactions --type capture: exit %d\n%s%s", code, stdout, stderr)
	}

	today := time.Now().UTC().Format(time.DateOnly)
	code, stdout, stderr = mediagen(t, "usage", "--group-by", "model", "--from", today, "--to", today)
	if code != 0 || !strings.Contains(stdout, "theta-4-fast") || !strings.Contains(stdout, "2.60") {
		t.Errorf("usage --group-by model: exit %d\n%s%s", code, stdout, stderr)
	}

	if code, _, stderr := mediagen(t, "usage", "--group-by", "week"); code == 0 || !strings.Contains(stderr, "group_by must be one of day, model, key") {
		t.Errorf("usage --group-by week: exit %d, stderr %q; want the service's message", code, stderr)
	}
	if code, _, stderr := mediagen(t, "transactions", "--from", "yesterday"); code != exitUsage || !strings.Contains(stderr, "RFC 3339") {
		t.Errorf("transactions --from yesterday: exit %d, stderr %q", code, stderr)
	}
}

// transactions ends a page that has more after it with the --cursor that
// reads on (on stderr with --json, whose stdout holds only entries); paging
// with it shows each entry once, newest first, to the end of the journal.
func TestTransactionsCursorReadsTheNextPage(t *testing.T) {
	rt := clientEnv(t)
	ctx := context.Background()
	var captured []string // oldest first
	for range 3 {
		w := uuid.NewString()
		if err := rt.Store.Hold(ctx, rt.Dev.UserID, domain.Hold{WorkID: w, Kind: domain.WorkGeneration, Amount: decimal.NewFromInt(1),
			Model: "theta-4-fast", CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		if _, err := rt.Store.Capture(ctx, rt.Dev.UserID, w); err != nil {
			t.Fatal(err)
		}
		captured = append(captured, w)
	}
	newestFirst := slices.Clone(captured)
	slices.Reverse(newestFirst)
	more := regexp.MustCompile(`\(more: --cursor (\S+) for the next page, or --all\)`)

	tests := []struct {
		name string
		json bool
	}{
		{"table", false},
		{"json", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var works []string
			args := []string{"transactions", "--type", "capture", "--limit", "1"}
			if tt.json {
				args = append(args, "--json")
			}
			cursor := ""
			for page := 0; page < 10; page++ {
				pageArgs := args
				if cursor != "" {
					pageArgs = append(slices.Clone(args), "--cursor", cursor)
				}
				code, stdout, stderr := mediagen(t, pageArgs...)
				if code != 0 {
					t.Fatalf("%v: exit %d: %s", pageArgs, code, stderr)
				}
				for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
					if tt.json {
						var e client.Transaction
						if err := json.Unmarshal([]byte(line), &e); err != nil || e.WorkID == nil {
							t.Fatalf("line %q: %v; want a capture", line, err)
						}
						works = append(works, *e.WorkID)
					} else if f := strings.Fields(line); len(f) > 5 && f[1] == "capture" {
						works = append(works, f[5])
					}
				}
				m := more.FindStringSubmatch(stdout)
				if tt.json {
					m = more.FindStringSubmatch(stderr)
				}
				if m == nil {
					break
				}
				cursor = m[1]
			}
			if !slices.Equal(works, newestFirst) {
				t.Errorf("captures paged with --cursor = %v, want %v, newest first, each once", works, newestFirst)
			}
		})
	}
}

// A filtered journal page examines a bounded window, so it may be short or
// empty with more to come: without --all, transactions reads on until it
// has --limit entries (or the journal ends) and prints them once each.
func TestTransactionsFillsLimitPastShortPages(t *testing.T) {
	rt := clientEnv(t)
	ctx := context.Background()
	user := rt.Dev.UserID
	settle := func(settle func(context.Context, string, string) (bool, error)) string {
		w := uuid.NewString()
		if err := rt.Store.Hold(ctx, user, domain.Hold{WorkID: w, Kind: domain.WorkGeneration, Amount: decimal.NewFromInt(1),
			Model: "theta-4-fast", CreatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		if _, err := settle(ctx, user, w); err != nil {
			t.Fatal(err)
		}
		return w
	}
	// Newest first: 130 refunds' pairs (260 entries), then two captures.
	captured := []string{settle(rt.Store.Capture), settle(rt.Store.Capture)}
	for i := 0; i < 130; i++ {
		settle(rt.Store.Refund)
	}
	code, stdout, stderr := mediagen(t, "transactions", "--type", "capture", "--limit", "2", "--json")
	if code != 0 {
		t.Fatalf("transactions exited %d: %s", code, stderr)
	}
	var works []string
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var e client.Transaction
		if err := json.Unmarshal([]byte(line), &e); err != nil || e.Type != "capture" || e.WorkID == nil {
			t.Fatalf("line %q: %v; want a capture", line, err)
		}
		works = append(works, *e.WorkID)
	}
	if want := []string{captured[1], captured[0]}; !slices.Equal(works, want) {
		t.Errorf("transactions --type capture --limit 2 = %v, want the two captures %v", works, want)
	}
	code, stdout, _ = mediagen(t, "transactions", "--type", "capture", "--limit", "1")
	if code != 0 || strings.Count(stdout, "capture") != 1 || !strings.Contains(stdout, "(more:") {
		t.Errorf("transactions --type capture --limit 1: exit %d\n%s; want one capture and the cursor for more", code, stdout)
	}
}
