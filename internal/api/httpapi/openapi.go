package httpapi

import (
	"context"
	"net/http"

	"github.com/mediagen-dev/mediagen/api"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// OpenAPI is GET /api/openapi.json: the contract, without authentication.
func OpenAPI() Handler {
	doc, err := api.OpenAPIJSON()
	return func(ctx context.Context, req Request) (Response, error) {
		if err != nil {
			return errorResponse(ctx, domain.Logger(nil), req, err), nil
		}
		resp := jsonResponse(http.StatusOK, nil)
		resp.Body = string(doc)
		resp.Headers["Cache-Control"] = "public, max-age=300"
		return resp, nil
	}
}
