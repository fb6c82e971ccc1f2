package runtime_test

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mediagen-dev/mediagen/client"
	"github.com/mediagen-dev/mediagen/internal/core/accounts"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/local/runtime"
	"github.com/mediagen-dev/mediagen/internal/testkit/runtimetest"
)

// TestFilteredListsOnDynamoDBCostTheSameWhateverTheHistory: on DynamoDB,
// after 150 generate-then-cancel pairs (which are free), every filtered
// list and journal request makes the same number of DynamoDB requests as
// on an account with one record, at most 4 of them its own (the rest are
// the authorizer's and the rate limit's), and the Go client paging until
// has_more is false sees every matching item exactly once, newest first.
// Before, ?model=zeta&limit=1 read the whole history.
func TestFilteredListsOnDynamoDBCostTheSameWhateverTheHistory(t *testing.T) {
	rt := start(t, runtime.Config{DynamoDB: runtimetest.DynamoDB(t)})
	ctx := context.Background()
	long := newAccount(t, rt, domain.PlanEnterprise, 1000)
	fresh := newAccount(t, rt, domain.PlanEnterprise, 1000)
	base := time.Now().Add(-time.Hour).UTC()
	at := func(i int) time.Time { return base.Add(time.Duration(i) * time.Second) }

	// Each history begins with work that completed (a zeta-pro
	// generation, an alpha-3.1-fast video); the long one then has 150
	// canceled (theta-4-fast, beta-2).
	type work struct{ generation, video string }
	seed := func(user string, i int, version, videoModel string, finish domain.Status, settle func(context.Context, string, string) (bool, error)) work {
		t.Helper()
		g := &domain.Generation{UUID: uuid.NewString(), UserID: user, Model: "provider-a", ModelVersion: version,
			Kind: domain.MediaImage, Input: []byte(`{"prompt":"p"}`), ImageCount: 1, Status: domain.StatusProcessing,
			CreditsUsed: credits("1"), CreatedAt: at(i), UpdatedAt: at(i), Deadline: at(i).Add(time.Hour)}
		if err := rt.Store.CreateGeneration(ctx, g); err != nil {
			t.Fatal(err)
		}
		if err := rt.Store.Hold(ctx, user, domain.Hold{WorkID: g.UUID, Kind: domain.WorkGeneration, Amount: credits("1"),
			Model: version, CreatedAt: at(i)}); err != nil {
			t.Fatal(err)
		}
		if err := rt.Store.FinishGeneration(ctx, g.UUID, domain.Outcome{Status: finish}, at(i)); err != nil {
			t.Fatal(err)
		}
		if _, err := settle(ctx, user, g.UUID); err != nil {
			t.Fatal(err)
		}
		v := domain.LongVideo{ID: uuid.NewString(), UserID: user, Prompt: "p", Model: videoModel, LanguageCode: "en",
			Scenes: []domain.Scene{{SceneNumber: 1, Prompt: "a"}}, Status: domain.StatusProcessing, CreditsHeld: credits("1"),
			CreatedAt: at(i), UpdatedAt: at(i), Deadline: at(i).Add(time.Hour)}
		if err := rt.Store.CreateLongVideo(ctx, v); err != nil {
			t.Fatal(err)
		}
		return work{g.UUID, v.ID}
	}
	var zeta []work // newest first
	for i := 0; i < 2; i++ {
		zeta = append([]work{seed(long.UserID, i, "zeta-pro", "alpha-3.1-fast", domain.StatusCompleted, rt.Store.Capture)}, zeta...)
	}
	for i := 2; i < 152; i++ {
		seed(long.UserID, i, "theta-4-fast", "beta-2", domain.StatusCanceled, rt.Store.Refund)
	}
	freshWork := seed(fresh.UserID, 0, "zeta-pro", "alpha-3.1-fast", domain.StatusCompleted, rt.Store.Capture)

	// requests counts the DynamoDB requests of one call (and logs its read
	// units, for docs/performance.md).
	requests := func(call func()) int64 {
		before := rt.Costs.Snapshot()
		call()
		c := rt.Costs.Snapshot().Sub(before)
		t.Logf("%d DynamoDB requests, %.1f read units", c.DynamoDBRequests, c.DynamoDBReadUnits)
		return c.DynamoDBRequests
	}
	clientOf := func(a accounts.CreatedAccount) *client.Client {
		c := client.New(rt.BaseURL, a.APIKey)
		if _, err := c.Account(ctx); err != nil { // the key's first use is noted once
			t.Fatal(err)
		}
		return c
	}
	longClient, freshClient := clientOf(long), clientOf(fresh)
	// What the authorizer and the rate limit cost a request: a status
	// request's, less its one read of the record.
	overhead := requests(func() {
		if _, err := longClient.Generation(ctx, uuid.NewString()); err == nil {
			t.Fatal("a missing generation was found")
		}
	}) - 1

	listed := func(data []client.GenerationStatus) []string {
		ids := make([]string, len(data))
		for i, d := range data {
			ids[i] = d.ID
		}
		return ids
	}
	for _, tt := range []struct {
		name      string
		o         client.ListOptions
		want      []string
		freshWant []string
	}{
		{"model", client.ListOptions{Model: "zeta-pro", Limit: 1}, []string{zeta[0].generation, zeta[1].generation}, []string{freshWork.generation}},
		{"status", client.ListOptions{Status: client.StatusCompleted, Limit: 1}, []string{zeta[0].generation, zeta[1].generation}, []string{freshWork.generation}},
		{"status and model", client.ListOptions{Status: client.StatusCanceled, Model: "zeta-pro", Limit: 20}, nil, nil},
	} {
		t.Run("generations by "+tt.name, func(t *testing.T) {
			var freshCost int64
			freshCost = requests(func() {
				p, err := freshClient.Generations(ctx, tt.o)
				if err != nil || !slices.Equal(listed(p.Data), tt.freshWant) || p.HasMore {
					t.Fatalf("fresh account: %+v, %v; want %v", p, err, tt.freshWant)
				}
			})
			var got []string
			o := tt.o
			for pages := 0; ; pages++ {
				if pages == 20 {
					t.Fatal("the cursors never end")
				}
				var p client.Page[client.GenerationStatus]
				cost := requests(func() {
					var err error
					if p, err = longClient.Generations(ctx, o); err != nil {
						t.Fatal(err)
					}
				})
				if cost != freshCost || cost-overhead > 4 {
					t.Errorf("page %d made %d DynamoDB requests (%d of its own); one record's made %d", pages, cost, cost-overhead, freshCost)
				}
				got = append(got, listed(p.Data)...)
				next, more := p.Next(o)
				if more != p.HasMore {
					t.Fatalf("has_more %v with next_cursor %v", p.HasMore, p.NextCursor)
				}
				if !more {
					break
				}
				o = next
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("paged to the end: %v, want %v", got, tt.want)
			}
		})
	}

	t.Run("long videos by model", func(t *testing.T) {
		o := client.ListOptions{Model: "alpha-3.1-fast", Limit: 1}
		freshCost := requests(func() {
			if p, err := freshClient.LongVideos(ctx, o); err != nil || len(p.Data) != 1 || p.Data[0].ID != freshWork.video {
				t.Fatalf("fresh account: %+v, %v", p, err)
			}
		})
		var got []string
		for pages := 0; ; pages++ {
			if pages == 20 {
				t.Fatal("the cursors never end")
			}
			var p client.Page[client.LongVideoStatus]
			cost := requests(func() {
				var err error
				if p, err = longClient.LongVideos(ctx, o); err != nil {
					t.Fatal(err)
				}
			})
			if cost != freshCost || cost-overhead > 4 {
				t.Errorf("page %d made %d DynamoDB requests (%d of its own); one record's made %d", pages, cost, cost-overhead, freshCost)
			}
			for _, v := range p.Data {
				got = append(got, v.ID)
			}
			var more bool
			if o, more = p.Next(o); !more {
				break
			}
		}
		if want := []string{zeta[0].video, zeta[1].video}; !slices.Equal(got, want) {
			t.Errorf("paged to the end: %v, want %v", got, want)
		}
	})

	for _, tt := range []struct {
		name string
		o    client.TransactionOptions
		want []string // work ids and types, newest first
	}{
		{"type", client.TransactionOptions{Type: "capture", Limit: 1}, []string{zeta[0].generation + " capture", zeta[1].generation + " capture"}},
		{"work", client.TransactionOptions{WorkID: zeta[1].generation, Limit: 1}, []string{zeta[1].generation + " capture", zeta[1].generation + " hold"}},
		{"unknown work", client.TransactionOptions{WorkID: "x", Limit: 1}, nil},
	} {
		t.Run("journal by "+tt.name, func(t *testing.T) {
			freshCost := requests(func() {
				if _, err := freshClient.Transactions(ctx, tt.o); err != nil {
					t.Fatal(err)
				}
			})
			var got []string
			o := tt.o
			for pages := 0; ; pages++ {
				if pages == 20 {
					t.Fatal("the cursors never end")
				}
				var p client.Page[client.Transaction]
				cost := requests(func() {
					var err error
					if p, err = longClient.Transactions(ctx, o); err != nil {
						t.Fatal(err)
					}
				})
				if cost != freshCost || cost-overhead > 4 {
					t.Errorf("page %d made %d DynamoDB requests (%d of its own); one record's made %d", pages, cost, cost-overhead, freshCost)
				}
				for _, e := range p.Data {
					if e.WorkID != nil {
						got = append(got, *e.WorkID+" "+e.Type)
					}
				}
				if p.NextCursor == nil {
					break
				}
				o.Cursor = *p.NextCursor
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("paged to the end: %v, want %v", got, tt.want)
			}
		})
	}
	if a := call(t, rt, http.MethodGet, "/api/account/transactions?type=capture&limit=1&cursor=x", long.APIKey, malformed(nil)); a.status != http.StatusBadRequest {
		t.Errorf("a foreign cursor: HTTP %d, want 400", a.status)
	}
}
