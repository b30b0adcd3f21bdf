package cmd

import (
	"github.com/scv-cli/scv/scv-agents/internal/cmdutil"
	"github.com/scv-cli/scv/shared/cli"
	"github.com/scv-cli/scv/shared/delegate/adapters"
)

// agentNames are the agents `scv agents` knows, in the order status
// lists them: the adapters, then the nested SCV.
func agentNames() []string { return append(adapters.Names(), "scv") }

// privateCommand resolves a's executable and returns it with the private
// environment its delegated runs use and its private home (created, 0700)
// as the directory to run in.
func privateCommand(f *cmdutil.Factory, home string, a adapters.Adapter) (path string, env []string, dir string, err error) {
	path, err = a.Lookup(f.Env)
	if err != nil {
		return "", nil, "", err
	}
	if err := a.EnsureDirs(home); err != nil {
		return "", nil, "", err
	}
	env, err = a.PrivateEnv(f.Environ(), home)
	if err != nil {
		return "", nil, "", err
	}
	dir, err = a.Home(home)
	if err != nil {
		return "", nil, "", err
	}
	return path, env, dir, nil
}

// unknownAgent is the usage error for a name no adapter has.
func unknownAgent(name string, allowed []string) error {
	return cli.UsageErrorf("unknown agent %q; choose one of: %s", name, joinNames(allowed))
}

func joinNames(names []string) string {
	s := ""
	for i, n := range names {
		if i > 0 {
			s += ", "
		}
		s += n
	}
	return s
}
