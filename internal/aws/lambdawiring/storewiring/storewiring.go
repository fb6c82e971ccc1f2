// Package storewiring is the part of the Lambda wiring that needs no AWS
// service but DynamoDB: the AWS configuration, the store and the gate, the
// routing and price files, Build, and the constructors of the functions
// that use nothing else (the status and list routes, the estimates, the
// account, the models, the OpenAPI document, the authorizer).
//
// Those functions' main.go import this package, not lambdawiring, so that
// their binaries do not link the SQS, S3, Step Functions, Secrets Manager
// and Polly clients: a Go binary runs the package initializers of every
// package it links (each client's endpoint tables and schemas) whether it
// calls it or not: 0.8 ms of the 4 ms the authorizer's and the status
// function's init took when measured (docs/performance.md#cold-starts).
// lambdawiring wires the other functions on top of this package.
package storewiring

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/mediagen-dev/mediagen/internal/adapters/upstream"
	"github.com/mediagen-dev/mediagen/internal/api/httpapi"
	"github.com/mediagen-dev/mediagen/internal/api/jwtauth"
	"github.com/mediagen-dev/mediagen/internal/aws/dynamostore"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/pricing"
	"github.com/mediagen-dev/mediagen/internal/core/routing"
)

// Environment variables read here (the table names are in dynamostore).
const (
	// EnvRoutingFile is the routing file's path in the package; empty is
	// the embedded default, which names the local simulator and is refused.
	EnvRoutingFile = "ROUTING_FILE"
	EnvPriceFile   = "PRICE_FILE"
	EnvJWTIssuer   = "JWT_ISSUER"
	EnvJWTAudience = "JWT_AUDIENCE"
	EnvJWKSURL     = "JWKS_URL"
)

// Getenv is how the wiring (this package's and lambdawiring's) reads its
// environment. Tests replace it to learn which variables each function
// reads.
var Getenv = os.Getenv

// Constructor builds one function's handler. Each builds only what its
// handler uses.
type Constructor func(ctx context.Context, log *slog.Logger) (any, error)

// Build is a function's main: it builds the handler with the function's
// logger, or ends the init with a logged error.
func Build(name string, c Constructor) any {
	return must(c(context.Background(), Logger().With("function", name)))
}

// Logger is the JSON logger every function uses, its values bounded
// (domain.NewJSONLogger).
func Logger() *slog.Logger {
	return domain.NewJSONLogger(os.Stdout, nil)
}

// must ends a function's init with a logged error: Lambda reports the init
// failure and retries on the next invoke.
func must[T any](v T, err error) T {
	if err != nil {
		Logger().Error("function init failed", "error", err)
		os.Exit(1)
	}
	return v
}

// Required is the variable name, or an error when it is not set.
func Required(name string) (string, error) {
	v := Getenv(name)
	if v == "" {
		return "", fmt.Errorf("environment variable %s is not set", name)
	}
	return v, nil
}

// Store is the DynamoDB store on the template's tables.
func Store(cfg aws.Config) *dynamostore.Store {
	return dynamostore.New(dynamodb.NewFromConfig(cfg), dynamostore.TablesFromEnv(Getenv))
}

// Gate authenticates requests against the store, and tokens when the
// identity provider is configured. A GET route's gate stops there.
func Gate(cfg aws.Config, log *slog.Logger) *httpapi.Gate { return gateOn(Store(cfg), log) }

func gateOn(st *dynamostore.Store, log *slog.Logger) *httpapi.Gate {
	g := &httpapi.Gate{Store: st, Log: log}
	if iss := Getenv(EnvJWTIssuer); iss != "" {
		g.Tokens = &jwtauth.Verifier{Issuer: iss, Audience: Getenv(EnvJWTAudience), JWKSURL: Getenv(EnvJWKSURL)}
	}
	return g
}

// PostGate is Gate for a POST route: it also honours Idempotency-Key.
func PostGate(cfg aws.Config, log *slog.Logger) *httpapi.Gate {
	st := Store(cfg)
	g := gateOn(st, log)
	g.Idempotency = &httpapi.Idempotency{Store: st, Log: log}
	return g
}

// Prices is the price file named by PRICE_FILE, or the embedded one.
func Prices() (*pricing.Table, error) {
	if path := Getenv(EnvPriceFile); path != "" {
		return pricing.LoadFile(path)
	}
	return pricing.Default(), nil
}

// Routing reads the routing file ROUTING_FILE names.
func Routing() (*routing.Config, error) {
	path := Getenv(EnvRoutingFile)
	if path == "" {
		return nil, fmt.Errorf("environment variable %s is not set (the embedded routing file runs only on the local simulator)", EnvRoutingFile)
	}
	return routing.Load(path)
}

// routesOnly is the routing file without tokens, for the functions that
// only read routes and caps (status, lists).
func routesOnly() (*upstream.Router, error) {
	rc, err := Routing()
	if err != nil {
		return nil, err
	}
	return upstream.NewRouter(rc, func(*routing.Upstream) (string, error) { return "", nil }, nil, upstream.Tuning{})
}

// ConfigAndPrices are what every route that prices a request starts from.
func ConfigAndPrices(ctx context.Context) (aws.Config, *pricing.Table, error) {
	cfg, err := AWSConfig(ctx)
	if err != nil {
		return aws.Config{}, nil, err
	}
	prices, err := Prices()
	return cfg, prices, err
}
