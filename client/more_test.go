package client_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/mediagen-dev/mediagen/client"
	"github.com/mediagen-dev/mediagen/shared/local/runtime"
	"github.com/mediagen-dev/mediagen/shared/local/runtime/runtimetest"
)

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
	st, err := c.CancelGeneration(ctx, g.UUID)
	if err != nil || st.Status != client.StatusCanceled {
		t.Fatalf("CancelGeneration = %+v, %v", st, err)
	}
	_, err = c.CancelGeneration(ctx, g.UUID)
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusConflict {
		t.Errorf("second cancel = %v, want a 409 APIError", err)
	}
	after, err := c.Account(ctx)
	if err != nil || after.Balance != before.Balance || after.Held != "0.00" || after.Webhooks.SigningSecret == "" {
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
