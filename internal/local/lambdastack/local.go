package lambdastack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/aws/dynamostore"
	"github.com/mediagen-dev/mediagen/internal/core/accounts"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/routing"
	"github.com/mediagen-dev/mediagen/internal/local/runtime"
)

// tokensSecret is the template's secret of the upstreams' tokens.
const tokensSecret = "UpstreamTokenSecret"

// Local is the stack with what `mediagen-dev lambdas` adds around it: the
// upstream simulator as the provider (the routing file, bound to it, is
// the one every function gets, and its token is in the tokens secret),
// the CDN's stand-in serving the output bucket over TLS, and a dev
// account.
type Local struct {
	*Stack
	Simulator *runtime.Simulator
	// Media is the CDN's stand-in (MEDIA_BASE_URL's host); its Client
	// trusts its certificate.
	Media *httptest.Server
	Dev   accounts.CreatedAccount
}

// LocalConfig is Config plus the simulator's settings.
type LocalConfig struct {
	Config
	// SimulatorLatency is the simulator's delay before rendering.
	SimulatorLatency time.Duration
	// Routing is the routing file (default: every variant on the
	// simulator); its builtin upstream is bound to the simulator.
	Routing *routing.Config
}

// StartLocal starts the simulator, the outputs' origin and the stack, and
// makes a dev account with 1000 credits.
func StartLocal(ctx context.Context, cfg LocalConfig) (_ *Local, err error) {
	l := &Local{}
	defer func() {
		if err != nil {
			l.Close()
		}
	}()
	if l.Simulator, err = runtime.StartSimulator(runtime.SimulatorConfig{Latency: cfg.SimulatorLatency, Log: cfg.Log,
		// The functions, as in Lambda, trust only the system's CAs.
		HTTPFiles: true}); err != nil {
		return nil, err
	}
	rc := cfg.Routing
	if rc == nil {
		rc = routing.Default()
	}
	l.Simulator.Bind(rc)
	if cfg.RoutingFile, err = json.Marshal(rc); err != nil {
		return nil, err
	}
	tokens, _ := json.Marshal(map[string]string{"simulator": l.Simulator.Token})
	if cfg.Secrets == nil {
		cfg.Secrets = map[string]string{}
	}
	cfg.Secrets[tokensSecret] = string(tokens)

	// The CDN fronts the bucket (origin access control): the origin reads
	// it with the operator's credentials, as CloudFront's own identity.
	var stack atomic.Pointer[Stack]
	l.Media = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := stack.Load()
		if s == nil || r.Method != http.MethodGet {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		s.serveOutput(w, r)
	}))
	l.Media.StartTLS()
	cfg.MediaHost = strings.TrimPrefix(l.Media.URL, "https://")

	if l.Stack, err = start(ctx, cfg.Config); err != nil {
		return nil, err
	}
	stack.Store(l.Stack)
	if l.Dev, err = l.NewAccount(ctx, accounts.NewAccount{Plan: domain.PlanPro, Credits: decimal.NewFromInt(1000)}); err != nil {
		return nil, fmt.Errorf("make the dev account: %w", err)
	}
	return l, nil
}

// NewAccount makes an account, as the operator's `mediagen accounts
// create` does on the stack's tables; its key has every scope.
func (l *Local) NewAccount(ctx context.Context, a accounts.NewAccount) (accounts.CreatedAccount, error) {
	svc := &accounts.Service{Store: dynamostore.New(dynamodb.NewFromConfig(l.AdminConfig()), l.Tables())}
	return svc.CreateAccount(ctx, a)
}

// Tables are the stack's tables, as the functions' environment names them.
func (s *Stack) Tables() dynamostore.Tables {
	for _, fn := range s.functions {
		return dynamostore.TablesFromEnv(func(k string) string { return fn.pool.Fn.Env[k] })
	}
	return dynamostore.Tables{}
}

// serveOutput answers GET /<key> with the output bucket's object.
func (s *Stack) serveOutput(w http.ResponseWriter, r *http.Request) {
	client := s3.NewFromConfig(s.AdminConfig(), func(o *s3.Options) { o.UsePathStyle = true })
	out, err := client.GetObject(r.Context(), &s3.GetObjectInput{Bucket: aws.String(s.Ref("OutputBucket")),
		Key: aws.String(strings.TrimPrefix(r.URL.Path, "/"))})
	var missing *s3types.NoSuchKey
	if errors.As(err, &missing) {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	if err != nil {
		http.Error(w, "the origin failed", http.StatusBadGateway)
		return
	}
	defer out.Body.Close()
	if out.ContentType != nil {
		w.Header().Set("Content-Type", aws.ToString(out.ContentType))
	}
	io.Copy(w, out.Body)
}

// Close stops the stack, the origin and the simulator.
func (l *Local) Close() {
	if l.Stack != nil {
		l.Stack.Close()
	}
	if l.Media != nil {
		l.Media.Close()
	}
	if l.Simulator != nil {
		l.Simulator.Close()
	}
}
