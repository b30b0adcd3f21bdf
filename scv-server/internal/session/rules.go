package session

// Session approval rules (protocol v3): approval.resolve with scope
// "session" approves the call and grants the rule its approval.requested
// proposed; later calls of the session that a granted rule covers run
// without asking (the agent loop matches their keys, agent.Config.Rules).
// The rules are kept in the order granted, one per key, and recorded in the
// session's log, so a resumed session keeps them; session.clear drops them.
// v1 and v2 sessions neither propose nor use rules, and their
// approval.resolve's scope is ignored.

import (
	"errors"
	"slices"

	"github.com/scv-cli/scv/scv-server/internal/approval"
	"github.com/scv-cli/scv/scv-server/internal/sessionstore"
	"github.com/scv-cli/scv/shared/protocol"
)

// denyWithFeedback denies an approval request and keeps the user's
// reason for the model (approval.resolve feedback, v4).
func (s *Session) denyWithFeedback(approvalID, feedback string) error {
	if err := s.approvals.DenyWithFeedback(approvalID, feedback); err != nil {
		return errorf(protocol.ErrApprovalNotFound, "approval %q is unknown or already resolved", approvalID)
	}
	return nil
}

// ResolveApproval answers an approval request. From protocol v3, scope is
// "once" (or empty) for this call only, or "session" to approve it and
// grant the request's rule; before v3 it is ignored.
func (s *Session) ResolveApproval(approvalID string, approved bool, scope string) error {
	forSession, wider := false, false
	if s.version >= protocol.Version3 {
		switch {
		case scope == "" || scope == protocol.ScopeOnce:
		case scope == protocol.ScopeSession || (scope == protocol.ScopeSessionWider && s.version >= protocol.Version4):
			if !approved {
				return errorf(protocol.ErrInvalidRequest, "scope %q needs \"approved\":true: a denial is for this call only; send scope %q (or none) to deny it",
					scope, protocol.ScopeOnce)
			}
			forSession, wider = true, scope == protocol.ScopeSessionWider
		case s.version >= protocol.Version4:
			return errorf(protocol.ErrInvalidRequest, "unknown scope %q: use %q (the default), %q or %q", scope, protocol.ScopeOnce, protocol.ScopeSession, protocol.ScopeSessionWider)
		default:
			return errorf(protocol.ErrInvalidRequest, "unknown scope %q: use %q (the default) or %q", scope, protocol.ScopeOnce, protocol.ScopeSession)
		}
	}
	var err error
	switch {
	case wider:
		err = s.approvals.ResolveForSessionWider(approvalID, s.grantRule)
	case forSession:
		err = s.approvals.ResolveForSession(approvalID, s.grantRule)
	default:
		err = s.approvals.Resolve(approvalID, approved)
	}
	switch {
	case errors.Is(err, approval.ErrNoRule) && wider:
		return errorf(protocol.ErrInvalidRequest, "approval %q proposed no wider rule (its approval.requested has no wider_rule); resolve it with scope %q or %q",
			approvalID, protocol.ScopeSession, protocol.ScopeOnce)
	case errors.Is(err, approval.ErrNoRule):
		return errorf(protocol.ErrInvalidRequest, "approval %q proposed no rule (its approval.requested has none), so it cannot be approved for the session; resolve it with scope %q",
			approvalID, protocol.ScopeOnce)
	case err != nil:
		return errorf(protocol.ErrApprovalNotFound, "approval %q is unknown or already resolved", approvalID)
	}
	return nil
}

// grantRule adds r to the session's rules, unless a rule with its key is
// there already.
func (s *Session) grantRule(r protocol.Rule) {
	s.mu.Lock()
	known := slices.ContainsFunc(s.rules, func(g protocol.Rule) bool { return g.Key == r.Key })
	if !known {
		s.rules = append(s.rules, r)
	}
	s.mu.Unlock()
	if !known {
		s.mgr.log.Info("Approval rule granted for the session", "session", s.id, "rule", r.Key)
		if s.rec != nil {
			s.record("an approval rule", func(l *sessionstore.Log) error { return l.RuleGranted(r) })
		}
	}
}

// RevokeRule removes the rule key from the session (granted, or one of
// the configuration's for this session only) and records it, so a resumed
// session stays without it.
func (s *Session) RevokeRule(key string) error {
	s.mu.Lock()
	n := len(s.rules)
	s.rules = slices.DeleteFunc(s.rules, func(r protocol.Rule) bool { return r.Key == key })
	found := len(s.rules) < n
	s.mu.Unlock()
	if !found {
		return errorf(protocol.ErrInvalidRequest, "the session has no rule %q; session.rules lists its rules", key)
	}
	s.mgr.log.Info("Approval rule revoked for the session", "session", s.id, "rule", key)
	if s.rec != nil {
		s.record("a revoked approval rule", func(l *sessionstore.Log) error { return l.RuleRevoked(key) })
	}
	return nil
}

// matchRule returns the granted rule whose key is one of keys, trying the
// keys in order (the most specific first).
func (s *Session) matchRule(keys []string) (protocol.Rule, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range keys {
		for _, r := range s.rules {
			if r.Key == k {
				return r, true
			}
		}
	}
	return protocol.Rule{}, false
}

// rulesFunc is the agent loop's view of the rules: nil before protocol v3.
func (s *Session) rulesFunc() func([]string) (protocol.Rule, bool) {
	if s.version < protocol.Version3 {
		return nil
	}
	return s.matchRule
}

// Rules returns the session's granted rules in the order granted (never
// nil, for session.rules_listed).
func (s *Session) Rules() []protocol.Rule {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append(make([]protocol.Rule, 0, len(s.rules)), s.rules...)
}
