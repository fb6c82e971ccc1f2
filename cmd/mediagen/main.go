// Command mediagen is the service's local runtime and administration tool.
//
//	mediagen serve [--addr 127.0.0.1:8080] [--data .mediagen]
//	               [--dynamodb [--endpoint-url URL] [--table-prefix P]]
//	mediagen accounts create --plan free|pro|enterprise --credits N [--rate-limit N]
//	mediagen accounts show --user ID
//	mediagen accounts retention --user ID --days 1|7|30
//	mediagen credits grant --user ID --credits N [--grant-id ID]
//	mediagen keys create --user ID
//	mediagen keys revoke --prefix P
//	mediagen webhooks secret --user ID [--rotate]
//	mediagen ledger verify [--user ID]
//	mediagen tables create            (DynamoDB only: for a local DynamoDB)
//	mediagen models | generate | status | delete-output |
//	         story estimate|create|voices|status|delete-output | transactions | usage |
//	         account keys list|create|revoke | account webhook-secret rotate
//	                                  (clients of a running service)
//
// Every command takes --data DIR (the embedded store, the default) or
// --dynamodb (with the usual AWS configuration, --endpoint-url and
// --table-prefix or the *_TABLE environment variables).
package main

import (
	"context"
	"fmt"
	"io"

	"github.com/mediagen-dev/mediagen/internal/cli"
)

func main() { cli.Main(run) }

const usage = `usage: mediagen <command> [flags]

local runtime:
  serve [--addr 127.0.0.1:8080] [--data .mediagen] [--sim-latency 300ms]
        [--poll-interval 1s] [--price-file FILE] [--log-level info]
        [--files-addr 127.0.0.1:8081] [--s3-addr 127.0.0.1:8082] [--allow-remote]
        [--dynamodb [--endpoint-url URL] [--table-prefix P]]
                        --dynamodb keeps the records in DynamoDB tables made by
                        tables create (the adapter the Lambdas use)
  (the developers' tools, the deployed shape and make bench, are mediagen-dev)

client (calls the service at $MEDIAGEN_BASE_URL with $MEDIAGEN_API_KEY;
--base-url and --api-key override them, --json prints the answers as JSON):
  models                                       variants, their fields and prices
  generate --model M --version V [--input key=value ...] [--image-count N]
           [--wait] [--out DIR]                 key=@FILE sends a local image
  status ID                                    a generation's (or long video's) status
  delete-output ID                             delete a generation's (or long video's) stored files
  story estimate --model beta-2 --scenes N
  story create --prompt P --scene S1 --scene S2 ... [--narration N1 ...]
               [--language en] [--voice V] [--narration-speed S] [--model beta-2] [--style S] [--no-narration]
               [--wait] [--out DIR]
  story voices [--language en]                 a language's narration voices, each with a preview clip
  story status ID
  story delete-output ID
  story regenerate ID --scene N [--prompt P] [--narration T] [--wait] [--out DIR]
                                               make one scene of a completed video again, charged alone
  transactions [--type T] [--work-id ID] [--from T] [--to T] [--limit N]
               [--cursor C] [--all]
                                               the account's credit journal, newest first
  usage [--from YYYY-MM-DD] [--to YYYY-MM-DD] [--group-by day|model|key]
                                               captured credits, grouped
  account keys list                            the account's keys (needs a key with the admin scope)
  account keys create --name N [--scopes generate,read,admin]
                      [--daily-credit-limit 25.00]
                                               prints the new key, shown this once
  account keys revoke PREFIX                   the key and the keys below it (a key revokes only
                                               itself and the keys it made, directly or below)
  account webhook-secret rotate                a new webhook signing secret, printed this once
                                               (needs a key with the admin scope)

administration (embedded store by default; --dynamodb for DynamoDB):
  accounts create --plan free|pro|enterprise --credits N [--rate-limit N]
  accounts show --user ID
  accounts retention --user ID --days 1|7|30
                        how long the account's outputs are kept (default 30)
  credits grant --user ID --credits N [--grant-id ID]
  keys create --user ID                        a key with every scope, for any account
  keys revoke --prefix P                       any account's key
  webhooks secret --user ID [--rotate]
                        show (or replace) the secret that signs the account's webhooks
  ledger verify [--user ID]
                        replay every account's credit journal against its
                        balance, held and captured credits; exits 1 on any
                        difference
  tables create --dynamodb [--endpoint-url URL] [--table-prefix P]

store flags (every administration command):
  --data DIR            embedded store directory (default .mediagen)
  --dynamodb            use DynamoDB instead (AWS_REGION, credentials as usual)
  --endpoint-url URL    DynamoDB endpoint override (e.g. a local DynamoDB)
  --table-prefix P      tables named P-accounts, P-api-keys, ... (default: the
                        *_TABLE environment variables, else "mediagen")
`

// exit codes
const (
	exitOK    = cli.ExitOK
	exitError = cli.ExitError
	exitUsage = cli.ExitUsage
)

var errHelp = cli.ErrHelp

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if code, done := cli.Start(args, usage, stdout, stderr); done {
		return code
	}
	if args[0] == "serve" {
		return serve(ctx, args[1:], stdout, stderr)
	}
	if cmd, rest, ok := clientCommand(args); ok {
		return cmd(ctx, rest, stdout, stderr)
	}
	if len(args) < 2 {
		return fail(stderr, exitUsage, fmt.Errorf("%q needs a subcommand\n\n%s", args[0], usage))
	}
	cmd, ok := adminCommands[args[0]+" "+args[1]]
	if !ok && args[0] == "keys" {
		return fail(stderr, exitUsage, fmt.Errorf("unknown command %q: the admin commands are keys create --user and keys revoke --prefix; the API's are account keys list, create and revoke", args[0]+" "+args[1]))
	}
	if !ok {
		return fail(stderr, exitUsage, fmt.Errorf("unknown command %q\n\n%s", args[0]+" "+args[1], usage))
	}
	return cmd(ctx, args[2:], stdout, stderr)
}

func fail(stderr io.Writer, code int, err error) int {
	return cli.Fail("mediagen", stderr, code, err)
}
