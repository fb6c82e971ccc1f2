package runtime_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/mediagen-dev/mediagen/internal/api/routes"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/local/runtime"
	"github.com/mediagen-dev/mediagen/internal/testkit/clocktest"
	"github.com/mediagen-dev/mediagen/internal/testkit/jwttest"
	"github.com/mediagen-dev/mediagen/internal/testkit/waitfor"
)

// sse is one block of an event stream: an event (id, name, data), or a
// comment or retry line alone.
type sse struct {
	id      int64
	event   string
	data    string
	comment string
	retry   string
}

// eventStream opens path's event stream and hands out its blocks as they
// come; the channel closes when the stream ends. lastID, when not "",
// resumes it.
func eventStream(t *testing.T, rt *runtime.Runtime, path, key, lastID string) (*http.Response, <-chan sse) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rt.BaseURL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(forContract(t, req, false))
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	out := make(chan sse, 64)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		var cur sse
		seen := false
		for sc.Scan() {
			line := sc.Text()
			if line == "" {
				if seen {
					out <- cur
				}
				cur, seen = sse{}, false
				continue
			}
			seen = true
			name, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			switch name {
			case "":
				cur.comment = value
			case "id":
				cur.id, _ = strconv.ParseInt(value, 10, 64)
			case "event":
				cur.event = value
			case "data":
				cur.data += value
			case "retry":
				cur.retry = value
			}
		}
	}()
	return resp, out
}

// nextBlock is the stream's next block; ok false when it ended.
func nextBlock(t *testing.T, blocks <-chan sse) (sse, bool) {
	t.Helper()
	select {
	case b, ok := <-blocks:
		return b, ok
	case <-time.After(time.Minute):
		t.Fatal("no block of the event stream within a minute")
		return sse{}, false
	}
}

// nextEvent skips the retry line and comments to the next event.
func nextEvent(t *testing.T, blocks <-chan sse) (sse, bool) {
	t.Helper()
	for {
		b, ok := nextBlock(t, blocks)
		if !ok || b.event != "" {
			return b, ok
		}
	}
}

// tick moves the stream's clock one poll once the stream waits on it.
func tick(t *testing.T, clk *clocktest.Fake, d time.Duration) {
	t.Helper()
	if !clk.WaitForTimers(1, time.Minute) {
		t.Fatal("the event stream set no timer within a minute")
	}
	clk.Advance(d)
}

// The generation's event stream, as a client reads it: the current view
// first, exactly as GET status answers it; an event at each change of the
// view (progress grows with time), each id above the last; a keep-alive
// comment after 15 s without one; the final view on cancel, then the end.
// Resumed with Last-Event-ID it sends only what is newer, and the
// refusals are the API's JSON answers.
func TestTheGenerationEventStreamSendsEachChangeUntilTheFinalView(t *testing.T) {
	clk := clocktest.New(time.Now().UTC().Truncate(time.Second))
	rt := start(t, runtime.Config{Clock: clk.Now, StreamClock: clk})
	owner := newAccount(t, rt, domain.PlanEnterprise, 1000)
	created := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, imageBody("a pier [simulate:hold]"))
	if created.status != http.StatusOK {
		t.Fatalf("generate: HTTP %d %s", created.status, created.body)
	}
	id := created.str("uuid")
	path := "/api/generations/" + id + "/events"
	status := "/api/generations/status/" + id

	resp, blocks := eventStream(t, rt, path, owner.APIKey, "")
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("GET %s: HTTP %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if b, _ := nextBlock(t, blocks); b.retry == "" {
		t.Errorf("the stream's first block is %+v, want its retry delay", b)
	}
	first, ok := nextEvent(t, blocks)
	if !ok {
		t.Fatal("the stream ended before its first event")
	}
	var got, want map[string]any
	if err := json.Unmarshal([]byte(first.data), &got); err != nil {
		t.Fatalf("the first event's data %q: %v", first.data, err)
	}
	view := call(t, rt, http.MethodGet, status, owner.APIKey, nil)
	want = view.decoded
	if first.event != "processing" || !reflect.DeepEqual(got, want) {
		t.Errorf("first event %q %s; want processing with the status view %s", first.event, first.data, view.body)
	}

	// A second later the progress estimate has grown: a new event.
	tick(t, clk, time.Second)
	second, ok := nextEvent(t, blocks)
	if !ok || second.id <= first.id {
		t.Fatalf("after a second: %+v (open %v); want an event with an id above %d", second, ok, first.id)
	}
	json.Unmarshal([]byte(second.data), &got)
	if p, _ := got["progress"].(float64); p <= want["progress"].(float64) {
		t.Errorf("after a second the progress is %v, want above the first event's %v", got["progress"], want["progress"])
	}

	// Past the typical duration the estimate stays at 95: nothing new,
	// so after 15 s a keep-alive comment and no event.
	tick(t, clk, time.Minute)
	last, _ := nextEvent(t, blocks)
	for i := 0; i < 15; i++ {
		tick(t, clk, time.Second)
	}
	if b, ok := nextBlock(t, blocks); !ok || b.comment != "keep-alive" || b.event != "" {
		t.Errorf("15 s without a change: %+v (open %v); want the keep-alive comment alone", b, ok)
	}

	// The cancel: the final view, then the end of the stream.
	if c := call(t, rt, http.MethodPost, "/api/generations/"+id+"/cancel", owner.APIKey, nil); c.status != http.StatusOK {
		t.Fatalf("cancel: HTTP %d %s", c.status, c.body)
	}
	tick(t, clk, time.Second)
	final, ok := nextEvent(t, blocks)
	if !ok || final.event != "canceled" || final.id <= last.id {
		t.Fatalf("after the cancel: %+v (open %v); want the canceled view with an id above %d", final, ok, last.id)
	}
	json.Unmarshal([]byte(final.data), &got)
	view = call(t, rt, http.MethodGet, status, owner.APIKey, nil)
	if !reflect.DeepEqual(got, view.decoded) {
		t.Errorf("the final event's data %s; want the status view %s", final.data, view.body)
	}
	if b, ok := nextBlock(t, blocks); ok {
		t.Errorf("after the final view the stream goes on: %+v", b)
	}

	// Resumed at the final event: nothing more, the stream ends at once.
	_, blocks = eventStream(t, rt, path, owner.APIKey, strconv.FormatInt(final.id, 10))
	if b, ok := nextEvent(t, blocks); ok {
		t.Errorf("resumed after the final event: %+v; want the stream's end", b)
	}
	// Resumed before it: the final view only.
	_, blocks = eventStream(t, rt, path, owner.APIKey, strconv.FormatInt(last.id, 10))
	if b, ok := nextEvent(t, blocks); !ok || b.id != final.id || b.event != "canceled" {
		t.Errorf("resumed after event %d: %+v (open %v); want the final event %d", last.id, b, ok, final.id)
	}

	// Refusals are the API's JSON answers.
	stranger := newAccount(t, rt, domain.PlanEnterprise, 10)
	for _, c := range []struct {
		name, key, path, lastID string
		status                  int
		code                    string
	}{
		{"no key", "", path, "", http.StatusUnauthorized, "unauthorized"},
		{"a bad key", "mgk_nope", path, "", http.StatusUnauthorized, "unauthorized"},
		{"another account's generation", stranger.APIKey, path, "", http.StatusNotFound, "not_found"},
		{"a bad Last-Event-ID", owner.APIKey, path, "yesterday", http.StatusBadRequest, "invalid_request"},
	} {
		req, _ := http.NewRequest(http.MethodGet, rt.BaseURL+c.path, nil)
		if c.key != "" {
			req.Header.Set("Authorization", "Bearer "+c.key)
		}
		if c.lastID != "" {
			req.Header.Set("Last-Event-ID", c.lastID)
		}
		a := send(t, req, true)
		if a.status != c.status || a.str("error", "code") != c.code {
			t.Errorf("%s: HTTP %d %s; want %d %s", c.name, a.status, a.body, c.status, c.code)
		}
	}
}

// A long video's event stream carries each scene's state, and ends with
// the video's final view.
func TestTheLongVideoEventStreamEndsWithTheFinalView(t *testing.T) {
	clk := clocktest.New(time.Now().UTC().Truncate(time.Second))
	rt := start(t, runtime.Config{StreamClock: clk})
	owner := newAccount(t, rt, domain.PlanEnterprise, 100000)
	created := call(t, rt, http.MethodPost, "/api/long-story/videos", owner.APIKey,
		storyBody("a harbour", "en", false, "cinematic", []storyScene{{1, "boats [simulate:hold]"}, {2, "gulls [simulate:hold]"}}))
	if created.status != http.StatusOK {
		t.Fatalf("create: HTTP %d %s", created.status, created.body)
	}
	id := created.str("video_id")
	_, blocks := eventStream(t, rt, "/api/long-story/videos/"+id+"/events", owner.APIKey, "")
	first, ok := nextEvent(t, blocks)
	if !ok || first.event != "processing" {
		t.Fatalf("first event %+v (open %v); want processing", first, ok)
	}
	var view struct {
		Status string `json:"status"`
		Scenes []struct {
			SceneNumber int    `json:"scene_number"`
			Status      string `json:"status"`
		} `json:"scenes"`
	}
	if err := json.Unmarshal([]byte(first.data), &view); err != nil || len(view.Scenes) != 2 {
		t.Fatalf("first event's data %s: %v; want both scenes' states", first.data, err)
	}
	if c := call(t, rt, http.MethodPost, "/api/long-story/videos/"+id+"/cancel", owner.APIKey, nil); c.status != http.StatusOK {
		t.Fatalf("cancel: HTTP %d %s", c.status, c.body)
	}
	tick(t, clk, time.Second)
	final, ok := nextEvent(t, blocks)
	if !ok || final.event != "canceled" || final.id <= first.id {
		t.Fatalf("after the cancel: %+v (open %v); want the canceled view with an id above %d", final, ok, first.id)
	}
	want := call(t, rt, http.MethodGet, "/api/long-story/videos/"+id, owner.APIKey, nil)
	var got map[string]any
	json.Unmarshal([]byte(final.data), &got)
	if !reflect.DeepEqual(got, want.decoded) {
		t.Errorf("final event %s; want the status view %s", final.data, want.body)
	}
	if b, ok := nextBlock(t, blocks); ok {
		t.Errorf("after the final view the stream goes on: %+v", b)
	}
	// The ended stream was billed as the stream function's invocation.
	waitfor.Condition(t, time.Minute, "the cost meter to count the stream as one invocation of "+routes.StreamFunction, func() bool {
		return rt.Costs.Snapshot().ByFunction[routes.StreamFunction] == 1
	})
}

// A stream still open at its time limit (10 minutes on the stream's
// clock) ends, so that no invocation outlives its function's timeout; the
// client resumes it with the last id it read and gets what came since.
func TestAnEventStreamEndsAtItsTimeLimitAndResumes(t *testing.T) {
	clk := clocktest.New(time.Now().UTC().Truncate(time.Second))
	rt := start(t, runtime.Config{StreamClock: clk})
	owner := newAccount(t, rt, domain.PlanEnterprise, 1000)
	created := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, imageBody("a buoy [simulate:hold]"))
	if created.status != http.StatusOK {
		t.Fatalf("generate: HTTP %d %s", created.status, created.body)
	}
	id := created.str("uuid")
	path := "/api/generations/" + id + "/events"
	_, blocks := eventStream(t, rt, path, owner.APIKey, "")
	last, ok := nextEvent(t, blocks)
	if !ok {
		t.Fatal("the stream ended before its first event")
	}
	tick(t, clk, 10*time.Minute)
	for {
		b, ok := nextBlock(t, blocks)
		if !ok {
			break // ended at its time limit, the generation still processing
		}
		if b.event != "" {
			if b.event != "processing" {
				t.Fatalf("at the time limit: %+v, want the stream to end on a processing view", b)
			}
			last = b
		}
	}
	_, blocks = eventStream(t, rt, path, owner.APIKey, strconv.FormatInt(last.id, 10))
	if c := call(t, rt, http.MethodPost, "/api/generations/"+id+"/cancel", owner.APIKey, nil); c.status != http.StatusOK {
		t.Fatalf("cancel: HTTP %d %s", c.status, c.body)
	}
	for {
		b, ok := nextEventTicking(t, clk, blocks)
		if !ok {
			t.Fatal("the resumed stream ended before the final view")
		}
		if b.id <= last.id {
			t.Fatalf("the resumed stream sent event %d again (Last-Event-ID %d)", b.id, last.id)
		}
		if b.event == "canceled" {
			break
		}
	}
}

// nextEventTicking is nextEvent on a stream that may be waiting for its
// clock: the clock moves a poll each time the stream waits, until an
// event (or the end) comes.
func nextEventTicking(t *testing.T, clk *clocktest.Fake, blocks <-chan sse) (sse, bool) {
	t.Helper()
	limit := time.Now().Add(time.Minute) // for a broken test only
	for time.Now().Before(limit) {
		select {
		case b, ok := <-blocks:
			if !ok || b.event != "" {
				return b, ok
			}
		default:
			if clk.WaitForTimers(1, 50*time.Millisecond) {
				clk.Advance(time.Second)
			}
		}
	}
	t.Fatal("no event of the stream within a minute")
	return sse{}, false
}

// A key used only for streams has its use noted, as the authorizer notes
// a key's use on the API's routes: the stream function has no authorizer
// in front of it, and a key that only streams must not read as unused.
func TestAKeyUsedOnlyForStreamsHasItsUseNoted(t *testing.T) {
	rt := start(t, runtime.Config{})
	owner := newAccount(t, rt, domain.PlanEnterprise, 1000)
	created := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, imageBody("a quay [simulate:hold]"))
	if created.status != http.StatusOK {
		t.Fatalf("generate: HTTP %d %s", created.status, created.body)
	}
	watcher := createKey(t, rt, owner.APIKey, map[string]any{"name": "dashboard", "scopes": []string{"read"}})
	if k := listedKey(t, rt, owner.APIKey, watcher.str("prefix")); k["last_used_at"] != nil {
		t.Fatalf("the new key lists %v before any use; want no last use", k)
	}
	_, blocks := eventStream(t, rt, "/api/generations/"+created.str("uuid")+"/events", watcher.str("api_key"), "")
	if ev, ok := nextEvent(t, blocks); !ok || ev.event != "processing" {
		t.Fatalf("the stream's first event %+v (open %v); want processing", ev, ok)
	}
	if k := listedKey(t, rt, owner.APIKey, watcher.str("prefix")); k["last_used_at"] == nil {
		t.Errorf("the key, used for a stream, lists %v; want its last use", k)
	}
	call(t, rt, http.MethodPost, "/api/generations/"+created.str("uuid")+"/cancel", owner.APIKey, nil)
}

// An open stream rechecks its key on the stream's own clock: once the key
// is revoked, the stream's next check (within 30 s) sends a last event
// `error` whose data is the 401 envelope the API answers a revoked key,
// and the stream ends, however long it had left.
func TestAnOpenStreamEndsOnceItsKeyIsRevoked(t *testing.T) {
	clk := clocktest.New(time.Now().UTC().Truncate(time.Second))
	rt := start(t, runtime.Config{StreamClock: clk})
	owner := newAccount(t, rt, domain.PlanEnterprise, 1000)
	created := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, imageBody("a jetty [simulate:hold]"))
	if created.status != http.StatusOK {
		t.Fatalf("generate: HTTP %d %s", created.status, created.body)
	}
	watcher := createKey(t, rt, owner.APIKey, map[string]any{"name": "dashboard", "scopes": []string{"read"}})
	_, blocks := eventStream(t, rt, "/api/generations/"+created.str("uuid")+"/events", watcher.str("api_key"), "")
	if ev, ok := nextEvent(t, blocks); !ok || ev.event != "processing" {
		t.Fatalf("the stream's first event %+v (open %v); want processing", ev, ok)
	}
	if r := call(t, rt, http.MethodDelete, "/api/account/keys/"+watcher.str("prefix"), owner.APIKey, nil); r.status != http.StatusOK {
		t.Fatalf("revoke: HTTP %d %s", r.status, r.body)
	}
	refused := call(t, rt, http.MethodGet, "/api/generations/status/"+created.str("uuid"), watcher.str("api_key"), nil)
	revokedAt := clk.Now()
	var ended sse
	for ended.event != "error" {
		b, ok := nextEventTicking(t, clk, blocks)
		if !ok {
			t.Fatal("the stream ended without an error event")
		}
		ended = b
	}
	if took := clk.Now().Sub(revokedAt); took > 30*time.Second {
		t.Errorf("the error event came %v after the revocation on the stream's clock; want within 30 s", took)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(ended.data), &got); err != nil {
		t.Fatalf("the error event's data %q: %v", ended.data, err)
	}
	gotErr, _ := got["error"].(map[string]any)
	wantErr, _ := refused.decoded["error"].(map[string]any)
	if refused.status != http.StatusUnauthorized || !reflect.DeepEqual(gotErr, wantErr) || got["request_id"] == nil {
		t.Errorf("the stream's error event %s; want the 401 envelope the API answers the revoked key (%d %s)", ended.data, refused.status, refused.body)
	}
	if b, ok := nextBlock(t, blocks); ok {
		t.Errorf("after the error event the stream goes on: %+v", b)
	}
	call(t, rt, http.MethodPost, "/api/generations/"+created.str("uuid")+"/cancel", owner.APIKey, nil)
}

// An account may have 5 records' streams open at once, counted in the
// store: a sixth record's is a 429 too_many_streams with Retry-After,
// naming the limit, while another account streams freely. A stream
// resumed on a record already streamed (Last-Event-ID, the client's
// reconnection) takes that record's place rather than a new one, even at
// the limit; a stream whose client went away and streams that ended give
// their place back.
func TestAnAccountsOpenStreamsAreCapped(t *testing.T) {
	rt := start(t, runtime.Config{})
	owner := newAccount(t, rt, domain.PlanEnterprise, 1000)
	other := newAccount(t, rt, domain.PlanEnterprise, 1000)
	generate := func(key, prompt string) string {
		t.Helper()
		g := call(t, rt, http.MethodPost, "/api/generations/generate", key, imageBody(prompt))
		if g.status != http.StatusOK {
			t.Fatalf("generate: HTTP %d %s", g.status, g.body)
		}
		return "/api/generations/" + g.str("uuid") + "/events"
	}
	var paths []string
	for _, p := range []string{"a mole", "a weir", "a dyke", "a sluice", "a lock", "a slipway", "a breakwater"} {
		paths = append(paths, generate(owner.APIKey, p+" [simulate:hold]"))
	}
	streams := map[*http.Response]<-chan sse{}
	openOK := func(path, key, lastID string) (*http.Response, sse) {
		t.Helper()
		resp, blocks := eventStream(t, rt, path, key, lastID)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: HTTP %d, want the stream", path, resp.StatusCode)
		}
		streams[resp] = blocks
		if lastID != "" {
			return resp, sse{} // resumed: its next event may be a while
		}
		ev, ok := nextEvent(t, blocks)
		if !ok || ev.event != "processing" {
			t.Fatalf("the stream's first event %+v (open %v)", ev, ok)
		}
		return resp, ev
	}
	// refused asks for one more stream: its answer, the body read unless
	// it is a stream (then left at once).
	refused := func(path string) answer {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, rt.BaseURL+path, nil)
		req.Header.Set("Authorization", "Bearer "+owner.APIKey)
		req.Header.Set("Accept", "text/event-stream")
		resp, err := http.DefaultClient.Do(forContract(t, req, false))
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		a := answer{status: resp.StatusCode, header: resp.Header}
		if resp.StatusCode != http.StatusOK {
			a.body, _ = io.ReadAll(resp.Body)
			json.Unmarshal(a.body, &a.decoded)
		}
		return a
	}
	var gone *http.Response
	var firstEvent sse
	for i := 0; i < 5; i++ {
		var ev sse
		gone, ev = openOK(paths[i], owner.APIKey, "")
		if i == 0 {
			firstEvent = ev
		}
	}
	sixth := refused(paths[5])
	if code := checkEnvelope(t, sixth, http.StatusTooManyRequests); code != "too_many_streams" ||
		sixth.header.Get("Retry-After") == "" || !strings.Contains(sixth.str("error", "message"), "5") {
		t.Errorf("a sixth stream: HTTP %d %s (Retry-After %q); want 429 too_many_streams naming the limit of 5, with Retry-After",
			sixth.status, sixth.body, sixth.header.Get("Retry-After"))
	}
	openOK(generate(other.APIKey, "a groyne [simulate:hold]"), other.APIKey, "")

	// The first record's stream resumed (as after a dropped connection
	// the server was not told of): admitted at the limit, in its place.
	openOK(paths[0], owner.APIKey, strconv.FormatInt(firstEvent.id, 10))
	if r := refused(paths[5]); r.status != http.StatusTooManyRequests {
		t.Errorf("with 5 records streamed, one of them twice: HTTP %d %s; want 429, the resume counted once", r.status, r.body)
	}

	// A client that goes away gives its place back.
	gone.Body.Close()
	delete(streams, gone)
	waitfor.Condition(t, time.Minute, "a stream to open once one of the 5 closed", func() bool {
		resp, blocks := eventStream(t, rt, paths[5], owner.APIKey, "")
		if resp.StatusCode != http.StatusOK {
			return false
		}
		streams[resp] = blocks
		return true
	})
	if r := refused(paths[6]); r.status != http.StatusTooManyRequests {
		t.Errorf("with 5 records streamed again: HTTP %d %s; want 429", r.status, r.body)
	}

	// The streams of a record that ends (its generation canceled) end and
	// give its place back.
	if c := call(t, rt, http.MethodPost, strings.TrimSuffix(paths[0], "/events")+"/cancel", owner.APIKey, nil); c.status != http.StatusOK {
		t.Fatalf("cancel: HTTP %d %s", c.status, c.body)
	}
	ended := 0
	for resp, blocks := range streams {
		if resp.Request.URL.Path != paths[0] {
			continue
		}
		for {
			if _, ok := nextBlock(t, blocks); !ok {
				break
			}
		}
		ended++
	}
	waitfor.Condition(t, time.Minute, "a stream to open in the place of the record that ended", func() bool {
		resp, blocks := eventStream(t, rt, paths[6], owner.APIKey, "")
		if resp.StatusCode != http.StatusOK {
			return false
		}
		streams[resp] = blocks
		return true
	})
	if r := refused(generate(owner.APIKey, "a pontoon [simulate:hold]")); ended != 2 || r.status != http.StatusTooManyRequests {
		t.Errorf("after the canceled record's %d streams ended and another opened: HTTP %d %s; want 2 and then 429", ended, r.status, r.body)
	}
	for _, p := range paths[1:] {
		call(t, rt, http.MethodPost, strings.TrimSuffix(p, "/events")+"/cancel", owner.APIKey, nil)
	}
}

// A token that expires while its stream is open ends the stream at the
// next recheck after its expiry on the stream's clock (the service's
// verifier reads its own wall clock, on which the token is still good):
// a last event `error` with the 401 envelope, within 30 s of the expiry
// and its leeway, not at the stream's 10-minute end.
func TestAnOpenStreamEndsOnceItsTokenExpiresOnTheStreamsClock(t *testing.T) {
	is, err := jwttest.New()
	if err != nil {
		t.Fatal(err)
	}
	defer is.Close()
	clk := clocktest.New(time.Now().UTC().Truncate(time.Second))
	rt := start(t, runtime.Config{StreamClock: clk, JWTIssuer: is.Issuer, JWTAudience: is.Audience, JWKSURL: is.JWKSURL()})
	owner := newAccount(t, rt, domain.PlanEnterprise, 1000)
	created := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, imageBody("a slipway [simulate:hold]"))
	if created.status != http.StatusOK {
		t.Fatalf("generate: HTTP %d %s", created.status, created.body)
	}
	claims := is.Claims(owner.UserID)
	expiry := clk.Now().Add(time.Minute)
	claims.ExpiresAt = jwt.NewNumericDate(expiry)
	_, blocks := eventStream(t, rt, "/api/generations/"+created.str("uuid")+"/events", is.SignRS256(claims, "rsa-1"), "")
	if ev, ok := nextEvent(t, blocks); !ok || ev.event != "processing" {
		t.Fatalf("the stream's first event %+v (open %v); want processing", ev, ok)
	}
	var ended sse
	for ended.event != "error" {
		b, ok := nextEventTicking(t, clk, blocks)
		if !ok {
			t.Fatal("the stream ended without an error event")
		}
		ended = b
	}
	// The verifier's leeway (30 s) holds the token past its expiry, and a
	// recheck comes every 30 s.
	if at := clk.Now(); at.Before(expiry) || at.Sub(expiry) > time.Minute+time.Second {
		t.Errorf("the error event came at %v on the stream's clock, the token expiring at %v; want within a minute after", at, expiry)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(ended.data), &got); err != nil {
		t.Fatalf("the error event's data %q: %v", ended.data, err)
	}
	if e, _ := got["error"].(map[string]any); e["code"] != "unauthorized" {
		t.Errorf("the stream's error event %s; want the 401 envelope", ended.data)
	}
	if b, ok := nextBlock(t, blocks); ok {
		t.Errorf("after the error event the stream goes on: %+v", b)
	}
	call(t, rt, http.MethodPost, "/api/generations/"+created.str("uuid")+"/cancel", owner.APIKey, nil)
}
