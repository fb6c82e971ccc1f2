package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/mediagen-dev/mediagen/internal/core/media"
)

// fileView is the answer of POST /api/files.
type fileView struct {
	FileID string `json:"file_id"`
	// UploadURL takes one PUT of the file's bytes with UploadHeaders.
	UploadURL       string            `json:"upload_url"`
	UploadHeaders   map[string]string `json:"upload_headers"`
	UploadExpiresAt string            `json:"upload_expires_at"`
	// URL is what an image field takes.
	URL         string `json:"url"`
	ContentType string `json:"content_type"`
	Size        int64  `json:"size,omitempty"`
	ExpiresAt   string `json:"expires_at"`
}

// FileCreateRoute is POST /api/files: a file id and a presigned URL to PUT
// the file's bytes to (the service never sees them); the file's url goes
// in any image field of a generate request.
func FileCreateRoute(u *media.Uploads, gate *Gate) Handler {
	return gate.AuthedUser(generateAccess, func(ctx context.Context, req Request, userID string) (Response, error) {
		body, err := jsonBody(req)
		if err != nil {
			return Response{}, err
		}
		up, err := u.Create(ctx, userID, body)
		if err != nil {
			return Response{}, err
		}
		return jsonResponse(http.StatusCreated, fileOf(up)), nil
	})
}

func fileOf(up media.Upload) fileView {
	headers := map[string]string{"Content-Type": up.ContentType}
	if up.Size > 0 {
		headers["Content-Length"] = strconv.FormatInt(up.Size, 10)
	}
	return fileView{FileID: up.FileID, UploadURL: up.UploadURL, UploadHeaders: headers,
		UploadExpiresAt: up.UploadExpiresAt.UTC().Format(time.RFC3339), URL: up.URL, ContentType: up.ContentType, Size: up.Size,
		ExpiresAt: up.ExpiresAt.UTC().Format(time.RFC3339)}
}
