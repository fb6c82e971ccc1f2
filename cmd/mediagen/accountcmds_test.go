package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/client"
)

// After a generation with --wait, transactions shows its hold and capture
// under the grant, and usage counts it under its model.
func TestTransactionsAndUsageShowAGeneration(t *testing.T) {
	clientEnv(t)
	if code, _, stderr := mediagen(t, "generate", "--model", "provider-a", "--version", "theta-4-fast",
		"--input", "prompt=a fox", "--wait"); code != 0 {
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
