package setup

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/scv-cli/scv/shared/atomicfile"
	"github.com/scv-cli/scv/shared/paths"
)

// offeredMarker records, under $SCV_HOME/state, that the first-run offer
// was made, so that it is made once.
const offeredMarker = "setup-offered"

// Offer is the first run of the terminal UI: when no configuration file
// exists, OPENAI_API_KEY is unset and the offer was never made, it asks
// once whether to set a provider up now (Enter) or start the demo (d or
// anything else), and runs the setup dialogue on Enter. It reports only
// problems with SCV_HOME; a failed setup is told and the demo starts.
func Offer(ctx context.Context, opts *Options) error {
	home, err := paths.Home(opts.Env)
	if err != nil {
		return err
	}
	marker := filepath.Join(home, "state", offeredMarker)
	for _, p := range []string{paths.ConfigFile(home), marker} {
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			return nil
		}
	}
	if opts.Env.Getenv("OPENAI_API_KEY") != "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(marker), 0o700); err != nil {
		return fmt.Errorf("creating %s: %w", filepath.Dir(marker), err)
	}
	if err := atomicfile.WriteFile(marker, []byte("scv offered scv setup once; delete this file to be asked again\n"), 0o600); err != nil {
		return fmt.Errorf("writing %s: %w", marker, err)
	}
	in := bufio.NewReader(opts.IO.In)
	ans, err := prompt(in, opts.IO.Out, "No model provider is configured yet. Press Enter to set one up now (scv setup), or d for the built-in demo: ", "")
	if err != nil || !strings.EqualFold(ans, "") {
		return nil
	}
	opts.in = in
	if err := Run(ctx, opts); err != nil {
		fmt.Fprintf(opts.IO.Out, "Setup did not finish: %v. Starting the demo; run scv setup at any time.\n", err)
	}
	return nil
}
