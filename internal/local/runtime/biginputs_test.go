package runtime_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/api/httpapi"
	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/media"
	"github.com/mediagen-dev/mediagen/internal/local/apigw"
	"github.com/mediagen-dev/mediagen/internal/local/runtime"
	"github.com/mediagen-dev/mediagen/internal/testkit/runtimetest"
)

// noisePNG is a real PNG of random pixels, which compress to nothing:
// about 4 bytes a pixel, side×side pixels.
func noisePNG(t *testing.T, side int) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, side, side))
	r := rand.New(rand.NewPCG(uint64(side), 1))
	for i := range img.Pix {
		img.Pix[i] = byte(r.UintN(256))
	}
	var buf bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.NoCompression}).Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func dataURI(b []byte) string { return "data:image/png;base64," + base64.StdEncoding.EncodeToString(b) }

// TestImageInputsUpToTheLimitWorkEndToEndOnDynamoDB: on DynamoDB, whose
// items hold 400 KB, a 1 MB and a 4 MB PNG sent as data URIs to an
// image-to-image variant complete and are charged once: the record keeps
// the input elided and names the bucket object holding it whole. Past the
// limits, and with nothing charged or recorded: an image over the data
// URI limit gets a 400 naming its field, a body over the body limit the
// service's 413 body_too_large, and a 7 MB body the gateway's own 413.
func TestImageInputsUpToTheLimitWorkEndToEndOnDynamoDB(t *testing.T) {
	ctx := context.Background()
	rt := start(t, runtime.Config{DynamoDB: runtimetest.DynamoDB(t)})
	owner := newAccount(t, rt, domain.PlanEnterprise, 1000)
	before := account(t, rt, owner.UserID)

	charged := before.Balance
	for _, side := range []int{512, 1000} { // 1.05 MB and 4.0 MB
		img := noisePNG(t, side)
		if len(img) > catalog.DefaultMaxDataURIBytes {
			t.Fatalf("the %d px image is %d bytes, over the limit", side, len(img))
		}
		t.Run(fmt.Sprintf("a %.1f MB PNG", float64(len(img))/1e6), func(t *testing.T) {
			body := gen("eta-context-max", map[string]any{"prompt": "the same harbour at night", "input_image": dataURI(img)})
			body["model"] = "provider-f"
			a := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, body)
			if a.status != http.StatusOK {
				t.Fatalf("generate: HTTP %d %.300s", a.status, a.body)
			}
			echoed, _ := a.decoded["input_parameters"].(map[string]any)
			if got, _ := echoed["input_image"].(string); got != dataURI(img) {
				t.Errorf("input_parameters.input_image is %d characters, want the %d sent", len(got), len(dataURI(img)))
			}
			id := a.str("uuid")
			rec, err := rt.Store.GetGeneration(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if rec.InputObject != media.InputKey(id) || len(rec.Input) > 1024 {
				t.Errorf("the record keeps input object %q and %d bytes of input, want %s and the elided input", rec.InputObject, len(rec.Input), media.InputKey(id))
			}
			kept, err := rt.Objects.MediaBucket().Get(ctx, rec.InputObject, 8<<20)
			if err != nil || !bytes.Contains(kept, []byte(dataURI(img))) {
				t.Errorf("the bucket's input (%d bytes, %v) does not hold the image", len(kept), err)
			}
			st, ok := waitFinal(t, rt, owner.APIKey, id, 2*time.Minute)
			if !ok || st.str("status") != "completed" {
				t.Fatalf("generation %s: %s", id, st.body)
			}
			price, err := decimal.NewFromString(a.str("credits_used"))
			if err != nil {
				t.Fatal(err)
			}
			charged = charged.Sub(price)
			after := settledAccount(t, rt, owner.UserID)
			if !after.Balance.Equal(charged) || !after.Held.IsZero() {
				t.Errorf("balance %s held %s, want %s and nothing held: charged once", after.Balance, after.Held, charged)
			}
		})
	}

	// Past the limits nothing moves.
	paid := account(t, rt, owner.UserID)
	listed := func() int {
		l := call(t, rt, http.MethodGet, "/api/generations?limit=100", owner.APIKey, nil)
		items, _ := l.decoded["data"].([]any)
		return len(items)
	}
	made := listed()
	overImage := make([]byte, catalog.DefaultMaxDataURIBytes+1)
	copy(overImage, noisePNG(t, 8))
	// Two images of about 2.35 MB: each within the image limit, together
	// a body just over the body limit and still within Lambda's payload.
	twoImages := func() map[string]any {
		half := make([]byte, (httpapi.MaxBodyBytes/2+500)/4*3)
		copy(half, noisePNG(t, 8))
		body := gen("zeta", map[string]any{"prompt": "a lighthouse", "image_input": []any{dataURI(half), dataURI(half)}})
		raw, _ := json.Marshal(body)
		if n := httpapi.BodyEventSize(string(raw), false); n <= httpapi.MaxBodyBytes || n > httpapi.LambdaPayloadLimit-16<<10 {
			t.Fatalf("the two-image body takes %d bytes in the event; want it over %d and well within %d", n, httpapi.MaxBodyBytes, httpapi.LambdaPayloadLimit)
		}
		return body
	}()
	tests := []struct {
		name   string
		body   any
		status int
		code   string // "" for the gateway's own answer
	}{
		{"an image one byte over the data URI limit", malformed(gen("gamma-v2.1", map[string]any{"prompt": "a", "start_image": dataURI(overImage)})), http.StatusBadRequest, "invalid_request"},
		{"a body just over the body limit", malformed(twoImages), http.StatusRequestEntityTooLarge, "body_too_large"},
		{"a 7 MB body", malformed(gen("zeta", map[string]any{"prompt": "a lighthouse", "image_input": []any{dataURI(make([]byte, 5_300_000))}})), http.StatusRequestEntityTooLarge, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, tt.body)
			if len(a.body) > 4096 {
				t.Fatalf("HTTP %d with a %d-byte answer %.200s; want a small refusal", a.status, len(a.body), a.body)
			}
			if tt.code == "" {
				if a.status != tt.status || a.str("message") != "Request Too Long" {
					t.Errorf("HTTP %d %.200s, want the gateway's 413 Request Too Long", a.status, a.body)
				}
			} else if code := checkEnvelope(t, a, tt.status); code != tt.code {
				t.Errorf("code %q, want %q: %.300s", code, tt.code, a.body)
			}
			if tt.code == "invalid_request" && !strings.Contains(string(a.body), "input.start_image") {
				t.Errorf("the 400 does not name input.start_image: %.300s", a.body)
			}
			after := account(t, rt, owner.UserID)
			if !after.Balance.Equal(paid.Balance) || !after.Held.Equal(paid.Held) {
				t.Errorf("balance %s→%s held %s→%s: credits moved", paid.Balance, after.Balance, paid.Held, after.Held)
			}
			if n := listed(); n != made {
				t.Errorf("%d generations listed, want %d: a record was made", n, made)
			}
		})
	}
	if n := apigw.LambdaPayloadLimit; httpapi.LambdaPayloadLimit != n {
		t.Errorf("the service's payload limit %d is not the gateway's %d", httpapi.LambdaPayloadLimit, n)
	}
}

// TestInputsKeptInTheBucketAreNeverServedAndExpireAfterADay: the origin
// answers 404 for an input kept in the bucket, and the local sweep's
// lifecycle deletes it once its day (rounded up to midnight UTC) has come,
// as the bucket's expire-inputs rule does.
func TestInputsKeptInTheBucketAreNeverServedAndExpireAfterADay(t *testing.T) {
	clock := &movedClock{}
	cfg := runtimeConfig()
	cfg.Clock = clock.Now
	rt := start(t, cfg)
	owner := newAccount(t, rt, domain.PlanEnterprise, 1000)
	body := gen("eta-context-max", map[string]any{"prompt": "a harbour", "input_image": dataURI(noisePNG(t, 160))})
	body["model"] = "provider-f"
	a := call(t, rt, http.MethodPost, "/api/generations/generate", owner.APIKey, body)
	if a.status != http.StatusOK {
		t.Fatalf("generate: HTTP %d %.300s", a.status, a.body)
	}
	key := media.InputKey(a.str("uuid"))
	if keys := keysUnder(t, rt, key); len(keys) != 1 {
		t.Fatalf("the bucket holds %v, want the input %s", keys, key)
	}
	if got := fileStatus(t, rt.Objects.MediaBucket().URL(key)); got != http.StatusNotFound {
		t.Errorf("the origin answers %d for the input, want 404", got)
	}
	clock.Advance(time.Duration(media.InputRetentionDays)*24*time.Hour + 24*time.Hour)
	if _, err := rt.ExpireOutputs(context.Background()); err != nil {
		t.Fatal(err)
	}
	if keys := keysUnder(t, rt, key); len(keys) != 0 {
		t.Errorf("after the lifecycle's day the bucket still holds %v", keys)
	}
}
