package runtime_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/media"
	"github.com/mediagen-dev/mediagen/internal/core/routing"
	"github.com/mediagen-dev/mediagen/internal/local/runtime"
)

// upload makes a file (POST /api/files) of ctype and size (0: none
// declared), and answers it.
func upload(t *testing.T, rt *runtime.Runtime, key, ctype string, size int) answer {
	t.Helper()
	body := map[string]any{"content_type": ctype}
	if size > 0 {
		body["size"] = size
	}
	a := call(t, rt, http.MethodPost, "/api/files", key, body)
	if a.status != http.StatusCreated {
		t.Fatalf("POST /api/files: HTTP %d %s", a.status, a.body)
	}
	return a
}

// put sends data to a file's upload_url with plain net/http, as any HTTP
// client can, and answers the status and body.
func put(t *testing.T, uploadURL, ctype string, data []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, uploadURL, bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", ctype)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// putStream sends the body r of its given length to a file's upload_url,
// streamed, and answers the status and body.
func putStream(t *testing.T, uploadURL, ctype string, r *io.SectionReader) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, uploadURL, r)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = r.Size()
	req.Header.Set("Content-Type", ctype)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// oversized is a PNG of one byte over domain.MaxUploadBytes: img, then
// zeros, read as it is sent.
func oversized(img []byte) *io.SectionReader {
	return io.NewSectionReader(zeroPadded(img), 0, domain.MaxUploadBytes+1)
}

// zeroPadded reads as its bytes followed by zeros without end.
type zeroPadded []byte

func (z zeroPadded) ReadAt(p []byte, off int64) (int, error) {
	clear(p)
	if off < int64(len(z)) {
		copy(p, z[off:])
	}
	return len(p), nil
}

// uploaded is a file made and uploaded: its url for an image field.
func uploaded(t *testing.T, rt *runtime.Runtime, key, ctype string, data []byte) string {
	t.Helper()
	f := upload(t, rt, key, ctype, len(data))
	if status, answer := put(t, f.str("upload_url"), ctype, data); status != http.StatusOK {
		t.Fatalf("PUT to the upload_url: HTTP %d %s", status, answer)
	}
	return f.str("url")
}

// imageFields are the image fields of every variant, each with a value
// naming ref: a string, or a list of it.
func imageFields() []struct {
	variant catalog.Variant
	field   string
	value   func(ref string) any
} {
	var out []struct {
		variant catalog.Variant
		field   string
		value   func(ref string) any
	}
	for _, v := range catalog.All() {
		for _, f := range v.Fields {
			switch f.Type {
			case catalog.TypeImage:
				out = append(out, struct {
					variant catalog.Variant
					field   string
					value   func(ref string) any
				}{v, f.Name, func(ref string) any { return ref }})
			case catalog.TypeImageList:
				out = append(out, struct {
					variant catalog.Variant
					field   string
					value   func(ref string) any
				}{v, f.Name, func(ref string) any { return []any{ref} }})
			}
		}
	}
	return out
}

// TestAnUploadedFileFeedsEveryImageFieldThroughAPresignedURL: a file made
// with POST /api/files (201: file_id, upload_url, url, expires_at a day on)
// and PUT to its upload_url with plain net/http goes, by its url, in every
// image field of every variant: the answer echoes the file URL, and the
// provider is handed instead a presigned GET URL of the service's bucket
// that reads the very bytes uploaded, carries no secret and expires within
// the hour. An image generation from it completes and is charged its
// price.
func TestAnUploadedFileFeedsEveryImageFieldThroughAPresignedURL(t *testing.T) {
	ctx := context.Background()
	rt := start(t, runtimeConfig())
	owner := newAccount(t, rt, domain.PlanEnterprise, 10000)
	img := noisePNG(t, 64)

	before := time.Now()
	f := upload(t, rt, owner.APIKey, "image/png", len(img))
	id := f.str("file_id")
	if f.str("url") != "mediagen://files/"+id {
		t.Errorf("url = %q, want mediagen://files/%s", f.str("url"), id)
	}
	if exp, err := time.Parse(time.RFC3339, f.str("expires_at")); err != nil || exp.Before(before.Add(24*time.Hour-time.Minute)) || exp.After(before.Add(24*time.Hour+time.Minute)) {
		t.Errorf("expires_at = %q, want a day from now", f.str("expires_at"))
	}
	up, err := url.Parse(f.str("upload_url"))
	if err != nil || up.Query().Get("X-Amz-Signature") == "" || up.Query().Get("X-Amz-Expires") != "900" {
		t.Fatalf("upload_url %q is not a presigned URL valid 15 minutes", f.str("upload_url"))
	}
	if status, answer := put(t, f.str("upload_url"), "image/png", img); status != http.StatusOK {
		t.Fatalf("PUT: HTTP %d %s", status, answer)
	}
	fileURL := f.str("url")

	for _, c := range imageFields() {
		t.Run(c.variant.Version+"."+c.field, func(t *testing.T) {
			input := map[string]any{c.field: c.value(fileURL)}
			for _, other := range c.variant.Fields {
				if other.Name == "prompt" {
					input["prompt"] = "the harbour again [simulate:hold]"
				}
				if other.Required && other.Name != c.field && other.Name != "prompt" {
					if other.Type != catalog.TypeEnum {
						t.Fatalf("%s also requires %s, which the test cannot fill", c.variant.Version, other.Name)
					}
					input[other.Name] = other.Enum[0]
				}
			}
			body := map[string]any{"model": c.variant.Model, "model_version": c.variant.Version, "input": input}
			a := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, body)
			if a.status != http.StatusOK {
				t.Fatalf("generate: HTTP %d %s", a.status, a.body)
			}
			if !strings.Contains(string(a.body), fileURL) {
				t.Errorf("input_parameters do not echo the file URL: %.300s", a.body)
			}
			rec, err := rt.Store.GetGeneration(ctx, a.str("uuid"))
			if err != nil {
				t.Fatal(err)
			}
			p, ok := rt.Simulator.Lookup(rec.UpstreamID)
			if !ok {
				t.Fatalf("the simulator has no job %s", rec.UpstreamID)
			}
			given := presignedIn(t, string(p.Input), media.SnapshotKey(a.str("uuid"), id))
			if strings.Contains(string(p.Input), "mediagen://") {
				t.Errorf("the provider got the file URL itself: %s", p.Input)
			}
			checkInputURL(t, given, img)
			call(t, rt, http.MethodPost, "/api/generations/"+a.str("uuid")+"/cancel", owner.APIKey, nil)
		})
	}

	t.Run("an image made from it completes", func(t *testing.T) {
		body := gen("zeta", map[string]any{"prompt": "the harbour at dawn", "image_input": []any{fileURL}})
		a := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, body)
		if a.status != http.StatusOK {
			t.Fatalf("generate: HTTP %d %s", a.status, a.body)
		}
		st, ok := waitFinal(t, rt, owner.APIKey, a.str("uuid"), 2*time.Minute)
		if !ok || st.str("status") != "completed" {
			t.Fatalf("generation: %s", st.body)
		}
	})
}

// presignedIn finds the URL of key in a provider's input.
func presignedIn(t *testing.T, input, key string) string {
	t.Helper()
	for _, part := range strings.Split(input, `"`) {
		if strings.HasPrefix(part, "http") && strings.Contains(part, key) {
			return strings.ReplaceAll(part, `\u0026`, "&")
		}
	}
	t.Fatalf("the provider's input has no URL of %s: %s", key, input)
	return ""
}

// checkInputURL: the URL a provider is given reads want with a plain GET,
// is presigned for at most the hour and carries no secret key.
func checkInputURL(t *testing.T, given string, want []byte) {
	t.Helper()
	u, err := url.Parse(given)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	if secs, _ := strconv.Atoi(q.Get("X-Amz-Expires")); q.Get("X-Amz-Signature") == "" || secs <= 0 || secs > 3600 {
		t.Errorf("the provider's URL is not presigned for at most an hour: %s", given)
	}
	if strings.Contains(given, "Secret") || strings.Contains(given, "secret") {
		t.Errorf("the provider's URL names a secret: %s", given)
	}
	resp, err := http.Get(given)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Equal(got, want) {
		t.Errorf("GET of the provider's URL: HTTP %d, %d bytes; want 200 and the %d bytes uploaded", resp.StatusCode, len(got), len(want))
	}
}

// TestFilesAreRefusedBeforeAnyCreditMoves: the files route refuses a
// type other than an image's and a declared size over 100 MiB (400
// naming the field); the bucket refuses a PUT longer or shorter than
// declared, with another content type, or after the upload URL's 15
// minutes (403 and S3's XML error). A file made without a size (optional,
// issue #27) takes a PUT of its length and feeds a generation. A generate
// naming a file whose bytes are not the image type it declared, another
// account's file, a file never uploaded, a file uploaded without a size
// and found over 100 MiB at its use, or a file past its day is a 400
// naming the field, and nothing is held, charged, copied or recorded.
func TestFilesAreRefusedBeforeAnyCreditMoves(t *testing.T) {
	clock := &movedClock{}
	cfg := runtimeConfig()
	cfg.Clock = clock.Now
	rt := start(t, cfg)
	owner := newAccount(t, rt, domain.PlanEnterprise, 1000)
	other := newAccount(t, rt, domain.PlanEnterprise, 1000)
	img := noisePNG(t, 16)

	for _, tt := range []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"a type that is no image", map[string]any{"content_type": "text/html", "size": 10}, "content_type"},
		{"a size over 100 MiB", map[string]any{"content_type": "image/png", "size": domain.MaxUploadBytes + 1}, "size"},
		{"an unknown field", map[string]any{"content_type": "image/png", "size": 10, "name": "cat.png"}, "name"},
	} {
		t.Run("POST /api/files with "+tt.name, func(t *testing.T) {
			a := call(t, rt, http.MethodPost, "/api/files", owner.APIKey, malformed(tt.body))
			checkEnvelope(t, a, http.StatusBadRequest)
			if !strings.Contains(string(a.body), `"field":"`+tt.field+`"`) {
				t.Errorf("the 400 does not name %s: %s", tt.field, a.body)
			}
		})
	}

	f := upload(t, rt, owner.APIKey, "image/png", len(img))
	for _, tt := range []struct {
		name, ctype string
		data        []byte
		code        string
	}{
		{"longer than declared", "image/png", append(append([]byte{}, img...), 0), "SignatureDoesNotMatch"},
		{"shorter than declared", "image/png", img[:len(img)-1], "SignatureDoesNotMatch"},
		{"of another content type", "image/jpeg", img, "SignatureDoesNotMatch"},
	} {
		t.Run("a PUT "+tt.name, func(t *testing.T) {
			status, answer := put(t, f.str("upload_url"), tt.ctype, tt.data)
			if status != http.StatusForbidden || !strings.Contains(answer, "<Code>"+tt.code+"</Code>") {
				t.Errorf("HTTP %d %s, want 403 %s", status, answer, tt.code)
			}
		})
	}

	notPNG := []byte("<html><body>not a picture</body></html>")
	fake := uploaded(t, rt, owner.APIKey, "image/png", notPNG)
	theirs := uploaded(t, rt, other.APIKey, "image/png", img)
	never := upload(t, rt, owner.APIKey, "image/png", len(img)).str("url")
	late := upload(t, rt, owner.APIKey, "image/png", len(img))
	old := uploaded(t, rt, owner.APIKey, "image/png", img)

	// No size declared: the URL signs no length, so the bucket takes the
	// upload as it comes, and the file feeds a generation.
	unsized := upload(t, rt, owner.APIKey, "image/png", 0)
	if _, declared := unsized.decoded["size"]; declared || unsized.str("upload_headers", "Content-Length") != "" {
		t.Errorf("a file made without a size answers size or a Content-Length to send: %s", unsized.body)
	}
	if status, answer := put(t, unsized.str("upload_url"), "image/png", img); status != http.StatusOK {
		t.Fatalf("PUT to the upload_url of a file made without a size: HTTP %d %s", status, answer)
	}
	body := gen("zeta", map[string]any{"prompt": "a lighthouse", "image_input": []any{unsized.str("url")}})
	if a := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, body); a.status != http.StatusOK {
		t.Errorf("generate with a file made without a size: HTTP %d %s, want 200", a.status, a.body)
	} else if done, ok := waitFinal(t, rt, owner.APIKey, a.str("uuid"), time.Minute); !ok || done.str("status") != "completed" {
		t.Errorf("the generation with a file made without a size ended %s, want completed", done.body)
	}
	// Without a size nothing bounds the upload until the file is used:
	// one byte over the limit is refused there.
	big := upload(t, rt, owner.APIKey, "image/png", 0)
	if status, answer := putStream(t, big.str("upload_url"), "image/png", oversized(img)); status != http.StatusOK {
		t.Fatalf("PUT of %d bytes without a declared size: HTTP %d %s", domain.MaxUploadBytes+1, status, answer)
	}

	clock.Advance(15*time.Minute + time.Second)
	t.Run("a PUT after the upload URL expired", func(t *testing.T) {
		status, answer := put(t, late.str("upload_url"), "image/png", img)
		if status != http.StatusForbidden || !strings.Contains(answer, "<Code>AccessDenied</Code>") || !strings.Contains(answer, "Request has expired") {
			t.Errorf("HTTP %d %s, want 403 AccessDenied Request has expired", status, answer)
		}
	})

	paid := account(t, rt, owner.UserID)
	listed := func() int {
		l := call(t, rt, http.MethodGet, "/api/generations?limit=100", owner.APIKey, nil)
		items, _ := l.decoded["data"].([]any)
		return len(items)
	}
	made := listed()
	refused := func(t *testing.T, ref, want string) {
		t.Helper()
		body := gen("zeta", map[string]any{"prompt": "a lighthouse", "image_input": []any{"https://cdn.example.com/a.png", ref}})
		a := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, body)
		checkEnvelope(t, a, http.StatusBadRequest)
		if !strings.Contains(string(a.body), `"field":"input.image_input[1]"`) || !strings.Contains(string(a.body), want) {
			t.Errorf("the 400 does not name input.image_input[1] with %q: %s", want, a.body)
		}
		after := account(t, rt, owner.UserID)
		if !after.Balance.Equal(paid.Balance) || !after.Held.Equal(paid.Held) {
			t.Errorf("balance %s→%s held %s→%s: credits moved", paid.Balance, after.Balance, paid.Held, after.Held)
		}
		if n := listed(); n != made {
			t.Errorf("%d generations listed, want %d: a record was made", n, made)
		}
	}
	t.Run("bytes that are not the declared type", func(t *testing.T) { refused(t, fake, "its bytes are not a PNG, JPEG, WebP or GIF image") })
	t.Run("another account's file", func(t *testing.T) { refused(t, theirs, "is unknown") })
	t.Run("a file never uploaded", func(t *testing.T) { refused(t, never, "is unknown") })
	t.Run("a file whose upload URL expired unused", func(t *testing.T) { refused(t, late.str("url"), "is unknown") })
	t.Run("a file uploaded without a size, over 100 MiB", func(t *testing.T) {
		inputs := keysUnder(t, rt, media.InputsPrefix)
		refused(t, big.str("url"), "over the 104857600-byte (100 MiB) limit")
		if now := keysUnder(t, rt, media.InputsPrefix); len(now) != len(inputs) {
			t.Errorf("the bucket's inputs/ went from %v to %v: the oversized file was copied", inputs, now)
		}
	})

	clock.Advance(24 * time.Hour)
	t.Run("a file past its day", func(t *testing.T) { refused(t, old, "expired") })
	if _, err := rt.ExpireOutputs(context.Background()); err != nil {
		t.Fatal(err)
	}
	clock.Advance(24 * time.Hour)
	if _, err := rt.ExpireOutputs(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, prefix := range []string{media.UploadsPrefix, media.InputsPrefix} {
		if keys := keysUnder(t, rt, prefix); len(keys) != 0 {
			t.Errorf("after the lifecycle's day the bucket still holds %v", keys)
		}
	}
}

// TestTheProviderReadsTheFileAsCheckedNotAsPutAfter: a file's upload_url
// still takes a PUT for its 15 minutes after a generate checked the file;
// bytes PUT then (of the declared length, any type) never reach the
// provider, whose URL reads the PNG the generate checked (a copy the
// service made for the generation, under inputs/, which no upload URL
// writes).
func TestTheProviderReadsTheFileAsCheckedNotAsPutAfter(t *testing.T) {
	ctx := context.Background()
	rt := start(t, runtimeConfig())
	owner := newAccount(t, rt, domain.PlanEnterprise, 1000)
	img := noisePNG(t, 32)
	f := upload(t, rt, owner.APIKey, "image/png", len(img))
	if status, answer := put(t, f.str("upload_url"), "image/png", img); status != http.StatusOK {
		t.Fatalf("PUT: HTTP %d %s", status, answer)
	}
	body := gen("zeta", map[string]any{"prompt": "the harbour [simulate:hold]", "image_input": []any{f.str("url")}})
	a := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, body)
	if a.status != http.StatusOK {
		t.Fatalf("generate: HTTP %d %s", a.status, a.body)
	}
	swapped := bytes.Repeat([]byte("<html>not the picture checked</html>"), len(img)/36+1)[:len(img)]
	if status, answer := put(t, f.str("upload_url"), "image/png", swapped); status != http.StatusOK {
		t.Fatalf("the second PUT to the upload_url: HTTP %d %s (the URL takes PUTs for 15 minutes)", status, answer)
	}
	rec, err := rt.Store.GetGeneration(ctx, a.str("uuid"))
	if err != nil {
		t.Fatal(err)
	}
	p, ok := rt.Simulator.Lookup(rec.UpstreamID)
	if !ok {
		t.Fatalf("the simulator has no job %s", rec.UpstreamID)
	}
	checkInputURL(t, presignedIn(t, string(p.Input), f.str("file_id")), img)
	call(t, rt, http.MethodPost, "/api/generations/"+a.str("uuid")+"/cancel", owner.APIKey, nil)
}

// TestAFileOfAGenerationThatWaitedForASlotReachesTheProvider: with the
// provider at its cap, a generation naming an uploaded file waits in line,
// and meanwhile other bytes are PUT to the file's upload_url; when the
// slot frees, the poller submits it and hands the provider a presigned
// GET (made then) of the copy checked at the create, the PNG, and it
// completes.
func TestAFileOfAGenerationThatWaitedForASlotReachesTheProvider(t *testing.T) {
	rc := routing.Default()
	rc.Upstreams["simulator"].MaxConcurrent = 1
	rt := start(t, runtime.Config{Routing: rc})
	owner := newAccount(t, rt, domain.PlanEnterprise, 1000)
	img := noisePNG(t, 24)
	f := upload(t, rt, owner.APIKey, "image/png", len(img))
	if status, answer := put(t, f.str("upload_url"), "image/png", img); status != http.StatusOK {
		t.Fatalf("PUT: HTTP %d %s", status, answer)
	}
	fileURL := f.str("url")

	holder := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, imageBody("the slot's holder [simulate:hold]"))
	if holder.status != http.StatusOK {
		t.Fatalf("generate: HTTP %d %s", holder.status, holder.body)
	}
	body := gen("zeta", map[string]any{"prompt": "the harbour, later", "image_input": []any{fileURL}})
	a := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, body)
	if a.status != http.StatusOK {
		t.Fatalf("generate: HTTP %d %s", a.status, a.body)
	}
	if v := call(t, rt, http.MethodGet, "/api/generations/status/"+a.str("uuid"), owner.APIKey, nil); v.decoded["queue_position"] == nil {
		t.Fatalf("the generation does not wait for the slot: %s", v.body)
	}
	if status, answer := put(t, f.str("upload_url"), "image/png", make([]byte, len(img))); status != http.StatusOK {
		t.Fatalf("the second PUT to the upload_url: HTTP %d %s", status, answer)
	}
	if c := call(t, rt, http.MethodPost, "/api/generations/"+holder.str("uuid")+"/cancel", owner.APIKey, nil); c.status != http.StatusOK {
		t.Fatalf("cancel: HTTP %d %s", c.status, c.body)
	}
	final, ok := waitFinal(t, rt, owner.APIKey, a.str("uuid"), 2*time.Minute)
	if !ok || final.str("status") != "completed" {
		t.Fatalf("the waiting generation ended %s", final.body)
	}
	rec, err := rt.Store.GetGeneration(context.Background(), a.str("uuid"))
	if err != nil {
		t.Fatal(err)
	}
	p, found := rt.Simulator.Lookup(rec.UpstreamID)
	if !found {
		t.Fatalf("the simulator has no job %s", rec.UpstreamID)
	}
	id, _ := domain.ParseFileURL(fileURL)
	checkInputURL(t, presignedIn(t, string(p.Input), media.SnapshotKey(a.str("uuid"), id)), img)
}

// TestAShortAccountsCreateCopiesNoFile: a create naming an uploaded file
// by an account whose balance does not cover its quote is a 402
// (insufficient_credits) before the file is copied for the work: nothing
// appears under inputs/, so a refused create never has the service copy
// a file of up to 100 MiB for nothing. Both kinds of work: an image
// field of a generation and a long video's music_url.
func TestAShortAccountsCreateCopiesNoFile(t *testing.T) {
	rt := start(t, storyConfig())
	poor := newAccount(t, rt, domain.PlanEnterprise, 1)
	image := uploaded(t, rt, poor.APIKey, "image/png", noisePNG(t, 16))
	song := uploaded(t, rt, poor.APIKey, "audio/mpeg", bytes.Repeat([]byte{0xff, 0xfb, 0x90, 0x00}, 256))
	for _, tt := range []struct {
		name, path string
		body       map[string]any
	}{
		{"a generation naming an image file", "/api/generations/generate",
			gen("zeta", map[string]any{"prompt": "a lighthouse", "image_input": []any{image}})},
		{"a long video naming a music file", "/api/long-story/videos",
			map[string]any{"prompt": "A day at the seaside", "language_code": "en", "model": "beta-2",
				"scenes":    []any{map[string]any{"scene_number": 1, "prompt": "waves", "narration": "The sea comes in."}},
				"music_url": song}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := call(t, rt, http.MethodPost, tt.path, poor.APIKey, tt.body)
			if code := checkEnvelope(t, a, http.StatusPaymentRequired); code != "insufficient_credits" {
				t.Errorf("error code %q, want insufficient_credits", code)
			}
			if keys := keysUnder(t, rt, media.InputsPrefix); len(keys) != 0 {
				t.Errorf("the bucket holds %v under inputs/: the file was copied for a create the balance does not cover", keys)
			}
		})
	}
	if after := account(t, rt, poor.UserID); !after.Held.IsZero() || after.Balance.IntPart() != 1 {
		t.Errorf("balance %s held %s, want 1 and nothing held", after.Balance, after.Held)
	}
}

// TestWorkWithNoCopyOfItsFileReadsTheUpload: work recorded before the
// release that copies files for it (simulated: its copy under inputs/
// deleted) still completes. With the provider at its cap, a generation
// naming an uploaded image waits for the slot, and a long video naming
// uploaded music waits with its scene; their copies are deleted; when the
// slot frees, the generation's provider is handed a presigned GET of the
// upload itself, the very PNG, and the long video is assembled with its
// music read from the upload, the song heard in the result.
func TestWorkWithNoCopyOfItsFileReadsTheUpload(t *testing.T) {
	ctx := context.Background()
	rc := routing.Default()
	rc.Upstreams["simulator"].MaxConcurrent = 1
	cfg := storyConfig()
	cfg.Routing = rc
	rt := start(t, cfg)
	owner := newAccount(t, rt, domain.PlanEnterprise, 10000)
	img := noisePNG(t, 24)
	imageURL := uploaded(t, rt, owner.APIKey, "image/png", img)
	songURL := uploaded(t, rt, owner.APIKey, "audio/mpeg", sineMP3(t, 60))

	holder := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, imageBody("the slot's holder [simulate:hold]"))
	if holder.status != http.StatusOK {
		t.Fatalf("generate: HTTP %d %s", holder.status, holder.body)
	}
	g := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey,
		gen("zeta", map[string]any{"prompt": "the harbour, later", "image_input": []any{imageURL}}))
	if g.status != http.StatusOK {
		t.Fatalf("generate: HTTP %d %s", g.status, g.body)
	}
	v := call(t, rt, http.MethodPost, "/api/long-story/videos", owner.APIKey, map[string]any{
		"prompt": "A day at the seaside", "language_code": "en", "model": "beta-2",
		"scenes":    []any{map[string]any{"scene_number": 1, "prompt": "waves", "narration": "The sea comes in."}},
		"music_url": songURL, "music_volume": 0.5})
	if v.status != http.StatusOK {
		t.Fatalf("create: HTTP %d %s", v.status, v.body)
	}
	if s := call(t, rt, http.MethodGet, "/api/generations/status/"+g.str("uuid"), owner.APIKey, nil); s.decoded["queue_position"] == nil {
		t.Fatalf("the generation does not wait for the slot: %s", s.body)
	}
	copies := keysUnder(t, rt, media.InputsPrefix)
	var deleted []string
	for _, k := range copies {
		if strings.Contains(k, "/files/") {
			deleted = append(deleted, k)
		}
	}
	if len(deleted) != 2 {
		t.Fatalf("the copies under inputs/ are %v, want the generation's and the video's", copies)
	}
	if err := rt.Objects.MediaBucket().Delete(ctx, deleted); err != nil {
		t.Fatal(err)
	}
	if c := call(t, rt, http.MethodPost, "/api/generations/"+holder.str("uuid")+"/cancel", owner.APIKey, nil); c.status != http.StatusOK {
		t.Fatalf("cancel: HTTP %d %s", c.status, c.body)
	}

	final, ok := waitFinal(t, rt, owner.APIKey, g.str("uuid"), 2*time.Minute)
	if !ok || final.str("status") != "completed" {
		t.Fatalf("the generation whose copy is gone ended %s", final.body)
	}
	rec, err := rt.Store.GetGeneration(ctx, g.str("uuid"))
	if err != nil {
		t.Fatal(err)
	}
	p, found := rt.Simulator.Lookup(rec.UpstreamID)
	if !found {
		t.Fatalf("the simulator has no job %s", rec.UpstreamID)
	}
	id, _ := domain.ParseFileURL(imageURL)
	checkInputURL(t, presignedIn(t, string(p.Input), media.UploadKey(owner.UserID, id)), img)

	story := waitStory(t, rt, owner.APIKey, v.str("video_id"))
	if story.str("status") != "completed" {
		t.Fatalf("the video whose music copy is gone ended %s", story.body)
	}
	path, ok := download(t, story.str("final_video_url"), t.TempDir(), "studio.mp4")
	if !ok {
		t.FailNow()
	}
	music := filteredLevels(t, path, "bandpass=f=60:width_type=q:w=8,bandpass=f=60:width_type=q:w=8")
	if level := meanLevel(music, 3.5, 4.0); level < -40 {
		t.Errorf("music %.1f dB after the narration, want the uploaded song heard", level)
	}
}
