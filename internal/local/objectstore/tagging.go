package objectstore

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/johannesboyne/gofakes3"
)

// tags keeps the objects' tags, which gofakes3 does not: it would take a
// PutObjectTagging for a PutObject and replace the object with the tag
// set's XML. The lifecycle (Expire) reads them as S3's rules do. With a
// data directory they are kept in a file beside the objects.
type tags struct {
	mu    sync.Mutex
	path  string // "" keeps them in memory
	byKey map[string]map[string]string
}

func openTags(dir string) (*tags, error) {
	t := &tags{byKey: map[string]map[string]string{}}
	if dir == "" {
		return t, nil
	}
	t.path = filepath.Join(dir, "object-tags.json")
	raw, err := os.ReadFile(t.path)
	if errors.Is(err, os.ErrNotExist) {
		return t, nil
	}
	if err == nil {
		err = json.Unmarshal(raw, &t.byKey)
	}
	if err != nil {
		return nil, fmt.Errorf("read the object tags %s: %w", t.path, err)
	}
	return t, nil
}

// of is a copy of the object's tags.
func (t *tags) of(key string) map[string]string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.byKey[key])
}

// set replaces the tags of the objects named; nil removes them.
func (t *tags) set(set map[string]map[string]string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	for key, v := range set {
		if len(v) == 0 {
			delete(t.byKey, key)
		} else {
			t.byKey[key] = v
		}
	}
	return t.save()
}

// save writes the tags' file whole (a rename, so a crash keeps the old
// one); the caller holds mu.
func (t *tags) save() error {
	if t.path == "" {
		return nil
	}
	raw, err := json.Marshal(t.byKey)
	if err != nil {
		return err
	}
	tmp := t.path + ".tmp"
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		return fmt.Errorf("keep the object tags: %w", err)
	}
	return os.Rename(tmp, t.path)
}

// tagSet is S3's Tagging document.
type tagSet struct {
	XMLName xml.Name `xml:"Tagging"`
	Tags    []tagXML `xml:"TagSet>Tag"`
}

type tagXML struct {
	Key   string `xml:"Key"`
	Value string `xml:"Value"`
}

// handler answers the tagging requests of objects (PUT, GET and DELETE
// ?tagging) itself and keeps the tags a write gives an object (its
// x-amz-tagging header; none replaces them), as S3 does; everything else
// goes to the bucket's handler.
func (t *tags) handler(bucket string, backend gofakes3.Backend, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, isObject := strings.CutPrefix(r.URL.Path, "/"+bucket+"/")
		q := r.URL.Query()
		switch {
		case !isObject || key == "":
			next.ServeHTTP(w, r)
		case q.Has("tagging"):
			obj, err := backend.HeadObject(bucket, key)
			if err != nil {
				noSuchKey(w, key)
				return
			}
			obj.Contents.Close()
			t.serveTagging(w, r, key)
		case (r.Method == http.MethodPut && !q.Has("uploadId")) || (r.Method == http.MethodPost && q.Has("uploads")):
			// PutObject, CopyObject or CreateMultipartUpload: the new
			// object has the request's tags, or none.
			set, err := url.ParseQuery(r.Header.Get("X-Amz-Tagging"))
			if err != nil {
				http.Error(w, "malformed x-amz-tagging", http.StatusBadRequest)
				return
			}
			given := map[string]string{}
			for k, v := range set {
				given[k] = v[0]
			}
			if err := t.set(map[string]map[string]string{key: given}); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			next.ServeHTTP(w, r)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

func (t *tags) serveTagging(w http.ResponseWriter, r *http.Request, key string) {
	switch r.Method {
	case http.MethodPut:
		var doc tagSet
		if err := xml.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&doc); err != nil {
			http.Error(w, "malformed Tagging document", http.StatusBadRequest)
			return
		}
		set := map[string]string{}
		for _, tag := range doc.Tags {
			set[tag.Key] = tag.Value
		}
		if err := t.set(map[string]map[string]string{key: set}); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	case http.MethodGet:
		set := t.of(key)
		var doc tagSet
		for _, k := range slices.Sorted(maps.Keys(set)) {
			doc.Tags = append(doc.Tags, tagXML{k, set[k]})
		}
		w.Header().Set("Content-Type", "application/xml")
		xml.NewEncoder(w).Encode(doc)
	case http.MethodDelete:
		if err := t.set(map[string]map[string]string{key: nil}); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		http.Error(w, gofakes3.ErrMethodNotAllowed.Error(), http.StatusMethodNotAllowed)
	}
}

// noSuchKey is S3's answer about an object that does not exist.
func noSuchKey(w http.ResponseWriter, key string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(http.StatusNotFound)
	xml.NewEncoder(w).Encode(struct {
		XMLName xml.Name `xml:"Error"`
		Code    string   `xml:"Code"`
		Message string   `xml:"Message"`
		Key     string   `xml:"Key"`
	}{Code: "NoSuchKey", Message: "The specified key does not exist.", Key: key})
}
