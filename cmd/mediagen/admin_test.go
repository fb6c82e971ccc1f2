package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/core/accounts"
	"github.com/mediagen-dev/mediagen/internal/core/apikey"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/local/sqlitestore"
	"github.com/mediagen-dev/mediagen/internal/testkit/testsupport"
)

// mediagen runs the command in-process and returns its exit code and output.
func mediagen(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func decode[T any](t *testing.T, out string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("output %q is not one JSON object: %v", out, err)
	}
	return v
}

func TestAdminCommandsManageAnAccount(t *testing.T) {
	data := t.TempDir()
	code, out, errOut := mediagen(t, "accounts", "create", "--plan", "enterprise", "--credits", "250.5", "--rate-limit", "600", "--data", data)
	if code != 0 {
		t.Fatalf("accounts create exited %d: %s", code, errOut)
	}
	if strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Errorf("accounts create printed more than one line: %q", out)
	}
	created := decode[accounts.CreatedAccount](t, out)
	if created.Plan != "enterprise" || created.Credits != "250.50" || !strings.HasPrefix(created.UserID, "usr_") {
		t.Errorf("created = %+v", created)
	}
	prefix, _, err := apikey.Parse(created.APIKey)
	if err != nil {
		t.Fatalf("printed api key %q does not parse: %v", created.APIKey, err)
	}

	code, out, _ = mediagen(t, "accounts", "show", "--user", created.UserID, "--data", data)
	shown := decode[accounts.AccountView](t, out)
	if code != 0 || shown.Balance != "250.50" || shown.Held != "0.00" || shown.RateLimit != 600 || shown.Plan != "enterprise" ||
		len(shown.Keys) != 1 || shown.Keys[0].Prefix != prefix {
		t.Errorf("accounts show = %d %+v", code, shown)
	}
	// The account's first key is the owner's: every scope, no limit.
	if k := shown.Keys[0]; !slices.Equal(k.Scopes, domain.AllScopes) || k.Name != accounts.DefaultKeyName || k.DailyCreditLimit != nil {
		t.Errorf("the first key shows %+v; want every scope and no limit", k)
	}
	if strings.Contains(out, created.APIKey) {
		t.Error("accounts show printed the secret key")
	}
	if shown.OutputRetentionDays != domain.DefaultRetentionDays {
		t.Errorf("a new account keeps its outputs %d days, want the default %d", shown.OutputRetentionDays, domain.DefaultRetentionDays)
	}
	code, out, _ = mediagen(t, "accounts", "retention", "--user", created.UserID, "--days", "7", "--data", data)
	if code != 0 || decode[accounts.AccountView](t, out).OutputRetentionDays != 7 {
		t.Errorf("accounts retention = %d %s, want 7 days", code, out)
	}

	code, out, _ = mediagen(t, "credits", "grant", "--user", created.UserID, "--credits", "10", "--grant-id", "topup-1", "--data", data)
	if code != 0 || !strings.Contains(out, `"balance":"260.50"`) || !strings.Contains(out, `"applied":true`) {
		t.Errorf("credits grant = %d %s", code, out)
	}
	// The grant prints the account as accounts show does: its keys too.
	if granted := decode[accounts.AccountView](t, out); len(granted.Keys) != 1 || granted.Keys[0].Prefix != prefix {
		t.Errorf("credits grant lists the keys %+v, want the one with prefix %s: %s", granted.Keys, prefix, out)
	}
	code, out, _ = mediagen(t, "credits", "grant", "--user", created.UserID, "--credits", "10", "--grant-id", "topup-1", "--data", data)
	if code != 0 || !strings.Contains(out, `"balance":"260.50"`) || !strings.Contains(out, `"applied":false`) {
		t.Errorf("repeated credits grant with the same id = %d %s, want balance unchanged", code, out)
	}

	code, out, _ = mediagen(t, "keys", "create", "--user", created.UserID, "--data", data)
	second := decode[accounts.CreatedKey](t, out)
	if code != 0 || second.Prefix == prefix || !strings.HasPrefix(second.APIKey, second.Prefix+"_") {
		t.Errorf("keys create = %d %+v", code, second)
	}
	if code, _, errOut := mediagen(t, "keys", "revoke", "--prefix", prefix, "--data", data); code != 0 {
		t.Fatalf("keys revoke exited %d: %s", code, errOut)
	}
	_, out, _ = mediagen(t, "accounts", "show", "--user", created.UserID, "--data", data)
	shown = decode[accounts.AccountView](t, out)
	if len(shown.Keys) != 2 || shown.Keys[0].RevokedAt == nil || shown.Keys[1].RevokedAt != nil {
		t.Errorf("keys after revoking the first = %+v", shown.Keys)
	}

	type secretView struct {
		Secret  string `json:"webhook_signing_secret"`
		Rotated bool   `json:"rotated"`
	}
	code, out, _ = mediagen(t, "webhooks", "secret", "--user", created.UserID, "--data", data)
	first := decode[secretView](t, out)
	code2, out2, _ := mediagen(t, "webhooks", "secret", "--user", created.UserID, "--data", data)
	if code != 0 || code2 != 0 || !strings.HasPrefix(first.Secret, "whsec_") || decode[secretView](t, out2).Secret != first.Secret {
		t.Errorf("webhooks secret twice = %d %s / %d %s; want the same whsec_ secret", code, out, code2, out2)
	}
	code, out, _ = mediagen(t, "webhooks", "secret", "--user", created.UserID, "--rotate", "--data", data)
	rotated := decode[secretView](t, out)
	_, out, _ = mediagen(t, "webhooks", "secret", "--user", created.UserID, "--data", data)
	if code != 0 || !rotated.Rotated || rotated.Secret == first.Secret || decode[secretView](t, out).Secret != rotated.Secret {
		t.Errorf("rotation = %d %+v; want a new secret that stays", code, rotated)
	}
	if code, _, _ := mediagen(t, "webhooks", "secret", "--user", "usr_missing", "--data", data); code == 0 {
		t.Error("webhooks secret for a missing account exited 0")
	}
}

func TestAdminCommandsRefuseBadArgumentsAndChangeNothing(t *testing.T) {
	data := t.TempDir()
	_, out, _ := mediagen(t, "accounts", "create", "--plan", "free", "--credits", "5", "--data", data)
	user := decode[accounts.CreatedAccount](t, out).UserID
	tests := []struct {
		name string
		args []string
		code int
		says string
	}{
		{"unknown plan", []string{"accounts", "create", "--plan", "gold", "--credits", "1"}, 2, `unknown plan "gold"`},
		{"negative credits", []string{"accounts", "create", "--plan", "free", "--credits", "-1"}, 2, "must not be negative"},
		{"non-numeric credits", []string{"accounts", "create", "--plan", "free", "--credits", "ten"}, 2, "not a number"},
		{"sub-cent credits", []string{"accounts", "create", "--plan", "free", "--credits", "0.001"}, 2, "at most 2 decimal places"},
		{"rate limit on free", []string{"accounts", "create", "--plan", "free", "--credits", "1", "--rate-limit", "50"}, 2, "enterprise"},
		{"missing plan", []string{"accounts", "create", "--credits", "1"}, 2, "--plan is required"},
		{"stray argument", []string{"accounts", "create", "--plan", "free", "--credits", "1", "extra"}, 2, `unexpected argument "extra"`},
		{"grant to unknown user", []string{"credits", "grant", "--user", "usr_nobody", "--credits", "5"}, 1, "not found"},
		{"negative grant", []string{"credits", "grant", "--user", user, "--credits", "-5"}, 2, "must not be negative"},
		{"zero grant", []string{"credits", "grant", "--user", user, "--credits", "0"}, 2, "at least 0.01"},
		{"show unknown user", []string{"accounts", "show", "--user", "usr_nobody"}, 1, "not found"},
		{"retention not offered", []string{"accounts", "retention", "--user", user, "--days", "90"}, 2, "not offered"},
		{"retention of unknown user", []string{"accounts", "retention", "--user", "usr_nobody", "--days", "7"}, 1, "not found"},
		{"key for unknown user", []string{"keys", "create", "--user", "usr_nobody"}, 1, "not found"},
		{"revoke unknown prefix", []string{"keys", "revoke", "--prefix", "mgk_aaaaaaaaaa"}, 1, "not found"},
		{"revoke malformed prefix", []string{"keys", "revoke", "--prefix", "sk-live"}, 2, "not a key prefix"},
		{"unknown command", []string{"accounts", "delete"}, 2, "unknown command"},
		{"tables without dynamodb", []string{"tables", "create"}, 2, "only for DynamoDB"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := mediagen(t, append(tt.args, "--data", data)...)
			if code != tt.code {
				t.Errorf("exit code %d, want %d (stderr %q)", code, tt.code, errOut)
			}
			firstLine := strings.SplitN(errOut, "\n", 2)[0]
			if !strings.HasPrefix(firstLine, "mediagen: ") || !strings.Contains(firstLine, tt.says) {
				t.Errorf("stderr %q, want a first line saying %q", errOut, tt.says)
			}
			if out != "" {
				t.Errorf("stdout %q, want nothing", out)
			}
		})
	}
	// Nothing above changed the store: one account, its 5 credits, one key.
	s, err := sqlitestore.Open(context.Background(), data)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a, err := s.GetAccount(context.Background(), user)
	if err != nil || !a.Balance.Equal(decimal.NewFromInt(5)) || !a.Granted.Equal(decimal.NewFromInt(5)) || a.OutputRetentionDays != 0 {
		t.Errorf("account after refused commands = %+v, %v", a, err)
	}
	holds, _ := s.OpenHolds(context.Background(), time.Now().Add(time.Hour))
	keys, _ := s.ListAPIKeys(context.Background(), user)
	if len(holds) != 0 || len(keys) != 1 {
		t.Errorf("%d holds and %d keys after refused commands, want 0 and 1", len(holds), len(keys))
	}
}

// The admin command must work on the embedded store while the server has it
// open and is writing to it: here this test process plays the server.
func TestAdminCommandWorksWhileAnotherProcessHasTheStoreOpen(t *testing.T) {
	data := t.TempDir()
	bin := filepath.Join(t.TempDir(), "mediagen")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build mediagen: %v\n%s", err, out)
	}
	ctx := context.Background()
	server, err := sqlitestore.Open(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	svc := &accounts.Service{Store: server}
	own, err := svc.CreateAccount(ctx, accounts.NewAccount{Plan: domain.PlanPro, Credits: decimal.NewFromInt(1_000_000)})
	if err != nil {
		t.Fatal(err)
	}
	// The "server" holds and captures credits in a loop while the CLI runs.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var serverErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			w := uuid.NewString()
			if err := server.Hold(ctx, own.UserID, domain.Hold{WorkID: w, Kind: domain.WorkGeneration, Amount: decimal.NewFromInt(1), CreatedAt: time.Now()}); err != nil {
				serverErr = err
				return
			}
			if _, err := server.Capture(ctx, own.UserID, w); err != nil {
				serverErr = err
				return
			}
		}
	}()
	var users []string
	for i := 0; i < 5; i++ {
		out, err := exec.Command(bin, "accounts", "create", "--plan", "free", "--credits", "7", "--data", data).Output()
		if err != nil {
			t.Fatalf("accounts create while the store is open elsewhere: %v", err)
		}
		users = append(users, decode[accounts.CreatedAccount](t, string(out)).UserID)
	}
	out, err := exec.Command(bin, "credits", "grant", "--user", own.UserID, "--credits", "3", "--data", data).Output()
	if err != nil {
		t.Fatalf("credits grant while the store is open elsewhere: %v", err)
	}
	close(stop)
	wg.Wait()
	if serverErr != nil {
		t.Fatalf("server writes failed while the CLI ran: %v", serverErr)
	}
	if !strings.Contains(string(out), `"granted":"1000003.00"`) {
		t.Errorf("grant output %s, want granted 1000003.00", out)
	}
	for _, u := range users {
		a, err := server.GetAccount(ctx, u)
		if err != nil || !a.Balance.Equal(decimal.NewFromInt(7)) {
			t.Errorf("account %s made by the CLI, seen by the server: %+v, %v", u, a, err)
		}
	}
	a, _ := server.GetAccount(ctx, own.UserID)
	if !a.Granted.Equal(a.Balance.Add(a.Held).Add(a.Captured)) || !a.Granted.Equal(decimal.NewFromInt(1_000_003)) {
		t.Errorf("server account after concurrent use = %+v", a)
	}
}

func TestAdminCommandsOnDynamoDB(t *testing.T) {
	ctx := context.Background()
	d, err := testsupport.StartDynamoDB(ctx)
	if err != nil {
		t.Fatalf("the DynamoDB admin test needs moto's server: %v", err)
	}
	defer d.Stop()
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_REGION", "us-east-1")
	flags := []string{"--dynamodb", "--endpoint-url", d.Endpoint, "--table-prefix", fmt.Sprintf("cli%d", time.Now().UnixNano())}
	if code, _, errOut := mediagen(t, append([]string{"tables", "create"}, flags...)...); code != 0 {
		t.Fatalf("tables create: %s", errOut)
	}
	code, out, errOut := mediagen(t, append([]string{"accounts", "create", "--plan", "pro", "--credits", "42"}, flags...)...)
	if code != 0 {
		t.Fatalf("accounts create: %s", errOut)
	}
	created := decode[accounts.CreatedAccount](t, out)
	code, out, _ = mediagen(t, append([]string{"credits", "grant", "--user", created.UserID, "--credits", "8"}, flags...)...)
	if code != 0 || !strings.Contains(out, `"balance":"50.00"`) {
		t.Errorf("credits grant on DynamoDB = %d %s", code, out)
	}
	prefix, _, _ := apikey.Parse(created.APIKey)
	if code, _, errOut := mediagen(t, append([]string{"keys", "revoke", "--prefix", prefix}, flags...)...); code != 0 {
		t.Errorf("keys revoke on DynamoDB: %s", errOut)
	}
	_, out, _ = mediagen(t, append([]string{"accounts", "show", "--user", created.UserID}, flags...)...)
	shown := decode[accounts.AccountView](t, out)
	if shown.Balance != "50.00" || len(shown.Keys) != 1 || shown.Keys[0].RevokedAt == nil {
		t.Errorf("accounts show on DynamoDB = %+v", shown)
	}
	if code, _, _ := mediagen(t, append([]string{"accounts", "show", "--user", "usr_nobody"}, flags...)...); code != 1 {
		t.Errorf("show of an unknown user exited %d, want 1", code)
	}
}

func TestHelpListsTheFlagsAndExitsZero(t *testing.T) {
	for _, args := range [][]string{{"serve", "--help"}, {"accounts", "create", "-h"}, {"credits", "grant", "--help"}} {
		code, out, errOut := mediagen(t, args...)
		if code != 0 || !strings.Contains(out, "usage: mediagen") || !strings.Contains(out, "-data") || errOut != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
}
