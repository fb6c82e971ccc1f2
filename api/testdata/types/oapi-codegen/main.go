// A client made by oapi-codegen from api/openapi.yaml: it creates an image
// and a video generation and polls each to its end. api/types_test.go
// generates mediagenapi/api.gen.go beside it and builds it.
package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"time"

	"typescheck/mediagenapi"
)

func run(ctx context.Context, c *mediagenapi.ClientWithResponses, body mediagenapi.GenerateRequest) ([]string, error) {
	created, err := c.CreateGenerationWithResponse(ctx, &mediagenapi.CreateGenerationParams{}, body)
	if err != nil {
		return nil, err
	}
	if created.JSON200 == nil {
		return nil, fmt.Errorf("create: %s", created.Status())
	}
	for {
		st, err := c.GetGenerationWithResponse(ctx, created.JSON200.Uuid.String())
		if err != nil {
			return nil, err
		}
		if st.JSON200 == nil {
			return nil, fmt.Errorf("status: %s", st.Status())
		}
		if st.JSON200.Status != mediagenapi.StatusProcessing {
			return st.JSON200.Output, nil
		}
		time.Sleep(time.Second)
	}
}

func main() {
	auth := func(_ context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Bearer "+os.Getenv("MEDIAGEN_API_KEY"))
		return nil
	}
	c, err := mediagenapi.NewClientWithResponses("http://127.0.0.1:8080", mediagenapi.WithRequestEditorFn(auth))
	if err != nil {
		panic(err)
	}
	var image, video mediagenapi.GenerateRequest
	wide := mediagenapi.InputTheta4FastAspectRatioN169
	if err := image.FromGenerateRequestTheta4Fast(mediagenapi.GenerateRequestTheta4Fast{
		Model: "provider-a",
		Input: mediagenapi.InputTheta4Fast{Prompt: "a cat", AspectRatio: &wide},
	}); err != nil {
		panic(err)
	}
	if err := video.FromGenerateRequestBeta2(mediagenapi.GenerateRequestBeta2{
		Model: "provider-b",
		// seconds takes "4" or 4: no single Go type.
		Input: mediagenapi.InputBeta2{Prompt: "a paper boat", Seconds: "4", AspectRatio: mediagenapi.InputBeta2AspectRatioLandscape},
	}); err != nil {
		panic(err)
	}
	for _, body := range []mediagenapi.GenerateRequest{image, video} {
		urls, err := run(context.Background(), c, body)
		fmt.Println(urls, err)
	}
}
