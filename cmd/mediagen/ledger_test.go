package main

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/mediagen-dev/mediagen/internal/core/accounts"
	"github.com/mediagen-dev/mediagen/internal/core/ledger"
	"github.com/mediagen-dev/mediagen/internal/local/sqlitestore"
)

// ledger verify passes on what the commands wrote, and fails, naming the
// account, once a balance is changed behind the journal's back.
func TestLedgerVerifyFindsABalanceTheJournalDoesNotExplain(t *testing.T) {
	data := t.TempDir()
	code, out, errOut := mediagen(t, "accounts", "create", "--plan", "pro", "--credits", "40", "--data", data)
	if code != 0 {
		t.Fatalf("accounts create exited %d: %s", code, errOut)
	}
	user := decode[accounts.CreatedAccount](t, out).UserID
	if code, _, errOut := mediagen(t, "credits", "grant", "--user", user, "--credits", "2.5", "--data", data); code != 0 {
		t.Fatalf("credits grant exited %d: %s", code, errOut)
	}

	code, out, errOut = mediagen(t, "ledger", "verify", "--data", data)
	if code != 0 {
		t.Fatalf("ledger verify on a clean store exited %d: %s %s", code, out, errOut)
	}
	if v := decode[ledger.Verified](t, out); v.Accounts != 1 || v.Entries != 2 || len(v.Discrepancies) != 0 {
		t.Errorf("verified = %+v; want 1 account, 2 entries (two grants), no discrepancy", v)
	}

	db, err := sql.Open("sqlite", filepath.Join(data, sqlitestore.FileName))
	if err != nil {
		t.Fatal(err)
	}
	// Amounts are kept in cents: 100 is one credit.
	if _, err := db.Exec(`UPDATE accounts SET balance = balance + 100, granted = granted + 100 WHERE user_id = ?`, user); err != nil {
		t.Fatal(err)
	}
	db.Close()

	code, out, errOut = mediagen(t, "ledger", "verify", "--user", user, "--data", data)
	if code != exitError {
		t.Fatalf("ledger verify after tampering exited %d, want %d", code, exitError)
	}
	v := decode[ledger.Verified](t, out)
	if len(v.Discrepancies) == 0 || v.Discrepancies[0].UserID != user || !strings.Contains(v.Discrepancies[0].Problem, "the account has balance 43.50") {
		t.Errorf("discrepancies = %+v; want the account's balance named", v.Discrepancies)
	}
	if !strings.Contains(errOut, "disagree") {
		t.Errorf("stderr = %q; want it to say the journal and the accounts disagree", errOut)
	}
}
