package runtime_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/core/accounts"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/ledger"
	"github.com/mediagen-dev/mediagen/internal/local/apigw"
	"github.com/mediagen-dev/mediagen/internal/local/runtime"
	"github.com/mediagen-dev/mediagen/internal/testkit/runtimetest"
	"github.com/mediagen-dev/mediagen/internal/testkit/testsupport"
)

// burst sends n creates of one account at once and answers their statuses
// and the uuids of those created.
func burst(t *testing.T, rt *runtime.Runtime, key string, n int, body map[string]any) (map[int]int, []string) {
	t.Helper()
	var mu sync.Mutex
	codes := map[int]int{}
	var created []string
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			a := call(t, rt, http.MethodPost, "/api/generations/generate", key, body)
			mu.Lock()
			defer mu.Unlock()
			codes[a.status]++
			switch a.status {
			case http.StatusOK:
				created = append(created, a.str("uuid"))
			case http.StatusPaymentRequired:
				if c := a.str("error", "code"); c != "insufficient_credits" {
					t.Errorf("402 with code %q, want insufficient_credits", c)
				}
			default:
				t.Errorf("generate: HTTP %d %s", a.status, a.body)
			}
		}()
	}
	close(start)
	wg.Wait()
	return codes, created
}

// cancelAll cancels the generations 20 at a time (more settlements racing
// on the account) and waits until no hold of the account is open, so that
// no ledger write is in flight when the ledger is verified.
func cancelAll(t *testing.T, rt *runtime.Runtime, key, userID string, ids []string) {
	t.Helper()
	var wg sync.WaitGroup
	work := make(chan string)
	for w := 0; w < 20; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range work {
				a := call(t, rt, http.MethodPost, "/api/generations/"+id+"/cancel", key, nil)
				// A generation that finished first answers 409: it is settled.
				if a.status != http.StatusOK && a.status != http.StatusConflict {
					t.Errorf("cancel %s: HTTP %d %s", id, a.status, a.body)
				}
			}
		}()
	}
	for _, id := range ids {
		work <- id
	}
	close(work)
	wg.Wait()
	if a := settledAccount(t, rt, userID); !a.Held.IsZero() {
		t.Errorf("held %s after every generation was canceled or finished", a.Held)
	}
}

func verifyClean(t *testing.T, rt *runtime.Runtime, userID string) {
	t.Helper()
	v, err := ledger.Verify(context.Background(), rt.Store, userID)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range v.Discrepancies {
		t.Errorf("ledger verify: entry %d: %s", d.Seq, d.Problem)
	}
}

// A customer's batch script sends 100 creates at once on one account: with
// credits enough, all answer 200; with credits for 60, the first 60 to get
// their hold answer 200 and the other 40 answer 402, never a 500 or a 503;
// cancels racing on the purses settle every hold; the ledger replays
// exactly. On DynamoDB it runs on the stand-in that cancels overlapping
// transactions as DynamoDB does (TransactionConflict), and the test shows
// the bursts met such cancellations: the code handled real conflicts.
func TestABurstOfOneAccountAnswers200UpToItsBalanceAnd402AfterNever500(t *testing.T) {
	body := gen("theta-4-fast", map[string]any{"prompt": "a lighthouse in a storm"})
	price := quote(t, body)
	for _, store := range []string{"embedded", "dynamodb"} {
		t.Run(store, func(t *testing.T) {
			cfg := runtimeConfig()
			// The generations stay in flight through the bursts and the
			// ledger's replays, so that the requests that race are the
			// creates (and then the cancels), however slow the machine: the
			// provider and the first poll take hours, and the service's
			// clock stands still, so no deadline passes. (On a loaded
			// machine the bursts took 16 minutes: the sweeper failed the
			// first burst's generations at their 10-minute deadline, and
			// its releases raced the replay.)
			stopped := time.Now()
			cfg.Clock = func() time.Time { return stopped }
			cfg.SimulatorLatency, cfg.PollInterval = 3*time.Hour, 3*time.Hour
			// A burst's requests take turns at the stand-in's DynamoDB (one
			// request at a time): on a loaded machine one waits longer than
			// the gateway's limits, its integration timeout and the server's
			// write timeout (a connection closed without an answer), which
			// bound the machine's speed here, not the code's. Those limits
			// have their own tests (TestARoutePastTheIntegrationTimeoutGets503AndItsWorkIsSettled).
			cfg.Timeouts = apigw.Timeouts{Write: time.Hour, Integration: time.Hour}
			var proxy *testsupport.ConflictProxy
			if store == "dynamodb" {
				cfg.DynamoDB, proxy = runtimetest.DynamoDBStandIn(t)
				cfg.DynamoDB.Unmetered = true
			}
			rt := start(t, cfg)
			open := func(credits decimal.Decimal) accounts.CreatedAccount {
				a, err := (&accounts.Service{Store: rt.Store}).CreateAccount(context.Background(),
					accounts.NewAccount{Plan: domain.PlanEnterprise, RateLimit: 100000, Credits: credits})
				if err != nil {
					t.Fatal(err)
				}
				return a
			}

			rich := open(price.Mul(decimal.NewFromInt(150)))
			began := time.Now()
			codes, _ := burst(t, rt, rich.APIKey, 100, body)
			t.Logf("the first burst took %s", time.Since(began))
			if codes[http.StatusOK] != 100 {
				t.Errorf("100 creates with credits for 150: %v, want 100 × 200", codes)
			}
			if a := account(t, rt, rich.UserID); !a.Balance.Add(a.Held).Add(a.Captured).Equal(price.Mul(decimal.NewFromInt(150))) ||
				!a.Held.Add(a.Captured).Equal(price.Mul(decimal.NewFromInt(100))) {
				t.Errorf("after 100 creates at %s: balance %s, held %s, captured %s", price, a.Balance, a.Held, a.Captured)
			}

			short := open(price.Mul(decimal.NewFromInt(60)))
			began = time.Now()
			codes2, created2 := burst(t, rt, short.APIKey, 100, body)
			t.Logf("the second burst took %s", time.Since(began))
			if codes2[http.StatusOK] != 60 || codes2[http.StatusPaymentRequired] != 40 {
				t.Errorf("100 creates with credits for 60: %v, want 60 × 200 and 40 × 402", codes2)
			}
			if a := account(t, rt, short.UserID); !a.Balance.IsZero() {
				t.Errorf("balance %s after the credits for 60 were held 60 times", a.Balance)
			}
			if proxy != nil {
				tx, single := proxy.Conflicts()
				t.Logf("the stand-in cancelled %d of %d transactions for a conflict (and refused %d single writes); conflicting items by table: %v",
					tx, proxy.Transactions(), single, proxy.ConflictsByTable())
				if tx == 0 {
					t.Error("the bursts met no TransactionConflict: the test did not exercise real conflicts")
				}
			}

			// The holds of the first burst stay open (the ledger replays
			// them as they are); the second burst's are canceled 20 at a
			// time, their refunds racing on the purses.
			verifyClean(t, rt, rich.UserID)
			began = time.Now()
			cancelAll(t, rt, short.APIKey, short.UserID, created2)
			t.Logf("the 60 cancels took %s", time.Since(began))

			verifyClean(t, rt, short.UserID)
		})
	}
}
