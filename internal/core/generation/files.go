package generation

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/mediagen-dev/mediagen/internal/core/catalog"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/media"
)

// Files resolves the file URLs (mediagen://files/<id>) of a request's
// image fields: at create each is copied for the generation
// (media.SnapshotKey), the copy checked (the caller's file, not expired,
// its bytes the image type it was uploaded as) and replaced, in what the
// provider gets only, by a short-lived presigned GET URL of the copy, so
// bytes PUT to the upload after the check never reach the provider. An
// unusable file is a *media.UnusableFileError; the record keeps the file
// URL. media.FileInputs is the implementation.
type Files interface {
	Resolve(ctx context.Context, userID, workID, fileURL string) (string, error)
	// SnapshotURL presigns again the GET of the copy Resolve made for
	// workID: a generation that waited for a slot hands it to the
	// provider when it is submitted. A generation recorded before the
	// copies were made (none there) is handed the caller's upload,
	// checked as at create.
	SnapshotURL(ctx context.Context, userID, workID, fileURL string) (string, error)
}

// WithFiles lets the creator take file URLs in image fields; without it a
// file URL is a 400.
func (c *Creator) WithFiles(f Files) *Creator {
	c.s.Files = f
	return c
}

// errNoFiles is a file URL where no bucket of uploads is wired.
var errNoFiles = errors.New("files are not available here: send an https URL or a data URI")

// hasFiles is whether an image field of req names a file
// (mediagen://files/<id>).
func hasFiles(req catalog.Request) bool {
	for _, f := range req.Variant.Fields {
		switch v := req.Resolved[f.Name].(type) {
		case string:
			if f.Type == catalog.TypeImage && domain.IsFileURL(v) {
				return true
			}
		case []any:
			if f.Type == catalog.TypeImageList && slices.ContainsFunc(v, func(item any) bool {
				ref, ok := item.(string)
				return ok && domain.IsFileURL(ref)
			}) {
				return true
			}
		}
	}
	return false
}

// resolveFiles is req with the file URLs of its image fields replaced by
// what url answers for each (Files.Resolve at create: the file copied for
// the generation and checked; Files.SnapshotURL for a generation that
// waited for a slot: the copy checked at its create), in Resolved only
// (Input, which the record keeps and the answer echoes, keeps the file
// URL). Every unusable file is reported at once, each under its field
// (input.start_image, input.image_input[1]), before any credit moves.
func (s *Service) resolveFiles(req catalog.Request, url func(fileURL string) (string, error)) (catalog.Request, error) {
	var problems catalog.Problems
	resolved := maps.Clone(req.Resolved)
	changed := false
	resolve := func(field, ref string) (string, error) {
		if !domain.IsFileURL(ref) {
			return ref, nil
		}
		if s.Files == nil {
			problems.Add(field, errNoFiles.Error())
			return ref, nil
		}
		u, err := url(ref)
		var unusable *media.UnusableFileError
		switch {
		case errors.As(err, &unusable):
			problems.Add(field, unusable.Reason)
			return ref, nil
		case err != nil:
			return "", fmt.Errorf("resolve %s: %w", field, err)
		}
		changed = true
		return u, nil
	}
	for _, f := range req.Variant.Fields {
		switch v := resolved[f.Name].(type) {
		case string:
			if f.Type != catalog.TypeImage {
				continue
			}
			u, err := resolve("input."+f.Name, v)
			if err != nil {
				return catalog.Request{}, err
			}
			resolved[f.Name] = u
		case []any:
			if f.Type != catalog.TypeImageList {
				continue
			}
			list := make([]any, len(v))
			for i, item := range v {
				list[i] = item
				ref, ok := item.(string)
				if !ok {
					continue
				}
				u, err := resolve(fmt.Sprintf("input.%s[%d]", f.Name, i), ref)
				if err != nil {
					return catalog.Request{}, err
				}
				list[i] = u
			}
			resolved[f.Name] = list
		}
	}
	if err := problems.Err(); err != nil {
		return catalog.Request{}, err
	}
	if changed {
		req.Resolved = resolved
	}
	return req, nil
}
