// Package events_test runs every function's handler on its sample event, as
// `sam local invoke -e events/<folder>.json` would: the production wiring
// (lambdawiring.Handler) with its AWS endpoints pointed at local servers: moto's
// server for DynamoDB, the S3-compatible store, the upstream simulator, and a
// recording stand-in for the thin SQS, Step Functions and Polly calls.
package events_test

import (
	"context"
	"crypto/md5"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/adapters/ffmpeg"
	"github.com/mediagen-dev/mediagen/internal/adapters/upstream"
	"github.com/mediagen-dev/mediagen/internal/aws/dynamostore"
	"github.com/mediagen-dev/mediagen/internal/aws/lambdawiring"
	"github.com/mediagen-dev/mediagen/internal/core/accounts"
	"github.com/mediagen-dev/mediagen/internal/core/apikey"
	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/longform"
	"github.com/mediagen-dev/mediagen/internal/core/media"
	"github.com/mediagen-dev/mediagen/internal/core/routing"
	"github.com/mediagen-dev/mediagen/internal/core/webhook"
	"github.com/mediagen-dev/mediagen/internal/local/objectstore"
	"github.com/mediagen-dev/mediagen/internal/local/runtime"
	"github.com/mediagen-dev/mediagen/internal/testkit/testsupport"
	"github.com/mediagen-dev/mediagen/internal/testkit/waitfor"
)

// awsCalls records the JSON-protocol calls (SQS, Step Functions) and the
// Polly speech requests the functions make.
type awsCalls struct {
	mu     sync.Mutex
	calls  []string
	sent   []sqsMessage
	stops  []string // the executions StopExecution named
	tokens []tokenCall
}

// sqsMessage is one SendMessage call.
type sqsMessage struct {
	QueueURL     string `json:"QueueUrl"`
	MessageBody  string
	DelaySeconds int
}

// sentTo lists the messages sent to the queue whose URL ends in suffix.
func (a *awsCalls) sentTo(suffix string) []sqsMessage {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []sqsMessage
	for _, m := range a.sent {
		if strings.HasSuffix(m.QueueURL, suffix) {
			out = append(out, m)
		}
	}
	return out
}

// webhookMessages decodes the webhook queue's messages about one record.
func (a *awsCalls) webhookMessages(id string) []webhook.Message {
	var out []webhook.Message
	for _, m := range a.sentTo("/mediagen-webhooks") {
		var w webhook.Message
		if json.Unmarshal([]byte(m.MessageBody), &w) == nil && w.ID == id {
			out = append(out, w)
		}
	}
	return out
}

// tokenCall is one SendTask* call.
type tokenCall struct{ Target, Token, Output, Error, Cause string }

// tokenCalls lists the SendTask* calls made with target.
func (a *awsCalls) tokenCalls(target string) []tokenCall {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []tokenCall
	for _, c := range a.tokens {
		if c.Target == target {
			out = append(out, c)
		}
	}
	return out
}

func (a *awsCalls) count(target string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, c := range a.calls {
		if c == target {
			n++
		}
	}
	return n
}

func (a *awsCalls) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	target := r.Header.Get("X-Amz-Target")
	if r.URL.Path == "/v1/speech" {
		target = "Polly.SynthesizeSpeech"
	}
	a.mu.Lock()
	a.calls = append(a.calls, target)
	a.mu.Unlock()
	switch target {
	case "Polly.SynthesizeSpeech":
		var in struct{ OutputFormat string }
		json.Unmarshal(raw, &in)
		if in.OutputFormat == "json" {
			// Speech marks, as Polly answers them: one JSON object a line.
			w.Header().Set("Content-Type", "application/x-json-stream")
			fmt.Fprint(w, `{"time":6,"type":"sentence","start":0,"end":5,"value":"Waves"}`+"\n"+`{"time":6,"type":"word","start":0,"end":5,"value":"Waves"}`+"\n")
			return
		}
		w.Header().Set("Content-Type", "audio/mpeg")
		w.Write([]byte("ID3 not really mp3"))
	case "AmazonSQS.SendMessage":
		var in sqsMessage
		json.Unmarshal(raw, &in)
		a.mu.Lock()
		a.sent = append(a.sent, in)
		a.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		fmt.Fprintf(w, `{"MessageId":"5fea7756-0ea4-451a-a703-a558b933e274","MD5OfMessageBody":"%x"}`, md5.Sum([]byte(in.MessageBody)))
	case "AWSStepFunctions.StartExecution":
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		fmt.Fprint(w, `{"executionArn":"arn:aws:states:us-east-1:123456789012:execution:long-story:x","startDate":1795284000}`)
	case "AWSStepFunctions.SendTaskHeartbeat", "AWSStepFunctions.SendTaskSuccess", "AWSStepFunctions.SendTaskFailure":
		var in struct{ TaskToken, Output, Error, Cause string }
		json.Unmarshal(raw, &in)
		a.mu.Lock()
		a.tokens = append(a.tokens, tokenCall{Target: target, Token: in.TaskToken, Output: in.Output, Error: in.Error, Cause: in.Cause})
		a.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		fmt.Fprint(w, `{}`)
	case "AWSStepFunctions.StopExecution":
		var in struct{ ExecutionArn string }
		json.Unmarshal(raw, &in)
		a.mu.Lock()
		a.stops = append(a.stops, in.ExecutionArn)
		a.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		fmt.Fprint(w, `{"stopDate":1795284000}`)
	default:
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"__type":"UnknownOperationException","message":"%s"}`, target)
	}
}

type env struct {
	key      string
	userID   string
	store    *dynamostore.Store
	objects  *objectstore.Store
	upstream simClient
	aws      *awsCalls
	// hookSecret is the provider's webhook signing secret (the simulator
	// signs its callbacks with it; the callback function checks them).
	hookSecret string
}

func setup(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	dl, err := testsupport.StartDynamoDB(ctx)
	if err != nil {
		t.Fatalf("the events test needs moto's server: %v", err)
	}
	t.Cleanup(dl.Stop)
	tables, err := dl.NewTables(ctx, "ev")
	if err != nil {
		t.Fatal(err)
	}
	objects, err := objectstore.Start(ctx, "127.0.0.1:0", "", "mediagen-outputs")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { waitfor.Close(t, objects.Close) })
	// The functions, as in Lambda, trust only the system's CAs.
	sim, err := runtime.StartSimulator(runtime.SimulatorConfig{HTTPFiles: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	routingFile := filepath.Join(t.TempDir(), "routing.json")
	raw, err := json.Marshal(routing.Single("sim", routing.ProtocolReplicate, sim.BaseURL, []string{sim.FilesHost}))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(routingFile, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	hookSecret := sim.WebhookSecret()
	calls := &awsCalls{}
	awsSrv := httptest.NewServer(calls)
	t.Cleanup(awsSrv.Close)

	for k, v := range map[string]string{
		"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local",
		"AWS_ENDPOINT_URL_DYNAMODB": dl.Endpoint, "AWS_ENDPOINT_URL_S3": objects.Endpoint,
		"AWS_ENDPOINT_URL_SQS": awsSrv.URL, "AWS_ENDPOINT_URL_SFN": awsSrv.URL, "AWS_ENDPOINT_URL_POLLY": awsSrv.URL,
		"ACCOUNTS_TABLE": tables.Accounts, "API_KEYS_TABLE": tables.APIKeys, "GENERATIONS_TABLE": tables.Generations,
		"LONG_VIDEOS_TABLE": tables.LongVideos, "RATE_LIMITS_TABLE": tables.RateLimits, "COUNTERS_TABLE": tables.Counters,
		"IDEMPOTENCY_TABLE": tables.Idempotency, "LEDGER_TABLE": tables.Ledger, "SLOTS_TABLE": tables.Slots,
		"POLL_QUEUE_URL": awsSrv.URL + "/123456789012/mediagen-poll", "OUTPUT_BUCKET": "mediagen-outputs",
		"WEBHOOK_QUEUE_URL": awsSrv.URL + "/123456789012/mediagen-webhooks",
		"MEDIA_BASE_URL":    objects.FilesURL, "ROUTING_FILE": routingFile,
		"UPSTREAM_TOKENS":   `{"sim":"` + sim.Token + `"}`,
		"STATE_MACHINE_ARN": "arn:aws:states:us-east-1:123456789012:stateMachine:long-story",
		// S3-compatible stores do not all keep the SDK's default checksums.
		"AWS_REQUEST_CHECKSUM_CALCULATION": "when_required", "AWS_RESPONSE_CHECKSUM_VALIDATION": "when_required",
	} {
		t.Setenv(k, v)
	}
	st := dynamostore.New(dl.Client(), tables)
	created, err := (&accounts.Service{Store: st}).CreateAccount(ctx, accounts.NewAccount{Plan: domain.PlanEnterprise, Credits: decimal.NewFromInt(10000), RateLimit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	return &env{key: created.APIKey, userID: created.UserID, store: st, objects: objects, aws: calls, hookSecret: hookSecret,
		upstream: simClient{&upstream.Replicate{BaseURL: sim.BaseURL, Token: sim.Token}}}
}

// simClient reaches the simulator's Replicate face as the service does,
// by job id.
type simClient struct{ *upstream.Replicate }

func (c simClient) Create(ctx context.Context, model string, input map[string]any, hook string) (domain.UpstreamJob, error) {
	return c.Submit(ctx, model, input, hook)
}

func (c simClient) Get(ctx context.Context, id string) (upstream.Result, error) {
	return c.Replicate.Get(ctx, domain.UpstreamJob{ID: id})
}

// event reads events/<name>.json with the sample key replaced by a real one.
func (e *env) event(t *testing.T, name string, replace ...string) []byte {
	t.Helper()
	raw, err := os.ReadFile(name + ".json")
	if err != nil {
		t.Fatal(err)
	}
	s := strings.ReplaceAll(string(raw), "mgk_aaaaaaaaaa_REPLACE-WITH-A-KEY-FROM-mediagen-accounts-create", e.key)
	for i := 0; i+1 < len(replace); i += 2 {
		s = strings.ReplaceAll(s, replace[i], replace[i+1])
	}
	return []byte(s)
}

// invoke runs the function's handler through aws-lambda-go, as Lambda does.
func invoke(t *testing.T, function string, event []byte) map[string]any {
	t.Helper()
	h, err := lambdawiring.Handler(context.Background(), function)
	if err != nil {
		t.Fatalf("%s: build: %v", function, err)
	}
	out, err := lambda.NewHandler(h).Invoke(context.Background(), event)
	if err != nil {
		t.Fatalf("%s: invoke: %v", function, err)
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%s answered %s", function, out)
	}
	return got
}

func body(t *testing.T, resp map[string]any) map[string]any {
	t.Helper()
	var b map[string]any
	if s, _ := resp["body"].(string); json.Unmarshal([]byte(s), &b) != nil {
		t.Fatalf("response without a JSON body: %v", resp)
	}
	return b
}

const (
	sampleGeneration = "3348f3aa-5fd0-4758-860a-3ebaf4cfbcc7"
	sampleVideo      = "6f1c2a8e-3b7d-4e2f-9a51-0c8d7e6b5a43"
)

func TestEveryFunctionAnswersItsSampleEvent(t *testing.T) {
	e := setup(t)
	ctx := context.Background()
	now := time.Now().UTC()
	// Records the status, poller, finalize and fail events refer to.
	up, err := e.upstream.Create(ctx, "provider-b/beta-2", map[string]any{"prompt": "sample", "seconds": 4, "aspect_ratio": "landscape"}, "")
	if err != nil {
		t.Fatal(err)
	}
	g := &domain.Generation{UUID: sampleGeneration, UserID: e.userID, UpstreamID: up.ID, Model: "provider-b", ModelVersion: "beta-2",
		Kind: domain.MediaVideo, Input: json.RawMessage(`{"prompt":"sample"}`), ImageCount: 1, Status: domain.StatusProcessing,
		CreditsUsed: decimal.NewFromInt(52), CreatedAt: now, UpdatedAt: now, Deadline: now.Add(time.Hour)}
	if err := e.store.Hold(ctx, e.userID, domain.Hold{WorkID: g.UUID, Kind: domain.WorkGeneration, Amount: g.CreditsUsed, CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if err := e.store.CreateGeneration(ctx, g); err != nil {
		t.Fatal(err)
	}
	newVideo := func(id string) {
		v := domain.LongVideo{ID: id, UserID: e.userID, Prompt: "A day at the seaside", Model: "beta-2", LanguageCode: "en",
			EnableNarration: true, Scenes: []domain.Scene{{SceneNumber: 1, Prompt: "waves"}, {SceneNumber: 2, Prompt: "a sandcastle"}},
			Status:      domain.StatusProcessing,
			CreditsHeld: decimal.NewFromInt(65), CreatedAt: now, UpdatedAt: now, Deadline: now.Add(time.Hour)}
		if err := e.store.Hold(ctx, e.userID, domain.Hold{WorkID: id, Kind: domain.WorkLongVideo, Amount: v.CreditsHeld, CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
		if err := e.store.CreateLongVideo(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	newVideo(sampleVideo)

	t.Run("authorizer", func(t *testing.T) {
		got := invoke(t, "authorizer", e.event(t, "authorizer"))
		c, _ := got["context"].(map[string]any)
		if got["isAuthorized"] != true || c["user_id"] != e.userID || c["scopes"] != "generate,read,admin" || c["key_prefix"] == nil {
			t.Errorf("answered %v, want authorized for %s with the key's prefix and every scope", got, e.userID)
		}
		// The key's use is noted (its first, so the stored time was unset).
		prefix, hash, _ := apikey.Parse(e.key)
		if k, err := e.store.GetAPIKey(ctx, hash); err != nil || k.LastUsedAt.IsZero() || c["key_prefix"] != prefix {
			t.Errorf("the key reads %+v, %v; want its use noted", k, err)
		}
	})
	t.Run("generate", func(t *testing.T) {
		got := invoke(t, "generate", e.event(t, "generate"))
		if b := body(t, got); got["statusCode"] != 200.0 || b["status"] != "processing" || b["credits_used"] != "52.00" {
			t.Errorf("answered %v", got)
		}
		if e.aws.count("AmazonSQS.SendMessage") < 1 {
			t.Error("no first poll was enqueued")
		}
	})
	t.Run("status", func(t *testing.T) {
		got := invoke(t, "status", e.event(t, "status"))
		if b := body(t, got); got["statusCode"] != 200.0 || b["id"] != sampleGeneration || b["model"] != "provider-b/beta-2" {
			t.Errorf("answered %v", got)
		}
	})
	t.Run("poller", func(t *testing.T) {
		sent := e.aws.count("AmazonSQS.SendMessage")
		got := invoke(t, "poller", e.event(t, "poller"))
		if failures, _ := got["batchItemFailures"].([]any); len(failures) != 0 {
			t.Errorf("answered %v, want no failures", got)
		}
		g, _ := e.store.GetGeneration(ctx, sampleGeneration)
		if g.Status == domain.StatusProcessing && e.aws.count("AmazonSQS.SendMessage") != sent+1 {
			t.Error("a running job was not polled again")
		}
	})
	t.Run("sweeper", func(t *testing.T) {
		got := invoke(t, "sweeper", e.event(t, "sweeper"))
		if _, ok := got["still_open"]; !ok {
			t.Errorf("answered %v, want a sweep report", got)
		}
	})
	t.Run("long-story-estimate", func(t *testing.T) {
		got := invoke(t, "long-story-estimate", e.event(t, "long-story-estimate"))
		if b := body(t, got); got["statusCode"] != 200.0 || b["duration"] != 15.0 {
			t.Errorf("answered %v", got)
		}
	})
	t.Run("long-story-create", func(t *testing.T) {
		got := invoke(t, "long-story-create", e.event(t, "long-story-create"))
		if b := body(t, got); got["statusCode"] != 200.0 || b["status"] != "processing" {
			t.Errorf("answered %v", got)
		}
		if e.aws.count("AWSStepFunctions.StartExecution") != 1 {
			t.Error("the workflow was not started")
		}
	})
	t.Run("event-stream", func(t *testing.T) {
		// A final generation: its stream is its final view, then the end
		// (the sample's processing one would stream for 10 minutes).
		done := &domain.Generation{UUID: "0d6f3c2b-8e4a-4b71-9c5d-3a2e1f0b7c64", UserID: e.userID, UpstreamID: "sample-done",
			Model: "provider-b", ModelVersion: "beta-2", Kind: domain.MediaVideo, Input: json.RawMessage(`{"prompt":"sample"}`),
			ImageCount: 1, Status: domain.StatusFailed, Error: "sample", CreditsUsed: decimal.Zero, CreatedAt: now, UpdatedAt: now,
			Deadline: now.Add(time.Hour)}
		if err := e.store.CreateGeneration(ctx, done); err != nil {
			t.Fatal(err)
		}
		h, err := lambdawiring.Handler(ctx, "event-stream")
		if err != nil {
			t.Fatalf("event-stream: build: %v", err)
		}
		out, err := lambda.NewHandler(h).Invoke(ctx, e.event(t, "event-stream", sampleGeneration, done.UUID))
		if err != nil {
			t.Fatalf("event-stream: invoke: %v", err)
		}
		// A streamed answer: its head (JSON), eight NUL bytes, the body.
		head, stream, ok := strings.Cut(string(out), strings.Repeat("\x00", 8))
		var prelude struct {
			StatusCode int               `json:"statusCode"`
			Headers    map[string]string `json:"headers"`
		}
		if !ok || json.Unmarshal([]byte(head), &prelude) != nil || prelude.StatusCode != 200 ||
			prelude.Headers["Content-Type"] != "text/event-stream" {
			t.Fatalf("answered %q, want a streamed 200 text/event-stream", out)
		}
		if !strings.Contains(stream, "event: failed\ndata: {") || !strings.Contains(stream, `"id":"`+done.UUID+`"`) {
			t.Errorf("streamed %q, want the final view of %s", stream, done.UUID)
		}
	})
	t.Run("long-story-status", func(t *testing.T) {
		got := invoke(t, "long-story-status", e.event(t, "long-story-status"))
		if b := body(t, got); got["statusCode"] != 200.0 || b["id"] != sampleVideo || b["status"] != "processing" {
			t.Errorf("answered %v", got)
		}
	})
	t.Run("models", func(t *testing.T) {
		got := invoke(t, "models", e.event(t, "models"))
		models, _ := body(t, got)["models"].([]any)
		if got["statusCode"] != 200.0 || len(models) != len(catalog.All()) {
			t.Errorf("answered %v", got)
		}
	})
	t.Run("submit-scene", func(t *testing.T) {
		sent := len(e.aws.sentTo("/mediagen-poll"))
		got := invoke(t, "submit-scene", e.event(t, "submit-scene"))
		v, err := e.store.GetLongVideo(ctx, sampleVideo)
		if err != nil {
			t.Fatal(err)
		}
		if st := v.SceneStatus[1]; st.ID == "" || st.Submitting || got["scene_number"] != 1.0 {
			t.Errorf("answered %v, scene state %+v: want the job recorded", got, st)
		}
		if polls := e.aws.sentTo("/mediagen-poll"); len(polls) != sent+1 || !strings.Contains(polls[len(polls)-1].MessageBody, `"task_token":"AQCE`) {
			t.Errorf("the scene's job is not watched: %d poll messages after %d", len(polls), sent)
		}
	})
	t.Run("poller: a scene", func(t *testing.T) {
		// The poller heartbeats the task while the job runs, then keeps the
		// clip and resumes the task with it.
		// Each look is the poller's invocation with the last poll message,
		// as SQS would deliver it, until the task is resumed.
		waitfor.Condition(t, time.Minute, "the poller to resume the scene's task", func() bool {
			if len(e.aws.tokenCalls("AWSStepFunctions.SendTaskSuccess")) > 0 {
				return true
			}
			polls := e.aws.sentTo("/mediagen-poll")
			msg, _ := json.Marshal(polls[len(polls)-1].MessageBody)
			got := invoke(t, "poller", e.event(t, "poller", `"{\"generation_id\": \"3348f3aa-5fd0-4758-860a-3ebaf4cfbcc7\", \"attempt\": 1}"`, string(msg)))
			if failures, _ := got["batchItemFailures"].([]any); len(failures) != 0 {
				t.Fatalf("answered %v, want no failures", got)
			}
			return len(e.aws.tokenCalls("AWSStepFunctions.SendTaskSuccess")) > 0
		})
		done := e.aws.tokenCalls("AWSStepFunctions.SendTaskSuccess")
		if len(done) != 1 || !strings.Contains(done[0].Output, "long-videos/"+sampleVideo+"/scenes/001.mp4") || !strings.HasPrefix(done[0].Token, "AQCE") {
			t.Fatalf("task successes %+v, want one with the kept clip", done)
		}
		if len(e.aws.tokenCalls("AWSStepFunctions.SendTaskHeartbeat")) == 0 {
			t.Error("no heartbeat while the job ran")
		}
		if v, _ := e.store.GetLongVideo(ctx, sampleVideo); v.SceneStatus[1].Status != domain.StatusCompleted {
			t.Errorf("scene 1 is %+v, want completed", v.SceneStatus[1])
		}
	})
	t.Run("narrate", func(t *testing.T) {
		got := invoke(t, "narrate", e.event(t, "narrate"))
		// Each scene's speech and its speech marks: two Polly calls a scene.
		if tracks, _ := got["tracks"].([]any); len(tracks) != 2 || e.aws.count("Polly.SynthesizeSpeech") != 4 {
			t.Errorf("answered %v after %d Polly calls, want 2 tracks from 4 calls", got, e.aws.count("Polly.SynthesizeSpeech"))
		}
		// Retried (Step Functions' Retry, a regenerate's other scenes):
		// the tracks are listed and handed on, not spoken again.
		again := invoke(t, "narrate", e.event(t, "narrate"))
		if !reflect.DeepEqual(again, got) || e.aws.count("Polly.SynthesizeSpeech") != 4 {
			t.Errorf("narrated again: answered %v after %d Polly calls; want %v, no more calls", again, e.aws.count("Polly.SynthesizeSpeech"), got)
		}
	})
	t.Run("assemble", func(t *testing.T) {
		// The event's scene clips and narration, made here.
		dir := t.TempDir()
		ff := ffmpeg.Runner{}
		bucket := e.objects.MediaBucket()
		var event struct {
			Narration longform.Narration `json:"narration"`
		}
		if err := json.Unmarshal(e.event(t, "assemble"), &event); err != nil || len(event.Narration.Tracks) != 2 {
			t.Fatalf("the assemble event's narration: %+v, %v", event.Narration, err)
		}
		for n := 1; n <= 2; n++ {
			clip := filepath.Join(dir, fmt.Sprintf("%d.mp4", n))
			if err := ff.Run(ctx, "-f", "lavfi", "-i", "testsrc2=s=320x180:r=24:d=4", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", clip); err != nil {
				t.Fatal(err)
			}
			wav := filepath.Join(dir, fmt.Sprintf("%d.wav", n))
			if err := ff.Run(ctx, "-f", "lavfi", "-i", "sine=d=2", wav); err != nil {
				t.Fatal(err)
			}
			bucket.PutFile(ctx, fmt.Sprintf("long-videos/%s/scenes/%03d.mp4", sampleVideo, n), clip, "video/mp4")
			bucket.PutFile(ctx, event.Narration.Tracks[n-1].Key, wav, "audio/wav")
		}
		got := invoke(t, "assemble", e.event(t, "assemble"))
		if d, _ := got["duration"].(float64); got["key"] != "long-videos/"+sampleVideo+"/final.mp4" || d < 9.5 || d > 10.5 {
			t.Errorf("answered %v, want a 10 s final video", got)
		}
	})
	t.Run("finalize", func(t *testing.T) {
		got := invoke(t, "finalize", e.event(t, "finalize"))
		if got["status"] != "completed" || !strings.HasSuffix(got["final_video_url"].(string), "/final.mp4") {
			t.Errorf("answered %v", got)
		}
	})
	t.Run("long-story-output-delete", func(t *testing.T) {
		// The video finalized above: its clips, its narration (Polly's mp3,
		// its speech marks and the wav made for assemble) and its final
		// file are in the bucket.
		bucket := e.objects.MediaBucket()
		if keys, err := bucket.Keys(ctx, media.LongVideoPrefix(sampleVideo)); err != nil || len(keys) != 9 ||
			!slices.Contains(keys, media.FinalVideoKey(sampleVideo)) {
			t.Fatalf("before: %v, %v; want the final video, 2 clips, 4 narration tracks and 2 speech marks files", keys, err)
		}
		got := invoke(t, "long-story-output-delete", e.event(t, "long-story-output-delete"))
		if b := body(t, got); got["statusCode"] != 200.0 || b["data_removed"] != true || b["final_video_url"] != "" {
			t.Errorf("answered %v", got)
		}
		if keys, err := bucket.Keys(ctx, media.LongVideoPrefix(sampleVideo)); err != nil || len(keys) != 0 {
			t.Errorf("after: %v, %v; want no object left", keys, err)
		}
	})
	t.Run("generation-output-delete", func(t *testing.T) {
		const id = "2f7b9c4e-8a1d-4e6f-b3c2-5d9e0a1b7c68"
		key := media.OutputKeyBase(id, 0) + ".png"
		bucket := e.objects.MediaBucket()
		if err := bucket.Put(ctx, key, strings.NewReader("png"), "image/png"); err != nil {
			t.Fatal(err)
		}
		g := &domain.Generation{UUID: id, UserID: e.userID, Model: "provider-a", ModelVersion: "theta-4-fast",
			Kind: domain.MediaImage, Input: json.RawMessage(`{"prompt":"sample"}`), ImageCount: 1, Status: domain.StatusProcessing,
			CreditsUsed: decimal.NewFromInt(3), CreatedAt: now, UpdatedAt: now, Deadline: now.Add(time.Hour)}
		if err := e.store.CreateGeneration(ctx, g); err != nil {
			t.Fatal(err)
		}
		if err := e.store.FinishGeneration(ctx, id, domain.Outcome{Status: domain.StatusCompleted, OutputURLs: []string{bucket.URL(key)},
			OutputExpiresAt: now.AddDate(0, 0, 30)}, now); err != nil {
			t.Fatal(err)
		}
		for range 2 { // a repeat answers the same
			got := invoke(t, "generation-output-delete", e.event(t, "generation-output-delete"))
			out, _ := body(t, got)["output"].([]any)
			if b := body(t, got); got["statusCode"] != 200.0 || b["data_removed"] != true || len(out) != 0 {
				t.Errorf("answered %v", got)
			}
		}
		if ok, err := bucket.Exists(ctx, key); ok || err != nil {
			t.Errorf("the output is still in the bucket (%v)", err)
		}
	})
	// MarkFailed is the safety net's target, invoked by the template's
	// EventBridge rule with an execution that ended outside the workflow's
	// Catch (mark-failed.json), and the workflow's MarkFailed state, invoked
	// with the caught error (mark-failed.workflow-catch.json).
	for _, tc := range []struct {
		name, event, video, wantError string
	}{
		{"mark-failed", "mark-failed", "8d2e4c71-5b3a-4f09-a6e2-1c9b7d5e3f20", "too long"},
		{"mark-failed: workflow catch", "mark-failed.workflow-catch", "0b8f6a52-8f0e-4d8e-9d37-2f6c7a0e9b11", "scene 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			newVideo(tc.video)
			got := invoke(t, "mark-failed", e.event(t, tc.event, sampleVideo, tc.video))
			if got["status"] != "failed" || !strings.Contains(fmt.Sprint(got["error"]), tc.wantError) {
				t.Errorf("answered %v, want failed with %q", got, tc.wantError)
			}
			if e.heldFor(t, tc.video) {
				t.Error("the failed video's hold is still open")
			}
		})
	}
	routesAndWebhooks(t, e)
}
