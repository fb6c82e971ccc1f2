package client

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// File is a file made by POST /api/files: URL goes in any image field of
// a generate request, until ExpiresAt.
type File struct {
	FileID          string            `json:"file_id"`
	UploadURL       string            `json:"upload_url"`
	UploadHeaders   map[string]string `json:"upload_headers"`
	UploadExpiresAt time.Time         `json:"upload_expires_at"`
	URL             string            `json:"url"`
	ContentType     string            `json:"content_type"`
	Size            int64             `json:"size,omitempty"`
	ExpiresAt       time.Time         `json:"expires_at"`
}

// CreateFile makes a file of contentType (an image or audio type) and
// size, in bytes, which the upload is signed for (0: not declared, the
// file is measured when it is used), and answers where to PUT its bytes;
// Upload does both steps.
func (c *Client) CreateFile(ctx context.Context, contentType string, size int64) (File, error) {
	body := map[string]any{"content_type": contentType}
	if size > 0 {
		body["size"] = size
	}
	var f File
	err := c.Do(ctx, http.MethodPost, "/api/files", body, &f)
	return f, err
}

// Upload sends an image to the service's bucket: it makes a file (POST
// /api/files) and PUTs data to the file's presigned upload URL, with no
// API key (the URL is the permission). contentType "" is data's own, as
// http.DetectContentType tells it. The answer's URL
// (mediagen://files/<file_id>) goes in any image field.
func (c *Client) Upload(ctx context.Context, data []byte, contentType string) (File, error) {
	if contentType == "" {
		contentType = http.DetectContentType(data)
	}
	f, err := c.CreateFile(ctx, contentType, int64(len(data)))
	if err != nil {
		return File{}, err
	}
	header := http.Header{}
	for k, v := range f.UploadHeaders {
		if http.CanonicalHeaderKey(k) != "Content-Length" { // the body sets it
			header.Set(k, v)
		}
	}
	resp, err := c.send(ctx, http.MethodPut, f.UploadURL, header, data)
	if err != nil {
		return File{}, fmt.Errorf("upload file %s: %w", f.FileID, err)
	}
	resp.Body.Close()
	return f, nil
}
