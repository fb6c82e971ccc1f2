package runtime_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/aws/dynamostore"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/ledger"
	"github.com/mediagen-dev/mediagen/internal/local/runtime"
	"github.com/mediagen-dev/mediagen/internal/local/sqlitestore"
	"github.com/mediagen-dev/mediagen/internal/testkit/runtimetest"
	"github.com/mediagen-dev/mediagen/internal/testkit/waitfor"
)

// TestRestartSettlesEveryGenerationInFlight: the runtime, on the embedded
// store and on DynamoDB (serve --dynamodb; here moto's server), stops with
// 200 generations in flight, made through the API 12 at a time (over 20
// accounts: one account's burst is another test's). 60 of them were cut
// off between their record's final write and their hold's settlement (the two writes a stop, or a kill, can come between: the
// record is no longer processing, the credits still held). It starts again
// and every one ends: records final, no hold open, the completed ones
// captured and the failed released, ledger verify clean, no poll given up.
//
// The simulator takes an hour before the stop, so all 200 are in flight
// whatever the machine's speed, and 100 ms after it. No clock is moved:
// nothing waits for time to pass but the simulator's 100 ms; the test waits
// for the poll queue to empty (every chain ended).
func TestRestartSettlesEveryGenerationInFlight(t *testing.T) {
	for _, onDynamoDB := range []bool{false, true} {
		name := "embedded"
		if onDynamoDB {
			name = "DynamoDB"
		}
		t.Run(name, func(t *testing.T) { restartWithWorkInFlight(t, onDynamoDB) })
	}
}

func restartWithWorkInFlight(t *testing.T, onDynamoDB bool) {
	ctx := context.Background()
	cfg := runtimeConfig()
	cfg.DataDir = t.TempDir()
	if onDynamoDB {
		cfg.DynamoDB = runtimetest.DynamoDB(t)
	}
	cfg.SimulatorLatency, cfg.PollInterval = time.Hour, time.Hour
	// serve's: a poll's lease is the visibility timeout, and a poll on
	// moto's server on a loaded machine takes longer than the tests' usual
	// 200 ms, so duplicates would be given up while the chain runs on.
	cfg.QueueVisibility = 5 * time.Second
	rt := start(t, cfg)

	const works, parallel, owners = 200, 12, 20
	var keys, users []string
	for range owners {
		o := newAccount(t, rt, domain.PlanEnterprise, 1000)
		keys, users = append(keys, o.APIKey), append(users, o.UserID)
	}
	type work struct {
		uuid    string
		credits decimal.Decimal
		owner   int
	}
	made := make([]work, works)
	var wg sync.WaitGroup
	sem := make(chan struct{}, parallel)
	for i := range works {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			a := call(t, rt, http.MethodPost, "/api/generations/generate", keys[i%owners],
				gen("theta-4-fast", map[string]any{"prompt": fmt.Sprintf("work %d across a restart", i)}))
			if a.status != http.StatusOK {
				t.Errorf("create %d: HTTP %d %s", i, a.status, a.body)
				return
			}
			made[i] = work{uuid: a.str("uuid"), credits: decimal.RequireFromString(a.str("credits_used")), owner: i % owners}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	held := 0
	for _, u := range users {
		holds, err := rt.Store.AccountHolds(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		held += len(holds)
	}
	if held != works {
		t.Fatalf("%d holds open before the stop, want %d: the test needs every generation in flight", held, works)
	}
	closeCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := rt.Close(closeCtx); err != nil {
		t.Fatal(err)
	}
	// The stop came between the two writes of three of each account's ten,
	// two completed and one failed: their records are final, their holds
	// open. (Written once the runtime is stopped: a live poll would settle
	// them at once, as it should.)
	st := openStore(t, cfg)
	want := map[string]domain.Status{}
	for i, w := range made {
		o := domain.Outcome{}
		switch i / owners {
		case 0, 8:
			o = domain.Outcome{Status: domain.StatusCompleted, OutputURLs: []string{rt.FilesURL + "/generations/" + w.uuid + "/0.png"}}
		case 4:
			o = domain.Outcome{Status: domain.StatusFailed, Error: "upstream: cut off"}
		default:
			want[w.uuid] = domain.StatusCompleted
			continue
		}
		if err := st.FinishGeneration(ctx, w.uuid, o, time.Now()); err != nil {
			t.Fatal(err)
		}
		want[w.uuid] = o.Status
	}
	st.Close()

	cfg.Addr = strings.TrimPrefix(rt.BaseURL, "http://")
	cfg.FilesAddr = strings.TrimPrefix(rt.FilesURL, "http://")
	cfg.S3Addr = strings.TrimPrefix(rt.Objects.Endpoint, "http://")
	cfg.SimulatorLatency, cfg.PollInterval = 100*time.Millisecond, time.Second
	again := start(t, cfg)
	// Every generation not final has a poll in the queue: once it is empty,
	// every chain has ended. Only a queue that stopped handling messages
	// fails: on a loaded machine the 200 chains on moto's server take many
	// minutes (a fixed 5 minutes failed under make test-under-load), and
	// the queue's length stays level while they run (each poll sends the
	// next), so the work done is what shows them going on.
	if !waitfor.Drained(t, 3*time.Minute, "the poll queue to empty", again.Queue.Len, again.Queue.Deleted) {
		t.FailNow()
	}
	if dead := again.Queue.DeadLetters(); len(dead) > 0 {
		t.Errorf("%d polls given up: %v", len(dead), dead)
	}
	got := map[domain.Status]int{}
	for _, w := range made {
		g, err := again.Store.GetGeneration(ctx, w.uuid)
		if err != nil {
			t.Fatal(err)
		}
		got[g.Status]++
		if g.Status != want[w.uuid] {
			t.Errorf("generation %s: %s, want %s", w.uuid, g.Status, want[w.uuid])
		}
	}
	t.Logf("after the restart: %v", got)
	captured := make([]decimal.Decimal, owners)
	for _, w := range made {
		if want[w.uuid] == domain.StatusCompleted {
			captured[w.owner] = captured[w.owner].Add(w.credits)
		}
	}
	for i, u := range users {
		a := account(t, again, u)
		holds, err := again.Store.AccountHolds(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		if len(holds) != 0 || !a.Held.IsZero() || !a.Captured.Equal(captured[i]) {
			t.Errorf("account %s: %d holds open, held %s, captured %s; want none, 0 and %s", u, len(holds), a.Held, a.Captured, captured[i])
		}
		v, err := ledger.Verify(ctx, again.Store, u)
		if err != nil || len(v.Discrepancies) > 0 {
			t.Errorf("ledger verify of %s: %v %+v", u, err, v.Discrepancies)
		}
	}
}

// finisher is the one write the test makes to a stopped runtime's store.
type finisher interface {
	FinishGeneration(ctx context.Context, uuid string, o domain.Outcome, at time.Time) error
	Close() error
}

type dynamoFinisher struct{ *dynamostore.Store }

func (dynamoFinisher) Close() error { return nil }

// openStore opens the store of a stopped runtime's cfg.
func openStore(t *testing.T, cfg runtime.Config) finisher {
	t.Helper()
	if cfg.DynamoDB != nil {
		return dynamoFinisher{dynamostore.New(cfg.DynamoDB.Client, cfg.DynamoDB.Tables)}
	}
	st, err := sqlitestore.Open(context.Background(), cfg.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	return st
}
