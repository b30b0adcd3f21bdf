package cmd

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/scv-cli/scv/scv-agents/internal/cmdutil"
	"github.com/scv-cli/scv/shared/cli"
	"github.com/scv-cli/scv/shared/delegate/records"
	"github.com/spf13/cobra"
)

// PsOptions are the inputs of `ps`.
type PsOptions struct {
	IO  *cmdutil.IOStreams
	F   *cmdutil.Factory
	All bool
	Now func() time.Time
}

// NewCmdPs returns `ps`. runF replaces the behaviour in tests.
func NewCmdPs(f *cmdutil.Factory, runF func(*PsOptions) error) *cobra.Command {
	opts := &PsOptions{IO: f.IO, F: f, Now: time.Now}
	cmd := &cobra.Command{
		Use:   "ps [--all]",
		Short: "List the running delegations of this instance",
		Long: `List the delegated agent runs of this SCV instance, from any SCV process:
handle, agent, parent session, conversation and turn, state (running, idle
between turns, or background while a nested SCV's own jobs run), age and
directory. --all also lists orphans: runs whose SCV process is gone, which
the next reconcile or "scv agents kill --orphans" stops.`,
		Args: cli.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return psRun(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.All, "all", false, "also list orphans awaiting cleanup")
	return cmd
}

func psRun(opts *PsOptions) error {
	home, err := opts.F.Home()
	if err != nil {
		return err
	}
	recs, listErr := records.List(home)
	if listErr != nil {
		fmt.Fprintf(opts.IO.ErrOut, "warning: %v\n", listErr)
	}
	now := opts.Now()
	var rows [][]string
	orphans := 0
	for _, r := range recs {
		st := r.State()
		if st == records.StateOrphan {
			orphans++
			if !opts.All {
				continue
			}
		}
		conv := "-"
		if r.Conversation != "" {
			conv = fmt.Sprintf("%s turn %d", r.Conversation, r.Turn)
		}
		if r.Background {
			st += " (background job)"
		}
		rows = append(rows, []string{r.Handle, r.Agent, orDash(r.Session), conv, st, age(now, r.StartedUnix), orDash(r.Cwd)})
	}
	if len(rows) == 0 {
		switch {
		case orphans > 0:
			fmt.Fprintf(opts.IO.Out, "no delegated runs; %d orphans await cleanup (scv agents ps --all)\n", orphans)
		default:
			fmt.Fprintln(opts.IO.Out, "no delegated runs")
		}
		return nil
	}
	tw := tabwriter.NewWriter(opts.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "HANDLE\tAGENT\tSESSION\tCONVERSATION\tSTATE\tAGE\tCWD")
	for _, row := range rows {
		for i, c := range row {
			if i > 0 {
				fmt.Fprint(tw, "\t")
			}
			fmt.Fprint(tw, c)
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if orphans > 0 && !opts.All {
		fmt.Fprintf(opts.IO.Out, "%d orphans await cleanup (scv agents ps --all)\n", orphans)
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// age says how long ago unix was, in the largest one or two units.
func age(now time.Time, unix int64) string {
	if unix <= 0 {
		return "-"
	}
	d := now.Sub(time.Unix(unix, 0)).Round(time.Second)
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%02dh", int(d.Hours())/24, int(d.Hours())%24)
}
