package lambdastack

import (
	"fmt"
	"strings"
)

// IAM's decision on a role's inline policies (the template's), for the
// calls the stack answers or makes itself rather than moto: an explicit
// Deny wins, else an Allow is needed. A statement applies when one of its
// Actions matches the action (case-insensitively, with IAM's * and ?
// wildcards) and, when a resource is given, one of its Resources matches
// it (case-sensitively). Conditions, NotAction, NotResource and the
// managed policies are not read: the managed policies SAM attaches grant
// none of the actions asked here.

// decision is IAM's answer on one action.
type decision int

const (
	implicitDeny decision = iota
	allowed
	explicitDeny
)

// roleDecision decides action on resource ("" checks the action only, as
// moto does) for the role of logical ID role.
func (s *Stack) roleDecision(role, action, resource string) decision {
	props, err := s.properties(role)
	if err != nil {
		return implicitDeny
	}
	d := implicitDeny
	policies, _ := props["Policies"].([]any)
	for _, p := range policies {
		doc, _ := p.(map[string]any)["PolicyDocument"].(map[string]any)
		stmts, _ := doc["Statement"].([]any)
		if one, ok := doc["Statement"].(map[string]any); ok {
			stmts = []any{one}
		}
		for _, st := range stmts {
			sm, _ := st.(map[string]any)
			if !statementMatches(sm, action, resource) {
				continue
			}
			if sm["Effect"] == "Deny" {
				return explicitDeny
			}
			if sm["Effect"] == "Allow" {
				d = allowed
			}
		}
	}
	return d
}

func statementMatches(sm map[string]any, action, resource string) bool {
	matched := false
	for _, a := range actionList(sm["Action"]) {
		if wildcardMatch(strings.ToLower(a), strings.ToLower(action)) {
			matched = true
			break
		}
	}
	if !matched || resource == "" {
		return matched
	}
	for _, r := range actionList(sm["Resource"]) {
		if wildcardMatch(r, resource) {
			return true
		}
	}
	return false
}

// wildcardMatch matches s against an IAM pattern: * is any run of
// characters (':' and '/' included), ? any one.
func wildcardMatch(pattern, s string) bool {
	px, sx := 0, 0
	star, mark := -1, 0
	for sx < len(s) {
		switch {
		case px < len(pattern) && (pattern[px] == '?' || pattern[px] == s[sx]):
			px++
			sx++
		case px < len(pattern) && pattern[px] == '*':
			star, mark = px, sx
			px++
		case star >= 0:
			px = star + 1
			mark++
			sx = mark
		default:
			return false
		}
	}
	for px < len(pattern) && pattern[px] == '*' {
		px++
	}
	return px == len(pattern)
}

// roleOf is the logical ID of the role a resource's property names
// (Fn::GetAtt <role>.Arn, as SAM makes it), or "".
func (s *Stack) roleOf(logical, property string) string {
	ref, _ := s.rawProperties(logical)[property].(map[string]any)
	att, _ := ref["Fn::GetAtt"].([]any)
	if len(att) != 2 {
		return ""
	}
	return fmt.Sprint(att[0])
}

// roleAllows reports whether the inline policies of a function's role
// allow action, and none denies it (actions only, as moto checks them).
func (s *Stack) roleAllows(function, action string) bool {
	role := s.roleOf(function, "Role")
	return role != "" && s.roleDecision(role, action, "") == allowed
}
