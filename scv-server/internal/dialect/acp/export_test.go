package acp

// SetHooks sets the test hooks (nil: none); only for tests that are not
// parallel.
func SetHooks(before, after func()) { beforeStartTurn, afterCancel = before, after }
