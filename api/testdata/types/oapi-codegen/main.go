// A client made by oapi-codegen from api/openapi.yaml: it creates an image
// and a video generation and polls each to its end, printing each one's
// final status and outputs as a JSON line. api/types_test.go generates
// mediagenapi/api.gen.go beside it, builds it and runs it against a local
// runtime ($MEDIAGEN_BASE_URL, $MEDIAGEN_API_KEY).
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"time"

	"typescheck/mediagenapi"
)

func run(ctx context.Context, c *mediagenapi.ClientWithResponses, body mediagenapi.GenerateRequest) (mediagenapi.GenerationStatus, error) {
	created, err := c.CreateGenerationWithResponse(ctx, &mediagenapi.CreateGenerationParams{}, body)
	if err != nil {
		return mediagenapi.GenerationStatus{}, err
	}
	if created.JSON200 == nil {
		return mediagenapi.GenerationStatus{}, fmt.Errorf("create: %s %s", created.Status(), created.Body)
	}
	for {
		st, err := c.GetGenerationWithResponse(ctx, created.JSON200.Uuid.String())
		if err != nil {
			return mediagenapi.GenerationStatus{}, err
		}
		if st.JSON200 == nil {
			return mediagenapi.GenerationStatus{}, fmt.Errorf("status: %s %s", st.Status(), st.Body)
		}
		if st.JSON200.Status != mediagenapi.StatusProcessing {
			return *st.JSON200, nil
		}
		time.Sleep(time.Second)
	}
}

func main() {
	auth := func(_ context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Bearer "+os.Getenv("MEDIAGEN_API_KEY"))
		return nil
	}
	c, err := mediagenapi.NewClientWithResponses(os.Getenv("MEDIAGEN_BASE_URL"), mediagenapi.WithRequestEditorFn(auth))
	if err != nil {
		fail(err)
	}
	var image, video mediagenapi.GenerateRequest
	wide := mediagenapi.InputTheta4FastAspectRatioN169
	if err := image.FromGenerateRequestTheta4Fast(mediagenapi.GenerateRequestTheta4Fast{
		Model: "provider-a",
		Input: mediagenapi.InputTheta4Fast{Prompt: "a cat", AspectRatio: &wide},
	}); err != nil {
		fail(err)
	}
	if err := video.FromGenerateRequestBeta2(mediagenapi.GenerateRequestBeta2{
		Model: "provider-b",
		// seconds takes "4" or 4: no single Go type.
		Input: mediagenapi.InputBeta2{Prompt: "a paper boat", Seconds: "4", AspectRatio: mediagenapi.InputBeta2AspectRatioLandscape},
	}); err != nil {
		fail(err)
	}
	type done struct {
		Status string   `json:"status"`
		Output []string `json:"output"`
	}
	var all []done
	for _, body := range []mediagenapi.GenerateRequest{image, video} {
		st, err := run(context.Background(), c, body)
		if err != nil {
			fail(err)
		}
		all = append(all, done{Status: string(st.Status), Output: st.Output})
	}
	if err := json.NewEncoder(os.Stdout).Encode(all); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}
