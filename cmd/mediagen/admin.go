package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/shopspring/decimal"

	"github.com/mediagen-dev/mediagen/internal/aws/dynamostore"
	"github.com/mediagen-dev/mediagen/internal/cli"
	"github.com/mediagen-dev/mediagen/internal/core/accounts"
	"github.com/mediagen-dev/mediagen/internal/core/domain"
	"github.com/mediagen-dev/mediagen/internal/core/ledger"
	"github.com/mediagen-dev/mediagen/internal/core/store"
	"github.com/mediagen-dev/mediagen/internal/local/sqlitestore"
)

type command func(ctx context.Context, args []string, stdout, stderr io.Writer) int

var adminCommands = map[string]command{
	"accounts create":    accountsCreate,
	"accounts show":      accountsShow,
	"credits grant":      creditsGrant,
	"keys create":        keysCreate,
	"keys revoke":        keysRevoke,
	"webhooks secret":    webhooksSecret,
	"tables create":      tablesCreate,
	"ledger verify":      ledgerVerify,
	"accounts retention": accountsRetention,
}

// dynamoFlags select DynamoDB and its tables.
type dynamoFlags struct {
	dynamo      bool
	endpointURL string
	tablePrefix string
}

func (f *dynamoFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.dynamo, "dynamodb", false, "use DynamoDB")
	fs.StringVar(&f.endpointURL, "endpoint-url", "", "DynamoDB endpoint override")
	fs.StringVar(&f.tablePrefix, "table-prefix", "", "DynamoDB table name prefix")
}

func (f *dynamoFlags) tables() dynamostore.Tables {
	if f.tablePrefix != "" {
		return dynamostore.TablesWithPrefix(f.tablePrefix)
	}
	return dynamostore.TablesFromEnv(os.Getenv)
}

func (f *dynamoFlags) dynamoClient(ctx context.Context) (*dynamodb.Client, error) {
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, fmt.Errorf("load AWS configuration: %w", err)
	}
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) {
		if f.endpointURL != "" {
			o.BaseEndpoint = aws.String(f.endpointURL)
		}
	}), nil
}

// storeFlags selects and opens the store.
type storeFlags struct {
	data string
	dynamoFlags
}

func (f *storeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.data, "data", ".mediagen", "embedded store directory")
	f.dynamoFlags.register(fs)
}

func (f *storeFlags) open(ctx context.Context) (store.Store, func(), error) {
	if f.dynamo {
		client, err := f.dynamoClient(ctx)
		if err != nil {
			return nil, nil, err
		}
		return dynamostore.New(client, f.tables()), func() {}, nil
	}
	s, err := sqlitestore.Open(ctx, f.data)
	if err != nil {
		return nil, nil, err
	}
	return s, func() { s.Close() }, nil
}

// parse parses a command's flags (cli.Parse, as mediagen).
func parse(fs *flag.FlagSet, args []string, required ...string) error {
	return cli.Parse("mediagen", fs, args, required...)
}

// withService parses flags, opens the store and runs fn, mapping errors to
// one line and an exit code.
func withService(ctx context.Context, name string, args []string, stdout, stderr io.Writer,
	define func(*flag.FlagSet) []string, fn func(context.Context, *accounts.Service) (any, error)) int {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	var sf storeFlags
	sf.register(fs)
	required := define(fs)
	if err := parse(fs, args, required...); errors.Is(err, errHelp) {
		return exitOK
	} else if err != nil {
		return fail(stderr, exitUsage, fmt.Errorf("%s: %w", name, err))
	}
	s, closeStore, err := sf.open(ctx)
	if err != nil {
		return fail(stderr, exitError, err)
	}
	defer closeStore()
	out, err := fn(ctx, &accounts.Service{Store: s})
	if err != nil {
		code := exitError
		if errors.Is(err, domain.ErrInvalid) {
			code = exitUsage
		}
		return fail(stderr, code, fmt.Errorf("%s: %w", name, err))
	}
	if err := json.NewEncoder(stdout).Encode(out); err != nil {
		return fail(stderr, exitError, err)
	}
	return exitOK
}

// creditsFlag parses a credit amount strictly.
type creditsFlag struct{ v decimal.Decimal }

func (c *creditsFlag) String() string { return c.v.String() }
func (c *creditsFlag) Set(s string) error {
	d, err := domain.ParseCredits(strings.TrimSpace(s))
	if err != nil {
		return err
	}
	c.v = d
	return nil
}

func accountsCreate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var plan string
	var credits creditsFlag
	var rateLimit int
	return withService(ctx, "accounts create", args, stdout, stderr, func(fs *flag.FlagSet) []string {
		fs.StringVar(&plan, "plan", "", "free, pro or enterprise")
		fs.Var(&credits, "credits", "credits granted at once")
		fs.IntVar(&rateLimit, "rate-limit", 0, "requests per minute (enterprise)")
		return []string{"plan", "credits"}
	}, func(ctx context.Context, svc *accounts.Service) (any, error) {
		p, err := domain.ParsePlan(plan)
		if err != nil {
			return nil, err
		}
		return svc.CreateAccount(ctx, accounts.NewAccount{Plan: p, Credits: credits.v, RateLimit: rateLimit})
	})
}

func accountsShow(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var user string
	return withService(ctx, "accounts show", args, stdout, stderr, func(fs *flag.FlagSet) []string {
		fs.StringVar(&user, "user", "", "user id")
		return []string{"user"}
	}, func(ctx context.Context, svc *accounts.Service) (any, error) {
		return svc.Show(ctx, user)
	})
}

func accountsRetention(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var user string
	var days int
	return withService(ctx, "accounts retention", args, stdout, stderr, func(fs *flag.FlagSet) []string {
		fs.StringVar(&user, "user", "", "user id")
		fs.IntVar(&days, "days", 0, fmt.Sprintf("days the account's outputs are kept: one of %v", domain.RetentionChoices))
		return []string{"user", "days"}
	}, func(ctx context.Context, svc *accounts.Service) (any, error) {
		return svc.SetRetention(ctx, user, days)
	})
}

func creditsGrant(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var user, grantID string
	var credits creditsFlag
	return withService(ctx, "credits grant", args, stdout, stderr, func(fs *flag.FlagSet) []string {
		fs.StringVar(&user, "user", "", "user id")
		fs.Var(&credits, "credits", "credits to add")
		fs.StringVar(&grantID, "grant-id", "", "idempotency id: a retried grant with the same id applies once")
		return []string{"user", "credits"}
	}, func(ctx context.Context, svc *accounts.Service) (any, error) {
		_, applied, err := svc.Grant(ctx, user, grantID, credits.v)
		if err != nil {
			return nil, err
		}
		// The account as accounts show prints it, keys included: the
		// grant's own read has the totals but not the keys.
		shown, err := svc.Show(ctx, user)
		if err != nil {
			return nil, err
		}
		return struct {
			accounts.AccountView
			Applied bool `json:"applied"`
		}{shown, applied}, nil
	})
}

func keysCreate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var user string
	return withService(ctx, "keys create", args, stdout, stderr, func(fs *flag.FlagSet) []string {
		fs.StringVar(&user, "user", "", "user id")
		return []string{"user"}
	}, func(ctx context.Context, svc *accounts.Service) (any, error) {
		return svc.CreateKey(ctx, user)
	})
}

func keysRevoke(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var prefix string
	return withService(ctx, "keys revoke", args, stdout, stderr, func(fs *flag.FlagSet) []string {
		fs.StringVar(&prefix, "prefix", "", "key prefix (mgk_...)")
		return []string{"prefix"}
	}, func(ctx context.Context, svc *accounts.Service) (any, error) {
		at, err := svc.RevokeKey(ctx, prefix)
		if err != nil {
			return nil, err
		}
		return map[string]any{"prefix": prefix, "revoked_at": at}, nil
	})
}

func webhooksSecret(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var userID string
	var rotate bool
	return withService(ctx, "webhooks secret", args, stdout, stderr, func(fs *flag.FlagSet) []string {
		fs.StringVar(&userID, "user", "", "account id")
		fs.BoolVar(&rotate, "rotate", false, "replace the secret with a new one")
		return []string{"user"}
	}, func(ctx context.Context, svc *accounts.Service) (any, error) {
		get := svc.WebhookSecret
		if rotate {
			get = svc.RotateWebhookSecret
		}
		secret, err := get(ctx, userID)
		if err != nil {
			return nil, err
		}
		return map[string]any{"user_id": userID, "webhook_signing_secret": secret, "rotated": rotate}, nil
	})
}

func tablesCreate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tables create", flag.ContinueOnError)
	var sf storeFlags
	sf.register(fs)
	if err := parse(fs, args); errors.Is(err, errHelp) {
		return exitOK
	} else if err != nil {
		return fail(stderr, exitUsage, fmt.Errorf("tables create: %w", err))
	}
	if !sf.dynamo {
		return fail(stderr, exitUsage, errors.New("tables create: only for DynamoDB (--dynamodb); the embedded store creates its own"))
	}
	client, err := sf.dynamoClient(ctx)
	if err != nil {
		return fail(stderr, exitError, err)
	}
	t := sf.tables()
	if err := dynamostore.CreateTables(ctx, client, t); err != nil {
		return fail(stderr, exitError, fmt.Errorf("tables create: %w", err))
	}
	if err := json.NewEncoder(stdout).Encode(t); err != nil {
		return fail(stderr, exitError, err)
	}
	return exitOK
}

// errDiscrepancies makes ledger verify exit non-zero once it printed what it
// found.
var errDiscrepancies = errors.New("the journal and the accounts disagree")

func ledgerVerify(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var user string
	fs := flag.NewFlagSet("ledger verify", flag.ContinueOnError)
	var sf storeFlags
	sf.register(fs)
	fs.StringVar(&user, "user", "", "verify only this account (default: every account)")
	if err := parse(fs, args); errors.Is(err, errHelp) {
		return exitOK
	} else if err != nil {
		return fail(stderr, exitUsage, fmt.Errorf("ledger verify: %w", err))
	}
	s, closeStore, err := sf.open(ctx)
	if err != nil {
		return fail(stderr, exitError, err)
	}
	defer closeStore()
	v, err := ledger.Verify(ctx, s, user)
	if err != nil {
		return fail(stderr, exitError, fmt.Errorf("ledger verify: %w", err))
	}
	if err := json.NewEncoder(stdout).Encode(v); err != nil {
		return fail(stderr, exitError, err)
	}
	if len(v.Discrepancies) > 0 {
		return fail(stderr, exitError, fmt.Errorf("ledger verify: %w: %d discrepancies", errDiscrepancies, len(v.Discrepancies)))
	}
	return exitOK
}
