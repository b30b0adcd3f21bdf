package oneshot

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/scv-cli/scv/scv-server/internal/delegate"
	"github.com/scv-cli/scv/scv-server/internal/delegate/transport"
	"github.com/scv-cli/scv/shared/delegate/adapters"
)

// maxPlanned bounds the launches remembered between Plan and Run (calls
// that were planned but never run, such as denied ones, are forgotten
// oldest first).
const maxPlanned = 32

// backend runs one agent.
type backend struct {
	r *Runner
	a adapters.Adapter

	mu sync.Mutex
	// planned holds the executable Plan resolved for a handle, so Run
	// starts the program the approval showed even if PATH or the install
	// directories changed in between.
	planned map[string]string
	order   []string
}

func (b *backend) remember(handle, exe string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.planned == nil {
		b.planned = map[string]string{}
	}
	if _, ok := b.planned[handle]; !ok {
		b.order = append(b.order, handle)
	}
	b.planned[handle] = exe
	for len(b.order) > maxPlanned {
		delete(b.planned, b.order[0])
		b.order = b.order[1:]
	}
}

func (b *backend) take(handle string) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	exe, ok := b.planned[handle]
	if ok {
		delete(b.planned, handle)
		b.order = slices.DeleteFunc(b.order, func(h string) bool { return h == handle })
	}
	return exe, ok
}

// Descriptor implements delegate.Backend.
func (b *backend) Descriptor() delegate.Descriptor {
	return transport.Descriptor(b.a, b.a.TakesSession())
}

func (b *backend) fullPermissions() bool { return b.r.opts.FullPermissions(b.a.Name) }

// outputFile is the file Codex writes its final message to: in the
// private tmp directory of its agent home, named after the run's handle.
func (b *backend) outputFile(call delegate.Call) (string, error) {
	if !slices.ContainsFunc(b.a.OutputArgs, func(s string) bool { return strings.Contains(s, adapters.OutputFilePlaceholder) }) {
		return "", nil
	}
	dir, err := b.a.TmpDir(b.r.opts.Home)
	if err != nil {
		return "", err
	}
	if call.Handle == "" || strings.ContainsAny(call.Handle, "/\x00") || call.Handle == "." || call.Handle == ".." {
		return "", fmt.Errorf("delegation handle %q cannot name a file", call.Handle)
	}
	return filepath.Join(dir, call.Handle+".last-message.txt"), nil
}

// Plan implements delegate.Backend: the absolute executable, the argument
// vector and the directory Run would start. A missing executable wraps
// ErrUnavailable; a selection the agent does not take wraps
// adapters.ErrUnsupportedOption.
//
// Run starts the executable Plan resolved for the same handle, so what
// runs is what the approval showed.
func (b *backend) Plan(call delegate.Call) (delegate.Launch, error) {
	l, err := b.plan(call, "")
	if err == nil && call.Handle != "" {
		b.remember(call.Handle, l.Executable)
	}
	return l, err
}

// plan builds the launch of call; exe, when set, is the executable Plan
// resolved before the approval, which is not looked up again.
func (b *backend) plan(call delegate.Call, exe string) (delegate.Launch, error) {
	if call.Agent != "" && call.Agent != b.a.Name {
		return delegate.Launch{}, fmt.Errorf("call for %s handed to the %s backend", call.Agent, b.a.Name)
	}
	if exe == "" {
		var err error
		if exe, err = b.a.Lookup(b.r.opts.Env); err != nil {
			return delegate.Launch{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
	}
	if !filepath.IsAbs(call.Dir) {
		return delegate.Launch{}, fmt.Errorf("the directory to run %s in, %q, is not an absolute path", b.a.Name, call.Dir)
	}
	ofile, err := b.outputFile(call)
	if err != nil {
		return delegate.Launch{}, err
	}
	state, err := b.a.StatePath(b.r.opts.Home)
	if err != nil {
		return delegate.Launch{}, err
	}
	args, err := b.a.Args(adapters.Invocation{
		Prompt:          call.Prompt,
		Model:           call.Model,
		Effort:          call.Effort,
		NewSession:      call.NewCLISession,
		ResumeSession:   call.ResumeCLISession,
		FullPermissions: b.fullPermissions(),
		OutputFile:      ofile,
		StateDir:        state,
	})
	if err != nil {
		return delegate.Launch{}, err
	}
	return delegate.Launch{Executable: exe, Args: args, Dir: call.Dir, FullPermissions: b.fullPermissions()}, nil
}

// env returns the agent's environment for call.
func (b *backend) env(call delegate.Call) ([]string, error) {
	var extra []string
	if b.fullPermissions() {
		extra = b.a.FullPermissionsEnv
	}
	return b.r.opts.AgentEnv(b.a, call, extra...)
}
