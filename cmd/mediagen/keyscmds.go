package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/mediagen-dev/mediagen/client"
)

// The client commands of the key routes, `account keys ...`, after the
// routes' path. They call the running service with the caller's own key
// (which needs the admin scope), unlike the admin commands `keys create`
// and `keys revoke`, which write to a store directly for any account.

func accountKeysListCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("account keys list", flag.ContinueOnError)
	var af apiFlags
	af.register(fs)
	if _, err := parseArgs(fs, args, 0); err != nil {
		return usageFail(stderr, "account keys list", err)
	}
	keys, err := af.client().Keys(ctx)
	if err != nil {
		return apiFail(stderr, "account keys list", err)
	}
	if af.jsonOut {
		printJSON(stdout, keys)
		return exitOK
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PREFIX\tNAME\tSCOPES\tCREATED BY\tDAILY LIMIT\tSPENT TODAY\tLAST USED\tREVOKED")
	for _, k := range keys {
		scopes := make([]string, len(k.Scopes))
		for i, sc := range k.Scopes {
			scopes[i] = string(sc)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.Prefix, k.Name, strings.Join(scopes, ","), orDash(k.CreatedBy),
			orDash(k.DailyCreditLimit), k.SpentToday, orDash(k.LastUsedAt), orDash(k.RevokedAt))
	}
	tw.Flush()
	return exitOK
}

func accountKeysCreateCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("account keys create", flag.ContinueOnError)
	var af apiFlags
	af.register(fs)
	name := fs.String("name", "", "the key's name (1-64 characters)")
	scopes := fs.String("scopes", "", "comma-separated scopes among generate, read, admin (default: generate,read)")
	limit := fs.String("daily-credit-limit", "", "credits the key may spend per UTC day, such as 25.00 (default: none)")
	if _, err := parseArgs(fs, args, 0); err != nil {
		return usageFail(stderr, "account keys create", err)
	}
	req := client.KeyRequest{Name: *name, DailyCreditLimit: *limit}
	if *scopes != "" {
		req.Scopes = strings.Split(*scopes, ",")
	}
	k, err := af.client().CreateKey(ctx, req)
	if err != nil {
		return apiFail(stderr, "account keys create", err)
	}
	if af.jsonOut {
		printJSON(stdout, k)
		return exitOK
	}
	fmt.Fprintf(stdout, "%s\n", k.APIKey)
	fmt.Fprintf(stderr, "key %s (%s) created; it is shown this once, keep it now\n", k.Prefix, k.Name)
	return exitOK
}

func accountKeysRevokeCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("account keys revoke", flag.ContinueOnError)
	var af apiFlags
	af.register(fs)
	pos, err := parseArgs(fs, args, 1)
	if err != nil {
		return usageFail(stderr, "account keys revoke PREFIX", err)
	}
	r, err := af.client().RevokeKey(ctx, pos[0])
	if err != nil {
		return apiFail(stderr, "account keys revoke", err)
	}
	if af.jsonOut {
		printJSON(stdout, r)
		return exitOK
	}
	fmt.Fprintf(stdout, "%s revoked at %s\n", r.Prefix, r.RevokedAt)
	for _, p := range r.RevokedBelow {
		fmt.Fprintf(stdout, "%s revoked with it (below it)\n", p)
	}
	return exitOK
}

// accountWebhookSecretRotateCmd replaces the account's webhook signing
// secret (the caller's key needs the admin scope) and prints the new one,
// which the service shows this once.
func accountWebhookSecretRotateCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("account webhook-secret rotate", flag.ContinueOnError)
	var af apiFlags
	af.register(fs)
	if _, err := parseArgs(fs, args, 0); err != nil {
		return usageFail(stderr, "account webhook-secret rotate", err)
	}
	r, err := af.client().RotateWebhookSecret(ctx)
	if err != nil {
		return apiFail(stderr, "account webhook-secret rotate", err)
	}
	if af.jsonOut {
		printJSON(stdout, r)
		return exitOK
	}
	fmt.Fprintf(stdout, "%s\n", r.SigningSecret)
	fmt.Fprintln(stderr, "webhooks are signed with this secret from now on; give it to your receiver")
	return exitOK
}
