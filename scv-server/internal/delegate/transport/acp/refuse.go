package acp

import (
	"context"

	acpsdk "github.com/coder/acp-go-sdk"
)

// NoFileSystemOrTerminal answers the ACP client methods of the capabilities
// a client does not offer (fs/* and terminal/*) with method-not-found. An
// acpsdk.Client embeds it: SCV's side of delegation does, and so do tests'
// clients of SCV's own ACP agent.
type NoFileSystemOrTerminal struct{}

// ReadTextFile refuses: method not found.
func (NoFileSystemOrTerminal) ReadTextFile(context.Context, acpsdk.ReadTextFileRequest) (acpsdk.ReadTextFileResponse, error) {
	return acpsdk.ReadTextFileResponse{}, acpsdk.NewMethodNotFound(acpsdk.ClientMethodFsReadTextFile)
}

// WriteTextFile refuses: method not found.
func (NoFileSystemOrTerminal) WriteTextFile(context.Context, acpsdk.WriteTextFileRequest) (acpsdk.WriteTextFileResponse, error) {
	return acpsdk.WriteTextFileResponse{}, acpsdk.NewMethodNotFound(acpsdk.ClientMethodFsWriteTextFile)
}

// CreateTerminal refuses: method not found.
func (NoFileSystemOrTerminal) CreateTerminal(context.Context, acpsdk.CreateTerminalRequest) (acpsdk.CreateTerminalResponse, error) {
	return acpsdk.CreateTerminalResponse{}, acpsdk.NewMethodNotFound(acpsdk.ClientMethodTerminalCreate)
}

// KillTerminal refuses: method not found.
func (NoFileSystemOrTerminal) KillTerminal(context.Context, acpsdk.KillTerminalRequest) (acpsdk.KillTerminalResponse, error) {
	return acpsdk.KillTerminalResponse{}, acpsdk.NewMethodNotFound(acpsdk.ClientMethodTerminalKill)
}

// TerminalOutput refuses: method not found.
func (NoFileSystemOrTerminal) TerminalOutput(context.Context, acpsdk.TerminalOutputRequest) (acpsdk.TerminalOutputResponse, error) {
	return acpsdk.TerminalOutputResponse{}, acpsdk.NewMethodNotFound(acpsdk.ClientMethodTerminalOutput)
}

// ReleaseTerminal refuses: method not found.
func (NoFileSystemOrTerminal) ReleaseTerminal(context.Context, acpsdk.ReleaseTerminalRequest) (acpsdk.ReleaseTerminalResponse, error) {
	return acpsdk.ReleaseTerminalResponse{}, acpsdk.NewMethodNotFound(acpsdk.ClientMethodTerminalRelease)
}

// WaitForTerminalExit refuses: method not found.
func (NoFileSystemOrTerminal) WaitForTerminalExit(context.Context, acpsdk.WaitForTerminalExitRequest) (acpsdk.WaitForTerminalExitResponse, error) {
	return acpsdk.WaitForTerminalExitResponse{}, acpsdk.NewMethodNotFound(acpsdk.ClientMethodTerminalWaitForExit)
}
