package lambdastack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/mediagen-dev/mediagen/internal/adapters/ffmpeg"
	"github.com/mediagen-dev/mediagen/internal/core/media"
	"github.com/mediagen-dev/mediagen/internal/local/lambdaruntime"
	"github.com/mediagen-dev/mediagen/internal/local/stepfunctions"
	"github.com/mediagen-dev/mediagen/internal/testkit/testsupport"
	"github.com/mediagen-dev/mediagen/internal/testkit/waitfor"
)

// longBody is a long-form create request of n scenes.
func longBody(n int, narrate bool) string {
	var scenes []string
	for i := 1; i <= n; i++ {
		scenes = append(scenes, fmt.Sprintf(`{"scene_number":%d,"prompt":"scene %d: waves roll onto an empty beach"}`, i, i))
	}
	return fmt.Sprintf(`{"prompt":"A day at the seaside","language_code":"en","model":"beta-2","enable_narration":%t,"video_style":"documentary","scenes":[%s]}`,
		narrate, strings.Join(scenes, ","))
}

// createLong creates a long-form video and answers its id and the
// estimate's credits.
func createLong(t *testing.T, l *Local, scenes int, narrate bool) (string, float64) {
	t.Helper()
	status, est := call(t, l, http.MethodPost, "/api/long-story/videos/estimate", fmt.Sprintf(`{"model":"beta-2","scene_count":%d}`, scenes))
	credits, _ := est["credits"].(map[string]any)
	price, ok := credits["total"].(float64)
	if status != http.StatusOK || !ok {
		t.Fatalf("estimate: %d %v", status, est)
	}
	status, created := call(t, l, http.MethodPost, "/api/long-story/videos", longBody(scenes, narrate))
	id, _ := created["video_id"].(string)
	if status != http.StatusOK || id == "" || created["status"] != "processing" {
		t.Fatalf("create: %d %v\n%s", status, created, l.logsOf("LongStoryCreateFunction"))
	}
	return id, price
}

// waitLong reads a long-form video's status until it is no longer
// processing: generous, for real processes on a loaded machine.
func waitLong(t *testing.T, l *Local, id string, limit time.Duration) map[string]any {
	t.Helper()
	view := waitStatusAs(t, l, l.Dev.APIKey, "/api/long-story/videos/"+id, limit)
	if view["status"] == "processing" {
		t.Fatalf("video %s still processing after %s\n%s", id, limit, l.workflowLogs())
	}
	return view
}

// workflowLogs are the task functions' logs, for failure messages.
func (s *Stack) workflowLogs() string {
	var b strings.Builder
	for _, fn := range []string{"SubmitSceneFunction", "PollerFunction", "NarrateFunction", "AssembleFunction", "FinalizeFunction", "MarkFailedFunction"} {
		fmt.Fprintf(&b, "--- %s\n%s\n", fn, s.logsOf(fn))
	}
	return b.String()
}

// journal counts the caller's journal entries of one work by type, with
// their amounts, waiting (at most 20 s) until want's types are there: the
// settlement follows the final status.
func journal(t *testing.T, l *Local, workID string, want ...string) map[string][]string {
	t.Helper()
	out, _ := waitfor.Value(t, 20*time.Second, fmt.Sprintf("the journal of %s to hold %v", workID, want), func() (map[string][]string, bool) {
		status, page := call(t, l, http.MethodGet, "/api/account/transactions?work_id="+workID, "")
		if status != http.StatusOK {
			t.Fatalf("transactions: %d %v", status, page)
		}
		out := map[string][]string{}
		items, _ := page["data"].([]any)
		for _, it := range items {
			e, _ := it.(map[string]any)
			out[fmt.Sprint(e["type"])] = append(out[fmt.Sprint(e["type"])], fmt.Sprint(e["amount"]))
		}
		for _, w := range want {
			if len(out[w]) == 0 {
				return out, false
			}
		}
		return out, true
	})
	return out
}

// sameAmount compares a journal amount with the estimate's credits.
func sameAmount(amount string, credits float64) bool {
	var v float64
	_, err := fmt.Sscan(amount, &v)
	return err == nil && math.Abs(v-credits) < 0.005
}

// A 3-scene narrated long video runs through the template's state
// machine on the deployed shape: the create function starts the execution
// through the Step Functions API (its role's states:StartExecution
// checked by moto), the Map's SubmitScene tasks wait on their tokens
// until the poller's SendTaskSuccess, Narrate speaks through Polly's
// endpoint, Assemble runs ffmpeg from the layer's path, Finalize captures
// the credits. The final URL serves an mp4 with one video and one audio
// stream of the three scenes' 15 s, and the journal holds the estimate
// once and captures it once.
func TestALongNarratedVideoCompletesThroughTheStateMachine(t *testing.T) {
	l := shared(t)
	id, price := createLong(t, l, 3, true)
	view := waitLong(t, l, id, 4*time.Minute)
	if view["status"] != "completed" || view["error"] != nil {
		t.Fatalf("the video ended %v: %v\n%s", view["status"], view, l.workflowLogs())
	}
	url, _ := view["final_video_url"].(string)
	resp, err := l.Media.Client().Get(url)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("final_video_url %s: HTTP %d", url, resp.StatusCode)
	}
	path := filepath.Join(t.TempDir(), "final.mp4")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	info, err := ffmpeg.Runner{}.Probe(context.Background(), path)
	if err != nil {
		t.Fatalf("final_video_url %s is not a video ffprobe reads: %v", url, err)
	}
	videos, audios := testsupport.StreamCounts(info)
	if videos != 1 || audios != 1 || math.Abs(info.Duration-15) > 1 {
		t.Errorf("final video: %d video and %d audio streams, %.2f s; want one of each and 15 s", videos, audios, info.Duration)
	}
	// A narrated video has captions by default: Assemble stored them
	// (its role's grant) and the distribution serves them.
	captions, _ := view["captions_url"].(string)
	if resp, err := l.Media.Client().Get(captions); err != nil {
		t.Errorf("captions_url %q: %v", captions, err)
	} else {
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(string(raw), "WEBVTT\n") || strings.Count(string(raw), " --> ") != 3 {
			t.Errorf("captions_url %q: HTTP %d %q; want WebVTT with one cue per sentence (each scene's narration here is one sentence)", captions, resp.StatusCode, raw)
		}
	}
	entries := journal(t, l, id, "hold", "capture")
	if len(entries["hold"]) != 1 || len(entries["capture"]) != 1 || len(entries["release"]) != 0 ||
		!sameAmount(entries["hold"][0], price) || !sameAmount(entries["capture"][0], price) {
		t.Errorf("journal of %s: %v; want one hold and one capture of the estimate %.2f", id, entries, price)
	}
	if status, _, ok := l.StateMachines()["LongStoryStateMachine"].Execution(id); !ok || status != "SUCCEEDED" {
		t.Errorf("the execution of %s is %q (known: %v), want SUCCEEDED", id, status, ok)
	}
	regenerateScene(t, l, id, url)
	for _, fn := range []string{"LongStoryCreateFunction", "SubmitSceneFunction", "NarrateFunction", "AssembleFunction", "FinalizeFunction",
		"LongStoryRegenerateFunction"} {
		if l.Functions()[fn].Invocations() == 0 {
			t.Errorf("%s never ran", fn)
		}
	}
	if d := l.Moto.Denials(); len(d) > 0 {
		t.Errorf("moto denied %d calls: %+v", len(d), d)
	}
}

// regenerateScene re-renders scene 2 of the completed video id (final
// video oldURL) on the deployed shape: the regenerate function holds one
// scene's price and starts the execution <id>-r2 through the Step
// Functions API; the state machine's revision path runs the scene,
// narration (Polly speaking the scene's new text alone), assembly and
// Finalize, which moves the video to revision 2 under its own key,
// captures only that hold (the journal's own work) and deletes the
// previous final video with its role's grant; a second regenerate,
// canceled, releases only its own hold.
func regenerateScene(t *testing.T, l *Local, id, oldURL string) {
	t.Helper()
	status, est := call(t, l, http.MethodPost, "/api/long-story/videos/estimate", `{"model":"beta-2","scene_count":1}`)
	credits, _ := est["credits"].(map[string]any)
	price, ok := credits["total"].(float64)
	if status != http.StatusOK || !ok {
		t.Fatalf("estimate: %d %v", status, est)
	}
	const narration = "A kite climbs into the wind."
	spokenBefore := l.PollyCharacters()
	status, started := call(t, l, http.MethodPost, "/api/long-story/videos/"+id+"/scenes/2/regenerate",
		`{"prompt":"scene 2: a red kite over the dunes","narration":"`+narration+`"}`)
	if status != http.StatusAccepted || started["status"] != "completed" || started["regenerating"] == nil || started["final_video_url"] != oldURL {
		t.Fatalf("regenerate: %d %v\n%s", status, started, l.logsOf("LongStoryRegenerateFunction"))
	}
	view, ok := waitfor.Value(t, 4*time.Minute, "the regenerate of "+id+" to end", func() (map[string]any, bool) {
		status, view := call(t, l, http.MethodGet, "/api/long-story/videos/"+id, "")
		_, running := view["regenerating"]
		return view, status != http.StatusOK || !running
	})
	if !ok {
		t.Fatalf("still regenerating\n%s", l.workflowLogs())
	}
	newURL, _ := view["final_video_url"].(string)
	if view["status"] != "completed" || view["revision"] != 2.0 || !strings.HasSuffix(newURL, "/r2/final.mp4") {
		t.Fatalf("after the regenerate: %v; want completed at revision 2 with its r2 final video\n%s", view, l.workflowLogs())
	}
	// Polly billed the scene's new narration alone, spoken and marked:
	// the other scenes' tracks were reused.
	if billed := l.PollyCharacters() - spokenBefore; billed != 2*int64(len(narration)) {
		t.Errorf("the regenerate had Polly speak and mark %d characters; want %d, its scene's new narration twice", billed, 2*len(narration))
	}
	// The previous revision's published files left the CDN's caches as
	// Finalize deleted them, under its role.
	for _, old := range []string{"/" + media.FinalVideoKey(id), "/" + media.CaptionsKey(id)} {
		if paths := invalidatedPaths(t, l); !slices.Contains(paths, old) {
			t.Errorf("the distribution invalidated %v; want %s, replaced by revision 2", paths, old)
		}
	}
	if resp, err := l.Media.Client().Get(newURL); err != nil {
		t.Errorf("the new final_video_url %s: %v", newURL, err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("the new final_video_url %s: HTTP %d", newURL, resp.StatusCode)
		}
	}
	work := id + "#scene-2-r2" // domain.RegenerateWorkID
	entries := journal(t, l, url.QueryEscape(work), "hold", "capture")
	if len(entries["hold"]) != 1 || len(entries["capture"]) != 1 || !sameAmount(entries["capture"][0], price) {
		t.Errorf("journal of %s: %v; want one hold and one capture of one scene's %.2f", work, entries, price)
	}
	if status, _, ok := l.StateMachines()["LongStoryStateMachine"].Execution(id + "-r2"); !ok || status != "SUCCEEDED" {
		t.Errorf("the execution %s-r2 is %q (known: %v), want SUCCEEDED", id, status, ok)
	}
	// A regenerate canceled at once ends alone: the cancel function stops
	// its execution <id>-r3 (its role's StopExecution), only its hold is
	// released and the video stays at revision 2 with its video. (Its
	// scene is slow, not held, so no job outlives the test whatever the
	// cancel finds.)
	status, started = call(t, l, http.MethodPost, "/api/long-story/videos/"+id+"/scenes/1/regenerate", `{"prompt":"scene 1: a slow tide [simulate:slow]"}`)
	if status != http.StatusAccepted {
		t.Fatalf("second regenerate: %d %v\n%s", status, started, l.logsOf("LongStoryRegenerateFunction"))
	}
	status, canceled := call(t, l, http.MethodPost, "/api/long-story/videos/"+id+"/cancel", "")
	if _, running := canceled["regenerating"]; status != http.StatusOK || canceled["status"] != "completed" || canceled["revision"] != 2.0 ||
		canceled["final_video_url"] != newURL || running {
		t.Errorf("cancel of the regenerate: %d %v; want completed at revision 2 with its video\n%s", status, canceled, l.logsOf("LongStoryCancelFunction"))
	}
	canceledWork := id + "#scene-1-r3"
	if entries := journal(t, l, url.QueryEscape(canceledWork), "hold", "release"); len(entries["hold"]) != 1 || len(entries["release"]) != 1 || len(entries["capture"]) != 0 {
		t.Errorf("journal of %s: %v; want its hold released, nothing captured", canceledWork, entries)
	}
	waitfor.Condition(t, time.Minute, "the execution "+id+"-r3 to be stopped", func() bool {
		status, _, ok := l.StateMachines()["LongStoryStateMachine"].Execution(id + "-r3")
		return ok && status == "ABORTED"
	})

	// The previous revision's file is gone from the bucket (Finalize's
	// s3:DeleteObject), listed past the distribution's cache.
	s3c := s3.NewFromConfig(l.AdminConfig(), func(o *s3.Options) { o.UsePathStyle = true })
	old := "long-videos/" + id + "/final.mp4"
	waitfor.Condition(t, 20*time.Second, "the previous final video "+old+" to be deleted", func() bool {
		list, err := s3c.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(l.Ref("OutputBucket")), Prefix: aws.String(old)})
		return err == nil && len(list.Contents) == 0
	})
}

// An execution stopped from outside (an operator's StopExecution) never
// reaches its own MarkFailed state: the template's EventBridge rule on
// ABORTED executions invokes MarkFailedFunction with Step Functions'
// status change event, which fails the video and releases its hold.
func TestAStoppedExecutionReachesMarkFailedThroughTheEventRule(t *testing.T) {
	l := shared(t)
	sm := l.StateMachines()["LongStoryStateMachine"]
	// Hold the scene's submission so that the execution is surely
	// running when it is stopped; released once it is.
	release := l.Moto.Stall("SubmitSceneFunction", 1)
	t.Cleanup(release)
	before := l.Functions()["MarkFailedFunction"].Invocations()
	id, price := createLong(t, l, 1, false)
	client := sfn.NewFromConfig(l.AdminConfig())
	// StartExecution as the service answers it: the running execution's
	// name with its input is that execution; with another input, a name
	// in use is ExecutionAlreadyExists.
	desc, err := client.DescribeExecution(context.Background(), &sfn.DescribeExecutionInput{ExecutionArn: aws.String(sm.executionARN(id))})
	if err != nil || desc.Status != "RUNNING" {
		t.Fatalf("DescribeExecution of the new video's execution: %v %+v", err, desc)
	}
	again, err := client.StartExecution(context.Background(), &sfn.StartExecutionInput{StateMachineArn: aws.String(sm.ARN), Name: aws.String(id), Input: desc.Input})
	if err != nil || aws.ToString(again.ExecutionArn) != sm.executionARN(id) || !again.StartDate.Equal(aws.ToTime(desc.StartDate)) {
		t.Errorf("StartExecution again with the same name and input: %v %+v, want the running execution", err, again)
	}
	var exists *sfntypes.ExecutionAlreadyExists
	if _, err := client.StartExecution(context.Background(), &sfn.StartExecutionInput{StateMachineArn: aws.String(sm.ARN), Name: aws.String(id), Input: aws.String(`{"other":true}`)}); !errors.As(err, &exists) {
		t.Errorf("StartExecution with the name and another input answered %v, want ExecutionAlreadyExists", err)
	}
	if _, err := client.StopExecution(context.Background(), &sfn.StopExecutionInput{ExecutionArn: aws.String(sm.executionARN(id)),
		Error: aws.String("Operator"), Cause: aws.String("stopped by hand")}); err != nil {
		t.Fatalf("StopExecution: %v", err)
	}
	release()
	view := waitLong(t, l, id, 2*time.Minute)
	if view["status"] != "failed" {
		t.Fatalf("the video ended %v, want failed: %v\n%s", view["status"], view, l.workflowLogs())
	}
	entries := journal(t, l, id, "hold", "release")
	if len(entries["release"]) != 1 || len(entries["capture"]) != 0 || !sameAmount(entries["release"][0], price) {
		t.Errorf("journal of %s: %v; want its hold of %.2f released once", id, entries, price)
	}
	if status, errName, _ := sm.Execution(id); status != "ABORTED" || errName != "Operator" {
		t.Errorf("the execution is %s (%s), want ABORTED with StopExecution's error", status, errName)
	}
	if after := l.Functions()["MarkFailedFunction"].Invocations(); after <= before {
		t.Errorf("MarkFailedFunction ran %d times before and %d after: the rule did not invoke it", before, after)
	}
}

// A caller's cancel stops the execution with the cancel function's own
// StopExecution (its role's states:StopExecution on the stack's execution
// ARNs): the video ends canceled, the execution ABORTED, and the
// execution-ended rule's MarkFailed that follows changes nothing: the
// hold is released once.
func TestACanceledLongVideoStopsItsExecutionAndReleasesOnce(t *testing.T) {
	l := shared(t)
	sm := l.StateMachines()["LongStoryStateMachine"]
	// The scene's submission held until the cancel has answered.
	release := l.Moto.Stall("SubmitSceneFunction", 1)
	t.Cleanup(release)
	before := l.Functions()["MarkFailedFunction"].Invocations()
	id, price := createLong(t, l, 1, false)
	status, body := call(t, l, http.MethodPost, "/api/long-story/videos/"+id+"/cancel", "")
	if status != http.StatusOK {
		t.Fatalf("cancel: %d %v\n%s", status, body, l.logsOf("LongStoryCancelFunction"))
	}
	release()
	var st string
	if !waitfor.Condition(t, time.Minute, "the execution aborted and MarkFailedFunction run", func() bool {
		st, _, _ = sm.Execution(id)
		return st == "ABORTED" && l.Functions()["MarkFailedFunction"].Invocations() > before
	}) {
		t.Fatalf("after the cancel the execution is %s and MarkFailedFunction ran %d times (before: %d)\n%s",
			st, l.Functions()["MarkFailedFunction"].Invocations(), before, l.logsOf("LongStoryCancelFunction"))
	}
	view := waitLong(t, l, id, time.Minute)
	if view["status"] != "canceled" {
		t.Errorf("the video is %v after its cancel, want canceled: %v", view["status"], view)
	}
	entries := journal(t, l, id, "hold", "release")
	if len(entries["release"]) != 1 || len(entries["capture"]) != 0 || !sameAmount(entries["release"][0], price) {
		t.Errorf("journal of %s: %v; want its hold of %.2f released once", id, entries, price)
	}
	if d := l.Moto.Denials(); len(d) > 0 {
		t.Errorf("moto denied %d calls: %+v", len(d), d)
	}
}

// A Finalize past its function's timeout on the deployed shape (its
// Timeout lowered to 5 s in the expanded template, its first call held
// until then): Lambda kills it and reports Sandbox.Timedout (its REPORT line
// says so), the Finalize
// state's Retry names that error, and the retry completes the video with
// its credits captured once.
func TestAFinalizePastItsFunctionTimeoutIsRetriedAsOnAWS(t *testing.T) {
	requireTools(t)
	cfg := testConfig(t, "finalize")
	otherExecutions := "arn:aws:states:" + region + ":" + accountID + ":execution:another-machine:*"
	rescoped := 0
	cfg.Edit = func(doc map[string]any) {
		fn, _ := doc["Resources"].(map[string]any)["FinalizeFunction"].(map[string]any)
		fn["Properties"].(map[string]any)["Timeout"] = 5
		// The cancel function's states:StopExecution scoped to another
		// state machine's executions.
		role, _ := doc["Resources"].(map[string]any)["LongStoryCancelFunctionRole"].(map[string]any)
		policies, _ := role["Properties"].(map[string]any)["Policies"].([]any)
		for _, p := range policies {
			doc, _ := p.(map[string]any)["PolicyDocument"].(map[string]any)
			stmts, _ := doc["Statement"].([]any)
			for _, st := range stmts {
				if st := st.(map[string]any); st["Action"] == "states:StopExecution" {
					st["Resource"] = otherExecutions
					rescoped++
				}
			}
		}
	}
	defer os.RemoveAll(cfg.Dir)
	l, err := StartLocal(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if got := l.Functions()["FinalizeFunction"].Timeout; got != 5*time.Second {
		t.Fatalf("FinalizeFunction's timeout is %s, want the edited 5s", got)
	}
	// Finalize's first call held until Lambda kills it at its timeout.
	t.Cleanup(l.Moto.Stall("FinalizeFunction", 1))
	id, price := createLong(t, l, 1, false)
	view := waitLong(t, l, id, 3*time.Minute)
	if view["status"] != "completed" {
		t.Fatalf("the video ended %v: %v\n%s", view["status"], view, l.workflowLogs())
	}
	if n := l.Functions()["FinalizeFunction"].Invocations(); n < 2 {
		t.Errorf("FinalizeFunction ran %d times, want the timed-out attempt and its retry", n)
	}
	if log := l.logsOf("FinalizeFunction"); !strings.Contains(log, "Status: Sandbox.Timedout") {
		t.Errorf("FinalizeFunction's log does not show Lambda's timeout:\n%s", log)
	}
	entries := journal(t, l, id, "hold", "capture")
	if len(entries["capture"]) != 1 || len(entries["release"]) != 0 || !sameAmount(entries["capture"][0], price) {
		t.Errorf("journal of %s: %v; want one capture of %.2f", id, entries, price)
	}

	// The Step Functions API keeps IAM on the same stack: the poller's
	// role may send task answers but not start executions, and moto's
	// decision is the caller's answer (AccessDeniedException); a token no
	// task holds is TaskDoesNotExist, as the service answers.
	poller := sfn.NewFromConfig(l.awsConfig(l.roles["PollerFunction"].creds))
	_, err = poller.StartExecution(context.Background(), &sfn.StartExecutionInput{
		StateMachineArn: aws.String(l.StateMachines()["LongStoryStateMachine"].ARN), Name: aws.String("not-allowed"), Input: aws.String("{}")})
	var apiErr interface{ ErrorCode() string }
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "AccessDeniedException" {
		t.Errorf("the poller's StartExecution answered %v, want AccessDeniedException", err)
	}
	if _, _, ok := l.StateMachines()["LongStoryStateMachine"].Execution("not-allowed"); ok {
		t.Error("a refused StartExecution started an execution")
	}
	_, err = poller.SendTaskHeartbeat(context.Background(), &sfn.SendTaskHeartbeatInput{TaskToken: aws.String("no-such-token")})
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "TaskDoesNotExist" {
		t.Errorf("a heartbeat on an unknown token answered %v, want TaskDoesNotExist", err)
	}
	found := false
	for _, d := range l.Moto.Denials() {
		if d.Caller == "PollerFunction" && strings.Contains(d.Action, "StartExecution") {
			found = true
		}
	}
	if !found {
		t.Errorf("moto's denials %+v do not name the poller's StartExecution", l.Moto.Denials())
	}

	// IAM decides a Step Functions action on its resource: the cancel
	// function's role, its StopExecution scoped to another machine's
	// executions, may not stop this machine's.
	if rescoped != 1 {
		t.Fatalf("rescoped %d StopExecution statements of LongStoryCancelFunctionRole, want its one", rescoped)
	}
	sm := l.StateMachines()["LongStoryStateMachine"]
	cancel := sfn.NewFromConfig(l.awsConfig(l.roles["LongStoryCancelFunction"].creds))
	_, err = cancel.StopExecution(context.Background(), &sfn.StopExecutionInput{ExecutionArn: aws.String(sm.executionARN(id))})
	if errorCodeOf(err) != "AccessDeniedException" || !strings.Contains(err.Error(), "states:StopExecution on resource: "+sm.executionARN(id)) {
		t.Errorf("the cancel function's StopExecution outside its role's resources answered %v, want AccessDeniedException on the execution", err)
	}
	_, err = cancel.StopExecution(context.Background(), &sfn.StopExecutionInput{ExecutionArn: aws.String(strings.TrimSuffix(otherExecutions, "*") + "x")})
	if errorCodeOf(err) != "ExecutionDoesNotExist" {
		t.Errorf("the cancel function's StopExecution inside its role's resources answered %v, want ExecutionDoesNotExist", err)
	}
}

// The rule's pattern, as the template expands it, matches Step Functions'
// status change events of the stack's machine that failed, timed out or
// were aborted, and no other.
func TestTheExecutionEndedRuleMatchesAsEventBridgeDoes(t *testing.T) {
	l := shared(t)
	sm := l.StateMachines()["LongStoryStateMachine"]
	if len(l.rules) != 1 || len(l.rules[0].targets) != 1 || l.rules[0].targets[0].Logical != "MarkFailedFunction" {
		t.Fatalf("the stack's pattern rules: %+v, want the one on executions, to MarkFailedFunction", l.EventRules())
	}
	other := strings.Replace(sm.ARN, sm.Name, "another-machine", 1)
	for _, tt := range []struct {
		machine, status string
		want            bool
	}{
		{sm.ARN, "FAILED", true},
		{sm.ARN, "TIMED_OUT", true},
		{sm.ARN, "ABORTED", true},
		{sm.ARN, "SUCCEEDED", false},
		{sm.ARN, "RUNNING", false},
		{other, "FAILED", false},
	} {
		end := stepfunctions.ExecutionEnd{ExecutionArn: strings.Replace(tt.machine, ":stateMachine:", ":execution:", 1) + ":v1", Name: "v1",
			StateMachineArn: tt.machine, Status: tt.status, Input: []byte(`{}`), StartDate: time.Now(), StopDate: time.Now()}
		raw, err := end.EventBridgeEvent()
		if err != nil {
			t.Fatal(err)
		}
		var ev map[string]any
		if err := json.Unmarshal(raw, &ev); err != nil {
			t.Fatal(err)
		}
		if got := matchPattern(l.rules[0].pattern, ev); got != tt.want {
			t.Errorf("%s execution of %s: matched %v, want %v", tt.status, tt.machine, got, tt.want)
		}
	}
}

// A function's failure is the task's error under the name Step Functions
// reports for it, with Lambda's error payload as the cause.
func TestLambdaFailuresAreNamedAsStepFunctionsReportsThem(t *testing.T) {
	for _, tt := range []struct {
		err        error
		name       string
		causeHolds string
	}{
		{&lambdaruntime.FunctionError{Type: "TransientError", Message: "try again"}, "TransientError", `"errorMessage":"try again"`},
		{&lambdaruntime.FunctionError{Type: lambdaruntime.ErrorTypeTimedOut, Message: "Task timed out after 5.00 seconds"}, "Sandbox.Timedout", "Task timed out"},
		{&lambdaruntime.FunctionError{Type: lambdaruntime.ErrorTypeExit, Message: "Runtime exited"}, "Runtime.ExitError", "Runtime exited"},
		{&lambdaruntime.FunctionError{HeaderType: "Unhandled", Raw: []byte("boom")}, "Unhandled", "boom"},
		{&lambdaruntime.FunctionError{Raw: []byte("no type")}, "Lambda.Unknown", "no type"},
		{fmt.Errorf("invoke: %w", lambdaruntime.ErrThrottled), "Lambda.TooManyRequestsException", "TooManyRequests"},
		{errors.New("the function is stopped"), "Lambda.ServiceException", "stopped"},
	} {
		got := lambdaError(tt.err)
		if got.Name != tt.name || !strings.Contains(got.Cause, tt.causeHolds) {
			t.Errorf("%v: %s (%s), want %s with a cause holding %q", tt.err, got.Name, got.Cause, tt.name, tt.causeHolds)
		}
	}
}
