package generation_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"image"
	"image/png"
	"io"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/core/generation"
	"github.com/mediagen-dev/mediagen/internal/core/media"
	"github.com/mediagen-dev/mediagen/internal/core/routing"
)

// pngDataURI is a data: URI of a PNG image padded to about n bytes.
func pngDataURI(t *testing.T, n int) string {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewRGBA(image.Rect(0, 0, 4, 4))); err != nil {
		t.Fatal(err)
	}
	if pad := n - buf.Len(); pad > 0 {
		buf.Write(make([]byte, pad))
	}
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(buf.Bytes())
}

// TestAnInputTooLargeForItsRecordIsKeptInTheBucket: an image input over
// generation.InputInlineMax is written whole to the bucket under inputs/,
// the record keeps it elided with the object's key, the answer echoes it
// whole, and a generation that waited for a slot is submitted with the
// whole image read back from the bucket; a small image stays in its record.
func TestAnInputTooLargeForItsRecordIsKeptInTheBucket(t *testing.T) {
	ctx := context.Background()
	f := setupWith(t, func(c *routing.Config) { c.Upstreams["fake"].MaxConcurrent = 1 })
	f.svc.Slots = f.store
	f.svc.Inputs = f.svc.Outputs.(generation.InputObjects)
	first := f.create(t) // takes the one slot

	img := pngDataURI(t, 200<<10)
	body := `{"model":"provider-c","model_version":"gamma-v2.1","input":{"prompt":"a lighthouse","start_image":"` + img + `"}}`
	g, err := f.creator().Create(ctx, f.user, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(g.Input), img) {
		t.Errorf("the answer's input_parameters lack the image (%d bytes)", len(g.Input))
	}
	rec, err := f.store.GetGeneration(ctx, g.UUID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.InputObject != media.InputKey(g.UUID) || len(rec.Input) > 1024 || !strings.Contains(string(rec.Input), "kept in "+media.InputKey(g.UUID)) {
		t.Fatalf("the record keeps input object %q and an input of %d bytes: %.300s; want %s and the elided input",
			rec.InputObject, len(rec.Input), rec.Input, media.InputKey(g.UUID))
	}
	kept, err := f.svc.Inputs.Get(ctx, rec.InputObject, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	var whole struct {
		StartImage string `json:"start_image"`
	}
	if err := json.Unmarshal(kept, &whole); err != nil || whole.StartImage != img {
		t.Errorf("the bucket's input holds start_image of %d characters, %v; want the %d sent", len(whole.StartImage), err, len(img))
	}
	if media.Published(rec.InputObject) {
		t.Errorf("the input's key %s is one the origin serves", rec.InputObject)
	}

	// The slot frees: the waiting generation goes upstream with its image.
	if err := f.store.ReleaseSlot(ctx, "fake", first.UUID); err != nil {
		t.Fatal(err)
	}
	f.deliverAtOnce(t, f.queue.msgs[len(f.queue.msgs)-1], 1)
	if got, _ := f.store.GetGeneration(ctx, g.UUID); got.UpstreamID == "" {
		t.Fatalf("the waiting generation was not submitted (status %s, error %q)", got.Status, got.Error)
	}
	if n := len(f.up.created); n != 2 || !strings.Contains(string(f.up.created[1]), img) {
		t.Errorf("the upstream got %d creates; want the second to carry the whole image", n)
	}

	small := `{"model":"provider-c","model_version":"gamma-v2.1","input":{"prompt":"a boat","start_image":"` + pngDataURI(t, 10<<10) + `"}}`
	s, err := f.creator().Create(ctx, f.user, []byte(small))
	if err != nil {
		t.Fatal(err)
	}
	if rec, err := f.store.GetGeneration(ctx, s.UUID); err != nil || rec.InputObject != "" || string(rec.Input) != string(s.Input) {
		t.Errorf("a 10 KB image: input object %q, record input of %d bytes, %v; want the whole input in the record", rec.InputObject, len(rec.Input), err)
	}
}

// failingInputs refuses every write, as an unreachable bucket does.
type failingInputs struct{ generation.InputObjects }

func (failingInputs) Put(context.Context, string, io.Reader, string) error {
	return errors.New("bucket unreachable")
}

// TestAnInputTheBucketRefusesLeavesNothing: when the bucket does not take
// a large input, the create fails, its hold is released and no record or
// job is left.
func TestAnInputTheBucketRefusesLeavesNothing(t *testing.T) {
	ctx := context.Background()
	f := setup(t)
	f.svc.Inputs = failingInputs{}
	body := `{"model":"provider-c","model_version":"gamma-v2.1","input":{"prompt":"a lighthouse","start_image":"` + pngDataURI(t, 200<<10) + `"}}`
	if _, err := f.creator().Create(ctx, f.user, []byte(body)); err == nil {
		t.Fatal("Create succeeded although the bucket refused the input")
	}
	a := f.account(t)
	if !a.Balance.Equal(decimal.NewFromInt(100)) || !a.Held.IsZero() {
		t.Errorf("balance %s held %s, want 100 and nothing held", a.Balance, a.Held)
	}
	if n, err := f.store.CountGenerations(ctx, f.user); err != nil || n != 0 {
		t.Errorf("%d generations recorded, %v; want none", n, err)
	}
	if n := f.up.creates.Load(); n != 0 {
		t.Errorf("%d jobs started upstream", n)
	}
}
