package cmd

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/scv-cli/scv/scv-agents/internal/cmdutil"
	"github.com/scv-cli/scv/shared/cli"
	"github.com/scv-cli/scv/shared/delegate/records"
	"github.com/spf13/cobra"
)

// KillOptions are the inputs of `kill`.
type KillOptions struct {
	IO      *cmdutil.IOStreams
	F       *cmdutil.Factory
	Handle  string
	Orphans bool
	Grace   time.Duration
}

// NewCmdKill returns `kill`. runF replaces the behaviour in tests.
func NewCmdKill(f *cmdutil.Factory, runF func(*KillOptions) error) *cobra.Command {
	opts := &KillOptions{IO: f.IO, F: f, Grace: records.StopGrace}
	cmd := &cobra.Command{
		Use:   "kill HANDLE | --orphans",
		Short: "Stop a delegated run, or every orphan",
		Long: `Stop the delegated run HANDLE (as "scv agents ps" shows it): its process
group and every process tagged with its handle, including those that left the
group with setsid (TERM, then KILL after 2 seconds). The SCV process that owns
the run reports it as cancelled. --orphans stops every run whose SCV process is
gone and removes its record.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case opts.Orphans && len(args) > 0:
				return cli.UsageErrorf("give a HANDLE or --orphans, not both")
			case !opts.Orphans && len(args) != 1:
				return cli.UsageErrorf("name the run to stop, such as scv agents kill codex-3f9a2c, or pass --orphans")
			}
			if len(args) == 1 {
				opts.Handle = args[0]
			}
			if runF != nil {
				return runF(opts)
			}
			return killRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Orphans, "orphans", false, "stop every run whose SCV process is gone")
	return cmd
}

func killRun(ctx context.Context, opts *KillOptions) error {
	home, err := opts.F.Home()
	if err != nil {
		return err
	}
	if opts.Orphans {
		return killOrphans(ctx, home, opts)
	}
	if err := records.CheckName("handle", opts.Handle); err != nil {
		return cli.UsageErrorf("%v; pass a handle as scv agents ps lists it", err)
	}
	r, err := records.Read(home, opts.Handle)
	var ce *records.CorruptError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("no delegated run has the handle %s; run scv agents ps to see the running ones", opts.Handle)
	case errors.As(err, &ce):
		// The record cannot say which processes are the run's, but its
		// name is the run's tag.
		res := records.StopRun(records.Record{Handle: opts.Handle}, opts.Grace)
		if err := records.Remove(home, opts.Handle); err != nil {
			return err
		}
		fmt.Fprintf(opts.IO.Out, "removed the corrupt record of %s and stopped %d tagged processes\n", opts.Handle, res.Killed)
		return survivorsErr(opts.Handle, res)
	case err != nil:
		return err
	}
	ownerAlive := r.Owner.Alive()
	if ownerAlive {
		r.KillRequestedUnix = time.Now().Unix()
		if err := records.Write(home, r); err != nil {
			return err
		}
		if !r.AgentProcess.Alive() {
			// The run ended on its own between the read and the write, and
			// its server may already have removed the record: the write
			// must not leave a record of a run that no longer exists.
			_ = records.Remove(home, r.Handle)
		}
	}
	res := records.StopRun(r, opts.Grace)
	if !ownerAlive {
		if err := records.Remove(home, r.Handle); err != nil {
			return err
		}
	}
	fmt.Fprintf(opts.IO.Out, "stopped %s (%s)%s\n", r.Handle, r.Agent, stoppedWhat(res))
	return survivorsErr(r.Handle, res)
}

func stoppedWhat(res records.StopResult) string {
	tagged := fmt.Sprintf("%d tagged processes", res.Killed)
	if res.Killed == 1 {
		tagged = "1 tagged process"
	}
	switch {
	case res.Group:
		return ": its process group and " + tagged
	case res.Killed == 0:
		return ": its processes had already exited"
	}
	return ": " + tagged
}

func survivorsErr(handle string, res records.StopResult) error {
	if res.Survivors > 0 {
		return fmt.Errorf("%d processes of %s survived SIGKILL (stuck in the kernel, or another user's); check them with ps", res.Survivors, handle)
	}
	return nil
}

func killOrphans(ctx context.Context, home string, opts *KillOptions) error {
	recs, listErr := records.List(home)
	if listErr != nil {
		fmt.Fprintf(opts.IO.ErrOut, "warning: %v\n", listErr)
	}
	var errs []error
	n := 0
	for _, r := range recs {
		if err := ctx.Err(); err != nil {
			return err
		}
		if r.Owner.Alive() {
			continue
		}
		res := records.StopRun(r, opts.Grace)
		if err := survivorsErr(r.Handle, res); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := records.Remove(home, r.Handle); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
		fmt.Fprintf(opts.IO.Out, "stopped orphan %s (%s, owner pid %d gone)%s\n", r.Handle, r.Agent, r.Owner.PID, stoppedWhat(res))
	}
	// Markers of exited owners go too; no orphan is left for this pass.
	if _, err := records.Reconcile(ctx, home, nil); err != nil && listErr == nil {
		errs = append(errs, err)
	}
	if n == 0 && len(errs) == 0 {
		fmt.Fprintln(opts.IO.Out, "no orphans")
	}
	return errors.Join(errs...)
}
