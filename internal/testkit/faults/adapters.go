package faults

import (
	"context"
	"io"
	"time"

	"github.com/mediagen-dev/mediagen/internal/adapters/upstream"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
)

// Sender is a queue.
type sender interface {
	Send(ctx context.Context, body []byte, delay time.Duration) error
}

// Queue wraps a queue: "queue.Send".
type Queue struct {
	Inner sender
	In    *Injector
}

func (q *Queue) Send(ctx context.Context, body []byte, delay time.Duration) error {
	return call0(q.In, "queue.Send", func() error { return q.Inner.Send(ctx, body, delay) })
}

// Upstream wraps one upstream's client: "upstream.Submit|Get|Cancel" (the
// other calls pass through).
type Upstream struct {
	upstream.Provider
	In *Injector
}

func (u *Upstream) Submit(ctx context.Context, model string, input map[string]any, webhook string) (domain.UpstreamJob, error) {
	return call(u.In, "upstream.Submit", func() (domain.UpstreamJob, error) { return u.Provider.Submit(ctx, model, input, webhook) })
}

func (u *Upstream) Get(ctx context.Context, job domain.UpstreamJob) (upstream.Result, error) {
	return call(u.In, "upstream.Get", func() (upstream.Result, error) { return u.Provider.Get(ctx, job) })
}

func (u *Upstream) Cancel(ctx context.Context, job domain.UpstreamJob) error {
	return call0(u.In, "upstream.Cancel", func() error { return u.Provider.Cancel(ctx, job) })
}

// ObjectStore is the bucket as the copier and the long-form steps use it.
type objectStore interface {
	Put(ctx context.Context, key string, body io.Reader, contentType string) error
	PutFile(ctx context.Context, key, path, contentType string) error
	GetFile(ctx context.Context, key, path string) error
	URL(key string) string
	Keys(ctx context.Context, prefix string) ([]string, error)
	Delete(ctx context.Context, keys []string) error
	Tag(ctx context.Context, key string, tags map[string]string) error
}

// Bucket wraps the bucket: "bucket.Put|PutFile|GetFile|Keys|Delete|Tag".
type Bucket struct {
	Inner objectStore
	In    *Injector
}

func (b *Bucket) Put(ctx context.Context, key string, body io.Reader, contentType string) error {
	return call0(b.In, "bucket.Put", func() error { return b.Inner.Put(ctx, key, body, contentType) })
}

func (b *Bucket) PutFile(ctx context.Context, key, path, contentType string) error {
	return call0(b.In, "bucket.PutFile", func() error { return b.Inner.PutFile(ctx, key, path, contentType) })
}

func (b *Bucket) GetFile(ctx context.Context, key, path string) error {
	return call0(b.In, "bucket.GetFile", func() error { return b.Inner.GetFile(ctx, key, path) })
}

func (b *Bucket) URL(key string) string { return b.Inner.URL(key) }

func (b *Bucket) Keys(ctx context.Context, prefix string) ([]string, error) {
	return call(b.In, "bucket.Keys", func() ([]string, error) { return b.Inner.Keys(ctx, prefix) })
}

// Delete deletes the outputs of work that did not end paid for.
func (b *Bucket) Delete(ctx context.Context, keys []string) error {
	return call0(b.In, "bucket.Delete", func() error { return b.Inner.Delete(ctx, keys) })
}

func (b *Bucket) Tag(ctx context.Context, key string, tags map[string]string) error {
	return call0(b.In, "bucket.Tag", func() error { return b.Inner.Tag(ctx, key, tags) })
}

// Starter starts workflows.
type starter interface {
	Start(ctx context.Context, name string, input []byte) error
	Stop(ctx context.Context, name, cause string) error
}

// Workflow wraps the workflow starter: "workflow.Start".
type Workflow struct {
	Inner starter
	In    *Injector
}

func (w *Workflow) Start(ctx context.Context, name string, input []byte) error {
	return call0(w.In, "workflow.Start", func() error { return w.Inner.Start(ctx, name, input) })
}

// Stop is the point "workflow.Stop".
func (w *Workflow) Stop(ctx context.Context, name, cause string) error {
	return call0(w.In, "workflow.Stop", func() error { return w.Inner.Stop(ctx, name, cause) })
}
