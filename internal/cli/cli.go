// Package cli is what the project's commands (cmd/mediagen, the user's and
// operator's; cmd/mediagen-dev, the developer's) share of their command
// line: exit codes, flag parsing with required flags, and -h.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Exit codes.
const (
	ExitOK    = 0
	ExitError = 1
	ExitUsage = 2
)

// ErrHelp is Parse's answer once it has printed a command's -h.
var ErrHelp = errors.New("help shown")

// helpOut receives -h output; a command's run points it at its stdout.
var helpOut io.Writer = os.Stdout

// Parse parses a command's flags, refuses positional arguments and names
// the first required flag left unset.
func Parse(program string, fs *flag.FlagSet, args []string, required ...string) error {
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(helpOut)
		fmt.Fprintf(helpOut, "usage: %s %s [flags]\n", program, fs.Name())
		fs.PrintDefaults()
		return ErrHelp
	} else if err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for _, name := range required {
		if !set[name] {
			return fmt.Errorf("--%s is required", name)
		}
	}
	return nil
}

// Fail prints err as the program's one line on stderr and returns code.
func Fail(program string, stderr io.Writer, code int, err error) int {
	fmt.Fprintf(stderr, "%s: %v\n", program, err)
	return code
}

// Start begins a command's run: -h output goes to stdout, and a command
// line that names no command or asks for help gets the usage on stderr
// (done, with ExitUsage for nothing named and ExitOK for help).
func Start(args []string, usage string, stdout, stderr io.Writer) (code int, done bool) {
	helpOut = stdout
	if len(args) > 0 && args[0] != "-h" && args[0] != "--help" && args[0] != "help" {
		return 0, false
	}
	fmt.Fprint(stderr, usage)
	if len(args) == 0 {
		return ExitUsage, true
	}
	return ExitOK, true
}

// Main runs a command until it returns or Ctrl-C/SIGTERM cancels its
// context, and exits with its code.
func Main(run func(ctx context.Context, args []string, stdout, stderr io.Writer) int) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
