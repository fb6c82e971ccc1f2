package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/core/accounts"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/local/costs"
	"github.com/mediagen-dev/mediagen/internal/local/runtime"
	"github.com/mediagen-dev/mediagen/internal/testkit/testsupport"
)

// benchConfig are the bench's knobs (flags).
type benchConfig struct {
	Conns        int
	Duration     time.Duration
	Rate         int
	GenDuration  time.Duration
	Completions  int
	PollInterval time.Duration
	SimLatency   time.Duration
	Scenes       int
	StoryLatency time.Duration
	StatusReads  float64
	JSONPath     string
	SkipLongForm bool
	ColdStarts   int
	ProfileDir   string `json:"-"`
	// AccountConns clients create generations on one account for
	// AccountDuration (the per-account figure).
	AccountConns    int
	AccountDuration time.Duration
}

// List prices used for the cost figures: AWS us-east-1, arm64, on-demand,
// as published in November 2026 (the DynamoDB on-demand prices are those of
// the November 2024 reduction). Upstream provider cost is excluded.
const pricesDate = "2026-11 (us-east-1 list prices)"

var listPrices = struct {
	APIPerMillion, LambdaRequestPerMillion, LambdaGBSecond, DynamoWritePerMillion, DynamoReadPerMillion,
	SQSPerMillion, TransitionPerThousand, S3PutPerThousand, S3GetPerThousand float64
}{
	APIPerMillion: 1.00, LambdaRequestPerMillion: 0.20, LambdaGBSecond: 0.0000133334,
	DynamoWritePerMillion: 0.625, DynamoReadPerMillion: 0.125, SQSPerMillion: 0.40,
	TransitionPerThousand: 0.025, S3PutPerThousand: 0.005, S3GetPerThousand: 0.0004,
}

// networkAllowance is the time a deployed function waits on each AWS
// request it makes (DynamoDB, SQS, S3), added to the local compute time,
// billed at 256 MB: locally those calls are in-process.
const networkAllowance = 5 * time.Millisecond

// dollars prices some counts at the list prices.
func dollars(p costs.PerUnit) float64 {
	awsCalls := p.DynamoDBReadUnits + p.DynamoDBWriteUnits + p.SQSRequests + p.S3PutRequests + p.S3GetRequests
	gbs := p.LambdaGBSeconds + awsCalls*networkAllowance.Seconds()*0.25
	lp := listPrices
	return p.APIRequests*lp.APIPerMillion/1e6 + p.LambdaInvocations*lp.LambdaRequestPerMillion/1e6 +
		gbs*lp.LambdaGBSecond + p.DynamoDBWriteUnits*lp.DynamoWritePerMillion/1e6 +
		p.DynamoDBReadUnits*lp.DynamoReadPerMillion/1e6 + p.SQSRequests*lp.SQSPerMillion/1e6 +
		p.StateTransitions*lp.TransitionPerThousand/1e3 + p.S3PutRequests*lp.S3PutPerThousand/1e3 +
		p.S3GetRequests*lp.S3GetPerThousand/1e3
}

// figure is one line of the bench's table.
type figure struct {
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
	Target string  `json:"target,omitempty"`
	Met    *bool   `json:"met,omitempty"`
	Note   string  `json:"note,omitempty"`
}

type benchReport struct {
	Started    time.Time                `json:"started"`
	CPUs       int                      `json:"cpus"`
	Config     benchConfig              `json:"config"`
	Figures    []figure                 `json:"figures"`
	Costs      map[string]costs.PerUnit `json:"costs"`
	PricesDate string                   `json:"prices_date"`
}

func (r *benchReport) add(name string, value float64, unit, target string, met *bool, note string) {
	r.Figures = append(r.Figures, figure{Name: name, Value: value, Unit: unit, Target: target, Met: met, Note: note})
}

func is(b bool) *bool { return &b }

// bench measures the local runtime beside a bare server; see
// docs/performance.md.
func bench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	var c benchConfig
	fs.IntVar(&c.Conns, "conns", 16, "connections of the status load (both servers)")
	fs.DurationVar(&c.Duration, "duration", 5*time.Second, "duration of each status load")
	fs.IntVar(&c.Rate, "rate", 200, "offered rate of POST /api/generations/generate, requests/s")
	fs.DurationVar(&c.GenDuration, "gen-duration", 5*time.Second, "duration of the generate load")
	fs.IntVar(&c.Completions, "completions", 10, "generations timed from upstream completion to completed")
	fs.DurationVar(&c.PollInterval, "poll-interval", time.Second, "the runtime's first poll interval")
	fs.DurationVar(&c.SimLatency, "sim-latency", 300*time.Millisecond, "upstream simulator latency (single generations)")
	fs.IntVar(&c.Scenes, "scenes", 8, "scenes of the long-form video")
	fs.DurationVar(&c.StoryLatency, "story-latency", 5*time.Second, "upstream latency per scene clip (hosted providers take longer)")
	fs.Float64Var(&c.StatusReads, "status-reads", 3, "status requests a client makes per generation, for the cost figure")
	fs.StringVar(&c.JSONPath, "json", "", "also write the figures as JSON to this file")
	fs.BoolVar(&c.SkipLongForm, "skip-long-form", false, "skip the long-form figures")
	fs.IntVar(&c.ColdStarts, "cold-starts", 5, "cold starts timed per Lambda function (authorizer, generate, status; 0 skips them)")
	fs.IntVar(&c.AccountConns, "account-conns", 32, "clients creating generations at once on one account (the per-account figure; 0 skips it)")
	fs.DurationVar(&c.AccountDuration, "account-duration", 5*time.Second, "duration of the per-account load")
	fs.StringVar(&c.ProfileDir, "profile-dir", "", "write a CPU profile of each load (status.pprof, generate.pprof) to this directory, for go tool pprof")
	if err := parse(fs, args); errors.Is(err, errHelp) {
		return exitOK
	} else if err != nil {
		return fail(stderr, exitUsage, fmt.Errorf("bench: %w", err))
	}
	rep, err := runBench(ctx, c, stderr)
	if err != nil {
		return fail(stderr, exitError, fmt.Errorf("bench: %w", err))
	}
	printBench(stdout, rep)
	if c.JSONPath != "" {
		raw, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(c.JSONPath, append(raw, '\n'), 0o644); err != nil {
			return fail(stderr, exitError, fmt.Errorf("bench: %w", err))
		}
	}
	return exitOK
}

// benchRuntime starts a local runtime on a temporary data dir and an
// enterprise account whose rate limit the load cannot reach.
func benchRuntime(ctx context.Context, cfg runtime.Config) (*runtime.Runtime, string, func(), error) {
	dir, err := os.MkdirTemp("", "mediagen-bench-")
	if err != nil {
		return nil, "", nil, err
	}
	cfg.Addr, cfg.DataDir = "127.0.0.1:0", dir
	cfg.Log = slog.New(slog.NewJSONHandler(io.Discard, nil))
	rt, err := runtime.Start(ctx, cfg)
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", nil, err
	}
	stop := func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		rt.Close(sctx)
		os.RemoveAll(dir)
	}
	a, err := (&accounts.Service{Store: rt.Store}).CreateAccount(ctx, accounts.NewAccount{
		Plan: domain.PlanEnterprise, Credits: decimal.NewFromInt(100_000_000), RateLimit: 1_000_000_000})
	if err != nil {
		stop()
		return nil, "", nil, err
	}
	return rt, a.APIKey, stop, nil
}

var imageBody = []byte(`{"model":"provider-a","model_version":"theta-4-fast","input":{"prompt":"a lighthouse at dawn"},"image_count":1}`)

func runBench(ctx context.Context, c benchConfig, log io.Writer) (*benchReport, error) {
	rep := &benchReport{Started: time.Now().UTC(), CPUs: goruntime.NumCPU(), Config: c, Costs: map[string]costs.PerUnit{}, PricesDate: pricesDate}
	rss := startRSSSampler()
	defer rss.stop()
	// The cost figures run on DynamoDB (moto's server, started for the
	// bench), where the meter counts the units of the real items.
	fmt.Fprintln(log, "bench: starting moto's server for the DynamoDB figures…")
	dynamo, err := testsupport.StartDynamoDB(ctx)
	if err != nil {
		return nil, err
	}
	defer dynamo.Stop()
	onDynamoDB := func(name string) (*runtime.DynamoDBConfig, error) {
		tables, err := dynamo.NewTables(ctx, name)
		if err != nil {
			return nil, err
		}
		return &runtime.DynamoDBConfig{Client: dynamo.Client(), Tables: tables}, nil
	}

	// The poll path: the provider does not call back (the callback path is
	// timed on a runtime of its own below).
	rt, key, stop, err := benchRuntime(ctx, runtime.Config{SimulatorLatency: c.SimLatency, PollInterval: c.PollInterval, NoUpstreamWebhooks: true})
	if err != nil {
		return nil, err
	}
	defer stop()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256}, Timeout: 30 * time.Second}

	// 1. Status: the runtime against a bare server answering the same bytes.
	fmt.Fprintln(log, "bench: status throughput…")
	rec, err := postJSON(ctx, client, rt.BaseURL+"/api/generations/generate", key, imageBody)
	if err != nil {
		return nil, err
	}
	id, _ := rec["uuid"].(string)
	view, _, err := waitCompleted(ctx, client, rt.BaseURL, key, id, 10*time.Millisecond, time.Minute)
	if err != nil {
		return nil, err
	}
	bare, bareURL, err := bareServer(view)
	if err != nil {
		return nil, err
	}
	defer bare.Close()
	statusURL := rt.BaseURL + "/api/generations/status/" + id
	bareRes := closedLoop(ctx, client, bareURL, key, c.Conns, c.Duration)
	rss.reset()
	before := rt.Costs.Snapshot()
	stopProfile, err := startProfile(c.ProfileDir, "status")
	if err != nil {
		return nil, err
	}
	rtRes := closedLoop(ctx, client, statusURL, key, c.Conns, c.Duration)
	stopProfile()
	statusCost := rt.Costs.Snapshot().Sub(before).Per(float64(rtRes.ok))
	_ = statusCost // re-measured unloaded below
	rssStatus := rss.max()
	ratio := rtRes.rps / bareRes.rps
	rep.add("status: bare net/http requests/s", bareRes.rps, "req/s", "", nil, fmt.Sprintf("p50 %s, p99 %s, %d conns", ms(bareRes.p50), ms(bareRes.p99), c.Conns))
	rep.add("status: runtime requests/s", rtRes.rps, "req/s", "", nil, fmt.Sprintf("p50 %s, p99 %s, errors %d", ms(rtRes.p50), ms(rtRes.p99), rtRes.errors))
	rep.add("status: runtime p50", rtRes.p50.Seconds()*1000, "ms", "", nil, "")
	rep.add("status: runtime p99", rtRes.p99.Seconds()*1000, "ms", "", nil, "")
	rep.add("status: runtime / bare throughput", ratio, "ratio", "≥ 0.5", is(ratio >= 0.5), "")

	// 2. Generate at a fixed offered rate, on a runtime whose upstream never
	// finishes during the load (so renders do not compete for the CPU).
	fmt.Fprintln(log, "bench: generate at a fixed rate…")
	rtGen, keyGen, stopGen, err := benchRuntime(ctx, runtime.Config{SimulatorLatency: time.Hour, PollInterval: c.PollInterval})
	if err != nil {
		return nil, err
	}
	rss.reset()
	if stopProfile, err = startProfile(c.ProfileDir, "generate"); err != nil {
		return nil, err
	}
	genRes := openLoop(ctx, client, rtGen.BaseURL+"/api/generations/generate", keyGen, imageBody, c.Rate, c.GenDuration)
	stopProfile()
	rssGen := rss.max()
	stopGen()
	rep.add("generate: p50", genRes.p50.Seconds()*1000, "ms", "", nil, fmt.Sprintf("%d req/s offered for %s, %d sent", c.Rate, c.GenDuration, genRes.ok+genRes.errors))
	rep.add("generate: p99", genRes.p99.Seconds()*1000, "ms", "≤ 20 ms", is(genRes.p99 <= 20*time.Millisecond), "embedded store")
	rep.add("generate: errors", float64(genRes.errors), "requests", "0", is(genRes.errors == 0), "")

	// 3. Upstream completion → completed in the status view (poll path).
	fmt.Fprintln(log, "bench: completion latency…")
	lags, err := completionLags(ctx, client, rt, key, c.Completions)
	if err != nil {
		return nil, err
	}
	lagP50, lagP99 := percentile(lags, 50), percentile(lags, 99)
	rep.add("completion → completed, poll path: p50", lagP50.Seconds()*1000, "ms", "≤ one poll interval ("+c.PollInterval.String()+")",
		is(lagP50 <= c.PollInterval), fmt.Sprintf("p99 %s; polls back off ×1.5 from %s", ms(lagP99), c.PollInterval))
	// The callback path: the provider calls POST /api/upstream/webhook.
	rtHook, keyHook, stopHook, err := benchRuntime(ctx, runtime.Config{SimulatorLatency: c.SimLatency, PollInterval: c.PollInterval})
	if err != nil {
		return nil, err
	}
	hookLags, err := completionLags(ctx, client, rtHook, keyHook, c.Completions)
	if err != nil {
		stopHook()
		return nil, err
	}
	hookP50, hookP99 := percentile(hookLags, 50), percentile(hookLags, 99)
	rep.add("completion → completed, callback path: p50", hookP50.Seconds()*1000, "ms", "≤ 250 ms",
		is(hookP50 <= 250*time.Millisecond), fmt.Sprintf("p99 %s; includes copying the output into the bucket", ms(hookP99)))

	// The same image, request → completed answer: one request with
	// Prefer: wait, beside a client that polls the status view.
	fmt.Fprintln(log, "bench: Prefer: wait…")
	waited, polled, err := syncVsPolled(ctx, client, rtHook, keyHook, c.Completions, syncPollEvery)
	stopHook()
	if err != nil {
		return nil, err
	}
	waitedP50, polledP50 := percentile(waited, 50), percentile(polled, 50)
	rep.add("image, request → completed answer, Prefer: wait: p50", waitedP50.Seconds()*1000, "ms", "< polling's",
		is(waitedP50 < polledP50), fmt.Sprintf("p99 %s; simulator latency %s, callback path", ms(percentile(waited, 99)), c.SimLatency))
	rep.add("image, request → completed answer, polling: p50", polledP50.Seconds()*1000, "ms", "", nil,
		fmt.Sprintf("p99 %s; the status view read every %s, as replicate's client polls", ms(percentile(polled, 99)), syncPollEvery))

	// 4. Costs per 1,000 single generations, on a runtime on DynamoDB:
	// generations, one at a time, whose client reads the status once, when
	// the upstream job is done; and unloaded status requests, priced one by
	// one.
	fmt.Fprintln(log, "bench: cost counts…")
	db, err := onDynamoDB("bench-costs")
	if err != nil {
		return nil, err
	}
	// The gateway caches the authorizer's answers as the deployed stack does
	// (AuthorizerCacheTtl's default): a client sending requests at least
	// once a minute with its key invokes the authorizer once a minute.
	rtCost, keyCost, stopCost, err := benchRuntime(ctx, runtime.Config{SimulatorLatency: c.SimLatency, PollInterval: c.PollInterval, NoUpstreamWebhooks: true, DynamoDB: db,
		AuthCacheTTL: costs.AuthorizerCacheTTL})
	if err != nil {
		return nil, err
	}
	defer stopCost()
	costRec, err := postJSON(ctx, client, rtCost.BaseURL+"/api/generations/generate", keyCost, imageBody)
	if err != nil {
		return nil, err
	}
	costStatusURL := rtCost.BaseURL + "/api/generations/status/" + fmt.Sprint(costRec["uuid"])
	if _, _, err := waitCompleted(ctx, client, rtCost.BaseURL, keyCost, fmt.Sprint(costRec["uuid"]), 20*time.Millisecond, time.Minute); err != nil {
		return nil, err
	}
	waitQueueIdle(rtCost)
	before = rtCost.Costs.Snapshot()
	for i := 0; i < c.Completions; i++ {
		rec, err := postJSON(ctx, client, rtCost.BaseURL+"/api/generations/generate", keyCost, imageBody)
		if err != nil {
			return nil, err
		}
		id, _ := rec["uuid"].(string)
		// Done as the client would learn it from a notification: the record
		// (read past the meter) is completed; then one status read.
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
			if g, err := rtCost.Store.GetGeneration(ctx, id); err == nil && g.Status == domain.StatusCompleted {
				break
			}
			if time.Now().After(deadline) {
				return nil, fmt.Errorf("generation %s not completed after a minute", id)
			}
		}
		if err := get(ctx, client, rtCost.BaseURL+"/api/generations/status/"+id, keyCost); err != nil {
			return nil, err
		}
		waitQueueIdle(rtCost)
	}
	oneRead := rtCost.Costs.Snapshot().Sub(before).Per(float64(c.Completions))
	before = rtCost.Costs.Snapshot()
	const quiet = 50
	for i := 0; i < quiet; i++ {
		if err := get(ctx, client, costStatusURL, keyCost); err != nil {
			return nil, err
		}
	}
	statusCost = rtCost.Costs.Snapshot().Sub(before).Per(quiet)
	rep.Costs["per status request"] = statusCost
	// The same with the authorizer's answer not cached (a key's first
	// request, or its first after a minute unused): each with a key of its
	// own.
	acct, err := getJSON(ctx, client, rtCost.BaseURL+"/api/account", keyCost)
	if err != nil {
		return nil, err
	}
	const misses = 10
	var missKeys []string
	for i := 0; i < misses; i++ {
		k, err := (&accounts.Service{Store: rtCost.Store}).CreateKey(ctx, fmt.Sprint(acct["user_id"]))
		if err != nil {
			return nil, err
		}
		missKeys = append(missKeys, k.APIKey)
	}
	before = rtCost.Costs.Snapshot()
	for _, k := range missKeys {
		if err := get(ctx, client, costStatusURL, k); err != nil {
			return nil, err
		}
	}
	missCost := rtCost.Costs.Snapshot().Sub(before).Per(misses)
	rep.Costs["per status request, authorizer not cached"] = missCost
	rep.Costs["per generation, 1 status read"] = oneRead
	perGen := oneRead.Add(statusCost.Scale(c.StatusReads - 1))
	rep.Costs[fmt.Sprintf("per generation, %g status reads", c.StatusReads)] = perGen
	d := dollars(perGen) * 1000
	rep.add(fmt.Sprintf("cost per 1,000 generations (%g status reads each)", c.StatusReads), d, "USD", "≤ $0.01", is(d <= 0.01), "AWS only, upstream excluded; prices "+pricesDate)
	d1 := dollars(oneRead) * 1000
	rep.add("cost per 1,000 generations (1 status read each)", d1, "USD", "≤ $0.01", is(d1 <= 0.01), "")
	rep.add("  of which each status request", dollars(statusCost)*1000, "USD per 1,000", "", nil,
		fmt.Sprintf("authorizer answers cached %s (AuthorizerCacheTtl); %.4f USD per 1,000 when not cached", costs.AuthorizerCacheTTL, dollars(missCost)*1000))

	// 5. The ledger's units with no hold open and with 2,000 on the account.
	fmt.Fprintln(log, "bench: ledger units with 0 and 2,000 holds open…")
	if err := benchLedger(ctx, dynamo, rep); err != nil {
		return nil, err
	}

	// 5b. One account's sustained creates per second, on the embedded store
	// and on the DynamoDB stand-in.
	if c.AccountConns > 0 {
		fmt.Fprintln(log, "bench: one account's creates per second…")
		if err := benchAccountCreates(ctx, c, client, rep, nil); err != nil {
			return nil, err
		}
		if err := benchAccountCreates(ctx, c, client, rep, dynamo); err != nil {
			return nil, err
		}
	}

	// Cold starts of the authorizer, generate and status Lambda binaries,
	// each started as Lambda would (coldstart.go).
	if c.ColdStarts > 0 {
		fmt.Fprintln(log, "bench: cold starts…")
		if err := benchColdStarts(ctx, c.ColdStarts, dynamo, rep); err != nil {
			return nil, err
		}
	}

	// 6. Long-form.
	if !c.SkipLongForm {
		fmt.Fprintln(log, "bench: long-form video…")
		db, err := onDynamoDB("bench-story")
		if err != nil {
			return nil, err
		}
		if err := benchLongForm(ctx, c, client, rep, db); err != nil {
			return nil, err
		}
	}

	peak := math.Max(rssStatus, rssGen)
	rep.add("resident memory under load (whole bench process)", peak, "MB", "< 200 MB", is(peak < 200), fmt.Sprintf("status load %.0f MB, generate load %.0f MB", rssStatus, rssGen))
	return rep, nil
}

// benchLongForm times one long-form video against its scenes done one by one.
func benchLongForm(ctx context.Context, c benchConfig, client *http.Client, rep *benchReport, db *runtime.DynamoDBConfig) error {
	rt, key, stop, err := benchRuntime(ctx, runtime.Config{SimulatorLatency: c.StoryLatency, PollInterval: c.PollInterval, DynamoDB: db,
		AuthCacheTTL: costs.AuthorizerCacheTTL})
	if err != nil {
		return err
	}
	defer stop()
	// One scene's time: the same clip as a single generation, from submit to
	// upstream completion.
	scene := []byte(`{"model":"provider-b","model_version":"beta-2","input":{"prompt":"waves roll onto an empty beach","seconds":"4","aspect_ratio":"landscape"}}`)
	rec, err := postJSON(ctx, client, rt.BaseURL+"/api/generations/generate", key, scene)
	if err != nil {
		return err
	}
	id, _ := rec["uuid"].(string)
	if _, _, err := waitCompleted(ctx, client, rt.BaseURL, key, id, 50*time.Millisecond, 5*time.Minute); err != nil {
		return err
	}
	p, _ := rt.Simulator.Lookup(rec["upstream_id"].(string))
	created, err1 := time.Parse(time.RFC3339Nano, p.CreatedAt)
	var done time.Time
	var err2 error = errors.New("no completion time")
	if p.CompletedAt != nil {
		done, err2 = time.Parse(time.RFC3339Nano, *p.CompletedAt)
	}
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("scene time: %w", err)
	}
	sceneTime := done.Sub(created)

	scenes := make([]map[string]any, c.Scenes)
	for i := range scenes {
		scenes[i] = map[string]any{"scene_number": i + 1, "prompt": fmt.Sprintf("scene %d: the tide comes in over the rocks", i+1)}
	}
	body, _ := json.Marshal(map[string]any{"prompt": "A day at the seaside", "scenes": scenes, "language_code": "en",
		"model": "beta-2", "enable_narration": true, "video_style": "documentary"})
	before := rt.Costs.Snapshot()
	assembleBefore := rt.Costs.Seconds("assemble")
	start := time.Now()
	rec, err = postJSON(ctx, client, rt.BaseURL+"/api/long-story/videos", key, body)
	if err != nil {
		return err
	}
	vid, _ := rec["video_id"].(string)
	// Wait on the record (read past the meter, as a client told by a
	// notification would), then read the status once.
	for {
		v, err := rt.Store.GetLongVideo(ctx, vid)
		if err != nil {
			return err
		}
		if v.Status != domain.StatusProcessing {
			break
		}
		if time.Since(start) > 10*time.Minute {
			return errors.New("long-form video still processing after 10 minutes")
		}
		time.Sleep(20 * time.Millisecond)
	}
	final, err := getJSON(ctx, client, rt.BaseURL+"/api/long-story/videos/"+vid, key)
	if err != nil {
		return err
	}
	wall := time.Since(start)
	if final["status"] != "completed" {
		return fmt.Errorf("long-form video %s: %v", final["status"], final["error"])
	}
	waitQueueIdle(rt)
	counts := rt.Costs.Snapshot().Sub(before)
	assembly := time.Duration((rt.Costs.Seconds("assemble") - assembleBefore) * float64(time.Second))
	duration, _ := final["total_duration"].(float64)
	sum := sceneTime * time.Duration(c.Scenes)
	wallRatio := wall.Seconds() / sum.Seconds()
	rep.add(fmt.Sprintf("long-form, %d scenes: wall / sum of scene times", c.Scenes), wallRatio, "ratio", "≤ 0.3", is(wallRatio <= 0.3),
		fmt.Sprintf("wall %s, scene %s each (upstream latency %s) × %d = %s", wall.Round(time.Millisecond), sceneTime.Round(time.Millisecond), c.StoryLatency, c.Scenes, sum.Round(time.Millisecond)))
	speed := duration / assembly.Seconds()
	rep.add("long-form: video duration / assembly time", speed, "× real time", "≥ 30×", is(speed >= 30),
		fmt.Sprintf("%.1f s of video assembled in %s; %s", duration, assembly.Round(time.Millisecond), ffmpegVersion(ctx)))
	// The capacity plan's figures (docs/capacity.md), side by side with
	// what this video took: one transition per state entered (Parallel,
	// Map, a Scene per scene, Narrate, Assemble, Finalize) and one task
	// invocation per Scene, Narrate, Assemble and Finalize, as long as no
	// scene waited for a slot.
	planTransitions, planTasks := c.Scenes+5, c.Scenes+3
	rep.add("capacity plan: state transitions per video", float64(counts.StateTransitions), "transitions",
		fmt.Sprintf("plan: %d (scenes + 5)", planTransitions), is(int(counts.StateTransitions) <= planTransitions), "")
	tasks := 0
	for _, f := range []string{"submit-scene", "narrate", "assemble", "finalize"} {
		tasks += int(counts.ByFunction[f])
	}
	rep.add("capacity plan: workflow task invocations per video", float64(tasks), "invocations",
		fmt.Sprintf("plan: %d (scenes + 3)", planTasks), is(tasks <= planTasks), "")
	if x, ok := rt.Workflow.Execution(vid); ok {
		rep.add("capacity plan: history events per execution", float64(x.HistoryEvents()), "events",
			"plan: ≤ 10 × scenes + 30; quota 25,000", is(x.HistoryEvents() <= 10*c.Scenes+30), "")
		rep.add("capacity plan: largest payload between states", float64(x.MaxPayloadBytes()), "bytes",
			"plan: ids only, < 8 KiB; quota 256 KiB", is(x.MaxPayloadBytes() < 8<<10), "")
	}
	minutes := duration / 60
	per := counts.Per(1)
	rep.Costs["per long-form video"] = per
	rep.add("cost per long-form minute", dollars(per)/minutes, "USD", "", nil,
		fmt.Sprintf("%d transitions, %d invocations; narration (Polly) and upstream excluded", counts.StateTransitions, counts.LambdaInvocations))
	return nil
}

// benchLedger measures a hold, a settle and an authorizer read on one
// account with no hold open and with 2,000 open (costs.MeasureLedger): the
// units must be the same, and the account item stay small.
func benchLedger(ctx context.Context, dynamo *testsupport.DynamoDB, rep *benchReport) error {
	tables, err := dynamo.NewTables(ctx, "bench-ledger")
	if err != nil {
		return err
	}
	none, err := costs.MeasureLedger(ctx, dynamo.Client(), tables, 0)
	if err != nil {
		return err
	}
	many, err := costs.MeasureLedger(ctx, dynamo.Client(), tables, 2000)
	if err != nil {
		return err
	}
	units := func(u costs.Units) string { return fmt.Sprintf("%g RRU + %g WRU", u.Read, u.Write) }
	for _, f := range []struct {
		name      string
		zero, two costs.Units
	}{{"hold", none.Hold, many.Hold}, {"settle (capture)", none.Settle, many.Settle}, {"authorizer read", none.AuthorizerRead, many.AuthorizerRead}} {
		rep.add("DynamoDB units per "+f.name+", 2,000 holds open", f.two.Read+f.two.Write, "units", "= with none open", is(f.two == f.zero),
			fmt.Sprintf("%s; with none open %s", units(f.two), units(f.zero)))
	}
	rep.add("account item, 2,000 holds open", float64(many.AccountItemBytes), "bytes", "< 2 KB", is(many.AccountItemBytes < 2048),
		fmt.Sprintf("%d bytes with none open", none.AccountItemBytes))
	return nil
}

// ffmpegVersion names the ffmpeg the runtime runs (FFMPEG_PATH, else from
// PATH): each ffmpeg and ffprobe start costs ~100 ms with a dynamically
// linked build, a few ms with a static one like the Lambda layer's.
func ffmpegVersion(ctx context.Context) string {
	bin := os.Getenv("FFMPEG_PATH")
	if bin == "" {
		bin = "ffmpeg"
	}
	out, err := exec.CommandContext(ctx, bin, "-version").Output()
	if err != nil {
		return bin + ": " + err.Error()
	}
	f := strings.Fields(string(out))
	if len(f) < 3 {
		return bin
	}
	return "ffmpeg " + f[2]
}

// startProfile writes a CPU profile of the whole process to dir/name.pprof
// until the returned function is called; no dir, no profile.
func startProfile(dir, name string) (func(), error) {
	if dir == "" {
		return func() {}, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.Create(filepath.Join(dir, name+".pprof"))
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// ---- load ----

type loadResult struct {
	ok, errors int
	rps        float64
	p50, p99   time.Duration
}

func summarize(lat []time.Duration, errs int, took time.Duration) loadResult {
	return loadResult{ok: len(lat), errors: errs, rps: float64(len(lat)) / took.Seconds(), p50: percentile(lat, 50), p99: percentile(lat, 99)}
}

// closedLoop runs conns workers, each sending GET url again as soon as the
// last answer arrives, for d.
func closedLoop(ctx context.Context, client *http.Client, url, key string, conns int, d time.Duration) loadResult {
	return closedLoopOf(ctx, conns, d, func() error { return get(ctx, client, url, key) })
}

// closedLoopOf runs conns workers, each calling send again as soon as the
// last call returned, for d.
func closedLoopOf(ctx context.Context, conns int, d time.Duration, send func() error) loadResult {
	var (
		mu   sync.Mutex
		all  []time.Duration
		errs atomic.Int64
		wg   sync.WaitGroup
	)
	start := time.Now()
	end := start.Add(d)
	for i := 0; i < conns; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat := make([]time.Duration, 0, 4096)
			for time.Now().Before(end) && ctx.Err() == nil {
				t := time.Now()
				if err := send(); err != nil {
					errs.Add(1)
					continue
				}
				lat = append(lat, time.Since(t))
			}
			mu.Lock()
			all = append(all, lat...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return summarize(all, int(errs.Load()), time.Since(start))
}

// openLoop sends POST url at a fixed rate for d, each request on its own
// goroutine, whatever the answers' pace (so a slow server sees the queue).
func openLoop(ctx context.Context, client *http.Client, url, key string, body []byte, rate int, d time.Duration) loadResult {
	var (
		mu   sync.Mutex
		all  []time.Duration
		errs atomic.Int64
		wg   sync.WaitGroup
	)
	interval := time.Second / time.Duration(rate)
	start := time.Now()
	total := int(d / interval)
	for i := 0; i < total && ctx.Err() == nil; i++ {
		at := start.Add(time.Duration(i) * interval)
		time.Sleep(time.Until(at))
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := postJSON(ctx, client, url, key, body); err != nil {
				errs.Add(1)
				return
			}
			l := time.Since(at) // from when it was due: waiting to be sent counts
			mu.Lock()
			all = append(all, l)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return summarize(all, int(errs.Load()), time.Since(start))
}

func request(ctx context.Context, method, url, key string, body []byte) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

func do(client *http.Client, req *http.Request) ([]byte, error) {
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s %s: HTTP %d %s", req.Method, req.URL.Path, resp.StatusCode, raw)
	}
	return raw, nil
}

func get(ctx context.Context, client *http.Client, url, key string) error {
	req, err := request(ctx, http.MethodGet, url, key, nil)
	if err != nil {
		return err
	}
	_, err = do(client, req)
	return err
}

func getJSON(ctx context.Context, client *http.Client, url, key string) (map[string]any, error) {
	return sendJSON(ctx, client, http.MethodGet, url, key, nil)
}

func postJSON(ctx context.Context, client *http.Client, url, key string, body []byte) (map[string]any, error) {
	return sendJSON(ctx, client, http.MethodPost, url, key, body)
}

// sendJSON sends a request and decodes its JSON object answer.
func sendJSON(ctx context.Context, client *http.Client, method, url, key string, body []byte) (map[string]any, error) {
	req, err := request(ctx, method, url, key, body)
	if err != nil {
		return nil, err
	}
	raw, err := do(client, req)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(raw, &m)
}

func waitCompleted(ctx context.Context, client *http.Client, base, key, id string, every, limit time.Duration) ([]byte, time.Time, error) {
	raw, seen, _, err := waitCompletedCounting(ctx, client, base, key, id, every, limit)
	return raw, seen, err
}

// waitCompletedCounting polls the status view every `every` until the
// generation is completed; it returns the view's bytes, when it was first
// seen completed and how many status calls it made.
func waitCompletedCounting(ctx context.Context, client *http.Client, base, key, id string, every, limit time.Duration) ([]byte, time.Time, int, error) {
	deadline := time.Now().Add(limit)
	for n := 1; ; n++ {
		req, err := request(ctx, http.MethodGet, base+"/api/generations/status/"+id, key, nil)
		if err != nil {
			return nil, time.Time{}, n, err
		}
		raw, err := do(client, req)
		if err != nil {
			return nil, time.Time{}, n, err
		}
		seen := time.Now()
		var v struct{ Status, Error string }
		json.Unmarshal(raw, &v)
		switch v.Status {
		case "completed":
			return raw, seen, n, nil
		case "processing":
		default:
			return nil, time.Time{}, n, fmt.Errorf("generation %s is %s: %s", id, v.Status, v.Error)
		}
		if time.Now().After(deadline) {
			return nil, time.Time{}, n, fmt.Errorf("generation %s still processing after %s", id, limit)
		}
		time.Sleep(every)
	}
}

func waitQueueIdle(rt *runtime.Runtime) {
	for deadline := time.Now().Add(30 * time.Second); rt.Queue.Len() > 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
}

// bareServer answers every request with body, as the status route would,
// doing nothing else: the reference for the status throughput.
func bareServer(body []byte) (*http.Server, string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	return srv, "http://" + ln.Addr().String() + "/api/generations/status/bare", nil
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", d.Seconds()*1000) }

// ---- memory ----

type rssSampler struct {
	peak atomic.Int64
	done chan struct{}
}

// startRSSSampler samples the process's resident memory every 50 ms.
func startRSSSampler() *rssSampler {
	s := &rssSampler{done: make(chan struct{})}
	go func() {
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			if kb := residentKB(); kb > s.peak.Load() {
				s.peak.Store(kb)
			}
			select {
			case <-s.done:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *rssSampler) reset()       { s.peak.Store(residentKB()) }
func (s *rssSampler) max() float64 { return float64(s.peak.Load()) / 1024 }
func (s *rssSampler) stop()        { close(s.done) }

// residentKB is VmRSS from /proc/self/status (0 where there is none).
func residentKB() int64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n
		}
	}
	return 0
}

// ---- output ----

func printBench(w io.Writer, rep *benchReport) {
	fmt.Fprintf(w, "mediagen-dev bench, %s, %d CPUs\n\n", rep.Started.Format(time.RFC3339), rep.CPUs)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\tvalue\ttarget\tmet\tnote")
	for _, f := range rep.Figures {
		val := "–"
		if !math.IsNaN(f.Value) {
			val = strconv.FormatFloat(f.Value, 'f', precision(f.Value), 64) + " " + f.Unit
		}
		met := ""
		if f.Met != nil {
			met = map[bool]string{true: "met", false: "NOT MET"}[*f.Met]
		} else if f.Target != "" {
			met = "not measured"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", f.Name, val, f.Target, met, f.Note)
	}
	tw.Flush()
	fmt.Fprintf(w, "\ncounts (prices %s; Lambda compute adds %s per AWS request at 256 MB):\n", rep.PricesDate, networkAllowance)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "per\tAPI req\tLambda inv\tLambda GB-s\tDDB RRU\tDDB WRU\tSQS req\tSFN trans\tS3 PUT\tS3 GET\tUSD per 1,000")
	for _, k := range slices.Sorted(maps.Keys(rep.Costs)) {
		p := rep.Costs[k]
		fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.4f\t%.2f\t%.2f\t%.2f\t%.1f\t%.2f\t%.2f\t%.4f\n", k, p.APIRequests, p.LambdaInvocations,
			p.LambdaGBSeconds, p.DynamoDBReadUnits, p.DynamoDBWriteUnits, p.SQSRequests, p.StateTransitions, p.S3PutRequests, p.S3GetRequests, dollars(p)*1000)
	}
	tw.Flush()
}

func precision(v float64) int {
	switch a := math.Abs(v); {
	case a == 0:
		return 0
	case a < 0.1:
		return 4
	case a < 10:
		return 2
	case a < 1000:
		return 1
	}
	return 0
}

// completionLags runs n generations one at a time and measures, for each,
// the time from the provider's completion (the simulator's record) to the
// status view first saying completed.
func completionLags(ctx context.Context, client *http.Client, rt *runtime.Runtime, key string, n int) ([]time.Duration, error) {
	var lags []time.Duration
	for i := 0; i < n; i++ {
		rec, err := postJSON(ctx, client, rt.BaseURL+"/api/generations/generate", key, imageBody)
		if err != nil {
			return nil, err
		}
		id, _ := rec["uuid"].(string)
		upID, _ := rec["upstream_id"].(string)
		_, seen, err := waitCompleted(ctx, client, rt.BaseURL, key, id, 5*time.Millisecond, time.Minute)
		if err != nil {
			return nil, err
		}
		p, ok := rt.Simulator.Lookup(upID)
		if !ok || p.CompletedAt == nil {
			return nil, fmt.Errorf("upstream job %s has no completion time", upID)
		}
		done, err := time.Parse(time.RFC3339Nano, *p.CompletedAt)
		if err != nil {
			return nil, err
		}
		lags = append(lags, seen.Sub(done))
	}
	return lags, nil
}

// syncPollEvery is how often the polling client reads the status view:
// replicate's JavaScript client's default interval.
const syncPollEvery = 500 * time.Millisecond

// syncVsPolled creates n images one at a time with Prefer: wait=60 and n
// more that it polls every pollEvery, and measures each from the request
// to the answer saying completed. A waited answer not completed is an
// error: the wait did not give the result.
func syncVsPolled(ctx context.Context, client *http.Client, rt *runtime.Runtime, key string, n int, pollEvery time.Duration) (waited, polled []time.Duration, err error) {
	for i := 0; i < n; i++ {
		req, err := request(ctx, http.MethodPost, rt.BaseURL+"/api/generations/generate", key, imageBody)
		if err != nil {
			return nil, nil, err
		}
		req.Header.Set("Prefer", "wait=60")
		start := time.Now()
		raw, err := do(client, req)
		if err != nil {
			return nil, nil, err
		}
		took := time.Since(start)
		var rec struct{ UUID, Status string }
		if err := json.Unmarshal(raw, &rec); err != nil {
			return nil, nil, fmt.Errorf("Prefer: wait answer %s: %w", raw, err)
		}
		if rec.Status != "completed" {
			return nil, nil, fmt.Errorf("Prefer: wait answered generation %s %s, not completed", rec.UUID, rec.Status)
		}
		waited = append(waited, took)

		start = time.Now()
		created, err := postJSON(ctx, client, rt.BaseURL+"/api/generations/generate", key, imageBody)
		if err != nil {
			return nil, nil, err
		}
		id, _ := created["uuid"].(string)
		_, seen, err := waitCompleted(ctx, client, rt.BaseURL, key, id, pollEvery, time.Minute)
		if err != nil {
			return nil, nil, err
		}
		polled = append(polled, seen.Sub(start))
	}
	return waited, polled, nil
}

// benchAccountCreates runs c.AccountConns clients that create generations
// on one account, each again as soon as it is answered, for
// c.AccountDuration: the account's sustained creates per second, where
// every create holds credits on the same account (the upstream never
// finishes during the load). dynamo nil: the embedded store; else the
// DynamoDB stand-in, whose answers come one at a time from moto and which
// cancels overlapping transactions as DynamoDB does (counted in the note).
func benchAccountCreates(ctx context.Context, c benchConfig, client *http.Client, rep *benchReport, dynamo *testsupport.DynamoDB) error {
	cfg := runtime.Config{SimulatorLatency: time.Hour, PollInterval: time.Hour}
	where := "embedded store"
	if dynamo != nil {
		tables, err := dynamo.NewTables(ctx, "bench-account")
		if err != nil {
			return err
		}
		cfg.DynamoDB = &runtime.DynamoDBConfig{Client: dynamo.Client(), Tables: tables, Unmetered: true}
		where = "DynamoDB stand-in"
	}
	rt, key, stop, err := benchRuntime(ctx, cfg)
	if err != nil {
		return err
	}
	defer stop()
	var conflictsBefore, txBefore, requestsBefore int64
	requests := func() (n int64) {
		for _, c := range dynamo.Proxy.Requests() {
			n += c
		}
		return n
	}
	if dynamo != nil {
		conflictsBefore, _ = dynamo.Proxy.Conflicts()
		txBefore, requestsBefore = dynamo.Proxy.Transactions(), requests()
	}
	var busy atomic.Int64
	url := rt.BaseURL + "/api/generations/generate"
	res := closedLoopOf(ctx, c.AccountConns, c.AccountDuration, func() error {
		_, err := postJSON(ctx, client, url, key, imageBody)
		if err != nil && strings.Contains(err.Error(), "HTTP 503") {
			busy.Add(1)
		}
		return err
	})
	note := fmt.Sprintf("%d clients for %s; p50 %s, p99 %s; errors %d (503 busy %d)",
		c.AccountConns, c.AccountDuration, ms(res.p50), ms(res.p99), res.errors, busy.Load())
	if dynamo != nil {
		conflicts, _ := dynamo.Proxy.Conflicts()
		sent := requests() - requestsBefore
		note += fmt.Sprintf("; %d of %d transactions cancelled for TransactionConflict; moto, one request at a time, answered %.0f requests/s (%.1f a create)",
			conflicts-conflictsBefore, dynamo.Proxy.Transactions()-txBefore, float64(sent)/c.AccountDuration.Seconds(), float64(sent)/float64(max(res.ok, 1)))
	}
	rep.add("one account: sustained creates/s, "+where, res.rps, "req/s", "", nil, note)
	rep.add("one account: create errors, "+where, float64(res.errors), "requests", "0", is(res.errors == 0), "")
	return nil
}
