package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Download writes the file at url (an output URL the service returned)
// to w and returns its size. Output URLs need no credentials, so the API
// key is not sent; 429, 5xx and failed connections are retried as API
// calls are.
func (c *Client) Download(ctx context.Context, url string, w io.Writer) (int64, error) {
	resp, err := c.send(ctx, http.MethodGet, url, http.Header{}, nil)
	if err != nil {
		return 0, fmt.Errorf("download %s: %w", url, err)
	}
	defer resp.Body.Close()
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return n, fmt.Errorf("download %s: %w", url, err)
	}
	return n, nil
}

// DownloadFile saves url in dir as name plus the URL's extension (.png,
// .mp4, ...), writing a temporary file first so that a failed download
// leaves nothing half-written, and returns the path.
func (c *Client) DownloadFile(ctx context.Context, url, dir, name string) (string, error) {
	if url == "" {
		return "", errNoOutput
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("download %s: %w", url, err)
	}
	ext := path.Ext(strings.SplitN(strings.SplitN(url, "?", 2)[0], "#", 2)[0])
	dest := filepath.Join(dir, name+ext)
	tmp, err := os.CreateTemp(dir, "."+name+"-*.part")
	if err != nil {
		return "", fmt.Errorf("download %s: %w", url, err)
	}
	defer os.Remove(tmp.Name()) // after the rename, a no-op
	if _, err := c.Download(ctx, url, tmp); err != nil {
		tmp.Close()
		return "", err
	}
	// CreateTemp makes the file private; an output is an ordinary file.
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return "", fmt.Errorf("download %s: %w", url, err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("download %s: %w", url, err)
	}
	if err := os.Rename(tmp.Name(), dest); err != nil {
		return "", fmt.Errorf("download %s: %w", url, err)
	}
	return dest, nil
}
