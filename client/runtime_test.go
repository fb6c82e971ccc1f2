package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/png"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/client"
	"github.com/mediagen-dev/mediagen/internal/local/runtime"
	"github.com/mediagen-dev/mediagen/internal/testkit/runtimetest"
)

var fast = client.WaitOptions{Interval: 100 * time.Millisecond, MaxInterval: 300 * time.Millisecond}

func TestGenerateWaitAndDownloadAnImageAndAVideo(t *testing.T) {
	rt := runtimetest.Start(t, runtime.Config{})
	c := client.New(rt.BaseURL, rt.Dev.APIKey)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()

	t.Run("image", func(t *testing.T) {
		g, err := c.Generate(ctx, client.GenerateRequest{Model: "provider-a", ModelVersion: "theta-4-fast",
			Input: map[string]any{"prompt": "a red fox in the snow", "aspect_ratio": "16:9"}, ImageCount: 2})
		if err != nil {
			t.Fatalf("Generate: %v", err)
		}
		if g.Status != client.StatusProcessing || g.UUID == "" || g.CreditsUsed != "5.20" {
			t.Errorf("record %+v, want processing at 5.20 credits (2 images at 2.60)", g)
		}
		polls := 0
		st, err := c.WaitGeneration(ctx, g.UUID, fast, func(client.GenerationStatus) { polls++ })
		if err != nil {
			t.Fatalf("WaitGeneration: %v", err)
		}
		if st.Status != client.StatusCompleted || len(st.Output) != 2 || polls == 0 {
			t.Fatalf("final view %+v after %d polls, want completed with 2 images", st, polls)
		}
		path, err := c.DownloadFile(ctx, st.Output[0], dir, g.UUID+"-0")
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := os.ReadFile(path)
		cfg, err := png.DecodeConfig(bytes.NewReader(raw))
		if err != nil || cfg.Width <= cfg.Height {
			t.Errorf("%s: %v, %dx%d; want a 16:9 PNG", path, err, cfg.Width, cfg.Height)
		}
	})
	t.Run("video", func(t *testing.T) {
		g, err := c.Generate(ctx, client.GenerateRequest{Model: "provider-b", ModelVersion: "beta-2",
			Input: map[string]any{"prompt": "waves at dusk", "seconds": "4", "aspect_ratio": "landscape"}})
		if err != nil {
			t.Fatalf("Generate: %v", err)
		}
		st, err := c.WaitGeneration(ctx, g.UUID, fast, nil)
		if err != nil || st.Status != client.StatusCompleted || len(st.Output) != 1 {
			t.Fatalf("WaitGeneration = %+v, %v", st, err)
		}
		path, err := c.DownloadFile(ctx, st.Output[0], dir, g.UUID)
		if err != nil {
			t.Fatal(err)
		}
		if raw, _ := os.ReadFile(path); filepath.Ext(path) != ".mp4" || len(raw) < 12 || string(raw[4:8]) != "ftyp" {
			t.Errorf("%s is not an MP4 file", path)
		}
		if st.OutputExpiresAt == "" || st.DataRemoved {
			t.Errorf("a completed view %+v: want output_expires_at, data not removed", st)
		}
		gone, err := c.DeleteGenerationOutput(ctx, g.UUID)
		if err != nil || !gone.DataRemoved || len(gone.Output) != 0 {
			t.Fatalf("DeleteGenerationOutput = %+v, %v", gone, err)
		}
		var apiErr *client.APIError
		if _, err := c.DownloadFile(ctx, st.Output[0], dir, g.UUID+"-again"); !errors.As(err, &apiErr) || apiErr.Status != http.StatusNotFound {
			t.Errorf("downloading a deleted output: %v, want the origin's 404", err)
		}
	})
}

func TestLongVideoEstimateCreateWaitAndDownload(t *testing.T) {
	rt := runtimetest.Start(t, runtime.Config{})
	c := client.New(rt.BaseURL, rt.Dev.APIKey)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	est, err := c.EstimateLongVideo(ctx, client.EstimateRequest{Model: "beta-2", SceneCount: 2})
	if err != nil {
		t.Fatalf("EstimateLongVideo: %v", err)
	}
	if est.Duration != 10 || est.Credits.Total.String() != "130" {
		t.Errorf("estimate %+v, want 10 s for 130 credits", est)
	}
	created, err := c.CreateLongVideo(ctx, client.LongVideoRequest{Prompt: "A day at the seaside", LanguageCode: "en",
		Scenes: []client.Scene{{SceneNumber: 1, Prompt: "waves on the sand"}, {SceneNumber: 2, Prompt: "gulls over the pier"}}})
	if err != nil {
		t.Fatalf("CreateLongVideo: %v", err)
	}
	st, err := c.WaitLongVideo(ctx, created.VideoID, fast, nil)
	if err != nil || st.Status != client.StatusCompleted || st.FinalVideoURL == "" {
		t.Fatalf("WaitLongVideo = %+v, %v", st, err)
	}
	if st.TotalDuration < 9.5 || st.TotalDuration > 10.5 {
		t.Errorf("total_duration %v, want 10 s", st.TotalDuration)
	}
	var buf bytes.Buffer
	if n, err := c.Download(ctx, st.FinalVideoURL, &buf); err != nil || n < 1000 {
		t.Errorf("Download: %d bytes, %v", n, err)
	}
	for range 2 {
		gone, err := c.DeleteLongVideoOutput(ctx, created.VideoID)
		if err != nil || !gone.DataRemoved || gone.FinalVideoURL != "" {
			t.Errorf("DeleteLongVideoOutput = %+v, %v", gone, err)
		}
	}
	if _, err := c.Download(ctx, st.FinalVideoURL, &bytes.Buffer{}); err == nil {
		t.Error("the deleted video still downloads")
	}
}

func TestTheServicesErrorsAreAPIErrors(t *testing.T) {
	rt := runtimetest.Start(t, runtime.Config{})
	ctx := context.Background()
	c := client.New(rt.BaseURL, rt.Dev.APIKey)
	tests := []struct {
		name       string
		call       func(*client.Client) error
		key        string
		wantStatus int
		wantCode   string
		wantField  string
	}{
		{"missing fields", func(c *client.Client) error {
			_, err := c.Generate(ctx, client.GenerateRequest{Model: "provider-b", ModelVersion: "beta-2", Input: map[string]any{"prompt": "p", "aspect_ratio": "portrait"}})
			return err
		}, rt.Dev.APIKey, http.StatusBadRequest, "invalid_request", "input.seconds"},
		{"unknown key", func(c *client.Client) error {
			_, err := c.Generation(ctx, "1")
			return err
		}, "mgk_aaaaaaaaaa_not-a-real-key-at-all-not-a-real-key-at-all", http.StatusUnauthorized, "unauthorized", ""},
		{"unknown generation", func(c *client.Client) error {
			_, err := c.Generation(ctx, "6f1c2a8e-3b7d-4e2f-9a51-0c8d7e6b5a43")
			return err
		}, rt.Dev.APIKey, http.StatusNotFound, "not_found", ""},
		{"unsupported language", func(c *client.Client) error {
			_, err := c.CreateLongVideo(ctx, client.LongVideoRequest{Prompt: "p", LanguageCode: "xx", Scenes: []client.Scene{{SceneNumber: 1, Prompt: "p"}}})
			return err
		}, rt.Dev.APIKey, http.StatusBadRequest, "invalid_request", "language_code"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.APIKey = tt.key
			err := tt.call(c)
			var apiErr *client.APIError
			if !errors.As(err, &apiErr) {
				t.Fatalf("error %v is not an *APIError", err)
			}
			if apiErr.Status != tt.wantStatus || apiErr.Code != tt.wantCode || apiErr.RequestID == "" {
				t.Errorf("got %+v, want %d %s with a request id", apiErr, tt.wantStatus, tt.wantCode)
			}
			if tt.wantField != "" && (len(apiErr.Details) == 0 || apiErr.Details[0].Field != tt.wantField) {
				t.Errorf("details %v, want %s named", apiErr.Details, tt.wantField)
			}
		})
	}
}

func TestModelsNeedsNoKeyAndDescribesTheFields(t *testing.T) {
	rt := runtimetest.Start(t, runtime.Config{})
	models, err := client.New(rt.BaseURL, "").Models(context.Background())
	if err != nil {
		t.Fatalf("Models: %v", err)
	}
	var beta2 *client.Model
	for i := range models {
		if models[i].Version == "beta-2" {
			beta2 = &models[i]
		}
	}
	if len(models) != 12 || beta2 == nil {
		t.Fatalf("%d models, beta-2 among them: %v", len(models), beta2 != nil)
	}
	fields, err := beta2.Fields()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range fields {
		names = append(names, f.Name+":"+f.Type)
	}
	want := "[prompt:string seconds:enum aspect_ratio:enum input_reference:image]"
	if got := fmt.Sprint(names); got != want {
		t.Errorf("beta-2 fields %s, want %s in the spec's order", got, want)
	}
	if !fields[1].Required || len(fields[1].Enum) != 3 || beta2.Price.CreditsPerUnit != "13.00" || beta2.Price.Unit != "second" {
		t.Errorf("seconds %+v, price %+v", fields[1], beta2.Price)
	}
}

func TestEstimateCancelListAndAccount(t *testing.T) {
	rt := runtimetest.Start(t, runtime.Config{SimulatorLatency: 2 * time.Second})
	c := client.New(rt.BaseURL, rt.Dev.APIKey)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	before, err := c.Account(ctx)
	if err != nil {
		t.Fatal(err)
	}
	req := client.GenerateRequest{Model: "provider-a", ModelVersion: "theta-4-fast", Input: map[string]any{"prompt": "an owl"}}
	est, err := c.EstimateGeneration(ctx, req)
	if err != nil || est.Credits == "" || est.Kind != "image" {
		t.Fatalf("EstimateGeneration = %+v, %v", est, err)
	}
	g, err := c.Generate(ctx, req)
	if err != nil || g.CreditsUsed != est.Credits {
		t.Fatalf("Generate = %+v, %v; want %s credits as estimated", g, err, est.Credits)
	}
	var apiErr *client.APIError
	if _, err := c.DeleteGenerationOutput(ctx, g.UUID); !errors.As(err, &apiErr) || apiErr.Status != http.StatusConflict {
		t.Errorf("deleting the output of a generation in progress = %v, want a 409 APIError", err)
	}
	st, err := c.CancelGeneration(ctx, g.UUID)
	if err != nil || st.Status != client.StatusCanceled {
		t.Fatalf("CancelGeneration = %+v, %v", st, err)
	}
	_, err = c.CancelGeneration(ctx, g.UUID)
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusConflict {
		t.Errorf("second cancel = %v, want a 409 APIError", err)
	}
	after, err := c.Account(ctx)
	if err != nil || after.Balance != before.Balance || after.Held != "0.00" || after.Webhooks.SigningSecret == nil {
		t.Errorf("account after the cancel = %+v, %v; want balance %s back, a signing secret", after, err, before.Balance)
	}
	for i := 0; i < 3; i++ {
		if _, err := c.Generate(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	seen := 0
	o := client.ListOptions{Limit: 2}
	for pages := 0; pages < 10; pages++ {
		p, err := c.Generations(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		seen += len(p.Data)
		next, more := p.Next(o)
		if !more {
			break
		}
		o = next
	}
	if seen != 4 {
		t.Errorf("paged through %d generations, want 4", seen)
	}
	if p, err := c.Generations(ctx, client.ListOptions{Status: client.StatusCanceled}); err != nil || len(p.Data) != 1 || p.Data[0].ID != g.UUID {
		t.Errorf("canceled filter = %+v, %v", p, err)
	}
	if p, err := c.LongVideos(ctx, client.ListOptions{}); err != nil || len(p.Data) != 0 || p.HasMore {
		t.Errorf("long videos = %+v, %v; want none", p, err)
	}
}

// The key methods against the local runtime: a key made with the dev key,
// listed without its secret, used, then revoked and refused; a read key's
// generate is an *APIError insufficient_scope.
func TestKeysCreateListUseAndRevoke(t *testing.T) {
	rt := runtimetest.Start(t, runtime.Config{})
	c := client.New(rt.BaseURL, rt.Dev.APIKey)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	k, err := c.CreateKey(ctx, client.KeyRequest{Name: "reader", Scopes: []string{"read"}, DailyCreditLimit: "5.00"})
	if err != nil || k.APIKey == "" || k.Name != "reader" || k.DailyCreditLimit == nil || *k.DailyCreditLimit != "5.00" {
		t.Fatalf("CreateKey = %+v, %v", k, err)
	}
	reader := client.New(rt.BaseURL, k.APIKey)
	if _, err := reader.Account(ctx); err != nil {
		t.Fatalf("the new key reads the account: %v", err)
	}
	var apiErr *client.APIError
	_, err = reader.Generate(ctx, client.GenerateRequest{Model: "provider-a", ModelVersion: "theta-4-fast", Input: map[string]any{"prompt": "x"}})
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusForbidden || apiErr.Code != "insufficient_scope" {
		t.Errorf("a read key's Generate = %v, want 403 insufficient_scope", err)
	}
	keys, err := c.Keys(ctx)
	if err != nil || len(keys) != 2 || keys[0].Prefix != k.Prefix || keys[0].LastUsedAt == nil {
		t.Fatalf("Keys = %+v, %v; want the new key first, used", keys, err)
	}
	r, err := c.RevokeKey(ctx, k.Prefix)
	if err != nil || r.Prefix != k.Prefix || r.RevokedAt == "" {
		t.Fatalf("RevokeKey = %+v, %v", r, err)
	}
	if _, err := reader.Account(ctx); !errors.As(err, &apiErr) || apiErr.Status != http.StatusUnauthorized {
		t.Errorf("the revoked key = %v, want 401", err)
	}
}
