package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/mediagen-dev/mediagen/internal/testkit/testsupport"
)

// TestRedoclyLintFindsNothing runs Redocly's linter with its recommended
// rules (redocly.yaml) on openapi.yaml: 0 errors, 0 warnings, and nothing
// ignored but the findings .redocly.lint-ignore.yaml lists, each with why.
func TestRedoclyLintFindsNothing(t *testing.T) {
	redocly, err := testsupport.NodeTool("redocly")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The working directory is this package's, where redocly.yaml and the
	// ignore file are found.
	cmd := exec.CommandContext(ctx, redocly, "lint", "openapi.yaml", "--format=json")
	cmd.Env = append(os.Environ(), "REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()

	var report struct {
		Totals struct {
			Errors, Warnings, Ignored int
		}
		Problems []struct {
			RuleID   string `json:"ruleId"`
			Severity string
			Message  string
			Location []struct {
				Pointer string
			}
		}
	}
	// The JSON report is the first thing on stdout; redocly's banners go
	// to stderr.
	if err := json.NewDecoder(&stdout).Decode(&report); err != nil {
		t.Fatalf("redocly lint did not print its JSON report (%v, exit %v): %s", err, runErr, stderr.String())
	}
	for _, p := range report.Problems {
		where := ""
		if len(p.Location) > 0 {
			where = p.Location[0].Pointer
		}
		t.Errorf("redocly %s %s at %s: %s", p.Severity, p.RuleID, where, p.Message)
	}
	if report.Totals.Errors != 0 || report.Totals.Warnings != 0 {
		t.Errorf("redocly lint: %d errors and %d warnings, want none", report.Totals.Errors, report.Totals.Warnings)
	}
	if runErr != nil && !t.Failed() {
		t.Errorf("redocly lint failed with no problem reported: %v: %s", runErr, stderr.String())
	}

	// What redocly ignored is what the ignore file lists, no more.
	raw, err := os.ReadFile(".redocly.lint-ignore.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var ignores map[string]map[string][]string
	if err := yaml.Unmarshal(raw, &ignores); err != nil {
		t.Fatalf(".redocly.lint-ignore.yaml: %v", err)
	}
	listed := 0
	for _, rules := range ignores {
		for _, pointers := range rules {
			listed += len(pointers)
		}
	}
	if report.Totals.Ignored != listed {
		t.Errorf("redocly ignored %d findings, the ignore file lists %d: drop the entries that no longer match", report.Totals.Ignored, listed)
	}
}
