package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/mediagen-dev/mediagen/client"
)

// timeFlag parses an RFC 3339 time (or a date, as its UTC midnight).
type timeFlag struct{ t time.Time }

func (f *timeFlag) String() string {
	if f.t.IsZero() {
		return ""
	}
	return f.t.Format(time.RFC3339)
}

func (f *timeFlag) Set(s string) error {
	for _, layout := range []string{time.RFC3339Nano, time.DateOnly} {
		if t, err := time.Parse(layout, s); err == nil {
			f.t = t
			return nil
		}
	}
	return fmt.Errorf("%q is neither an RFC 3339 time nor a date (YYYY-MM-DD)", s)
}

// transactionsCmd prints the caller's credit journal, newest first: one
// page (from --cursor, the one a page ended with), or every page with --all.
func transactionsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("transactions", flag.ContinueOnError)
	var af apiFlags
	af.register(fs)
	var o client.TransactionOptions
	var from, to timeFlag
	var all bool
	fs.IntVar(&o.Limit, "limit", 20, "entries to print (1-100; with --all, per request)")
	fs.StringVar(&o.Type, "type", "", "only this type: grant, hold, capture, release, refund, opening")
	fs.StringVar(&o.WorkID, "work-id", "", "only the entries of this generation or long video")
	fs.Var(&from, "from", "only entries at or after this time (RFC 3339 or YYYY-MM-DD)")
	fs.Var(&to, "to", "only entries before this time (RFC 3339 or YYYY-MM-DD)")
	fs.BoolVar(&all, "all", false, "follow the cursors to the last page")
	fs.StringVar(&o.Cursor, "cursor", "", "start after the entries already shown: the cursor a page ended with")
	if _, err := parseArgs(fs, args, 0); err != nil {
		return usageFail(stderr, "transactions", err)
	}
	o.From, o.To = from.t, to.t
	c := af.client()
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	if !af.jsonOut {
		fmt.Fprintln(tw, "id\ttype\tbalance\theld\tbalance after\twork\tmodel\tkey\tat")
	}
	// A filtered page may be short, or empty with more to come (the
	// service examines a bounded window per page): without --all, read on
	// until --limit entries are printed or the journal ends, asking each
	// time for what is still missing, so the cursor printed goes on right
	// after the last entry shown.
	want, printed := o.Limit, 0
	for {
		if !all {
			o.Limit = want - printed
		}
		page, err := c.Transactions(ctx, o)
		if err != nil {
			return apiFail(stderr, "transactions", err)
		}
		printed += len(page.Data)
		for _, e := range page.Data {
			if af.jsonOut {
				printJSON(stdout, e)
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.ID, e.Type, e.BalanceChange, e.HeldChange, e.BalanceAfter,
				orDash(e.WorkID), orDash(e.Model), orDash(e.KeyPrefix), e.CreatedAt)
		}
		next, more := page.NextCursor, page.NextCursor != nil
		if !more || (!all && printed >= want) {
			if more {
				// With --json, stdout holds only entries: the cursor goes
				// to stderr.
				w := io.Writer(tw)
				if af.jsonOut {
					w = stderr
				}
				fmt.Fprintf(w, "(more: --cursor %s for the next page, or --all)\n", *next)
			}
			break
		}
		o.Cursor = *next
	}
	tw.Flush()
	return exitOK
}

// orDash is an optional field of a table row: "-" when absent.
func orDash(s *string) string {
	if s == nil {
		return "-"
	}
	return *s
}

// usageCmd prints what the caller's captures added up to, grouped.
func usageCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("usage", flag.ContinueOnError)
	var af apiFlags
	af.register(fs)
	var from, to timeFlag
	var groupBy string
	fs.Var(&from, "from", "the first UTC day (YYYY-MM-DD; default 29 days before --to)")
	fs.Var(&to, "to", "the last UTC day (YYYY-MM-DD; default today)")
	fs.StringVar(&groupBy, "group-by", "day", "day, model or key")
	if _, err := parseArgs(fs, args, 0); err != nil {
		return usageFail(stderr, "usage", err)
	}
	r, err := af.client().Usage(ctx, from.t, to.t, groupBy)
	if err != nil {
		return apiFail(stderr, "usage", err)
	}
	if af.jsonOut {
		printJSON(stdout, r)
		return exitOK
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "%s\tcredits\tgenerations\tvideos\n", r.GroupBy)
	for _, g := range r.Groups {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\n", g.Key, g.Credits, g.Generations, g.Videos)
	}
	fmt.Fprintf(tw, "total %s – %s\t%s\t%d\t%d\n", r.From, r.To, r.Total.Credits, r.Total.Generations, r.Total.Videos)
	tw.Flush()
	return exitOK
}
