// Command mediagen-dev is the developers' tool, apart from the user's CLI
// (cmd/mediagen) so that binary carries no moto starter, template parser or
// load generator:
//
//	mediagen-dev lambdas [--addr 127.0.0.1:8080] [--data .mediagen] ...
//	mediagen-dev bench [--json FILE] ...
package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/mediagen-dev/mediagen/internal/cli"
)

func main() { cli.Main(run) }

const usage = `usage: mediagen-dev <command> [flags]

  lambdas [--addr 127.0.0.1:8080] [--data .mediagen] [--sim-latency 300ms]
          [--routing FILE] [--public-url URL] [--webhook-allow HOST:PORT]
                        the deployed shape on this machine (make run LAMBDAS=1):
                        template.yaml expanded by aws-sam-translator, every
                        function's built bootstrap with its template environment
                        and IAM role, on moto's server with IAM enforced
  bench [--conns 16] [--duration 5s] [--rate 200] [--json FILE]
                        make bench's figures (bench -h lists every flag)
`

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
	switch args[0] {
	case "lambdas":
		return lambdas(ctx, args[1:], stdout, stderr)
	case "bench":
		return bench(ctx, args[1:], stdout, stderr)
	}
	return fail(stderr, exitUsage, fmt.Errorf("unknown command %q\n\n%s", args[0], usage))
}

func parse(fs *flag.FlagSet, args []string, required ...string) error {
	return cli.Parse("mediagen-dev", fs, args, required...)
}

func fail(stderr io.Writer, code int, err error) int {
	return cli.Fail("mediagen-dev", stderr, code, err)
}
