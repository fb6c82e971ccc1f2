package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/client"
	"github.com/mediagen-dev/mediagen/internal/local/runtime"
	"github.com/mediagen-dev/mediagen/internal/testkit/runtimetest"
)

// GenerateAndWait gets a quick image back completed, with its outputs, in
// one request (Prefer: wait), and one that runs on back processing.
func TestGenerateAndWaitAnswersTheFinishedImage(t *testing.T) {
	rt := runtimetest.Start(t, runtime.Config{})
	c := client.New(rt.BaseURL, rt.Dev.APIKey)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	g, err := c.GenerateAndWait(ctx, client.GenerateRequest{Model: "provider-a", ModelVersion: "theta-4-fast",
		Input: map[string]any{"prompt": "a red fox in the snow"}}, 20*time.Second)
	if err != nil {
		t.Fatalf("GenerateAndWait: %v", err)
	}
	if g.Status != client.StatusCompleted || len(g.OutputData.URLs) != 1 {
		t.Fatalf("record %+v, want completed with its image", g)
	}

	held, err := c.GenerateAndWait(ctx, client.GenerateRequest{Model: "provider-a", ModelVersion: "theta-4-fast",
		Input: map[string]any{"prompt": "a pier [simulate:hold]"}}, time.Second)
	if err != nil {
		t.Fatalf("GenerateAndWait: %v", err)
	}
	if held.Status != client.StatusProcessing || len(held.OutputData.URLs) != 0 {
		t.Errorf("record %+v, want processing with no output", held)
	}
	if _, err := c.CancelGeneration(ctx, held.UUID); err != nil {
		t.Errorf("cancel the held job: %v", err)
	}
}
