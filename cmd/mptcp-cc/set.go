// SPDX-License-Identifier: Apache-2.0

package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/mptcp-cc/mptcp-cc/internal/cli"
	"github.com/mptcp-cc/mptcp-cc/pkg/connctl"
)

func cmdSet(fs *flag.FlagSet) cli.Action {
	tokenFlag := fs.String("token", "", "the connection's `TOKEN`, hex, as `mptcp-cc subflows` or `ss -Mi` shows it")
	algo := fs.String("algo", "", "algorithm `NAME` ("+joinNames()+") or registered congestion control")
	ns := fs.String("netns", "", "named network namespace `NAME` of the connection (`ip netns list`; default: this one)")
	asJSON := fs.Bool("json", false, "JSON output")
	return func(_ []string, out io.Writer) error {
		if *tokenFlag == "" {
			return cli.Usagef("--token is required (hex, as `mptcp-cc subflows` shows it)")
		}
		if *algo == "" {
			return cli.Usagef("--algo is required: one of %s, or a registered congestion control", joinNames())
		}
		token, err := connctl.ParseToken(*tokenFlag)
		if err != nil {
			return err
		}
		res, err := connctl.SetCC(token, ccName(*algo), *ns)
		if *asJSON && len(res.Subflows) > 0 {
			type sub struct {
				connctl.Subflow
				Error string `json:"error,omitempty"`
			}
			doc := struct {
				connctl.Result
				Switched int   `json:"switched"`
				Subflows []sub `json:"subflows"`
			}{Result: res, Switched: res.Switched()}
			for _, s := range res.Subflows {
				e := ""
				if s.Err != nil {
					e = s.Err.Error()
				}
				doc.Subflows = append(doc.Subflows, sub{s, e})
			}
			if jerr := cli.WriteJSON(out, doc); jerr != nil {
				return jerr
			}
			return err
		}
		if len(res.Subflows) > 0 {
			t := cli.NewTable(out, "SF", "LOCAL", "REMOTE", "STATE", "WAS", "NOW")
			for _, s := range res.Subflows {
				now := res.CC
				if s.Err != nil {
					now = "FAILED: " + s.Err.Error()
				}
				t.Row(s.SubflowID, s.Local, s.Remote, s.State, s.From, now)
			}
			t.Flush()
		}
		if err != nil {
			return err
		}
		where := ""
		if *ns != "" {
			where = " in network namespace " + *ns
		}
		fmt.Fprintf(out, "connection %08x%s: %d subflow(s) switched to %s; subflows that join later get the connection's own CC\n",
			token, where, res.Switched(), res.CC)
		return nil
	}
}
