package lambdawiring

import (
	"github.com/mediagen-dev/mediagen/internal/adapters/upstream"
	"github.com/mediagen-dev/mediagen/internal/api/httpapi"
	"github.com/mediagen-dev/mediagen/internal/aws/dynamostore"
	"github.com/mediagen-dev/mediagen/internal/aws/s3bucket"
	"github.com/mediagen-dev/mediagen/internal/core/accounts"
	"github.com/mediagen-dev/mediagen/internal/core/generation"
	"github.com/mediagen-dev/mediagen/internal/core/longform"
	"github.com/mediagen-dev/mediagen/internal/core/media"
	"github.com/mediagen-dev/mediagen/internal/core/sweeper"
	"github.com/mediagen-dev/mediagen/internal/core/webhook"
)

// The production adapters fill the use cases' ports. The adapters that
// cannot import a port's package (it imports them) are checked here.
var (
	_ generation.Store      = (*dynamostore.Store)(nil)
	_ generation.Slots      = (*dynamostore.Store)(nil)
	_ longform.Store        = (*dynamostore.Store)(nil)
	_ longform.Slots        = (*dynamostore.Store)(nil)
	_ webhook.Store         = (*dynamostore.Store)(nil)
	_ sweeper.SweepStore    = (*dynamostore.Store)(nil)
	_ accounts.Store        = (*dynamostore.Store)(nil)
	_ httpapi.AuthStore     = (*dynamostore.Store)(nil)
	_ httpapi.SecretStore   = (*dynamostore.Store)(nil)
	_ generation.Upstreams  = (*upstream.Router)(nil)
	_ longform.Upstreams    = (*upstream.Router)(nil)
	_ generation.Copier     = (*media.Copier)(nil)
	_ longform.Copier       = (*media.Copier)(nil)
	_ longform.Files        = (*s3bucket.Bucket)(nil)
	_ longform.PreviewFiles = (*s3bucket.Bucket)(nil)
	_ generation.Notifier   = webhook.Notifier{}
	_ longform.Notifier     = webhook.Notifier{}
	_ sweeper.Notifier      = webhook.Notifier{}
)
