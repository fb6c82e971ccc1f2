package runtime_test

import (
	"context"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/mediagen-dev/mediagen/internal/core/accounts"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/media"
	"github.com/mediagen-dev/mediagen/internal/local/runtime"
)

// movedClock is real time moved forward by what the test says: the
// runtime runs as usual, and a test jumps days ahead without waiting.
type movedClock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *movedClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *movedClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}

// fileStatus is the file origin's answer to a GET of url.
func fileStatus(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// stringsOf reads a JSON array of strings of an answer.
func stringsOf(a answer, field string) []string {
	list, _ := a.decoded[field].([]any)
	out := []string{}
	for _, v := range list {
		s, _ := v.(string)
		out = append(out, s)
	}
	return out
}

// keysUnder lists the runtime's bucket under prefix.
func keysUnder(t *testing.T, rt *runtime.Runtime, prefix string) []string {
	t.Helper()
	keys, err := rt.Objects.MediaBucket().Keys(context.Background(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// completedImage makes an image generation and waits for it: its status
// view, with one output URL the file origin serves.
func completedImage(t *testing.T, rt *runtime.Runtime, key, prompt string) answer {
	t.Helper()
	created := call(t, rt, http.MethodPost, "/api/generations/generate", key, imageBody(prompt))
	if created.status != http.StatusOK {
		t.Fatalf("generate: HTTP %d %s", created.status, created.body)
	}
	done, ok := waitFinal(t, rt, key, created.str("uuid"), time.Minute)
	if !ok || done.str("status") != "completed" || len(stringsOf(done, "output")) != 1 {
		t.Fatalf("generation: %s", done.body)
	}
	if got := fileStatus(t, stringsOf(done, "output")[0]); got != http.StatusOK {
		t.Fatalf("the output before any deletion: HTTP %d", got)
	}
	return done
}

// TestDeletedOutputsAreGoneAndTheRecordSaysSo: DELETE .../output deletes
// the files (the origin answers 404 for their URLs and the bucket holds
// nothing under the record's prefix), and from then on the status view,
// the list and a repeat of the delete say data_removed with no URL.
// Another account's id is a 404 and a malformed one a 400, changing
// nothing.
func TestDeletedOutputsAreGoneAndTheRecordSaysSo(t *testing.T) {
	rt := start(t, storyConfig())
	owner := newAccount(t, rt, domain.PlanEnterprise, 1000)
	stranger := newAccount(t, rt, domain.PlanEnterprise, 10)

	t.Run("generation", func(t *testing.T) {
		done := completedImage(t, rt, owner.APIKey, "a lighthouse at dawn")
		id, url := done.str("id"), stringsOf(done, "output")[0]
		if done.decoded["data_removed"] != false {
			t.Errorf("before: data_removed is %v, want false", done.decoded["data_removed"])
		}
		expires, err := time.Parse(time.RFC3339, done.str("output_expires_at"))
		if want := time.Now().AddDate(0, 0, domain.DefaultRetentionDays); err != nil || expires.Sub(want).Abs() > 2*time.Minute {
			t.Errorf("output_expires_at = %q (%v), want about %s", done.str("output_expires_at"), err, want.Format(time.RFC3339))
		}
		path := "/api/generations/" + id + "/output"
		for _, refused := range []struct {
			name, path, key string
			want            int
		}{
			{"another account's", path, stranger.APIKey, http.StatusNotFound},
			{"a malformed id", "/api/generations/not-an-id/output", owner.APIKey, http.StatusBadRequest},
		} {
			if a := call(t, rt, http.MethodDelete, refused.path, refused.key, nil); a.status != refused.want || a.str("error", "code") == "" {
				t.Errorf("%s: HTTP %d %s, want %d with the envelope", refused.name, a.status, a.body, refused.want)
			}
		}
		if got := fileStatus(t, url); got != http.StatusOK {
			t.Errorf("a refused delete changed the output: HTTP %d", got)
		}

		for i := range 2 { // the repeat answers the same
			a := call(t, rt, http.MethodDelete, path, owner.APIKey, nil)
			if a.status != http.StatusOK || a.decoded["data_removed"] != true || len(stringsOf(a, "output")) != 0 ||
				a.str("status") != "completed" || a.str("output_expires_at") != done.str("output_expires_at") {
				t.Errorf("delete #%d: HTTP %d %s", i+1, a.status, a.body)
			}
		}
		if got := fileStatus(t, url); got != http.StatusNotFound {
			t.Errorf("the deleted output's URL: HTTP %d, want 404", got)
		}
		if keys := keysUnder(t, rt, media.GenerationPrefix(id)); len(keys) != 0 {
			t.Errorf("left in the bucket: %v", keys)
		}
		if v := call(t, rt, http.MethodGet, "/api/generations/status/"+id, owner.APIKey, nil); v.decoded["data_removed"] != true || len(stringsOf(v, "output")) != 0 {
			t.Errorf("status after the delete: %s", v.body)
		}
		list := call(t, rt, http.MethodGet, "/api/generations?limit=100", owner.APIKey, nil)
		data, _ := list.decoded["data"].([]any)
		found := false
		for _, item := range data {
			m, _ := item.(map[string]any)
			if m["id"] == id {
				found = true
				if out, _ := m["output"].([]any); m["data_removed"] != true || len(out) != 0 {
					t.Errorf("the list shows %v", m)
				}
			}
		}
		if !found {
			t.Errorf("the list %s lacks %s", list.body, id)
		}
	})

	t.Run("long video", func(t *testing.T) {
		story := storyBody("a harbour", "en", true, "auto", []storyScene{{1, "boats at dawn"}})
		created := call(t, rt, http.MethodPost, "/api/long-story/videos", owner.APIKey, story)
		if created.status != http.StatusOK {
			t.Fatalf("create: HTTP %d %s", created.status, created.body)
		}
		id := created.str("id")
		done := waitStory(t, rt, owner.APIKey, id)
		url := done.str("final_video_url")
		if done.str("status") != "completed" || url == "" || done.str("output_expires_at") == "" || fileStatus(t, url) != http.StatusOK {
			t.Fatalf("video: %s", done.body)
		}
		stored := keysUnder(t, rt, media.LongVideoPrefix(id))
		if !slices.Contains(stored, media.FinalVideoKey(id)) || len(stored) < 3 {
			t.Fatalf("the video's files %v: want the final video, the clip and the narration", stored)
		}
		if a := call(t, rt, http.MethodDelete, "/api/long-story/videos/"+id+"/output", stranger.APIKey, nil); a.status != http.StatusNotFound {
			t.Errorf("another account's delete: HTTP %d %s", a.status, a.body)
		}
		for i := range 2 {
			a := call(t, rt, http.MethodDelete, "/api/long-story/videos/"+id+"/output", owner.APIKey, nil)
			if a.status != http.StatusOK || a.decoded["data_removed"] != true || a.str("final_video_url") != "" {
				t.Errorf("delete #%d: HTTP %d %s", i+1, a.status, a.body)
			}
		}
		if got := fileStatus(t, url); got != http.StatusNotFound {
			t.Errorf("the deleted video's URL: HTTP %d, want 404", got)
		}
		if keys := keysUnder(t, rt, media.LongVideoPrefix(id)); len(keys) != 0 {
			t.Errorf("left in the bucket: %v (the clips and narration go too)", keys)
		}
		if v := call(t, rt, http.MethodGet, "/api/long-story/videos/"+id, owner.APIKey, nil); v.decoded["data_removed"] != true || v.str("final_video_url") != "" {
			t.Errorf("status after the delete: %s", v.body)
		}
	})
}

// TestDeletingTheOutputOfWorkInProgressIsRefusedAndChangesNothing: a
// generation or video still processing answers 409 with the envelope, and
// its work goes on to complete with its outputs served.
func TestDeletingTheOutputOfWorkInProgressIsRefusedAndChangesNothing(t *testing.T) {
	rt := start(t, storyConfig())
	owner := newAccount(t, rt, domain.PlanEnterprise, 1000)

	created := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, imageBody("a slow sunrise [simulate:slow]"))
	if created.status != http.StatusOK {
		t.Fatalf("generate: HTTP %d %s", created.status, created.body)
	}
	id := created.str("uuid")
	refused := call(t, rt, http.MethodDelete, "/api/generations/"+id+"/output", owner.APIKey, nil)
	if refused.status != http.StatusConflict || refused.str("error", "code") != "conflict" || refused.str("request_id") == "" {
		t.Fatalf("delete while processing: HTTP %d %s, want 409 conflict", refused.status, refused.body)
	}
	g, err := rt.Store.GetGeneration(context.Background(), id)
	if err != nil || g.Files != (domain.StoredFiles{}) {
		t.Errorf("the refused delete changed the record: %+v, %v", g.Files, err)
	}
	done, ok := waitFinal(t, rt, owner.APIKey, id, time.Minute)
	if !ok || done.str("status") != "completed" || done.decoded["data_removed"] != false || len(stringsOf(done, "output")) != 1 ||
		fileStatus(t, stringsOf(done, "output")[0]) != http.StatusOK {
		t.Errorf("after the refused delete the generation ended %s", done.body)
	}

	story := storyBody("tides", "en", false, "auto", []storyScene{{1, "waves [simulate:slow]"}})
	video := call(t, rt, http.MethodPost, "/api/long-story/videos", owner.APIKey, story)
	if video.status != http.StatusOK {
		t.Fatalf("create: HTTP %d %s", video.status, video.body)
	}
	if a := call(t, rt, http.MethodDelete, "/api/long-story/videos/"+video.str("id")+"/output", owner.APIKey, nil); a.status != http.StatusConflict ||
		a.str("error", "code") != "conflict" {
		t.Errorf("delete of a processing video: HTTP %d %s, want 409 conflict", a.status, a.body)
	}
	if v := waitStory(t, rt, owner.APIKey, video.str("id")); v.str("status") != "completed" || v.decoded["data_removed"] != false ||
		fileStatus(t, v.str("final_video_url")) != http.StatusOK {
		t.Errorf("after the refused delete the video ended %s", v.body)
	}
}

// TestOutputsExpireAfterTheRetention moves the runtime's clock instead of
// waiting: within the retention the URL is listed and served; past
// output_expires_at the views say data_removed and list no URL (S3's
// lifecycle leaves the records alone, so the views derive it); and once the
// lifecycle's day has come, the files are gone too.
func TestOutputsExpireAfterTheRetention(t *testing.T) {
	clock := &movedClock{}
	cfg := runtimeConfig()
	cfg.Clock = clock.Now
	rt := start(t, cfg)
	owner := newAccount(t, rt, domain.PlanEnterprise, 1000)
	done := completedImage(t, rt, owner.APIKey, "a paper boat")
	id, url := done.str("id"), stringsOf(done, "output")[0]
	expires, err := time.Parse(time.RFC3339, done.str("output_expires_at"))
	if err != nil {
		t.Fatalf("output_expires_at %q: %v", done.str("output_expires_at"), err)
	}
	status := func() answer { return call(t, rt, http.MethodGet, "/api/generations/status/"+id, owner.APIKey, nil) }

	clock.Advance(expires.Sub(clock.Now()) - time.Hour) // an hour before
	if n, err := rt.ExpireOutputs(context.Background()); err != nil || n != 0 {
		t.Errorf("an hour before the expiry the lifecycle deleted %d (%v)", n, err)
	}
	if v := status(); v.decoded["data_removed"] != false || !slices.Equal(stringsOf(v, "output"), []string{url}) || fileStatus(t, url) != http.StatusOK {
		t.Errorf("an hour before the expiry: %s", v.body)
	}

	clock.Advance(2 * time.Hour) // past output_expires_at, before S3's midnight
	if v := status(); v.decoded["data_removed"] != true || len(stringsOf(v, "output")) != 0 {
		t.Errorf("past output_expires_at the view still serves: %s", v.body)
	}

	clock.Advance(24 * time.Hour) // the lifecycle's day has come
	if n, err := rt.ExpireOutputs(context.Background()); err != nil || n < 1 {
		t.Errorf("the lifecycle deleted %d objects (%v), want the output", n, err)
	}
	if got := fileStatus(t, url); got != http.StatusNotFound {
		t.Errorf("the expired output's URL: HTTP %d, want 404", got)
	}
	if keys := keysUnder(t, rt, media.GenerationPrefix(id)); len(keys) != 0 {
		t.Errorf("left in the bucket: %v", keys)
	}
	if v := status(); v.decoded["data_removed"] != true || len(stringsOf(v, "output")) != 0 || v.str("output_expires_at") != done.str("output_expires_at") {
		t.Errorf("after the expiry: %s", v.body)
	}
	// Deleting what expired is no error: the record then says removed for
	// good.
	if a := call(t, rt, http.MethodDelete, "/api/generations/"+id+"/output", owner.APIKey, nil); a.status != http.StatusOK || a.decoded["data_removed"] != true {
		t.Errorf("delete after the expiry: HTTP %d %s", a.status, a.body)
	}
}

// objectTags reads an object's tags through the store's S3 API.
func objectTags(t *testing.T, rt *runtime.Runtime, key string) map[string]string {
	t.Helper()
	out, err := rt.Objects.Client().GetObjectTagging(context.Background(),
		&s3.GetObjectTaggingInput{Bucket: aws.String(runtime.Bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("tags of %s: %v", key, err)
	}
	m := map[string]string{}
	for _, tag := range out.TagSet {
		m[aws.ToString(tag.Key)] = aws.ToString(tag.Value)
	}
	return m
}

// TestAnAccountsShorterRetentionExpiresItsOutputsSooner: an account set to
// keep its outputs a day sees it in GET /api/account and in
// output_expires_at; every object of its generation and of its long video
// (the final video, the clip, the narration) carries the retention tag;
// two days on, the lifecycle has deleted them while another account's
// output, kept the default 30 days, is still listed and served.
func TestAnAccountsShorterRetentionExpiresItsOutputsSooner(t *testing.T) {
	clock := &movedClock{}
	cfg := storyConfig()
	cfg.Clock = clock.Now
	rt := start(t, cfg)
	brief := newAccount(t, rt, domain.PlanEnterprise, 1000)
	if _, err := (&accounts.Service{Store: rt.Store}).SetRetention(context.Background(), brief.UserID, 1); err != nil {
		t.Fatal(err)
	}
	other := newAccount(t, rt, domain.PlanEnterprise, 1000)
	if a := call(t, rt, http.MethodGet, "/api/account", brief.APIKey, nil); a.status != http.StatusOK ||
		a.decoded["outputs"].(map[string]any)["retention_days"] != 1.0 {
		t.Errorf("GET /api/account: HTTP %d %s, want outputs.retention_days 1", a.status, a.body)
	}

	image := completedImage(t, rt, brief.APIKey, "a short-lived fox")
	kept := completedImage(t, rt, other.APIKey, "a long-lived owl")
	expires, err := time.Parse(time.RFC3339, image.str("output_expires_at"))
	if want := clock.Now().AddDate(0, 0, 1); err != nil || expires.Sub(want).Abs() > 2*time.Minute {
		t.Errorf("output_expires_at %q (%v), want about %s", image.str("output_expires_at"), err, want.Format(time.RFC3339))
	}
	video := call(t, rt, http.MethodPost, "/api/long-story/videos", brief.APIKey,
		storyBody("a pier", "en", true, "auto", []storyScene{{1, "boats at dusk"}}))
	if video.status != http.StatusOK {
		t.Fatalf("create: HTTP %d %s", video.status, video.body)
	}
	done := waitStory(t, rt, brief.APIKey, video.str("id"))
	if done.str("status") != "completed" || done.str("final_video_url") == "" {
		t.Fatalf("video: %s", done.body)
	}
	files := append(keysUnder(t, rt, media.GenerationPrefix(image.str("id"))), keysUnder(t, rt, media.LongVideoPrefix(video.str("id")))...)
	if len(files) < 4 {
		t.Fatalf("the account's files %v: want the image, the final video, the clip and the narration", files)
	}
	for _, k := range files {
		if got := objectTags(t, rt, k); got[domain.RetentionTag] != "1" {
			t.Errorf("%s is tagged %v, want %s=1", k, got, domain.RetentionTag)
		}
	}
	if got := objectTags(t, rt, keysUnder(t, rt, media.GenerationPrefix(kept.str("id")))[0]); len(got) != 0 {
		t.Errorf("the default account's output is tagged %v, want no tag", got)
	}

	clock.Advance(48 * time.Hour) // past the one-day rule's midnight
	if n, err := rt.ExpireOutputs(context.Background()); err != nil || n != len(files) {
		t.Errorf("the lifecycle deleted %d objects (%v), want the account's %d", n, err, len(files))
	}
	if v := call(t, rt, http.MethodGet, "/api/generations/status/"+image.str("id"), brief.APIKey, nil); v.decoded["data_removed"] != true ||
		len(stringsOf(v, "output")) != 0 || fileStatus(t, stringsOf(image, "output")[0]) != http.StatusNotFound {
		t.Errorf("the one-day image after two days: %s", v.body)
	}
	if v := call(t, rt, http.MethodGet, "/api/long-story/videos/"+video.str("id"), brief.APIKey, nil); v.decoded["data_removed"] != true ||
		v.str("final_video_url") != "" || fileStatus(t, done.str("final_video_url")) != http.StatusNotFound {
		t.Errorf("the one-day video after two days: %s", v.body)
	}
	if v := call(t, rt, http.MethodGet, "/api/generations/status/"+kept.str("id"), other.APIKey, nil); v.decoded["data_removed"] != false ||
		len(stringsOf(v, "output")) != 1 || fileStatus(t, stringsOf(v, "output")[0]) != http.StatusOK {
		t.Errorf("the default account's output after two days: %s", v.body)
	}
}
