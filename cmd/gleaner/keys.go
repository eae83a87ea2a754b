package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gleaner-rag/gleaner/server/auth"
)

// newKeys is `gleaner keys`: the API keys `gleaner serve --keys` checks.
func newKeys() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "keys",
		Short: "Manage the API keys gleaner serve checks (add, list, revoke)",
		Long: `A keys file holds each key's id, a salted SHA-256 of its secret (never the secret), its scopes
(read: retrieve and list; write: change documents; admin: reload, metrics, profiling), the indexes
it may use ("*": all), its ACL groups and its rate limit. gleaner serve --keys FILE checks every
request's "Authorization: Bearer <token>" against it and rereads it on SIGHUP.`,
	}
	cmd.AddCommand(newKeysAdd(), newKeysList(), newKeysRevoke())
	return cmd
}

func newKeysAdd() *cobra.Command {
	var file string
	var k auth.Key
	var scopes []string
	var replace bool
	cmd := &cobra.Command{
		Use:   "add --file keys.json --id NAME --scope read --index NAME",
		Short: "Add a key and print its token (shown once: the file keeps only a hash)",
		Example: `  gleaner keys add --file keys.json --id search-app --scope read --index wiki
  gleaner keys add --file keys.json --id ops --scope admin --index '*'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			for _, sc := range scopes {
				k.Scopes = append(k.Scopes, auth.Scope(sc))
			}
			tok, hash, err := auth.NewToken(k.ID)
			if err != nil {
				return keyFlagError(err)
			}
			k.Hash = hash
			replaced := false
			err = auth.Update(file, func(f *auth.File) error {
				at := slices.IndexFunc(f.Keys, func(have auth.Key) bool { return have.ID == k.ID })
				switch {
				case at >= 0 && !replace:
					return fmt.Errorf("--id %q: %s has that key already (--replace gives it a new token and these settings)", k.ID, file)
				case at >= 0:
					f.Keys[at], replaced = k, true
				default:
					f.Keys = append(f.Keys, k)
				}
				return nil
			})
			if err != nil {
				return keyFlagError(err)
			}
			fmt.Fprintln(cmd.OutOrStdout(), tok)
			verb := "added to"
			if replaced {
				verb = "replaced in"
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "gleaner: key %q %s %s; its token is above and is not stored anywhere\n", k.ID, verb, file)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&file, "file", "", "the keys file (created, mode 0600, when missing)")
	fl.StringVar(&k.ID, "id", "", "the key's name (letters, digits, '-', '_', '.')")
	fl.StringSliceVar(&scopes, "scope", nil, "what the key may do: read, write, admin (repeatable or comma-separated)")
	fl.StringSliceVar(&k.Indexes, "index", nil, `index names the key may use, or "*" for all (repeatable or comma-separated)`)
	fl.StringSliceVar(&k.Groups, "group", nil, "ACL groups of the key (repeatable or comma-separated)")
	fl.Float64Var(&k.Rate, "rate", 0, "requests per second the key may make (0: no limit)")
	fl.IntVar(&k.Burst, "burst", 0, "requests the key may make at once above its rate (0: the rate, at least 1)")
	fl.StringVar(&k.Note, "note", "", "free text kept with the key (who holds it, why)")
	fl.BoolVar(&replace, "replace", false, "replace the key of that id if there is one (a new token: the old one stops working at the server's next reload)")
	for _, name := range []string{"file", "id", "scope", "index"} {
		cmd.MarkFlagRequired(name)
	}
	return cmd
}

// keyFlagError turns a key's field error into the flag that sets it.
func keyFlagError(err error) error {
	var fe *auth.FieldError
	if errors.As(err, &fe) {
		flag := map[string]string{"scopes": "scope", "indexes": "index", "groups": "group"}[fe.Field]
		if flag == "" {
			flag = fe.Field
		}
		return fmt.Errorf("--%s: %s", flag, fe.Msg)
	}
	return err
}

func newKeysList() *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "list --file keys.json",
		Short: "List the keys (ids, scopes, indexes, groups, rates; never secrets)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, err := auth.Load(file)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "%-20s %-18s %-20s %-16s %s\n", "ID", "SCOPES", "INDEXES", "GROUPS", "RATE")
			for _, k := range r.File().Keys {
				rate := "-"
				if k.Rate > 0 {
					rate = fmt.Sprintf("%g/s burst %d", k.Rate, k.BurstOrDefault())
				}
				sc := make([]string, len(k.Scopes))
				for i, s := range k.Scopes {
					sc[i] = string(s)
				}
				fmt.Fprintf(out, "%-20s %-18s %-20s %-16s %s\n", k.ID, strings.Join(sc, ","), strings.Join(k.Indexes, ","), orDash(strings.Join(k.Groups, ",")), rate)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&file, "file", "", "the keys file")
	cmd.MarkFlagRequired("file")
	return cmd
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func newKeysRevoke() *cobra.Command {
	var file, id string
	cmd := &cobra.Command{
		Use:   "revoke --file keys.json --id NAME",
		Short: "Remove a key (a server started with --keys drops it on reload)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			err := auth.Update(file, func(f *auth.File) error {
				i := slices.IndexFunc(f.Keys, func(k auth.Key) bool { return k.ID == id })
				if i < 0 {
					return fmt.Errorf("--id %q: %s has no such key", id, file)
				}
				f.Keys = slices.Delete(f.Keys, i, i+1)
				return nil
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "gleaner: key %q revoked; send the server SIGHUP (or POST /v1/admin/reload) to drop it now\n", id)
			return nil
		},
	}
	cmd.Flags().StringVar(&file, "file", "", "the keys file")
	cmd.Flags().StringVar(&id, "id", "", "the key to remove")
	cmd.MarkFlagRequired("file")
	cmd.MarkFlagRequired("id")
	return cmd
}
