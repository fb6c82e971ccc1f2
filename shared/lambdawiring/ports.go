package lambdawiring

import (
	"github.com/mediagen-dev/mediagen/shared/accounts"
	"github.com/mediagen-dev/mediagen/shared/generation"
	"github.com/mediagen-dev/mediagen/shared/httpapi"
	"github.com/mediagen-dev/mediagen/shared/longstory"
	"github.com/mediagen-dev/mediagen/shared/media"
	"github.com/mediagen-dev/mediagen/shared/s3bucket"
	"github.com/mediagen-dev/mediagen/shared/store/dynamostore"
	"github.com/mediagen-dev/mediagen/shared/sweeper"
	"github.com/mediagen-dev/mediagen/shared/upstream"
	"github.com/mediagen-dev/mediagen/shared/webhook"
)

// The production adapters fill the use cases' ports. The adapters that
// cannot import a port's package (it imports them) are checked here.
var (
	_ generation.Store       = (*dynamostore.Store)(nil)
	_ generation.Slots       = (*dynamostore.Store)(nil)
	_ longstory.Store        = (*dynamostore.Store)(nil)
	_ longstory.Slots        = (*dynamostore.Store)(nil)
	_ webhook.Store          = (*dynamostore.Store)(nil)
	_ sweeper.SweepStore     = (*dynamostore.Store)(nil)
	_ accounts.Store         = (*dynamostore.Store)(nil)
	_ httpapi.AuthStore      = (*dynamostore.Store)(nil)
	_ httpapi.SecretStore    = (*dynamostore.Store)(nil)
	_ generation.Upstreams   = (*upstream.Router)(nil)
	_ longstory.Upstreams    = (*upstream.Router)(nil)
	_ generation.Copier      = (*media.Copier)(nil)
	_ longstory.Copier       = (*media.Copier)(nil)
	_ longstory.Files        = (*s3bucket.Bucket)(nil)
	_ longstory.PreviewFiles = (*s3bucket.Bucket)(nil)
	_ generation.Notifier    = webhook.Notifier{}
	_ longstory.Notifier     = webhook.Notifier{}
)
