package session

import (
	"fmt"

	"github.com/scv-cli/scv/shared/protocol"
)

// Error is a refused request, with the protocol error code the dialect
// answers with. Message is written for the person driving the client.
type Error struct {
	Code    protocol.ErrorCode
	Message string
	// Entry is the current queue entry, for queue_conflict.
	Entry *protocol.QueueEntry
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

func errorf(code protocol.ErrorCode, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}
